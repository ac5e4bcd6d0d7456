package replay_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/replay"
)

// Cancelling a running Kafka job stops it within a batch: claims not yet publishing are released
// (skipped, so a later replay may send them), and the original topic holds exactly the published.
func TestKafkaCancelStopsWithinABatch(t *testing.T) {
	w := newWorld(t)
	const n = 400
	w.deadLetters(t, n, nil)
	e := w.engine(t, "replica")
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "ops", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 20}) // batches of 20
	if err != nil {
		t.Fatal(err)
	}
	work(t, e)
	waitPublished(t, e, job.ID, 20, time.Minute)
	before, err := e.Cancel(ctx, job.ID, access.Actor{Name: "ops", Role: access.Admin})
	if err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, e, job.ID)
	if job.Status != replay.JobCancelled || job.Published > before.Published+2*20 {
		t.Fatalf("cancelled at %d published, ended %+v", before.Published, job)
	}
	if got := len(w.originals(t)); got != job.Published {
		t.Fatalf("%d records on the original topic, the ledger says %d published", got, job.Published)
	}
	// Released claims hold nothing: a new plan of the same records publishes the rest.
	again, err := e.Plan(ctx, "ops", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Counts[replay.Publish] != n-job.Published || again.Counts[replay.SkipAlreadyReplayed] != job.Published {
		t.Fatalf("second plan %v after %d published", again.Counts, job.Published)
	}
}

// A replica dies mid-job (its worker stops without releasing the lease); another resumes after the
// lease expires and finishes: every message arrives, settled batches are not redone.
func TestKafkaJobResumesOnAnotherReplica(t *testing.T) {
	w := newWorld(t)
	const n = 300
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: "orders.DLT", Partition: 0, Key: []byte(fmt.Sprint(i)),
			Value: []byte(fmt.Sprintf(`{"messageId":"m-%d"}`, i)),
			Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("X")}, {Key: "messageId", Value: []byte(fmt.Sprintf("m-%d", i))}}})
	}
	if err := w.client.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	a, b := w.engine(t, "replica-a"), w.engine(t, "replica-b")
	ctx := ctxT(t)
	plan, err := a.Plan(ctx, "ops", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != n {
		t.Fatalf("plan %v %v", plan.Counts, err)
	}
	job, err := a.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 100})
	if err != nil {
		t.Fatal(err)
	}
	stopA := work(t, a)
	waitPublished(t, a, job.ID, 100, 20*time.Second)
	stopA() // replica a dies holding the lease
	mid, _ := a.Job(ctx, job.ID)
	if mid.Status != replay.JobRunning || mid.Published >= n {
		t.Fatalf("after a's death: %+v", mid)
	}
	work(t, b)
	final := waitJob(t, b, job.ID)
	if final.Status != replay.JobDone || final.Published != n || final.Failed != 0 {
		t.Fatalf("resumed job %+v", final)
	}
	got := map[string]int{}
	for _, r := range w.originals(t) {
		id, _ := header(r, "messageId")
		got[id]++
	}
	dups := 0
	for i := 0; i < n; i++ {
		c := got[fmt.Sprintf("m-%d", i)]
		if c == 0 {
			t.Fatalf("m-%d was lost", i)
		}
		dups += c - 1
	}
	// At most the batch in flight when a died is published twice (at-least-once in that window).
	if dups > 100 {
		t.Fatalf("%d duplicates: settled batches were redone", dups)
	}
}

func TestOutboxReplayRequeuesDeadEvents(t *testing.T) {
	e, o := outboxEngine(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, last_error, created_at)
		VALUES ('e1','Order','o1','OrderCreated',1,'{}','DEAD',10,now(),'boom',now()),
		       ('e2','Order','o2','OrderCreated',1,'{}','SENT',1,now(),NULL,now())`)
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "ops", replay.Source{Kind: "outbox", Outbox: "orders", IDs: []int64{1, 2}, ResetAttempts: true}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Counts[replay.Publish] != 1 || plan.Counts[replay.SkipUnresolvable] != 1 {
		t.Fatalf("plan %v", plan.Counts)
	}
	work(t, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}})
	if err != nil {
		t.Fatal(err)
	}
	if job = waitJob(t, e, job.ID); job.Published != 1 || job.Skipped != 1 {
		t.Fatalf("job %+v", job)
	}
	ev, err := o.Event(ctx, 1)
	if err != nil || ev.Status != outbox.Ready || ev.Attempts != 0 {
		t.Fatalf("event 1 (requeued with its attempts reset): %+v %v", ev, err)
	}
}

// An outbox plan without ids takes the DEAD/FAILED events matching a filter, highest id first, up to
// its limit; ids are read in batches, deduplicated, and a missing one is named.
func TestOutboxPlanByFilterAndByIDs(t *testing.T) {
	// 1..1500: DEAD OrderCreated (every third has a timeout), 1501..1600 FAILED OrderPaid, 1601..1700 SENT.
	e, _ := outboxEngine(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, last_error, created_at)
		SELECT 'e' || g, 'Order', 'o' || (g % 7), CASE WHEN g <= 1500 THEN 'OrderCreated' ELSE 'OrderPaid' END, 1, '{}',
			CASE WHEN g <= 1500 THEN 'DEAD' WHEN g <= 1600 THEN 'FAILED' ELSE 'SENT' END, 5, now(),
			CASE WHEN g % 3 = 0 THEN 'java.net.SocketTimeoutException: read timed out' ELSE 'IllegalStateException: no stock' END,
			now() - (g || ' seconds')::interval
		FROM generate_series(1, 1700) g`)
	ctx := ctxT(t)
	plan := func(src replay.Source, f replay.Filter) (replay.Plan, error) {
		src.Kind, src.Outbox = "outbox", "orders"
		return e.Plan(ctx, "ops", src, f)
	}
	all, err := plan(replay.Source{Limit: 10_000}, replay.Filter{})
	if err != nil || all.Total != 1600 || all.Counts[replay.Publish] != 1600 {
		t.Fatalf("all DEAD and FAILED: %d %v %v", all.Total, all.Counts, err)
	}
	paid, err := plan(replay.Source{Limit: 10_000, Status: "FAILED", EventType: "OrderPaid"}, replay.Filter{})
	if err != nil || paid.Total != 100 {
		t.Fatalf("FAILED OrderPaid: %d %v", paid.Total, err)
	}
	timeouts, err := plan(replay.Source{Limit: 50, Status: "DEAD"}, replay.Filter{ExceptionType: "SocketTimeoutException"})
	if err != nil || timeouts.Total != 50 || timeouts.Items[0].MessageID != "e1500" || timeouts.Items[49].MessageID != "e1353" {
		t.Fatalf("50 DEAD timeouts, newest (highest id) first: %d %v %v", timeouts.Total, timeouts.Items[0].MessageID, err)
	}
	ids := []int64{1700, 3, 3, 1}
	for i := int64(1000); i < 2500 && len(ids) < 1500; i++ { // more than one batch of 1,000
		ids = append(ids, i%1600+1)
	}
	byID, err := plan(replay.Source{IDs: ids}, replay.Filter{})
	if err != nil || byID.Counts[replay.SkipUnresolvable] != 1 || byID.Items[0].MessageID != "e1" {
		t.Fatalf("by id: %v %v", byID.Counts, err)
	}
	for _, tc := range []struct {
		src  replay.Source
		want string
	}{
		{replay.Source{IDs: []int64{1, 999999}}, "event 999999 does not exist"},
		{replay.Source{}, "limit"},
		{replay.Source{Limit: 10, Status: "SENT"}, "DEAD or FAILED"},
	} {
		if _, err := plan(tc.src, replay.Filter{}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want invalid mentioning %q", tc.src, err, tc.want)
		}
	}
}
