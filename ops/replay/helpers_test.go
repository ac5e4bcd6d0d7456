package replay_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/storetest"
	"github.com/redrive/redrive/ops/waittest"
)

func ctxT(tb testing.TB) context.Context { return waittest.Context(tb, 60*time.Second) }

// world is a store, a kfake cluster with a Spring-style DLT, and an inventory inbox.
type world struct {
	store    *store.Store
	cluster  *kafka.Cluster
	client   *kgo.Client
	adm      *kadm.Client
	inboxDSN string
	inbox    *inbox.Inbox
	cfg      *configs.Config
	// consumers, settings and ids are the engine's settings for cfg (what cmd/console converts).
	consumers []ops.Consumer
	settings  replay.Settings
	ids       ops.MessageIDRules
	audit     *auditLog
}

// configDefaults are the replay settings of a configuration that sets none (configs' defaults).
var configDefaults = replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 200, OperatorMaxMessages: 10_000,
	FourEyes: foureyes.Settings{Threshold: 1000, Window: time.Hour}}

type auditLog struct {
	mu      sync.Mutex
	entries []audit.Entry
	st      *store.Store
}

func (a *auditLog) RecordAudit(ctx context.Context, e audit.Entry) error {
	a.mu.Lock()
	a.entries = append(a.entries, e)
	a.mu.Unlock()
	return a.st.RecordAudit(ctx, e)
}

func (a *auditLog) RecordIntent(ctx context.Context, e audit.Entry) (int64, error) {
	e.Outcome = audit.OutcomeStarted
	a.mu.Lock()
	a.entries = append(a.entries, e)
	a.mu.Unlock()
	return a.st.RecordIntent(ctx, e)
}

func (a *auditLog) actions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, e := range a.entries {
		out = append(out, e.Action)
	}
	return out
}

// has is whether an entry of action was recorded whose detail, as JSON, holds every one of parts.
func (a *auditLog) has(action string, parts ...string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
entries:
	for _, e := range a.entries {
		if e.Action != action {
			continue
		}
		b, _ := json.Marshal(e.Detail)
		for _, p := range parts {
			if !strings.Contains(string(b), p) {
				continue entries
			}
		}
		return true
	}
	return false
}

func newWorld(tb testing.TB) *world {
	tb.Helper()
	w, _ := newWorldAndBroker(tb)
	return w
}

// newWorldWith is a world whose orders.DLT holds one dead letter, failed with exception, for each
// partition given, in order: m-1 with key k-1, m-2 with key k-2, …
func newWorldWith(tb testing.TB, exception string, partitions ...int32) *world {
	tb.Helper()
	w := newWorld(tb)
	for i, p := range partitions {
		w.deadLetter(tb, p, fmt.Sprintf("m-%d", i+1), fmt.Sprintf("k-%d", i+1), exception)
	}
	return w
}

// newWorldAndBroker is newWorld with its kfake cluster, for the tests that make the broker
// misbehave (kfake's ControlKey).
func newWorldAndBroker(tb testing.TB) (*world, *kfake.Cluster) {
	tb.Helper()
	broker := kfaketest.Cluster(tb, kfake.SeedTopics(1, "orders"), kfake.SeedTopics(2, "orders.DLT"))
	return newWorldOn(tb, broker.ListenAddrs()[0]), broker
}

// startPaused plans the world's three dead letters of orders.DLT[0], sets down (the test's broker
// fault), starts a job of them and returns it once it has paused.
func startPaused(tb testing.TB, e *replay.Engine, down *atomic.Bool) replay.Job {
	tb.Helper()
	ctx := ctxT(tb)
	plan, err := e.Plan(ctx, "alice", kafkaSource(0, 0, 99), replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != 3 {
		tb.Fatalf("plan %v, %v; want 3 to publish", plan.Counts, err)
	}
	down.Store(true)
	work(tb, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "r", RatePerSecond: 1000})
	if err != nil {
		tb.Fatal(err)
	}
	return waitJobState(tb, e, job.ID, 2*time.Minute, "the job pauses", func(j replay.Job) bool { return j.Paused != "" })
}

// newWorldOn is a world whose Kafka broker (with topics orders:1 and orders.DLT:2) listens on
// brokerAddr.
func newWorldOn(tb testing.TB, brokerAddr string) *world {
	tb.Helper()
	storeDSN, inboxDSN := pgtest.NewDatabase(tb), pgtest.NewDatabase(tb)
	pgtest.Exec(tb, inboxDSN, pginbox.SeedDDL)
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
kafka: [{name: main, brokers: [%q]}]
consumers:
  - name: inventory-service
    inbox: {dsn: %q}
    kafka: {cluster: main, group: inventory-service, topics: [orders]}
`, storeDSN, brokerAddr, inboxDSN)), func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	st := storetest.On(tb, storeDSN)
	cl, err := kafka.New(cfg.Kafka[0], cfg.MessageID)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	in, err := pginbox.Open(ctxT(tb), "inventory-service", *cfg.Consumers[0].Inbox)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(in.Close)
	client, err := kgo.NewClient(kgo.SeedBrokers(brokerAddr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(client.Close)
	return &world{store: st, cluster: cl, client: client, adm: kadm.NewClient(client), inboxDSN: inboxDSN, inbox: in,
		cfg: cfg, audit: &auditLog{st: st}, settings: configDefaults, ids: ops.MessageIDRules(cfg.MessageID),
		consumers: []ops.Consumer{{Name: "inventory-service", Kafka: &ops.ConsumerKafka{Cluster: "main", Group: "inventory-service", Topics: []string{"orders"}}}}}
}

func (w *world) engine(tb testing.TB, owner string) *replay.Engine {
	tb.Helper()
	return w.engineOn(tb, owner, w.store)
}

// engineOn is engine over st, the world's store or a wrapper of it.
func (w *world) engineOn(tb testing.TB, owner string, st replay.Store) *replay.Engine {
	tb.Helper()
	e, err := replay.New(replay.Options{Store: st, Kafka: []replay.KafkaCluster{w.cluster},
		Inboxes: []replay.Inbox{w.inbox}, Consumers: w.consumers, Replay: w.settings, Audit: w.audit,
		Owner: owner, Lease: 2 * time.Second, Poll: 50 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// engineWith is an engine over the world's cluster and store with the replay settings r, and
// no inbox: for the tests of what r turns on (four-eyes, limits, destinations, edits).
func (w *world) engineWith(tb testing.TB, r replay.Settings) *replay.Engine {
	tb.Helper()
	e, err := replay.New(replay.Options{Store: w.store, Kafka: []replay.KafkaCluster{w.cluster}, Audit: w.audit,
		Consumers: w.consumers, Poll: 50 * time.Millisecond, Replay: r})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// deadLetter writes a Spring-Kafka-style DLT record of a message that failed on orders[0].
func (w *world) deadLetter(tb testing.TB, partition int32, id, key, exception string) {
	tb.Helper()
	if err := w.client.ProduceSync(ctxT(tb), deadLetterRecord(partition, id, key, exception)).FirstErr(); err != nil {
		tb.Fatal(err)
	}
}

// deadLetterRecord is the record deadLetter writes.
func deadLetterRecord(partition int32, id, key, exception string) *kgo.Record {
	part := make([]byte, 4)
	binary.BigEndian.PutUint32(part, 0)
	off := make([]byte, 8)
	binary.BigEndian.PutUint64(off, 42)
	r := &kgo.Record{Topic: "orders.DLT", Partition: partition, Key: []byte(key),
		Value: []byte(fmt.Sprintf(`{"messageId":%q,"orderId":"o-1"}`, id)),
		Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
			{Key: "kafka_dlt-original-partition", Value: part},
			{Key: "kafka_dlt-original-offset", Value: off},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte("inventory-service")},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte(exception)},
			{Key: "kafka_dlt-exception-message", Value: []byte("boom")},
			{Key: "messageId", Value: []byte(id)},
			{Key: "traceId", Value: []byte("t-" + id)},
		}}
	return r
}

// deadLetters writes the first n of the benchmark's Spring-style DLT records (benchRecord), with
// change applied to each first when it is not nil.
func (w *world) deadLetters(tb testing.TB, n int, change func(i int, r *kgo.Record)) {
	tb.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = benchRecord(i)
		if change != nil {
			change(i, recs[i])
		}
	}
	if err := w.client.ProduceSync(ctxT(tb), recs...).FirstErr(); err != nil {
		tb.Fatal(err)
	}
}

// outboxEngine is an engine over one outbox "orders" seeded with the seed's DDL and rows.
func outboxEngine(t *testing.T, rows string) (*replay.Engine, *outbox.Outbox) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	pgtest.Exec(t, dsn, pgoutbox.SeedDDL)
	pgtest.Exec(t, dsn, rows)
	cfg, err := configs.Parse([]byte(fmt.Sprintf("auth: {mode: none}\nstore: {dsn: %q}\noutboxes: [{name: orders, dsn: %q}]\n", dsn, dsn)),
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	o, err := pgoutbox.Open(ctxT(t), cfg.Outboxes[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	st := storetest.Open(t)
	e, err := replay.New(replay.Options{Store: st, Outboxes: []replay.OutboxTable{o}, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return e, o
}

func (w *world) processed(tb testing.TB, ids ...string) {
	for _, id := range ids {
		pgtest.Exec(tb, w.inboxDSN, `INSERT INTO inbox_message VALUES ($1, 'inventory-service', now(), now())`, id)
	}
}

// originalIDs counts the records on the original topic by their messageId header.
func (w *world) originalIDs(tb testing.TB) map[string]int {
	tb.Helper()
	out := map[string]int{}
	for _, r := range w.originals(tb) {
		id, _ := header(r, "messageId")
		out[id]++
	}
	return out
}

// originals reads everything on the original topic.
func (w *world) originals(tb testing.TB) []*kgo.Record {
	tb.Helper()
	ends, err := w.adm.ListEndOffsets(ctxT(tb), "orders")
	if err != nil {
		tb.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total == 0 {
		return nil
	}
	return w.consume(tb, "orders", int(total))
}

// consume reads topic from its start until it has at least n records.
func (w *world) consume(tb testing.TB, topic string, n int) []*kgo.Record {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.client.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctxT(tb))
		if err := fs.Err(); err != nil {
			tb.Fatal(err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func header(r *kgo.Record, key string) (string, bool) {
	v, ok := "", false
	for _, h := range r.Headers {
		if h.Key == key {
			v, ok = string(h.Value), true
		}
	}
	return v, ok
}

// waitJob waits for a job to reach a final status.
func waitJob(tb testing.TB, e *replay.Engine, id string) replay.Job {
	tb.Helper()
	return waitJobState(tb, e, id, 5*time.Minute, "job "+id+" finishes", func(j replay.Job) bool {
		return j.Status != replay.JobPending && j.Status != replay.JobRunning
	})
}

// waitPublished waits until a job has published at least n messages.
func waitPublished(tb testing.TB, e *replay.Engine, id string, n int, within time.Duration) replay.Job {
	tb.Helper()
	return waitJobState(tb, e, id, within, fmt.Sprintf("job %s publishes %d", id, n), func(j replay.Job) bool {
		return j.Published >= n
	})
}

// runJob starts the job req asks for and waits for it to reach a final status; e's workers must
// be running (work).
func runJob(tb testing.TB, e *replay.Engine, req replay.StartRequest) replay.Job {
	tb.Helper()
	job, err := e.Start(ctxT(tb), req)
	if err != nil {
		tb.Fatal(err)
	}
	return waitJob(tb, e, job.ID)
}

func waitJobState(tb testing.TB, e *replay.Engine, id string, within time.Duration, what string, done func(replay.Job) bool) replay.Job {
	tb.Helper()
	return waittest.For(tb, within, what, func() (replay.Job, bool) {
		j, err := e.Job(ctxT(tb), id)
		if err != nil {
			tb.Fatal(err)
		}
		return j, done(j)
	})
}

func work(tb testing.TB, e *replay.Engine) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Work(ctx) }()
	tb.Cleanup(func() { cancel(); <-done })
	return func() { cancel(); <-done }
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}

func kgoRecord(topic string, partition int32, value string) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: partition, Value: []byte(value)}
}

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

func newRabbitWorld(t testing.TB) *rabbitWorld { return newRabbitWorldWith(t, nil) }

// newRabbitWorldWith is newRabbitWorld with orders.dlq declared with dlqArgs.
func newRabbitWorldWith(t testing.TB, dlqArgs amqp.Table) *rabbitWorld {
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
	rabbittest.Topology{TB: t, Ch: ch}.OrdersWith("orders.work", "order.created", dlqArgs)

	cfg := rabbittest.Config(t, vhost)
	b, err := rabbit.New(cfg, configs.MessageIDRules{Headers: []string{"messageId"}, JSONPaths: []string{"messageId"}})
	must(err)
	t.Cleanup(b.Close)
	storeDSN, inboxDSN := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	pgtest.Exec(t, inboxDSN, pginbox.SeedDDL)
	st := storetest.On(t, storeDSN)
	b.SetCustodian(replay.Custody{Store: st, Audit: st}) // as the console wires it
	in, err := pginbox.Open(ctxT(t), "inventory-service", configs.Inbox{DSN: configs.Secret(inboxDSN), Table: "inbox_message",
		Columns: configs.InboxColumns{MessageID: "message_id", Consumer: "consumer", ReceivedAt: "received_at", ProcessedAt: "processed_at"}})
	must(err)
	t.Cleanup(in.Close)
	return &rabbitWorld{vhost: vhost, ch: ch, broker: b, store: st, inboxDSN: inboxDSN, inbox: in, cfg: cfg}
}

func (w *rabbitWorld) engine(t testing.TB) *replay.Engine {
	t.Helper()
	return w.engineWith(t, replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 1000})
}

// engineWith is the world's engine (its broker, inbox and consumer) with the replay settings r.
func (w *rabbitWorld) engineWith(t testing.TB, r replay.Settings) *replay.Engine {
	t.Helper()
	return w.engineOn(t, r, w.broker, nil)
}

// engineOver is the world's engine over broker b (the world's own wrapped, or another client of the
// same broker), with more consumers, and their inboxes, beside inventory-service.
func (w *rabbitWorld) engineOver(t testing.TB, b replay.RabbitBroker, inboxes []replay.Inbox, consumers ...ops.Consumer) *replay.Engine {
	t.Helper()
	return w.engineOn(t, replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 1000}, b, inboxes, consumers...)
}

func (w *rabbitWorld) engineOn(t testing.TB, r replay.Settings, b replay.RabbitBroker, inboxes []replay.Inbox, consumers ...ops.Consumer) *replay.Engine {
	t.Helper()
	return w.engineOnStore(t, w.store, r, b, inboxes, consumers...)
}

// engineOnStore is engineOn over st, the world's store or a wrapper of it.
func (w *rabbitWorld) engineOnStore(t testing.TB, st replay.Store, r replay.Settings, b replay.RabbitBroker, inboxes []replay.Inbox, consumers ...ops.Consumer) *replay.Engine {
	t.Helper()
	e, err := replay.New(replay.Options{Store: st, Rabbit: []replay.RabbitBroker{b}, Inboxes: append([]replay.Inbox{w.inbox}, inboxes...),
		Consumers: append([]ops.Consumer{{Name: "inventory-service", RabbitMQ: &ops.ConsumerRabbit{Broker: "test", Vhost: w.vhost, Queue: "orders.work"}}}, consumers...),
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

// newFilledRabbitWorld is a rabbit world whose DLQ holds n dead letters (fillDLQ), and its engine.
func newFilledRabbitWorld(t testing.TB, n int) (*rabbitWorld, *replay.Engine) {
	t.Helper()
	w := newRabbitWorld(t)
	w.fillDLQ(t, n)
	return w, w.engine(t)
}

// fillDLQ puts n dead letters (ids m-0 … m-{n-1}, in order) straight into orders.dlq, as putDead
// does: much faster than a real rejection round trip for the large counts these tests need.
func (w *rabbitWorld) fillDLQ(t testing.TB, n int) {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("m-%d", i)
	}
	w.putDead(t, ids...)
	w.waitDepth(t, "orders.dlq", n)
}

// putDead puts dead letters with these ids into orders.dlq, with the x-death table RabbitMQ writes
// when orders.work rejects them: what a broker returns after a crash, or a new one. Their bodies
// are byte-identical to those of fillDLQ's (the copies of its messages).
func (w *rabbitWorld) putDead(t testing.TB, ids ...string) {
	t.Helper()
	death := deathOf("order.created")
	ps := make([]amqp.Publishing, len(ids))
	for i, id := range ids {
		ps[i] = amqp.Publishing{MessageId: id, ContentType: "application/json", DeliveryMode: amqp.Persistent,
			Headers: amqp.Table{"x-death": death}, Body: []byte(fmt.Sprintf(`{"messageId":%q}`, id))}
	}
	w.putDLQ(t, ps...)
}

// putBody puts a dead letter with this id and body into orders.dlq, dead-lettered from orders as
// fillDLQ's are.
func (w *rabbitWorld) putBody(t testing.TB, id string, body []byte) {
	t.Helper()
	w.putDLQ(t, amqp.Publishing{MessageId: id, DeliveryMode: amqp.Persistent,
		Headers: amqp.Table{"x-death": deathOf("order.created")}, Body: body})
}

// putDLQ publishes ps straight into orders.dlq, in order, as if the broker had dead-lettered them.
func (w *rabbitWorld) putDLQ(t testing.TB, ps ...amqp.Publishing) {
	t.Helper()
	ctx := ctxT(t)
	for _, p := range ps {
		if err := w.ch.PublishWithContext(ctx, "", "orders.dlq", false, false, p); err != nil {
			t.Fatal(err)
		}
	}
}

// deathOf is the x-death table RabbitMQ writes when orders.work rejects a message that was
// published to orders with routingKey (a string, or the bytes some clients write).
func deathOf(routingKey any) []any {
	return []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "orders.work", "exchange": "orders",
		"routing-keys": []any{routingKey}, "time": time.Now().UTC().Truncate(time.Second)}}
}

// replayed fills the DLQ with n dead letters and has e replay them all: the job, done, and the n
// in orders.work.
func (w *rabbitWorld) replayed(t testing.TB, e *replay.Engine, n int) replay.Job {
	t.Helper()
	w.fillDLQ(t, n)
	work(t, e)
	job := w.run(t, e, w.planQueue(t, e, n, replay.Filter{}).ID)
	if job.Status != replay.JobDone || job.Published != n {
		t.Fatalf("job %+v; want done with %d published", job, n)
	}
	w.waitDepth(t, "orders.work", n)
	return job
}

// planQueue plans, as ops, up to limit messages of orders.dlq that f selects.
func (w *rabbitWorld) planQueue(t testing.TB, e *replay.Engine, limit int, f replay.Filter) replay.Plan {
	t.Helper()
	plan, err := e.Plan(ctxT(t), "ops", replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: limit}, f)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// run runs the plan planID as ops, as fast as the engine goes, and waits for the job to end.
func (w *rabbitWorld) run(t testing.TB, e *replay.Engine, planID string) replay.Job {
	t.Helper()
	return runJob(t, e, replay.StartRequest{PlanID: planID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1_000_000})
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
	w.shovelVia(t, "amqp:///"+url.PathEscape(w.vhost), from, to)
}

// shovelVia is shovel with both ends at uri: "amqp:///vhost" is the node's own, in-VM connection
// (no AMQP framing); a URI with a host makes the shovel a TCP client, as any other.
func (w *rabbitWorld) shovelVia(t testing.TB, uri, from, to string) {
	t.Helper()
	mgmt := rabbittest.Admin(t)
	name := fmt.Sprintf("move-%d", time.Now().UnixNano())
	_, err := mgmt.DeclareShovel(w.vhost, name, rabbithole.ShovelDefinition{
		SourceURI: rabbithole.URISet{uri}, SourceQueue: from,
		DestinationURI: rabbithole.URISet{uri}, DestinationQueue: to,
		SourceDeleteAfter: "queue-length", AckMode: "on-confirm"})
	if err != nil {
		t.Fatal(err)
	}
}

func ids(ds []amqp.Delivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.MessageId)
	}
	return out
}
