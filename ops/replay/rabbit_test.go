package replay_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/storetest"
)

// rabbitWorld is a vhost with orders → orders.work, dead-lettering into orders.dlq, the console's
// store and the inventory inbox.
type rabbitWorld struct {
	vhost    string
	ch       *amqp.Channel
	broker   *rabbit.Broker
	store    *store.Store
	inboxDSN string
	inbox    *inbox.Inbox
	cfg      configs.RabbitMQBroker
}

func newRabbitWorld(t testing.TB) *rabbitWorld {
	t.Helper()
	vhost, amqpURL, _ := rabbittest.NewVhost(t)
	u := amqpURL
	_, ch := rabbittest.Channel(t, u)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	rabbittest.Topology{TB: t, Ch: ch}.Orders("orders.work", "order.created")

	cfg := rabbittest.Config(t, vhost)
	b, err := rabbit.New(cfg, configs.MessageIDRules{Headers: []string{"messageId"}, JSONPaths: []string{"messageId"}})
	must(err)
	t.Cleanup(b.Close)
	storeDSN, inboxDSN := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	pgtest.Exec(t, inboxDSN, inbox.SeedDDL)
	st := storetest.On(t, storeDSN)
	in, err := inbox.Open(ctxT(t), "inventory-service", configs.Inbox{DSN: configs.Secret(inboxDSN), Table: "inbox_message",
		Columns: configs.InboxColumns{MessageID: "message_id", Consumer: "consumer", ReceivedAt: "received_at", ProcessedAt: "processed_at"}})
	must(err)
	t.Cleanup(in.Close)
	return &rabbitWorld{vhost: vhost, ch: ch, broker: b, store: st, inboxDSN: inboxDSN, inbox: in, cfg: cfg}
}

func (w *rabbitWorld) engine(t testing.TB) *replay.Engine {
	t.Helper()
	return w.engineWith(t, configs.Replay{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 1000})
}

// engineWith is the world's engine (its broker, inbox and consumer) with the replay settings r.
func (w *rabbitWorld) engineWith(t testing.TB, r configs.Replay) *replay.Engine {
	t.Helper()
	e, err := replay.New(replay.Options{Store: w.store, Rabbit: []replay.RabbitBroker{w.broker}, Inboxes: []replay.Inbox{w.inbox},
		Consumers: []configs.Consumer{{Name: "inventory-service", RabbitMQ: &configs.ConsumerRabbit{Broker: "test", Vhost: w.vhost, Queue: "orders.work"}}},
		Replay:    r, Lease: 2 * time.Second, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// deadLetter publishes n orders and has the broker dead-letter them (reject, requeue=false).
func (w *rabbitWorld) deadLetter(t testing.TB, n int) {
	t.Helper()
	ctx := ctxT(t)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("m-%d", i)
		if err := w.ch.PublishWithContext(ctx, "orders", "order.created", false, false, amqp.Publishing{
			MessageId: id, ContentType: "application/json", DeliveryMode: amqp.Persistent,
			Body: []byte(fmt.Sprintf(`{"messageId":%q,"seq":%d}`, id, i))}); err != nil {
			t.Fatal(err)
		}
	}
	deliveries, err := w.ch.Consume("orders.work", "failing-consumer", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		d := <-deliveries
		if err := d.Reject(false); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.ch.Cancel("failing-consumer", false); err != nil {
		t.Fatal(err)
	}
	w.waitDepth(t, "orders.dlq", n)
}

func (w *rabbitWorld) depth(t testing.TB, queue string) int {
	t.Helper()
	return rabbittest.Depth(t, w.ch, queue)
}

func (w *rabbitWorld) waitDepth(t testing.TB, queue string, n int) {
	t.Helper()
	// Generous: a 100,000-message fill on a loaded 2-core machine takes tens of seconds to show in
	// the count; an exact count is still required.
	rabbittest.WaitDepth(t, w.ch, queue, n, 60*time.Second)
}

func (w *rabbitWorld) drain(t testing.TB, queue string) []amqp.Delivery {
	t.Helper()
	var out []amqp.Delivery
	for {
		d, ok, err := w.ch.Get(queue, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, d)
	}
}

func TestRabbitReplayPublishesConfirmedThenAcks(t *testing.T) {
	w := newRabbitWorld(t)
	w.deadLetter(t, 10)
	for _, id := range []string{"m-1", "m-4"} {
		pgtest.Exec(t, w.inboxDSN, `INSERT INTO inbox_message VALUES ($1, 'inventory-service', now(), now())`, id)
	}
	e := w.engine(t)
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "ops", replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 100}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
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
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1000})
	if err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, e, job.ID)
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

func TestRabbitUnroutableStaysInTheDLQ(t *testing.T) {
	w := newRabbitWorld(t)
	w.deadLetter(t, 3)
	if err := w.ch.QueueUnbind("orders.work", "order.created", "orders", nil); err != nil {
		t.Fatal(err)
	}
	e := w.engine(t)
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "ops", replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 10}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	work(t, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}})
	if err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, e, job.ID)
	if job.Failed != 3 || job.Published != 0 {
		t.Fatalf("job %+v", job)
	}
	ledger, _ := e.Ledger(ctx, job.ID, 10)
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

func ids(ds []amqp.Delivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.MessageId)
	}
	return out
}

// deadLetterMany has the broker dead-letter n messages at once: publish, then one
// basic.nack(multiple, requeue=false) over them all.
func (w *rabbitWorld) deadLetterMany(t testing.TB, n int) {
	t.Helper()
	ctx := ctxT(t)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("b-%d-%d", time.Now().UnixNano(), i)
		if err := w.ch.PublishWithContext(ctx, "orders", "order.created", false, false, amqp.Publishing{
			MessageId: id, DeliveryMode: amqp.Persistent, Body: []byte(fmt.Sprintf(`{"messageId":%q,"amount":12.5}`, id))}); err != nil {
			t.Fatal(err)
		}
	}
	w.waitDepth(t, "orders.work", n)
	if err := w.ch.Qos(n, 0, false); err != nil {
		t.Fatal(err)
	}
	deliveries, err := w.ch.Consume("orders.work", "bulk-fail", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for i := 0; i < n; i++ {
		last = (<-deliveries).DeliveryTag
	}
	if err := w.ch.Nack(last, true, false); err != nil {
		t.Fatal(err)
	}
	if err := w.ch.Cancel("bulk-fail", false); err != nil {
		t.Fatal(err)
	}
	w.waitDepth(t, "orders.dlq", n)
}

func (w *rabbitWorld) purge(t testing.TB, queue string) {
	t.Helper()
	if _, err := w.ch.QueuePurge(queue, false); err != nil {
		t.Fatal(err)
	}
}

// shovel moves a queue's current messages to another with the shovel plugin's "move messages"
// (a dynamic shovel that deletes itself after the queue's length at start).
func (w *rabbitWorld) shovel(t testing.TB, from, to string) {
	t.Helper()
	mgmt := rabbittest.Admin(t)
	name := fmt.Sprintf("move-%d", time.Now().UnixNano())
	_, err := mgmt.DeclareShovel(w.vhost, name, rabbithole.ShovelDefinition{
		SourceURI: rabbithole.URISet{"amqp:///" + url.PathEscape(w.vhost)}, SourceQueue: from,
		DestinationURI: rabbithole.URISet{"amqp:///" + url.PathEscape(w.vhost)}, DestinationQueue: to,
		SourceDeleteAfter: "queue-length", AckMode: "on-confirm"})
	if err != nil {
		t.Fatal(err)
	}
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

// putBody puts a dead letter with this id and body into orders.dlq, dead-lettered from orders as
// fillDLQ's are.
func (w *rabbitWorld) putBody(t testing.TB, id string, body []byte) {
	t.Helper()
	death := []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "orders.work", "exchange": "orders",
		"routing-keys": []any{"order.created"}, "time": time.Now().UTC().Truncate(time.Second)}}
	if err := w.ch.PublishWithContext(ctxT(t), "", "orders.dlq", false, false, amqp.Publishing{MessageId: id,
		DeliveryMode: amqp.Persistent, Headers: amqp.Table{"x-death": death}, Body: body}); err != nil {
		t.Fatal(err)
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
	ctx := ctxT(t)
	w.fillDLQ(t, 1)
	for _, key := range []any{"qa3.\xff", []byte("qa4.\xfe")} {
		death := []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "orders.work", "exchange": "orders",
			"routing-keys": []any{key}, "time": time.Now().UTC().Truncate(time.Second)}}
		if err := w.ch.PublishWithContext(ctx, "", "orders.dlq", false, false, amqp.Publishing{MessageId: fmt.Sprintf("%T", key),
			Headers: amqp.Table{"x-death": death}, Body: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
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
