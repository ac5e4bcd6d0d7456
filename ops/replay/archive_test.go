package replay_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
)

// An archived message replayed to its original destination is a plan of one through the engine:
// it goes to the exchange and routing key it was dead-lettered from, as a replay (x-death gone,
// Redrive's headers written), guarded by the consumer's inbox (a processed one is skipped) and the
// ledger; the archive row records it restored, and a second restore of it — either way — is a
// conflict.
func TestArchiveReplayToOriginal(t *testing.T) {
	w := newRabbitWorld(t)
	w.deadLetter(t, 3)
	pgtest.Exec(t, w.inboxDSN, `INSERT INTO inbox_message VALUES ('m-2', 'inventory-service', now(), now())`)
	e := w.engine(t)
	ctx := ctxT(t)
	work(t, e)
	ops1 := access.Actor{Name: "alice", Role: access.Operator}
	discard, err := e.Plan(ctx, "alice", replay.Source{Kind: "rabbitmq", Action: replay.ActionDiscard, Broker: "test", Vhost: w.vhost,
		Queue: "orders.dlq", Limit: 10}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(ctx, replay.StartRequest{PlanID: discard.ID, Actor: ops1, Reason: "poison"})
	if err != nil || waitJob(t, e, job.ID).Published != 3 {
		t.Fatalf("discard: %v", err)
	}
	archived, err := w.store.ArchivedMessages(ctx, replay.ArchiveFilter{Queue: "orders.dlq"})
	if err != nil || len(archived) != 3 {
		t.Fatalf("archive: %d %v", len(archived), err)
	}
	byID := map[string]replay.Archived{}
	for _, a := range archived {
		byID[a.MessageID] = a
	}
	if _, err := e.Plan(ctx, "alice", replay.Source{Kind: "archive"}, replay.Filter{}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("no archive id: %v", err)
	}
	if _, err := e.Plan(ctx, "alice", replay.Source{Kind: "archive", ArchiveID: 1 << 40}, replay.Filter{}); !errors.Is(err, ops.ErrNotFound) {
		t.Fatalf("an unknown archive id: %v", err)
	}

	a := byID["m-0"]
	plan, err := e.Plan(ctx, "alice", replay.Source{Kind: "archive", ArchiveID: a.ID}, replay.Filter{})
	if err != nil || plan.Total != 1 || plan.Counts[replay.Publish] != 1 {
		t.Fatalf("plan: %v %+v", err, plan.Counts)
	}
	it := plan.Items[0]
	if d := it.Destination; d.Exchange != "orders" || d.RoutingKey != "order.created" || it.Consumer != "inventory-service" ||
		it.Locator != strings.TrimPrefix(a.Locator, "discard:") || plan.Source.Queue != "orders.dlq" {
		t.Fatalf("item %+v (archived locator %s)", it, a.Locator)
	}
	job, err = e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: ops1, Reason: "fixed in 4.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitJob(t, e, job.ID); done.Status != replay.JobDone || done.Published != 1 {
		t.Fatalf("job %+v", done)
	}
	w.waitDepth(t, "orders.work", 1)
	got := w.drain(t, "orders.work")
	if len(got) != 1 || got[0].MessageId != "m-0" || got[0].Headers["x-death"] != nil || got[0].Headers[replay.HeaderReplayID] != job.ID ||
		got[0].Headers[replay.HeaderSource] != "archive/"+strconv.FormatInt(a.ID, 10) || string(got[0].Body) != string(a.Body) {
		t.Fatalf("on the original queue: %+v", got)
	}
	if w.depth(t, "orders.dlq") != 0 {
		t.Fatal("a replay from the archive put something in the DLQ")
	}
	after, err := w.store.ArchivedMessageByID(ctx, a.ID)
	if err != nil || after.RestoredAt == nil || after.RestoredTo != replay.RestoredToOriginal || after.RestoredBy != "alice" {
		t.Fatalf("the archive row: %+v %v", after, err)
	}
	if _, err := e.Plan(ctx, "alice", replay.Source{Kind: "archive", ArchiveID: a.ID}, replay.Filter{}); !errors.Is(err, ops.ErrConflict) ||
		!strings.Contains(err.Error(), "restored already") || strings.HasPrefix(ops.Message(err), "conflict") {
		t.Fatalf("a second replay of it: %v (a person reads %q)", err, ops.Message(err))
	}
	_, err = w.store.RestoreArchived(ctx, a.ID, "bob", "dlq", func(replay.Archived) error { t.Fatal("published twice"); return nil })
	if !errors.Is(err, ops.ErrConflict) {
		t.Fatalf("a restore to the DLQ after the replay: %v", err)
	}

	// The consumer's inbox processed m-2: the plan skips it, like any replay.
	plan, err = e.Plan(ctx, "alice", replay.Source{Kind: "archive", ArchiveID: byID["m-2"].ID}, replay.Filter{})
	if err != nil || plan.Counts[replay.SkipProcessed] != 1 {
		t.Fatalf("the processed one: %v %+v", err, plan.Counts)
	}
}
