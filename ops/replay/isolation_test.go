package replay_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/replay"
)

// The replay: a DLT holding 6 committed and 6 aborted dead letters (a transactional
// producer whose listener transactions rolled back every other time). A plan of the whole
// partition would have published all 12; it plans the 6 committed, the job publishes those 6
// once each, and a plan naming an aborted record is refused (400) saying why.
func TestKafkaReplayOfCommittedDeadLettersOnly(t *testing.T) {
	w, broker := newWorldAndBroker(t)
	var committed []string
	for i := range 12 {
		commit := i%2 == 0
		id := fmt.Sprintf("a-%d", i)
		if commit {
			id = fmt.Sprintf("c-%d", i)
			committed = append(committed, id)
		}
		kfaketest.Transaction(t, broker, "listener-tx", commit, deadLetterRecord(0, id, "k"+id, "com.acme.StockException"))
	}
	e := w.engine(t, "a")
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "alice", kafkaSource(0, 0, 99), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, it := range plan.Items {
		planned = append(planned, it.MessageID)
	}
	if plan.Counts[replay.Publish] != 6 || !slices.Equal(planned, committed) {
		t.Fatalf("plan %v of %v; want the 6 committed: %v", plan.Counts, planned, committed)
	}
	work(t, e)
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "r", RatePerSecond: 1000})
	if job.Status != replay.JobDone || job.Published != 6 || job.Failed != 0 {
		t.Fatalf("job %s published %d failed %d; want done, 6", job.Status, job.Published, job.Failed)
	}
	var published []string
	for _, r := range w.originals(t) {
		id, _ := header(r, "messageId")
		published = append(published, id)
	}
	if !slices.Equal(published, committed) {
		t.Errorf("published %v; want %v once each", published, committed)
	}

	// Offset 2 holds a-1, aborted: no consumer received it.
	_, err = e.Plan(ctx, "alice", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT",
		Records: []replay.RecordRef{{Partition: 0, Offset: 0}, {Partition: 0, Offset: 2}}}, replay.Filter{})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "record 0:2 is no dead letter: it is a record of an aborted transaction") {
		t.Errorf("a plan naming the aborted 0:2: %v; want a 400 saying it is a record of an aborted transaction", err)
	}
}
