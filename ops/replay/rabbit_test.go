package replay_test

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

func TestRabbitReplayPublishesConfirmedThenAcks(t *testing.T) {
	w := newRabbitWorld(t)
	w.deadLetter(t, 10)
	for _, id := range []string{"m-1", "m-4"} {
		pgtest.Exec(t, w.inboxDSN, `INSERT INTO inbox_message VALUES ($1, 'inventory-service', now(), now())`, id)
	}
	e := w.engine(t)
	plan := w.planQueue(t, e, 100, replay.Filter{})
	if plan.Total != 10 || plan.Counts[replay.Publish] != 8 || plan.Counts[replay.SkipProcessed] != 2 {
		t.Fatalf("plan %v", plan.Counts)
	}
	if d := plan.Items[0].Destination; d.Exchange != "orders" || d.RoutingKey != "order.created" || plan.Items[0].Consumer != "inventory-service" {
		t.Fatalf("destination %+v consumer %q", d, plan.Items[0].Consumer)
	}
	if w.depth(t, "orders.dlq") != 10 {
		t.Fatal("planning must not move anything")
	}
	work(t, e)
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1000})
	if job.Status != replay.JobDone || job.Published != 8 || job.Skipped != 2 || job.Failed != 0 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.work", 8)
	w.waitDepth(t, "orders.dlq", 2)
	for _, d := range w.drain(t, "orders.work") {
		if d.MessageId == "m-1" || d.MessageId == "m-4" {
			t.Fatalf("processed message %s was replayed", d.MessageId)
		}
		if d.Headers[replay.HeaderReplayCount] != "1" || d.Headers["x-death"] != nil || d.DeliveryMode != amqp.Persistent {
			t.Fatalf("replayed message headers %v, mode %d", d.Headers, d.DeliveryMode)
		}
	}
	left := w.drain(t, "orders.dlq")
	if len(left) != 2 || left[0].MessageId != "m-1" || left[1].MessageId != "m-4" {
		t.Fatalf("kept messages %v: must stay in order", ids(left))
	}
}

// A RabbitMQ replay puts the messages back in the order the DLQ holds them: a consumer that
// relies on a queue's order (a single active consumer; "created" before "updated" of one order)
// sees them as it would have the first time. The replay once shared each batch between two
// publishing channels, which the broker confirms and enqueues independently, so neighbours
// arrived swapped.
func TestRabbitReplayKeepsTheDLQsOrder(t *testing.T) {
	const n = 3000
	w, e := newFilledRabbitWorld(t, n)
	work(t, e)
	if job := w.run(t, e, w.planQueue(t, e, n, replay.Filter{}).ID); job.Status != replay.JobDone || job.Published != n {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.work", n)
	got := w.drain(t, "orders.work")
	if len(got) != n {
		t.Fatalf("%d on orders.work; want %d", len(got), n)
	}
	swapped := 0
	for i, d := range got {
		if d.MessageId != fmt.Sprintf("m-%d", i) {
			if swapped == 0 {
				t.Errorf("position %d holds %s; want m-%d", i, d.MessageId, i)
			}
			swapped++
		}
	}
	if swapped > 0 {
		t.Errorf("%d of %d messages out of the DLQ's order", swapped, n)
	}
}

func TestRabbitUnroutableStaysInTheDLQ(t *testing.T) {
	w := newRabbitWorld(t)
	w.deadLetter(t, 3)
	if err := w.ch.QueueUnbind("orders.work", "order.created", "orders", nil); err != nil {
		t.Fatal(err)
	}
	e := w.engine(t)
	plan := w.planQueue(t, e, 10, replay.Filter{})
	work(t, e)
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}})
	if job.Failed != 3 || job.Published != 0 {
		t.Fatalf("job %+v", job)
	}
	ledger, _ := e.Ledger(ctxT(t), job.ID, 10)
	if len(ledger) != 3 || !contains([]string{ledger[0].Detail}, "unroutable") {
		t.Fatalf("ledger %+v", ledger)
	}
	w.waitDepth(t, "orders.dlq", 3)
	if got := ids(w.drain(t, "orders.dlq")); fmt.Sprint(got) != "[m-0 m-1 m-2]" {
		t.Fatalf("DLQ after the failed replay: %v", got)
	}
}

func TestRabbitCancelStopsWithinABatch(t *testing.T) {
	w := newRabbitWorld(t)
	w.deadLetter(t, 60)
	e := w.engine(t)
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "ops", replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 100}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 10}) // 10/s: batches of 10
	if err != nil {
		t.Fatal(err)
	}
	work(t, e)
	waitPublished(t, e, job.ID, 1, 30*time.Second)
	if _, err := e.Cancel(ctx, job.ID, access.Actor{Name: "ops", Role: access.Admin}); err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, e, job.ID)
	if job.Status != replay.JobCancelled || job.Published == 0 || job.Published > 40 {
		t.Fatalf("cancelled job %+v", job)
	}
	// Nothing lost, nothing doubled: every message is in exactly one of the two queues.
	work, dlq := w.depth(t, "orders.work"), w.depth(t, "orders.dlq")
	if work != job.Published || work+dlq != 60 {
		t.Fatalf("work %d + dlq %d after cancel, published %d", work, dlq, job.Published)
	}
}

// 70,000 selected messages: more than basic.qos's 16-bit prefetch can hold unacked (it once
// wrapped to 4,464). The plan sees them all and the job moves them all.
func TestRabbitReplayPastThePrefetchLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("70,000 messages")
	}
	const n = 70_000
	w, e := newFilledRabbitWorld(t, n)
	plan := w.planQueue(t, e, n, replay.Filter{})
	if plan.Total != n || plan.Source.Span != n {
		t.Fatalf("plan holds %d messages over a span of %d, want %d", plan.Total, plan.Source.Span, n)
	}
	w.waitDepth(t, "orders.dlq", n) // planning moved nothing
	work(t, e)
	job := w.run(t, e, plan.ID)
	if job.Status != replay.JobDone || job.Published != n || job.Failed != 0 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.work", n)
	w.waitDepth(t, "orders.dlq", 0)
}

// A filter that selects the last 5 of 100,000: the plan reads the whole head, the job reads the
// same span and moves exactly those 5; the other 99,995 stay, in order.
func TestRabbitReplayOfTheLastFiveOfAHundredThousand(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 messages")
	}
	const n = 100_000
	w, e := newFilledRabbitWorld(t, n)
	var last []string
	for i := n - 5; i < n; i++ {
		last = append(last, fmt.Sprintf("m-%d", i))
	}
	plan := w.planQueue(t, e, n, replay.Filter{MessageIDs: last})
	if plan.Total != 5 || plan.Source.Span != n {
		t.Fatalf("plan of %d over a span of %d", plan.Total, plan.Source.Span)
	}
	work(t, e)
	job := w.run(t, e, plan.ID)
	if job.Status != replay.JobDone || job.Published != 5 || job.Failed != 0 {
		ledger, _ := e.Ledger(ctxT(t), job.ID, 5)
		t.Fatalf("job %+v; ledger %+v", job, ledger)
	}
	w.waitDepth(t, "orders.dlq", n-5)
	var got []string
	for _, d := range w.drain(t, "orders.work") {
		got = append(got, d.MessageId)
	}
	slices.Sort(got) // which ones were published; their order is TestRabbitReplayKeepsTheDLQsOrder's
	if fmt.Sprint(got) != fmt.Sprint(last) {
		t.Fatalf("published %v, want %v", got, last)
	}
	head, err := w.broker.Browse(ctxT(t), w.vhost, "orders.dlq", 3)
	if err != nil || len(head.Messages) != 3 || head.Messages[0].MessageID != "m-0" || head.Messages[2].MessageID != "m-2" {
		t.Fatalf("the queue's head after the job: %+v, %v", head.Messages, err)
	}
}

// A plan run a second time: what the first job published is skip_already_replayed, naming the
// job, never "failed: not found in the queue"; nothing is published twice.
func TestRabbitPlanRunTwice(t *testing.T) {
	w, e := newFilledRabbitWorld(t, 180)
	plan := w.planQueue(t, e, 500, replay.Filter{})
	work(t, e)
	first := w.run(t, e, plan.ID)
	if first.Published != 180 {
		t.Fatalf("first run %+v", first)
	}
	second := w.run(t, e, plan.ID)
	if second.Status != replay.JobDone || second.Published != 0 || second.Failed != 0 || second.Skipped != 180 {
		t.Fatalf("second run %+v", second)
	}
	ledger, err := e.Ledger(ctxT(t), second.ID, 5)
	if err != nil || len(ledger) == 0 || !strings.Contains(ledger[0].Detail, "skip_already_replayed") ||
		!strings.Contains(ledger[0].Detail, first.ID) {
		t.Fatalf("second run's ledger %+v, %v: want skip_already_replayed naming %s", ledger, err, first.ID)
	}
	w.waitDepth(t, "orders.work", 180)
}

// Twenty operators plan the same queue at once: every plan sees every message.
func TestRabbitTwentyConcurrentPlans(t *testing.T) {
	w, e := newFilledRabbitWorld(t, 40)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			plan, err := e.Plan(ctxT(t), "ops", replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 100}, replay.Filter{})
			if err == nil && plan.Total != 40 {
				err = fmt.Errorf("a plan holds %d of 40 messages", plan.Total)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	w.waitDepth(t, "orders.dlq", 40)
}

// A broker killed before it wrote a job's acks to disk returns messages the job already replayed
// (AMQP acks are not confirmed). Planning the queue again names them drop_replayed_copy: the job
// acks them and publishes nothing, while the fresh dead letters among them are replayed. Counted
// with the test's own AMQP client; across batches (1,000), and a second time with only copies.
func TestRabbitCopiesOfConfirmedReplaysAreDropped(t *testing.T) {
	const n, every = 2_500, 100
	w := newRabbitWorld(t)
	e := w.engine(t)
	first := w.replayed(t, e, n)

	// The copies come back as the broker had them (same id, x-death, no replay count yet), with a
	// fresh dead letter after every 100th.
	ctx := ctxT(t)
	put := func(id string) { t.Helper(); w.putDead(t, id) }
	for i := range n {
		put(fmt.Sprintf("m-%d", i))
		if i%every == every-1 {
			put(fmt.Sprintf("fresh-%d", i))
		}
	}
	fresh := n / every
	w.waitDepth(t, "orders.dlq", n+fresh)

	plan := w.planQueue(t, e, n+fresh, replay.Filter{})
	if plan.Counts[replay.DropReplayedCopy] != n || plan.Counts[replay.Publish] != fresh || plan.Total != n+fresh {
		t.Fatalf("plan of the returned copies: %v; want %d drop_replayed_copy and %d publish", plan.Counts, n, fresh)
	}
	second := w.run(t, e, plan.ID)
	if second.Status != replay.JobDone || second.Published != fresh || second.Skipped != n || second.Failed != 0 {
		t.Fatalf("second job %+v; want %d published, %d skipped (the copies)", second, fresh, n)
	}
	w.waitDepth(t, "orders.dlq", 0)
	w.waitDepth(t, "orders.work", n+fresh) // nothing was sent twice
	ledger, err := e.Ledger(ctx, second.ID, 3)
	if err != nil || len(ledger) == 0 || !strings.Contains(ledger[0].Detail, "drop_replayed_copy (job "+first.ID) {
		t.Fatalf("second job's ledger %+v, %v: want drop_replayed_copy naming job %s", ledger, err, first.ID)
	}

	// An edit means to send a new version: its message, a copy or not, is never dropped in its place.
	put("m-7")
	w.waitDepth(t, "orders.dlq", 1)
	// Planned right after the job: the browse waits out the statistics that still count what it held.
	edit, err := e.Plan(ctx, "ops", replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 10,
		Edit: &replay.Edit{SetHeaders: map[string]string{"x-fixed": "yes"}}}, replay.Filter{MessageIDs: []string{"m-7"}})
	if err != nil || edit.Counts[replay.DropReplayedCopy] != 0 || edit.Counts[replay.SkipAlreadyReplayed] != 1 {
		t.Fatalf("edit plan of a copy: %v, %v; want skip_already_replayed", edit.Counts, err)
	}
	w.purge(t, "orders.dlq")

	// Again, with copies only: no batch moves anything, the job's last sweep drops them.
	for i := range every {
		put(fmt.Sprintf("m-%d", i))
	}
	w.waitDepth(t, "orders.dlq", every)
	plan = w.planQueue(t, e, every, replay.Filter{})
	if plan.Counts[replay.DropReplayedCopy] != every || plan.Counts[replay.Publish] != 0 {
		t.Fatalf("plan of copies only: %v", plan.Counts)
	}
	if third := w.run(t, e, plan.ID); third.Status != replay.JobDone || third.Published != 0 || third.Skipped != every {
		t.Fatalf("third job %+v", third)
	}
	w.waitDepth(t, "orders.dlq", 0)
	w.waitDepth(t, "orders.work", n+fresh)
}

// A plan whose messages include one dead-lettered from an exchange deleted since: that one fails
// with the reason and stays in the DLQ, and the rest of its batch is published once — a publish to
// a missing exchange closes the channel, which once made the batch's outcome unknown, the job
// retried it and published the messages before the bad one again each time. Counted with the
// test's own AMQP client.
func TestRabbitMissingExchangeFailsOnlyItsMessages(t *testing.T) {
	w := newRabbitWorld(t)
	ctx := ctxT(t)
	topo := rabbittest.Topology{TB: t, Ch: w.ch}
	topo.Exchange("gone", "direct")
	topo.Bind("orders.work", "order.created", "gone")
	via := []string{"orders", "orders", "gone", "orders", "orders"}
	for i, x := range via {
		id := fmt.Sprintf("m-%d", i)
		if err := w.ch.PublishWithContext(ctx, x, "order.created", false, false, amqp.Publishing{MessageId: id,
			DeliveryMode: amqp.Persistent, Body: []byte(fmt.Sprintf(`{"messageId":%q}`, id))}); err != nil {
			t.Fatal(err)
		}
	}
	w.waitDepth(t, "orders.work", len(via))
	for range via {
		d, ok, err := w.ch.Get("orders.work", false)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		if err := d.Reject(false); err != nil {
			t.Fatal(err)
		}
	}
	w.waitDepth(t, "orders.dlq", len(via))
	if err := w.ch.ExchangeDelete("gone", false, false); err != nil {
		t.Fatal(err)
	}
	e := w.engine(t)
	plan := w.planQueue(t, e, 10, replay.Filter{})
	if plan.Counts[replay.Publish] != len(via) {
		t.Fatalf("plan %v", plan.Counts)
	}
	work(t, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1000})
	if err != nil {
		t.Fatal(err)
	}
	job = waitJobState(t, e, job.ID, time.Minute, "the job finishes", func(j replay.Job) bool {
		return j.Status != replay.JobPending && j.Status != replay.JobRunning
	})
	if job.Status != replay.JobDone || job.Published != 4 || job.Failed != 1 {
		t.Fatalf("job %+v; want done, 4 published and 1 failed", job)
	}
	ledger, err := e.Ledger(ctx, job.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, l := range ledger {
		if l.Outcome == replay.LedgerFailed {
			failed++
			if l.MessageID != "m-2" || !strings.Contains(l.Detail, fmt.Sprintf(`exchange "gone" does not exist in vhost %q`, w.vhost)) {
				t.Errorf("failed entry %+v", l)
			}
		}
	}
	if failed != 1 {
		t.Fatalf("ledger %+v", ledger)
	}
	w.waitDepth(t, "orders.dlq", 1)
	if got := ids(w.drain(t, "orders.dlq")); fmt.Sprint(got) != "[m-2]" {
		t.Fatalf("DLQ: %v", got)
	}
	w.waitDepth(t, "orders.work", 4)
	got := ids(w.drain(t, "orders.work"))
	slices.Sort(got)
	if fmt.Sprint(got) != "[m-0 m-1 m-3 m-4]" {
		t.Fatalf("published %v: each once", got)
	}
}

// Two different messages under one id in a DLQ are two instances: both are planned and replayed
// (the consumer's inbox keeps the id from being applied twice), and neither is taken for a copy of
// the other — the second was once dropped as drop_replayed_copy, acked and lost. A byte-identical
// copy (what a broker returns after losing an ack) is still one and is dropped. Counted with the
// test's own AMQP client.
func TestRabbitSameIDOtherBodyIsNotACopy(t *testing.T) {
	w := newRabbitWorld(t)
	e := w.engine(t)
	work(t, e)
	one, two := []byte(`{"messageId":"dup","v":1}`), []byte(`{"messageId":"dup","v":2}`)
	w.putBody(t, "dup", one)
	w.putBody(t, "dup", two)
	w.waitDepth(t, "orders.dlq", 2)
	plan := w.planQueue(t, e, 10, replay.Filter{})
	if plan.Total != 2 || plan.Counts[replay.Publish] != 2 {
		t.Fatalf("plan %v of %d; want both messages published", plan.Counts, plan.Total)
	}
	if job := w.run(t, e, plan.ID); job.Status != replay.JobDone || job.Published != 2 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.dlq", 0)
	w.putBody(t, "dup", one) // the copy a broker returns
	w.putBody(t, "dup", []byte(`{"messageId":"dup","v":3}`))
	w.waitDepth(t, "orders.dlq", 2)
	plan = w.planQueue(t, e, 10, replay.Filter{})
	if plan.Counts[replay.DropReplayedCopy] != 1 || plan.Counts[replay.Publish] != 1 {
		t.Fatalf("plan %v; want the copy dropped and the new message published", plan.Counts)
	}
	if job := w.run(t, e, plan.ID); job.Status != replay.JobDone || job.Published != 1 || job.Skipped != 1 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.dlq", 0)
	w.waitDepth(t, "orders.work", 3)
	var bodies []string
	for _, d := range w.drain(t, "orders.work") {
		bodies = append(bodies, string(d.Body))
	}
	slices.Sort(bodies)
	if fmt.Sprint(bodies) != `[{"messageId":"dup","v":1} {"messageId":"dup","v":2} {"messageId":"dup","v":3}]` {
		t.Fatalf("replayed %v: want each message once", bodies)
	}
}

// A page cuts bodies larger than rabbit.MaxBodyBytes; its copy marks still compare whole bodies:
// a byte-identical copy of a replayed message is marked, another message under the same id whose
// first 256 KiB are the same is not.
func TestRabbitBrowseCopyMarksCompareWholeBodies(t *testing.T) {
	w := newRabbitWorld(t)
	e := w.engine(t)
	work(t, e)
	big := []byte(`{"messageId":"big","pad":"` + strings.Repeat("x", rabbit.MaxBodyBytes) + `"}`)
	w.putBody(t, "big", big)
	w.waitDepth(t, "orders.dlq", 1)
	if job := w.run(t, e, w.planQueue(t, e, 10, replay.Filter{}).ID); job.Status != replay.JobDone || job.Published != 1 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.dlq", 0)
	other := slices.Clone(big)
	other[len(other)-3] = 'y' // past the cut
	w.putBody(t, "big", other)
	w.putBody(t, "big", big) // the copy
	w.waitDepth(t, "orders.dlq", 2)
	ctx := ctxT(t)
	res, err := w.broker.Browse(ctx, w.vhost, "orders.dlq", 10)
	if err != nil || len(res.Messages) != 2 || !res.Messages[0].Truncated || !res.Messages[1].Truncated {
		t.Fatalf("browse: %d messages, %v", len(res.Messages), err)
	}
	copies, err := e.ReplayedCopies(ctx, "test", w.vhost, "orders.dlq", res.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if _, marked := copies[0]; marked || copies[1] == "" || len(copies) != 1 {
		t.Fatalf("copy marks %v; want only the second message (the copy) marked", copies)
	}
}

// A routing key that is not UTF-8 — a string, or a byte array in x-death — is seen by the plan as
// it is and skipped as skip_unresolvable with the bytes escaped in the note: it was once replaced
// (the plan published to "qa3.\uFFFD") or, as a byte array, read as "". The messages stay.
func TestRabbitRoutingKeyNotUTF8IsUnresolvable(t *testing.T) {
	w := newRabbitWorld(t)
	w.fillDLQ(t, 1)
	for _, key := range []any{"qa3.\xff", []byte("qa4.\xfe")} {
		w.putDLQ(t, amqp.Publishing{MessageId: fmt.Sprintf("%T", key), Headers: amqp.Table{"x-death": deathOf(key)}, Body: []byte(`{}`)})
	}
	w.waitDepth(t, "orders.dlq", 3)
	e := w.engine(t)
	plan := w.planQueue(t, e, 10, replay.Filter{})
	if plan.Total != 3 || plan.Counts[replay.Publish] != 1 || plan.Counts[replay.SkipUnresolvable] != 2 {
		t.Fatalf("plan %v of %d; want the two keys unresolvable", plan.Counts, plan.Total)
	}
	for i, want := range []string{`qa3.\xff`, `qa4.\xfe`} {
		if it := plan.Items[1+i]; it.Action != replay.SkipUnresolvable || !strings.Contains(it.Note, want) || it.Destination.RoutingKey != "" {
			t.Errorf("item %+v; want skipped with %s in its note", it, want)
		}
	}
	work(t, e)
	if job := w.run(t, e, plan.ID); job.Status != replay.JobDone || job.Published != 1 || job.Skipped != 2 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.work", 1)
	w.waitDepth(t, "orders.dlq", 2)
}

// The broker closes the replay's connection mid-job (an operator deletes it in the management UI,
// or the broker restarts): the job pauses with the reason, resumes on a new connection and ends
// with every message moved exactly where the ledger says — none lost, none reported missing.
func TestRabbitConnectionClosedMidJob(t *testing.T) {
	const n = 3000
	w, e := newFilledRabbitWorld(t, n)
	plan := w.planQueue(t, e, n, replay.Filter{})
	work(t, e)
	ctx := ctxT(t)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1500})
	if err != nil {
		t.Fatal(err)
	}
	mgmt := rabbittest.Admin(t)
	closed := 0
	// Close the job's connection after a third and after two thirds of the messages (or stop
	// trying once the job is over).
	waittest.Until(t, 30*time.Second, "two connections closed mid-job", func() bool {
		j, err := e.Job(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != replay.JobPending && j.Status != replay.JobRunning {
			return true
		}
		if j.Published < (closed+1)*n/3 {
			return false
		}
		conns, err := mgmt.ListConnections()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range conns {
			if c.Vhost == w.vhost && strings.HasPrefix(fmt.Sprint(c.ClientProperties["connection_name"]), "redrive console") {
				if _, err := mgmt.CloseConnection(c.Name); err == nil {
					closed++
				}
			}
		}
		return closed >= 2
	})
	j := waitJob(t, e, job.ID)
	if j.Status != replay.JobDone || j.Published != n || j.Failed != 0 {
		t.Fatalf("job %+v after %d closed connections", j, closed)
	}
	w.waitDepth(t, "orders.dlq", 0)
	seen := map[string]int{}
	for _, d := range w.drain(t, "orders.work") {
		seen[d.MessageId]++
	}
	if len(seen) != n {
		t.Fatalf("%d distinct messages reached orders.work, want %d", len(seen), n)
	}
	t.Logf("%d connections closed; %d duplicates (resumed in-flight batches)", closed, func() int {
		d := 0
		for _, c := range seen {
			d += c - 1
		}
		return d
	}())
}

// A job refreshes its plan's statistics (Store.AnalyzePlanItems) before its first look-up of the
// plan by locator, and only then: a queue that holds only the plan's messages, in its order, needs
// none — and an ANALYZE was a tenth of a clean job's PostgreSQL time — while a job that meets
// messages it does not move (here skipped as processed, in two batches) analyzes once.
func TestRabbitJobAnalyzesThePlanOnlyWhenItLooksUp(t *testing.T) {
	analyzed := func(t *testing.T, w *rabbitWorld) int64 {
		t.Helper()
		var n int64
		if err := w.store.Pool().QueryRow(ctxT(t), `SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'replay_plan_item'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const n = 2500 // three batches
	for _, c := range []struct {
		name      string
		processed []string
		analyzes  int64
	}{
		{"the plan's messages alone", nil, 0},
		{"messages it does not move", []string{"m-5", "m-1500"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, e := newFilledRabbitWorld(t, n)
			for _, id := range c.processed {
				pgtest.Exec(t, w.inboxDSN, `INSERT INTO inbox_message VALUES ($1, 'inventory-service', now(), now())`, id)
			}
			work(t, e)
			before := analyzed(t, w)
			job := w.run(t, e, w.planQueue(t, e, n, replay.Filter{}).ID)
			if want := n - len(c.processed); job.Status != replay.JobDone || job.Published != want || job.Skipped != len(c.processed) {
				t.Fatalf("job %+v; want done with %d published", job, want)
			}
			if got := analyzed(t, w) - before; got != c.analyzes {
				t.Fatalf("the job analyzed the plan items %d time(s); want %d", got, c.analyzes)
			}
			w.waitDepth(t, "orders.work", n-len(c.processed))
			w.waitDepth(t, "orders.dlq", len(c.processed))
		})
	}
}

// A stream is no source of a replay or a discard: it keeps its messages (a consumer reads it by
// offset, an ack removes nothing), and a job's consumer starts at its next message, not where the
// plan read — the job ended "done" with every item failed, or recorded as moved what stayed. The
// plan is refused, saying why, and the stream is left as it was.
func TestAStreamIsNoReplaySource(t *testing.T) {
	w := newRabbitWorld(t)
	if _, err := w.ch.QueueDeclare("orders.stream", true, false, false, false, amqp.Table{"x-queue-type": "stream"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s-1", "s-2"} {
		if err := w.ch.PublishWithContext(ctxT(t), "", "orders.stream", false, false, amqp.Publishing{MessageId: id, Body: []byte(id),
			Headers: amqp.Table{"x-death": deathOf("order.created")}}); err != nil {
			t.Fatal(err)
		}
	}
	e := w.engine(t)
	for _, action := range []string{replay.ActionReplay, replay.ActionDiscard} {
		_, err := e.Plan(ctxT(t), "ops", replay.Source{Kind: "rabbitmq", Action: action, Broker: "test", Vhost: w.vhost, Queue: "orders.stream", Limit: 10}, replay.Filter{})
		if !errors.Is(err, ops.ErrConflict) || !strings.Contains(ops.Message(err), "is a stream") {
			t.Errorf("%s plan of a stream: %v; want a conflict saying it is a stream", action, err)
		}
	}
}

// A dead letter its producer published under its own user_id is replayed by the console's user:
// RabbitMQ checks user_id against the publishing connection's user and closed the channel (406),
// so the batch's outcome was unknown and every retry sent its batch-mates again, for ever. The
// original user_id travels as a header; each message arrives once and the job ends.
func TestReplayOfAnotherUsersMessage(t *testing.T) {
	w := newRabbitWorld(t)
	mgmt := rabbittest.Admin(t)
	user := "producer-" + w.vhost
	if _, err := mgmt.PutUser(user, rabbithole.UserSettings{Password: "pw", Tags: rabbithole.UserTags{}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = mgmt.DeleteUser(user) })
	if _, err := mgmt.UpdatePermissionsIn(w.vhost, user, rabbithole.Permissions{Configure: ".*", Write: ".*", Read: ".*"}); err != nil {
		t.Fatal(err)
	}
	base, _ := rabbittest.Env(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.User, u.Path, u.RawPath = url.UserPassword(user, "pw"), "/"+w.vhost, "/"+url.PathEscape(w.vhost)
	_, pch := rabbittest.Channel(t, u.String())
	death := deathOf("order.created")
	for _, p := range []amqp.Publishing{
		{MessageId: "u-1", Body: []byte(`{"messageId":"u-1"}`), Headers: amqp.Table{"x-death": death}},
		{MessageId: "u-2", UserId: user, Body: []byte(`{"messageId":"u-2"}`), Headers: amqp.Table{"x-death": death}},
		{MessageId: "u-3", Body: []byte(`{"messageId":"u-3"}`), Headers: amqp.Table{"x-death": death}},
	} {
		if err := pch.PublishWithContext(ctxT(t), "", "orders.dlq", false, false, p); err != nil {
			t.Fatal(err)
		}
	}
	w.waitDepth(t, "orders.dlq", 3)
	e := w.engine(t)
	work(t, e)
	job := w.run(t, e, w.planQueue(t, e, 10, replay.Filter{}).ID)
	if job.Status != replay.JobDone || job.Published != 3 {
		t.Fatalf("job %s: %d published, %d failed (%s); want done, 3", job.Status, job.Published, job.Failed, job.Error)
	}
	w.waitDepth(t, "orders.work", 3)
	time.Sleep(200 * time.Millisecond)
	got := map[string]int{}
	for _, d := range w.drain(t, "orders.work") {
		got[d.MessageId]++
		if d.MessageId == "u-2" && (d.UserId != "" || d.Headers[rabbit.HeaderOriginalUserID] != user) {
			t.Errorf("u-2 arrived with user_id %q and header %v; want none and the original in %s", d.UserId,
				d.Headers[rabbit.HeaderOriginalUserID], rabbit.HeaderOriginalUserID)
		}
	}
	if len(got) != 3 || got["u-1"] != 1 || got["u-2"] != 1 || got["u-3"] != 1 {
		t.Fatalf("on the original queue: %v; want each once", got)
	}
}
