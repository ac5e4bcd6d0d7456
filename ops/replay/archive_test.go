package replay_test

// Discard (archive, then ack) and the archive's way back: a replay to the original destination.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

// A discard plan selects like a replay plan, asks no inbox (processed messages are discarded
// too), waits for a second operator above the four-eyes threshold, and its job archives every
// message before acking it: the queue ends empty and the archive holds each message once.
func TestDiscardArchivesThenAcksAboveFourEyes(t *testing.T) {
	w := newRabbitWorld(t)
	w.deadLetter(t, 6)
	e := w.engineWith(t, replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 1000, FourEyes: foureyes.Settings{Enabled: true, Threshold: 5}})
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

// A discard's copies come back too when the broker loses its acks: the archive has them, so a
// discard plan of the queue drops them (drop_replayed_copy) and archives only the fresh one; the
// archive keeps each message once.
func TestDiscardCopiesOfArchivedMessagesAreDropped(t *testing.T) {
	const n = 50
	w := newRabbitWorld(t)
	ctx := ctxT(t)
	bare := func(id string) { // no x-death: a replay could not route it, a discard takes it all the same
		t.Helper()
		w.putDLQ(t, amqp.Publishing{MessageId: id, DeliveryMode: amqp.Persistent, Body: []byte(`{"messageId":"` + id + `"}`)})
	}
	w.fillDLQ(t, n)
	bare("bare-1")
	w.waitDepth(t, "orders.dlq", n+1)
	e := w.engine(t)
	work(t, e)
	src := replay.Source{Kind: "rabbitmq", Action: replay.ActionDiscard, Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 100}
	plan, err := e.Plan(ctx, "ops", src, replay.Filter{})
	if err != nil || plan.Counts[replay.Discard] != n+1 {
		t.Fatalf("discard plan %v %v", plan.Counts, err)
	}
	first := w.run(t, e, plan.ID)
	if first.Status != replay.JobDone || first.Published != n+1 {
		t.Fatalf("first discard %+v", first)
	}
	w.waitDepth(t, "orders.dlq", 0)
	w.fillDLQ(t, n) // the copies, as the broker had them
	bare("bare-1")
	bare("fresh")
	w.waitDepth(t, "orders.dlq", n+2)
	plan, err = e.Plan(ctx, "ops", src, replay.Filter{})
	if err != nil || plan.Counts[replay.DropReplayedCopy] != n+1 || plan.Counts[replay.Discard] != 1 {
		t.Fatalf("discard plan of the copies: %v %v; want %d drop_replayed_copy and 1 discard", plan.Counts, err, n+1)
	}
	second := w.run(t, e, plan.ID)
	if second.Status != replay.JobDone || second.Published != 1 || second.Skipped != n+1 {
		t.Fatalf("second discard %+v", second)
	}
	w.waitDepth(t, "orders.dlq", 0)
	archived, err := w.store.ArchivedMessages(ctx, replay.ArchiveFilter{Queue: "orders.dlq"})
	if err != nil || len(archived) != n+2 {
		t.Fatalf("archive: %d rows, %v; want %d, each message once", len(archived), err, n+2)
	}
	ledger, err := e.Ledger(ctx, second.ID, 3)
	if err != nil || len(ledger) == 0 || !strings.Contains(ledger[0].Detail, "drop_replayed_copy (job "+first.ID+" archived it)") {
		t.Fatalf("second discard's ledger %+v, %v", ledger, err)
	}
}

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
	byID := w.discardAll(t, e, 3)
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
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: ops1, Reason: "fixed in 4.2.1"})
	if job.Status != replay.JobDone || job.Published != 1 {
		t.Fatalf("job %+v", job)
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

// An archived message whose original routing key is not UTF-8 is restored to nowhere: the plan
// reads the key byte for byte from the archived x-death (the archive's columns hold the display
// form, "qa3.\uFFFD") and skips it as unresolvable, as a replay from the queue does. It used to be
// published to the display form; the message stays in the archive, unrestored.
func TestArchiveRestoreKeepsARoutingKeyThatIsNotUTF8(t *testing.T) {
	w := newRabbitWorld(t)
	w.putDLQ(t,
		amqp.Publishing{MessageId: "bytes", Headers: amqp.Table{"x-death": deathOf("qa3.\xff")}, Body: []byte(`{}`)},
		amqp.Publishing{MessageId: "text", Headers: amqp.Table{"x-death": deathOf("order.created")}, Body: []byte(`{}`)})
	w.waitDepth(t, "orders.dlq", 2)
	e := w.engine(t)
	ctx := ctxT(t)
	work(t, e)
	discard := w.planDiscard(t, e)
	alice := access.Actor{Name: "alice", Role: access.Operator}
	if job := runJob(t, e, replay.StartRequest{PlanID: discard.ID, Actor: alice, Reason: "poison"}); job.Published != 2 {
		t.Fatalf("discard: %+v", job)
	}
	archived, err := w.store.ArchivedMessages(ctx, replay.ArchiveFilter{Queue: "orders.dlq"})
	if err != nil || len(archived) != 2 {
		t.Fatalf("archive: %d %v", len(archived), err)
	}
	for _, a := range archived {
		plan, err := e.Plan(ctx, "alice", replay.Source{Kind: "archive", ArchiveID: a.ID}, replay.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		it := plan.Items[0]
		switch a.MessageID {
		case "bytes":
			if it.Action != replay.SkipUnresolvable || it.Destination.RoutingKey != "" || !strings.Contains(it.Note, `qa3.\xff`) {
				t.Fatalf("the key that is not UTF-8: %s to %q (%s); want skipped as unresolvable", it.Action, it.Destination.RoutingKey, it.Note)
			}
			if job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: alice, Reason: "restore"}); job.Published != 0 || job.Skipped != 1 {
				t.Fatalf("its job: %+v", job)
			}
			if after, err := w.store.ArchivedMessageByID(ctx, a.ID); err != nil || after.RestoredAt != nil {
				t.Fatalf("the archive row after a skip: %+v %v", after, err)
			}
		case "text":
			if it.Action != replay.Publish || it.Destination.RoutingKey != "order.created" || it.Destination.Exchange != "orders" {
				t.Fatalf("the UTF-8 key: %s to %+v", it.Action, it.Destination)
			}
		}
	}
}

// A message restored from the archive to its DLQ is a dead letter there again, not a copy of the
// archived one: the next discard of the queue archives it again (a second archive row, not
// restored) and leaves the queue empty, and a replay of the queue publishes it once. The restored
// copy used to share the archived message's locator, which the first discard holds, so the next
// discard planned it drop_replayed_copy and acked it away without archiving it: lost.
func TestArchiveRestoredToDLQIsADeadLetterAgain(t *testing.T) {
	w := newRabbitWorld(t)
	w.deadLetter(t, 2) // m-0 is discarded again after its restore, m-1 replayed
	e := w.engine(t)
	ctx := ctxT(t)
	work(t, e)
	alice := access.Actor{Name: "alice", Role: access.Operator}
	first := w.discardAll(t, e, 2)
	w.waitDepth(t, "orders.dlq", 0)
	restore := func(a replay.Archived) {
		t.Helper()
		_, err := w.store.RestoreArchived(ctx, a.ID, "bob", "dlq", func(m replay.Archived) error {
			props, err := rabbit.PropertiesFromMap(m.Properties)
			if err != nil {
				return err
			}
			return w.broker.RestoreToQueue(ctx, m.Vhost, m.Queue, rabbit.Whole{Properties: props, Headers: m.HeadersWire, Body: m.Body}, m.ID)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	restore(first["m-0"])
	w.waitDepth(t, "orders.dlq", 1)

	plan := w.planDiscard(t, e)
	if plan.Total != 1 || plan.Counts[replay.Discard] != 1 {
		t.Fatalf("the discard of the restored message: %v; want it archived again, not dropped as a copy", plan.Counts)
	}
	if job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: alice, Reason: "still poison"}); job.Published != 1 || job.Skipped != 0 {
		t.Fatalf("the second discard: %+v", job)
	}
	w.waitDepth(t, "orders.dlq", 0)
	again, err := w.store.ArchivedMessages(ctx, replay.ArchiveFilter{Queue: "orders.dlq"})
	if err != nil || len(again) != 3 {
		t.Fatalf("archive after the second discard: %d rows, %v; want 3", len(again), err)
	}
	var m0 []replay.Archived
	for _, a := range again {
		if a.MessageID == "m-0" {
			m0 = append(m0, a)
		}
	}
	if len(m0) != 2 || m0[0].RestoredAt != nil || m0[1].RestoredTo != "dlq" || string(m0[0].Body) != string(first["m-0"].Body) ||
		m0[0].Headers[rabbit.HeaderRestoredFrom] != "archive/"+strconv.FormatInt(first["m-0"].ID, 10) {
		t.Fatalf("m-0 in the archive: %+v; want the restored row and a new one, not restored", m0)
	}

	// The other way: restored, then replayed from the queue to its original destination: once.
	restore(first["m-1"])
	w.waitDepth(t, "orders.dlq", 1)
	replayPlan := w.planQueue(t, e, 10, replay.Filter{})
	if replayPlan.Counts[replay.Publish] != 1 {
		t.Fatalf("the replay of the restored message: %v", replayPlan.Counts)
	}
	if job := w.run(t, e, replayPlan.ID); job.Published != 1 {
		t.Fatalf("the replay: %+v", job)
	}
	w.waitDepth(t, "orders.work", 1)
	got := w.drain(t, "orders.work")
	if len(got) != 1 || got[0].MessageId != "m-1" || got[0].Headers[rabbit.HeaderRestoredFrom] != nil {
		t.Fatalf("on the original queue: %+v; want m-1 once, without the restore's mark", got)
	}
	if w.depth(t, "orders.dlq") != 0 {
		t.Fatal("the replayed message stayed in the DLQ")
	}
	if _, err := e.Plan(ctx, "alice", replay.Source{Kind: "archive", ArchiveID: first["m-1"].ID}, replay.Filter{}); !errors.Is(err, ops.ErrConflict) {
		t.Fatalf("its archive row replayed after its restore: %v", err)
	}
}

// planDiscard plans the discard of what orders.dlq holds, as alice.
func (w *rabbitWorld) planDiscard(t testing.TB, e *replay.Engine) replay.Plan {
	t.Helper()
	plan, err := e.Plan(ctxT(t), "alice", replay.Source{Kind: "rabbitmq", Action: replay.ActionDiscard, Broker: "test", Vhost: w.vhost,
		Queue: "orders.dlq", Limit: 10}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// discardAll discards the n messages orders.dlq holds, as alice, and returns the archive's rows of
// the queue by message id.
func (w *rabbitWorld) discardAll(t testing.TB, e *replay.Engine, n int) map[string]replay.Archived {
	t.Helper()
	if job := runJob(t, e, replay.StartRequest{PlanID: w.planDiscard(t, e).ID, Actor: access.Actor{Name: "alice", Role: access.Operator},
		Reason: "poison"}); job.Published != n {
		t.Fatalf("discard: %+v", job)
	}
	archived, err := w.store.ArchivedMessages(ctxT(t), replay.ArchiveFilter{Queue: "orders.dlq"})
	if err != nil || len(archived) != n {
		t.Fatalf("archive: %d %v", len(archived), err)
	}
	byID := map[string]replay.Archived{}
	for _, a := range archived {
		byID[a.MessageID] = a
	}
	return byID
}

// One restore of an archived message at a time: while a replay job restores it to its original
// destination (here awaiting a second person's approval), another restore is refused either way
// before it plans or publishes anything, naming that job; approved, the job restores it once.
func TestArchiveRestoreRefusedWhileAJobRestoresIt(t *testing.T) {
	w := newRabbitWorld(t)
	w.deadLetter(t, 1)
	e := w.engineWith(t, replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 1000, FourEyes: foureyes.Settings{Enabled: true, Threshold: 0}})
	ctx := ctxT(t)
	work(t, e)
	plan := w.planDiscard(t, e)
	alice, bob := access.Actor{Name: "alice", Role: access.Operator}, access.Actor{Name: "bob", Role: access.Operator}
	approve := func(id string) replay.Job {
		t.Helper()
		if _, err := e.Approve(ctx, id, bob); err != nil {
			t.Fatal(err)
		}
		return waitJob(t, e, id)
	}
	discard, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: alice, Reason: "poison"})
	if err != nil || approve(discard.ID).Published != 1 {
		t.Fatalf("discard: %+v %v", discard, err)
	}
	archived, err := w.store.ArchivedMessages(ctx, replay.ArchiveFilter{Queue: "orders.dlq"})
	if err != nil || len(archived) != 1 {
		t.Fatalf("archive: %d %v", len(archived), err)
	}
	src := replay.Source{Kind: "archive", ArchiveID: archived[0].ID}
	if plan, err = e.Plan(ctx, "alice", src, replay.Filter{}); err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: alice, Reason: "fixed"})
	if err != nil || job.Status != replay.JobAwaiting {
		t.Fatalf("the restore's job: %+v %v", job, err)
	}
	want := "is being restored to its original destination by replay job " + job.ID + " (awaiting approval)"
	if _, err := e.Plan(ctx, "carol", src, replay.Filter{}); !errors.Is(err, ops.ErrConflict) || !strings.Contains(ops.Message(err), want) {
		t.Fatalf("a second restore to the original: %v", err)
	}
	_, err = w.store.RestoreArchived(ctx, archived[0].ID, "carol", "dlq", func(replay.Archived) error { t.Fatal("published"); return nil })
	if !errors.Is(err, ops.ErrConflict) || !strings.Contains(ops.Message(err), want) {
		t.Fatalf("a restore to the DLQ meanwhile: %v", err)
	}
	if done := approve(job.ID); done.Status != replay.JobDone || done.Published != 1 {
		t.Fatalf("the restore's job: %+v", done)
	}
	w.waitDepth(t, "orders.work", 1)
	if after, err := w.store.ArchivedMessageByID(ctx, archived[0].ID); err != nil || after.RestoredTo != replay.RestoredToOriginal || after.Restoring != "" {
		t.Fatalf("the archive row: %+v %v", after, err)
	}
}

// A restore to the original destination publishes and records the message restored, and then
// the job's settle does not reach the store: the retry resumes the claim and finds the message
// restored — by this job's own earlier run. It is published, once; it used to be settled failed,
// "restored already", though it was on the original queue.
func TestArchiveRestoreResumedAfterItsRecordIsPublished(t *testing.T) {
	w := newRabbitWorld(t)
	w.deadLetter(t, 1)
	e := w.engine(t)
	stop := work(t, e)
	a := w.discardAll(t, e, 1)["m-0"]
	stop()
	st := &settleFailsOnce{Store: w.store}
	e = w.engineOnStore(t, st, replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 1000}, w.broker, nil)
	work(t, e)
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "alice", replay.Source{Kind: "archive", ArchiveID: a.ID}, replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != 1 {
		t.Fatalf("plan: %v %+v", err, plan.Counts)
	}
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, Reason: "fixed"})
	if st.calls.Load() < 2 {
		t.Fatalf("%d settles; the first should have failed and the retry settled", st.calls.Load())
	}
	if job.Status != replay.JobDone || job.Published != 1 || job.Failed != 0 {
		t.Fatalf("job %s: %d published, %d failed (%s); want done, 1 published", job.Status, job.Published, job.Failed, job.Error)
	}
	entries, err := e.Ledger(ctx, job.ID, 10)
	if err != nil || len(entries) != 1 || entries[0].Outcome != replay.LedgerPublished {
		t.Fatalf("ledger %+v, %v; want the message published", entries, err)
	}
	t.Logf("ledger: %s", entries[0].Detail)
	w.waitDepth(t, "orders.work", 1)
	time.Sleep(200 * time.Millisecond)
	if got := w.drain(t, "orders.work"); len(got) != 1 || got[0].MessageId != "m-0" {
		t.Fatalf("on the original queue: %d messages; want m-0 once", len(got))
	}
}

// A RabbitMQ dead letter is one message to a replay and to a discard alike: a copy the broker
// returned after losing a discard's ack is not replayed — the operator chose to drop it, and the
// archive holds it — and a copy of a replayed one is not archived; both are removed as copies
// (drop_replayed_copy, naming the job). A replay plan made before the discard ran is checked again
// at run time: it publishes nothing of what the discard archived meanwhile. A replay plan used to
// look only at replays' ledger rows and published the discarded message to its consumer.
func TestCopiesAcrossReplayAndDiscard(t *testing.T) {
	const n = 5
	w := newRabbitWorld(t)
	e := w.engine(t)
	work(t, e)
	ctx := ctxT(t)
	discardSrc := replay.Source{Kind: "rabbitmq", Action: replay.ActionDiscard, Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 100}
	discard := func() replay.Job {
		t.Helper()
		plan, err := e.Plan(ctx, "ops", discardSrc, replay.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return w.run(t, e, plan.ID)
	}
	ids := func(prefix string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%d", prefix, i)
		}
		return out
	}
	archivedCount := func() int {
		t.Helper()
		a, err := w.store.ArchivedMessages(ctx, replay.ArchiveFilter{Queue: "orders.dlq"})
		if err != nil {
			t.Fatal(err)
		}
		return len(a)
	}

	t.Run("ArchivedIsNotReplayed", func(t *testing.T) {
		w.putDead(t, ids("d")...)
		w.waitDepth(t, "orders.dlq", n)
		first := discard()
		if first.Status != replay.JobDone || first.Published != n {
			t.Fatalf("discard %+v", first)
		}
		w.putDead(t, ids("d")...) // the copies, as a broker that lost the acks has them
		w.waitDepth(t, "orders.dlq", n)
		plan := w.planQueue(t, e, 100, replay.Filter{})
		if plan.Counts[replay.DropReplayedCopy] != n || plan.Counts[replay.Publish] != 0 {
			t.Fatalf("replay plan of the discard's copies %v; want %d drop_replayed_copy, nothing to publish", plan.Counts, n)
		}
		job := w.run(t, e, plan.ID)
		if job.Status != replay.JobDone || job.Published != 0 || job.Skipped != n {
			t.Fatalf("replay of the copies %+v", job)
		}
		w.waitDepth(t, "orders.dlq", 0)
		if got := w.drain(t, "orders.work"); len(got) != 0 {
			t.Fatalf("%d discarded messages reached the consumer's queue", len(got))
		}
		ledger, err := e.Ledger(ctx, job.ID, 1)
		if err != nil || len(ledger) == 0 || !strings.Contains(ledger[0].Detail, "(job "+first.ID+" archived it)") {
			t.Fatalf("ledger %+v, %v; want the copy named as the discard's", ledger, err)
		}
		if a := archivedCount(); a != n {
			t.Fatalf("archive holds %d; want %d", a, n)
		}
	})

	t.Run("ReplayedIsNotArchived", func(t *testing.T) {
		w.putDead(t, ids("r")...)
		w.waitDepth(t, "orders.dlq", n)
		first := w.run(t, e, w.planQueue(t, e, 100, replay.Filter{}).ID)
		if first.Status != replay.JobDone || first.Published != n {
			t.Fatalf("replay %+v", first)
		}
		w.waitDepth(t, "orders.work", n)
		w.drain(t, "orders.work")
		w.putDead(t, ids("r")...)
		w.waitDepth(t, "orders.dlq", n)
		plan, err := e.Plan(ctx, "ops", discardSrc, replay.Filter{})
		if err != nil || plan.Counts[replay.DropReplayedCopy] != n || plan.Counts[replay.Discard] != 0 {
			t.Fatalf("discard plan of the replay's copies %v, %v; want %d drop_replayed_copy", plan.Counts, err, n)
		}
		job := w.run(t, e, plan.ID)
		if job.Status != replay.JobDone || job.Published != 0 || job.Skipped != n {
			t.Fatalf("discard of the copies %+v", job)
		}
		w.waitDepth(t, "orders.dlq", 0)
		if a := archivedCount(); a != n {
			t.Fatalf("archive holds %d; want the %d of the first part only", a, n)
		}
	})

	t.Run("APlanMadeBeforeTheDiscard", func(t *testing.T) {
		w.putDead(t, ids("s")...)
		w.waitDepth(t, "orders.dlq", n)
		stale := w.planQueue(t, e, 100, replay.Filter{})
		if stale.Counts[replay.Publish] != n {
			t.Fatalf("replay plan %v", stale.Counts)
		}
		if d := discard(); d.Published != n {
			t.Fatalf("discard %+v", d)
		}
		w.putDead(t, ids("s")...)
		w.waitDepth(t, "orders.dlq", n)
		job := w.run(t, e, stale.ID)
		if job.Status != replay.JobDone || job.Published != 0 || job.Skipped != n {
			t.Fatalf("the stale replay %+v; want %d skipped, nothing published", job, n)
		}
		ledger, err := e.Ledger(ctx, job.ID, 1)
		if err != nil || len(ledger) == 0 || !strings.Contains(ledger[0].Detail, "archived it since the plan was made") {
			t.Fatalf("ledger %+v, %v", ledger, err)
		}
		time.Sleep(200 * time.Millisecond)
		if got := w.drain(t, "orders.work"); len(got) != 0 {
			t.Fatalf("%d discarded messages reached the consumer's queue", len(got))
		}
		if d := w.depth(t, "orders.dlq"); d != n {
			t.Fatalf("the queue holds %d; want the %d copies kept for a new plan", d, n)
		}
		if p := w.planQueue(t, e, 100, replay.Filter{}); p.Counts[replay.DropReplayedCopy] != n {
			t.Fatalf("a new plan %v; want the copies dropped", p.Counts)
		}
	})
}
