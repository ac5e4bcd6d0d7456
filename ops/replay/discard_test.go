package replay_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

// A discard plan selects like a replay plan, asks no inbox (processed messages are discarded
// too), waits for a second operator above the four-eyes threshold, and its job archives every
// message before acking it: the queue ends empty and the archive holds each message once.
func TestDiscardArchivesThenAcksAboveFourEyes(t *testing.T) {
	w := newRabbitWorld(t)
	w.deadLetter(t, 6)
	e := w.engineWith(t, configs.Replay{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 1000, FourEyes: configs.FourEyes{Enabled: true, Threshold: 5}})
	ctx := ctxT(t)
	src := replay.Source{Kind: "rabbitmq", Action: replay.ActionDiscard, Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 100}
	if _, err := e.Plan(ctx, "ops", replay.Source{Kind: "outbox", Action: replay.ActionDiscard, Outbox: "x"}, replay.Filter{}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("an outbox discard: %v", err)
	}
	plan, err := e.Plan(ctx, "ops", src, replay.Filter{})
	if err != nil || plan.Total != 6 || plan.Counts[replay.Discard] != 6 || plan.Items[0].Consumer != "" {
		t.Fatalf("plan %v %v", plan.Counts, err)
	}
	work(t, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, Reason: "poison"})
	if err != nil || job.Status != replay.JobAwaiting {
		t.Fatalf("a discard of 6 above a threshold of 5 must wait for approval: %+v %v", job, err)
	}
	// The workers poll meanwhile: an awaiting discard must not be claimed.
	waittest.Holds(t, 200*time.Millisecond, "an awaiting discard moves nothing", func() bool {
		return w.depth(t, "orders.dlq") == 6
	})
	if _, err := e.Approve(ctx, job.ID, access.Actor{Name: "bob", Role: access.Operator}); err != nil {
		t.Fatal(err)
	}
	if done := waitJob(t, e, job.ID); done.Status != replay.JobDone || done.Published != 6 {
		t.Fatalf("job %+v", done)
	}
	w.waitDepth(t, "orders.dlq", 0)
	if w.depth(t, "orders.work") != 0 {
		t.Fatal("a discard published to the original queue")
	}
	archived, err := w.store.ArchivedMessages(ctx, replay.ArchiveFilter{Queue: "orders.dlq"})
	if err != nil || len(archived) != 6 || archived[0].JobID != job.ID || archived[0].Reason != "poison" || len(archived[0].Body) == 0 ||
		archived[0].Headers["x-death"] == nil || len(archived[0].HeadersWire) == 0 {
		t.Fatalf("archive: %d rows, %v", len(archived), err)
	}
}
