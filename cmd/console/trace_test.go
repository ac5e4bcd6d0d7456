package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

// traceWorld is one order's story: the outbox of orders holds three events of aggregate
// order-100 (SENT, published by the relay to their key's partition of orders) and one of
// order-200 (READY, never published); inventory-service failed e-1 (a Spring DLT record in
// orders.DLT, same partition) and has no inbox row for it; billing-service processed e-1 and e-2.
type traceWorld struct {
	broker    string // Kafka
	outboxDSN string
	part      int32            // order-100's partition of orders (and of orders.DLT)
	offsets   map[string]int64 // event id → offset in orders
	dltOffset int64            // e-1's offset in orders.DLT
}

const traceConsumers = `
consumers:
  - name: inventory-service
    inbox: {dsn: %[1]q}
    kafka: {cluster: main, group: inventory-service, topics: [orders]}
  - name: billing-service
    inbox: {dsn: %[1]q}
    kafka: {cluster: main, group: billing-service, topics: [orders]}
`

func newTraceWorld(t *testing.T) traceWorld {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k := startKafka(t, nil)
	w := traceWorld{broker: k.Addrs()[0], outboxDSN: pgtest.NewDatabase(t), offsets: map[string]int64{}}

	created := time.Now().UTC().Add(-10 * time.Minute).Truncate(time.Millisecond)
	conn, err := pgx.Connect(ctx, w.outboxDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, pgoutbox.SeedDDL+pginbox.SeedDDL); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"e-1", "e-2", "e-3"} {
		at := created.Add(time.Duration(i) * time.Second)
		if _, err := conn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type,
			schema_version, payload, status, attempts, available_at, created_at, sent_at)
			VALUES ($1, 'Order', 'order-100', 'OrderPlaced', 1, '{}', 'SENT', 1, $2, $2, $3)`, id, at, at.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type,
		schema_version, payload, status, attempts, available_at, created_at)
		VALUES ('e-9', 'Order', 'order-200', 'OrderPlaced', 1, '{}', 'READY', 0, $1, $1)`, created); err != nil {
		t.Fatal(err)
	}
	for _, row := range [][]any{{"e-1", "billing-service"}, {"e-2", "billing-service"}} {
		if _, err := conn.Exec(ctx, `INSERT INTO inbox_message (message_id, consumer, received_at, processed_at)
			VALUES ($1, $2, $3, $3)`, row[0], row[1], created.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(w.broker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 6, 1, nil, "orders", "orders.DLT"); err != nil {
		t.Fatal(err)
	}
	w.part = kafka.KeyPartition("orders", []byte("order-100"), 6)
	produce := func(r *kgo.Record) *kgo.Record {
		t.Helper()
		res := cl.ProduceSync(ctx, r)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		return res[0].Record
	}
	// Other orders' records in every partition, before and after: what a trace must not need to read.
	filler := func(from, n int) {
		for i := from; i < from+n; i++ {
			key := fmt.Sprintf("order-%d", 1000+i)
			produce(&kgo.Record{Topic: "orders", Partition: kafka.KeyPartition("orders", []byte(key), 6), Key: []byte(key),
				Timestamp: created.Add(-time.Hour + time.Duration(i)*time.Second),
				Headers:   []kgo.RecordHeader{{Key: "messageId", Value: []byte(fmt.Sprintf("x-%d", i))}}, Value: []byte(`{"n":1}`)})
		}
	}
	filler(0, 60)
	for i, id := range []string{"e-1", "e-2", "e-3"} {
		r := produce(&kgo.Record{Topic: "orders", Partition: w.part, Key: []byte("order-100"),
			Timestamp: created.Add(time.Duration(i)*time.Second + time.Second),
			Headers:   []kgo.RecordHeader{{Key: "messageId", Value: []byte(id)}, {Key: "traceId", Value: []byte("trace-" + id)}},
			Value:     []byte(fmt.Sprintf(`{"orderId":"order-100","event":%q}`, id))})
		w.offsets[id] = r.Offset
	}
	be32 := binary.BigEndian.AppendUint32(nil, uint32(w.part))
	be64 := binary.BigEndian.AppendUint64(nil, uint64(w.offsets["e-1"]))
	dl := produce(&kgo.Record{Topic: "orders.DLT", Partition: w.part, Key: []byte("order-100"),
		Timestamp: created.Add(30 * time.Second),
		Headers: []kgo.RecordHeader{
			{Key: "messageId", Value: []byte("e-1")},
			{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
			{Key: "kafka_dlt-original-partition", Value: be32},
			{Key: "kafka_dlt-original-offset", Value: be64},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte("inventory-service")},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("org.springframework.kafka.support.serializer.DeserializationException")},
			{Key: "kafka_dlt-exception-message", Value: []byte("failed to deserialize; nested exception")},
		},
		Value: []byte(`{"orderId":"order-100","event":"e-1"}`)})
	w.dltOffset = dl.Offset
	return w
}

// console serves w with extra YAML appended (more clusters, search budgets).
func (w traceWorld) console(t *testing.T, extra string) string {
	t.Helper()
	return startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q}]
kafka:
  - {name: main, brokers: [%q]}
`, pgtest.NewDatabase(t), w.outboxDSN, w.broker)+extra+fmt.Sprintf(traceConsumers, w.outboxDSN))
}

type traceAnswer struct {
	Verdict string      `json:"verdict"`
	Steps   []traceStep `json:"steps"`
}

type traceStep struct {
	Kind   string     `json:"kind"`
	Source string     `json:"source"`
	Found  bool       `json:"found"`
	At     *time.Time `json:"at"`
	Place  string     `json:"place"`
	Detail string     `json:"detail"`
	Link   string     `json:"link"`
}

func getTrace(t *testing.T, base, query string) traceAnswer {
	t.Helper()
	r := do(t, nil, "GET", base+"/api/v1/trace?"+query, "", "")
	if r.status != 200 {
		t.Fatalf("trace %s: %d %s", query, r.status, r.body)
	}
	return decode[traceAnswer](t, r)
}

// steps picks the steps of a source.
func (a traceAnswer) steps(source string) []traceStep {
	var out []traceStep
	for _, s := range a.Steps {
		if s.Source == source {
			out = append(out, s)
		}
	}
	return out
}

func (a traceAnswer) dump() string {
	var b strings.Builder
	b.WriteString("verdict: " + a.Verdict + "\n")
	for _, s := range a.Steps {
		fmt.Fprintf(&b, "  %-8s %-28s found=%-5v %s | %s | %s\n", s.Kind, s.Source, s.Found, s.Place, s.Detail, s.Link)
	}
	return b.String()
}

// The message went outbox → relay → Kafka → DLT; one consumer processed it, the other did not.
func TestTraceMessageOutboxKafkaDLTInboxes(t *testing.T) {
	w := newTraceWorld(t)
	base := w.console(t, "")
	a := getTrace(t, base, "message_id=e-1")
	t.Log(a.dump())

	want := fmt.Sprintf("in the outbox as SENT, published to orders/%d at offset %d, dead-lettered by inventory-service (DeserializationException), "+
		"not processed by inventory-service, processed by billing-service", w.part, w.offsets["e-1"])
	if !strings.HasPrefix(a.Verdict, want) {
		t.Errorf("verdict %q\nwant it to start with %q", a.Verdict, want)
	}
	ob := a.steps("outbox orders")
	if len(ob) != 1 || !ob[0].Found || ob[0].Link != "/outboxes/orders/events/1" || !strings.Contains(ob[0].Detail, "status SENT") ||
		!strings.Contains(ob[0].Detail, "sent_at ") || ob[0].At == nil {
		t.Errorf("outbox step: %+v", ob)
	}
	rec := a.steps("kafka main/orders")
	if len(rec) != 1 || !rec[0].Found || rec[0].Place != fmt.Sprintf("orders/%d @ %d", w.part, w.offsets["e-1"]) ||
		rec[0].Link != fmt.Sprintf("/kafka/main/topics/orders?offset=%d&partition=%d", w.offsets["e-1"], w.part) {
		t.Errorf("original record step: %+v", rec)
	}
	dlt := a.steps("kafka main/orders.DLT")
	if len(dlt) != 1 || !dlt[0].Found || dlt[0].Place != fmt.Sprintf("orders.DLT/%d @ %d", w.part, w.dltOffset) ||
		!strings.Contains(dlt[0].Detail, fmt.Sprintf("from orders/%d @ %d", w.part, w.offsets["e-1"])) ||
		!strings.Contains(dlt[0].Detail, "DeserializationException: failed to deserialize") {
		t.Errorf("DLT step: %+v", dlt)
	}
	if in := a.steps("inbox billing-service"); len(in) != 1 || !in[0].Found || !strings.HasPrefix(in[0].Detail, "processed by billing-service") {
		t.Errorf("billing inbox: %+v", in)
	}
	if in := a.steps("inbox inventory-service"); len(in) != 1 || in[0].Found || !strings.Contains(in[0].Detail, "no row") {
		t.Errorf("inventory inbox: %+v", in)
	}
	for _, src := range []string{"replay ledger", "audit log"} {
		if s := a.steps(src); len(s) != 1 || s[0].Found || s[0].Detail == "" {
			t.Errorf("%s: %+v", src, s)
		}
	}
	// The timeline is in time order: outbox row, record, dead letter, inbox.
	var kinds []string
	for _, s := range a.Steps {
		if s.Found {
			kinds = append(kinds, s.Kind+" "+s.Source)
		}
	}
	if got := strings.Join(kinds, ", "); got != "outbox outbox orders, kafka kafka main/orders, kafka kafka main/orders.DLT, inbox inbox billing-service" {
		t.Errorf("found steps in order: %s", got)
	}

	// The original was read in the key's partition and the outbox row's window only.
	if d := rec[0].Detail; !strings.Contains(d, "message id e-1") {
		t.Errorf("record detail: %s", d)
	}

	// The same by event_id, and by the navigation box's id (the outbox says it is an event id).
	if b := getTrace(t, base, "event_id=e-1"); b.Verdict != a.Verdict {
		t.Errorf("by event_id: %q", b.Verdict)
	}
	page := do(t, nil, "GET", base+"/trace?q=e-1&wait=1", "", "")
	if page.status != 200 || !strings.Contains(page.body, `data-testid="trace-verdict"`) || !strings.Contains(page.body, "dead-lettered by inventory-service") {
		t.Errorf("page: %d %s", page.status, page.body)
	}
	// And by trace id: the records' traceId header.
	if b := getTrace(t, base, "trace_id=trace-e-1"); !strings.Contains(b.Verdict, fmt.Sprintf("published to orders/%d at offset %d", w.part, w.offsets["e-1"])) {
		t.Errorf("by trace_id: %s", b.dump())
	}
}

// An aggregate with several events: every row, every record — read from the key's partition only.
func TestTraceAggregateWithSeveralEvents(t *testing.T) {
	w := newTraceWorld(t)
	base := w.console(t, "")
	a := getTrace(t, base, "aggregate_id=order-100")
	t.Log(a.dump())
	if want := fmt.Sprintf("3 events in the outbox (3 SENT), published to orders/%d at offsets %d, %d, %d, ", w.part,
		w.offsets["e-1"], w.offsets["e-2"], w.offsets["e-3"]); !strings.HasPrefix(a.Verdict, want) {
		t.Errorf("verdict %q", a.Verdict)
	}
	if n := len(a.steps("outbox orders")); n != 3 {
		t.Errorf("%d outbox steps", n)
	}
	recs := a.steps("kafka main/orders")
	if len(recs) != 3 {
		t.Fatalf("records: %+v", recs)
	}
	for _, r := range recs {
		if !r.Found || !strings.HasPrefix(r.Place, fmt.Sprintf("orders/%d @ ", w.part)) {
			t.Errorf("record step %+v", r)
		}
	}
	// billing-service processed two of the three messages, inventory-service none.
	for _, want := range []string{"not processed by inventory-service", "processed by billing-service for 2 of 3 messages",
		"dead-lettered by inventory-service (DeserializationException)"} {
		if !strings.Contains(a.Verdict, want) {
			t.Errorf("verdict %q lacks %q", a.Verdict, want)
		}
	}
	// order-200's READY event was not published: the outbox says so and Kafka has nothing.
	b := getTrace(t, base, "aggregate_id=order-200")
	if !strings.HasPrefix(b.Verdict, "in the outbox as READY, not found in orders") {
		t.Errorf("order-200: %s", b.dump())
	}
	miss := b.steps("kafka main/orders")
	if len(miss) != 1 || miss[0].Found || !strings.Contains(miss[0].Detail, "the key's partition") {
		t.Errorf("order-200 record step: %+v", miss)
	}
}

// An id that exists nowhere: every source is searched and says so.
func TestTraceIDFoundNowhere(t *testing.T) {
	w := newTraceWorld(t)
	base := w.console(t, "")
	a := getTrace(t, base, "message_id=no-such-message")
	t.Log(a.dump())
	if !strings.HasPrefix(a.Verdict, "message no-such-message was found nowhere: every source was searched (1 outbox, 2 Kafka topics, 2 inboxes, the replay ledger, the audit log)") {
		t.Errorf("verdict %q", a.Verdict)
	}
	for _, src := range []string{"outbox orders", "kafka main/orders", "kafka main/orders.DLT", "inbox inventory-service",
		"inbox billing-service", "replay ledger", "audit log"} {
		s := a.steps(src)
		if len(s) != 1 || s[0].Found || s[0].Detail == "" {
			t.Errorf("%s: %+v", src, s)
		}
	}
	for _, s := range a.Steps {
		if s.Found {
			t.Errorf("found %+v", s)
		}
	}
	if s := a.steps("kafka main/orders"); len(s) == 1 && !strings.Contains(s[0].Detail, "partitions 0") {
		t.Errorf("orders searched: %s", s[0].Detail)
	}
}

// A dead-letter topic whose original topic does not exist: the trace says so, and its step links
// to the cluster, not to a topic page that answers 404 (a crawl of the trace pages found nine).
func TestTraceMissingOriginalTopicIsNotLinked(t *testing.T) {
	w := newTraceWorld(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopics(waittest.Context(t, time.Minute), 1, 1, nil, "ghost.DLT"); err != nil {
		t.Fatal(err)
	}
	base := w.console(t, "")
	a := getTrace(t, base, "message_id=no-such-message")
	s := a.steps("kafka main/ghost")
	if len(s) != 1 || s[0].Found || s[0].Detail != "the topic does not exist" {
		t.Fatalf("the missing original's step: %+v\n%s", s, a.dump())
	}
	if s[0].Link != "/kafka/main" {
		t.Errorf("the missing original's step links to %q, want the cluster /kafka/main", s[0].Link)
	}
	if r := do(t, nil, "GET", base+s[0].Link, "", ""); r.status != 200 {
		t.Errorf("GET %s: %d", s[0].Link, r.status)
	}
}

// Budgets exceeded are reported, and a cluster that is down is a step while the rest answers.
func TestTraceBudgetsAndADownSource(t *testing.T) {
	w := newTraceWorld(t)
	base := w.console(t, fmt.Sprintf(`
  - {name: dead, brokers: [%q], request_timeout: 1s}
search: {max_scan: 5}
redaction: {headers: [kafka_dlt-exception-message]}
`, freeAddr(t)))
	a := getTrace(t, base, "message_id=no-such-message")
	t.Log(a.dump())
	// The budget note says what was read of the partition it cut: "0 of 6 partitions searched"
	// alone read as nothing read.
	cut := "orders: 0 of 6 partitions searched, partition 0 read in part (5 records, offsets "
	s := a.steps("kafka main/orders")
	if len(s) != 1 || s[0].Found || !strings.Contains(s[0].Detail, cut) || !strings.Contains(s[0].Detail, "), records budget of 5 exceeded") {
		t.Errorf("budget step: %+v", s)
	}
	if !strings.Contains(a.Verdict, "was not found in what was searched") || !strings.Contains(a.Verdict, "searched in part — "+cut) {
		t.Errorf("verdict %q", a.Verdict)
	}
	d := a.steps("kafka dead")
	if len(d) != 1 || d[0].Found || !strings.HasPrefix(d[0].Detail, "down: could not be searched") {
		t.Errorf("down cluster: %+v", d)
	}
	if !strings.Contains(a.Verdict, "could not be searched (down): kafka dead") {
		t.Errorf("verdict %q", a.Verdict)
	}
	// The rest still answers: e-1 is found in the outbox and, in its window, in Kafka.
	b := getTrace(t, base, "message_id=e-1")
	if !strings.HasPrefix(b.Verdict, fmt.Sprintf("in the outbox as SENT, published to orders/%d at offset %d", w.part, w.offsets["e-1"])) ||
		!strings.Contains(b.Verdict, "could not be searched (down): kafka dead") {
		t.Errorf("with a cluster down: %s", b.dump())
	}
	// Redaction applies to what the steps quote of a message: the masked header is not shown.
	dlt := b.steps("kafka main/orders.DLT")
	if len(dlt) != 1 || strings.Contains(dlt[0].Detail, "failed to deserialize") || !strings.Contains(dlt[0].Detail, "DeserializationException: ••• redacted •••") {
		t.Errorf("redacted DLT step: %+v", dlt)
	}
}

// Bad input is a 400 in the user's words.
func TestTraceBadInput(t *testing.T) {
	w := newTraceWorld(t)
	base := w.console(t, "")
	for q, want := range map[string]string{
		"":                                 "give a message_id, event_id, aggregate_id or trace_id",
		"message_id=%20":                   "give a message_id, event_id, aggregate_id or trace_id",
		"message_id=e-1&since=yesterday":   "since: must be RFC 3339",
		"message_id=e-1&until=soon":        "until: must be RFC 3339",
		"message_id=e-1&since=1h&until=2h": "until: must not be before since",
		"aggregate_id=" + strings.Repeat("x", 600): "aggregate_id: must be at most 512 bytes",
		"message_id=a&aggregate_id=b":              "message_id and aggregate_id: give one of them",
	} {
		r := do(t, nil, "GET", base+"/api/v1/trace?"+q, "", "")
		if r.status != 400 || !strings.Contains(r.body, want) {
			t.Errorf("%q: %d %s", q, r.status, r.body)
		}
	}
	if r := do(t, nil, "GET", base+"/trace?since=x&q=e-1", "", ""); r.status != 400 {
		t.Errorf("page with a bad since: %d", r.status)
	}
	if r := do(t, nil, "GET", base+"/trace", "", ""); r.status != 200 || !strings.Contains(r.body, `data-testid="trace-form"`) {
		t.Errorf("empty page: %d", r.status)
	}
}

// The page streams each source's steps as server-sent events, then the whole result.
func TestTraceStream(t *testing.T) {
	w := newTraceWorld(t)
	base := w.console(t, "")
	r := do(t, nil, "GET", base+"/trace/stream?message_id=e-1", "", "")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %q", r.status, r.header.Get("Content-Type"))
	}
	if n := strings.Count(r.body, "event: steps\n"); n < 5 {
		t.Errorf("%d steps events:\n%s", n, r.body)
	}
	done := strings.Index(r.body, "event: done\n")
	if done < 0 || done < strings.LastIndex(r.body, "event: steps\n") || !strings.Contains(r.body[done:], "dead-lettered by inventory-service") {
		t.Errorf("no done event last:\n%s", r.body)
	}
}

// A RabbitMQ dead letter: found in the DLQ by its message id (browsed, left in place), with who
// dead-lettered it and why.
func TestTraceRabbitDeadLetter(t *testing.T) {
	vhost, vhostURL := slashVhost(t)
	amqpURL, mgmtURL := rabbittest.Env(t)
	conn, err := amqp.Dial(vhostURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, ch.ExchangeDeclare("orders.dlx", "direct", true, false, false, false, nil))
	_, err = ch.QueueDeclare("orders.dlq", true, false, false, false, nil)
	mustDo(t, err)
	mustDo(t, ch.QueueBind("orders.dlq", "orders", "orders.dlx", false, nil))
	_, err = ch.QueueDeclare("orders", true, false, false, false, amqp.Table{"x-dead-letter-exchange": "orders.dlx"})
	mustDo(t, err)
	ctx := context.Background()
	for i, id := range []string{"r-0", "r-1", "r-2"} {
		mustDo(t, ch.PublishWithContext(ctx, "", "orders", false, false, amqp.Publishing{MessageId: id, DeliveryMode: 2,
			ContentType: "application/json", Body: []byte(fmt.Sprintf(`{"orderId":"order-%d"}`, 300+i))}))
	}
	// shipping-service rejects them all: the broker dead-letters them into orders.dlq.
	for range 3 {
		d, ok, err := ch.Get("orders", false)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		mustDo(t, d.Nack(false, false))
	}
	waitMgmt(t, vhost, "orders.dlq", 3)

	storeDSN, inboxDSN := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	pgtest.Exec(t, inboxDSN, pginbox.SeedDDL)
	base := startConsole(t, rabbitConsumer{store: storeDSN, amqpURL: amqpURL, mgmtURL: mgmtURL, vhost: vhost,
		service: "shipping-service", queue: "orders", inbox: inboxDSN}.config())

	a := getTrace(t, base, "message_id=r-1")
	t.Log(a.dump())
	s := a.steps("rabbitmq main/orders.dlq")
	if len(s) != 1 || !s[0].Found || !strings.HasPrefix(s[0].Place, "orders.dlq (vhost "+vhost+") position 1") ||
		!strings.Contains(s[0].Detail, "from queue orders") || !strings.Contains(s[0].Detail, "rejected ×1") ||
		s[0].Link != "/rabbitmq/main/queues/"+url.PathEscape(vhost)+"/orders.dlq/messages" || s[0].At == nil {
		t.Errorf("DLQ step: %+v", s)
	}
	if !strings.HasPrefix(a.Verdict, "dead-lettered by shipping-service into orders.dlq (rejected), not processed by shipping-service") {
		t.Errorf("verdict %q", a.Verdict)
	}
	// The browse left the queue as it was.
	q, err := ch.QueueDeclarePassive("orders.dlq", true, false, false, false, nil)
	if err != nil || q.Messages != 3 {
		t.Errorf("orders.dlq after the trace: %d messages, %v", q.Messages, err)
	}
	if b := getTrace(t, base, "message_id=r-404"); !strings.HasPrefix(b.Verdict, "message r-404 was found nowhere") ||
		len(b.steps("rabbitmq main/orders.dlq")) != 1 || !strings.Contains(b.steps("rabbitmq main/orders.dlq")[0].Detail, "3 messages read") {
		t.Errorf("r-404: %s", b.dump())
	}
}

// From a DLT record's "Trace" action to the timeline: the page streams each source's steps and
// ends with the verdict over the ordered timeline; the navigation's box traces an aggregate.
func TestBrowserTraceFromDLTRecord(t *testing.T) {
	w := newTraceWorld(t)
	base := w.console(t, "")
	ctx, dialogs := newBrowser(t)
	ctx, cancelAll := context.WithTimeout(ctx, 60*time.Second)
	defer cancelAll()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/kafka/main/topics/orders.DLT?partition=%d", base, w.part)),
		chromedp.WaitVisible(`[data-testid="records-table"]`),
	); err != nil {
		t.Fatal(err)
	}
	// A page of one record shows it expanded; otherwise the row expands it.
	if must(t, ctx, chromedp.Evaluate[bool](`document.querySelector('[data-testid="record-detail"]').hidden`)) {
		act(t, ctx, chromedp.Click(`[data-testid="expand-record"]`))
	}
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(`[data-testid="record-detail"] [data-testid="trace-record"]`),
		chromedp.Click(`[data-testid="record-detail"] [data-testid="trace-record"]`),
	); err != nil {
		html, _ := chromedp.Run(context.WithoutCancel(ctx), chromedp.Evaluate[string](`[...document.querySelectorAll('[data-testid="record-detail"]')].map(d => d.hidden + " " + (d.querySelector(".panel-actions") || {}).outerHTML).join("\n") + " active=" + document.activeElement.outerHTML.slice(0, 200)`))
		t.Fatalf("no Trace action: %v\n%s", err, html)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.WaitVisible(`[data-trace-done] [data-testid="trace-verdict"]`)); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main").innerHTML`))
		t.Fatalf("no result: %v\n%s", err, html)
	}
	loc := must(t, ctx, chromedp.Evaluate[string](`location.pathname + location.search`))
	if loc != "/trace?message_id=e-1" {
		t.Errorf("the Trace action opened %s", loc)
	}
	verdict := must(t, ctx, chromedp.Text(`[data-testid="trace-verdict"]`))
	want := fmt.Sprintf("in the outbox as SENT, published to orders/%d at offset %d, dead-lettered by inventory-service (DeserializationException), "+
		"not processed by inventory-service, processed by billing-service", w.part, w.offsets["e-1"])
	if !strings.HasPrefix(verdict, want) {
		t.Errorf("verdict %q", verdict)
	}
	states := must(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="trace-step"]')].map(s => s.dataset.kind + ":" + s.dataset.state)`))
	if got := strings.Join(states, " "); !strings.HasPrefix(got, "outbox:found kafka:found kafka:found inbox:found inbox:not found") {
		t.Errorf("timeline %s", got)
	}
	// The DLT step links back to the record.
	link := must(t, ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('[data-testid="trace-step-link"]')].map(a => a.getAttribute("href")).find(h => h.includes("orders.DLT")) || ""`))
	if link != fmt.Sprintf("/kafka/main/topics/orders.DLT?offset=%d&partition=%d", w.dltOffset, w.part) {
		t.Errorf("DLT step link %q", link)
	}
	screenshot(t, ctx, "trace-timeline")

	// Typed, then submitted as its own step: a "\n" inside SendKeys navigates while the action still
	// holds the old page's node ("No node with given id found", seen once in a CI-like run). The
	// verdict is awaited on the new page: the old one's, still on screen for a moment after the
	// submit, was read as the nav box's (one run in four).
	act(t, ctx,
		chromedp.SendKeys(`[data-testid="nav-trace-input"]`, "order-100"),
		chromedp.Submit(`[data-testid="nav-trace-input"]`),
	)
	waittest.Until(t, 20*time.Second, "the nav box's trace page", func() bool {
		search, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.search`))
		return err == nil && strings.Contains(search, "q=order-100")
	})
	act(t, ctx, chromedp.WaitVisible(`[data-trace-done] [data-testid="trace-verdict"]`))
	if v := must(t, ctx, chromedp.Text(`[data-testid="trace-verdict"]`)); !strings.HasPrefix(v, "3 events in the outbox (3 SENT)") {
		t.Errorf("nav box: %q", v)
	}
	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d dialogs", n)
	}
}

// replayDLT replays the dead letter at orders.DLT's partition p, offset off, and returns the job's
// id once it is done.
func replayDLT(t *testing.T, base string, p int32, off int64) string {
	t.Helper()
	plan := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json", fmt.Sprintf(
		`{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","partition":%d,"from_offset":%d,"to_offset":%d}}`, p, off, off))
	pl := decode[struct {
		PlanID  string         `json:"plan_id"`
		Actions map[string]int `json:"actions"`
	}](t, plan)
	if plan.status != 200 || pl.Actions["publish"] != 1 {
		t.Fatalf("plan: %d %s", plan.status, plan.body)
	}
	start := do(t, nil, "POST", base+"/api/v1/replays", "application/json", fmt.Sprintf(`{"plan_id":%q,"rate_per_second":100,"reason":"trace it"}`, pl.PlanID))
	job := decode[struct{ ID string }](t, start)
	if start.status != 200 || job.ID == "" {
		t.Fatalf("start: %d %s", start.status, start.body)
	}
	if final := waitReplay(t, base, job.ID, 30*time.Second); final.Status != replay.JobDone {
		t.Fatalf("the replay did not finish: %+v", final)
	}
	return job.ID
}

// A replayed dead letter: the ledger's entry and its job are steps, and the verdict says so.
func TestTraceReplayedMessage(t *testing.T) {
	w := newTraceWorld(t)
	base := w.console(t, "")
	job := replayDLT(t, base, w.part, w.dltOffset)
	a := getTrace(t, base, "message_id=e-1")
	t.Log(a.dump())
	s := a.steps("replay ledger")
	if len(s) != 1 || !s[0].Found || s[0].Link != "/replays/"+job || !strings.Contains(s[0].Detail, ": published") || s[0].At == nil {
		t.Errorf("ledger step: %+v", s)
	}
	if want := fmt.Sprintf("replayed by job %s (published)", job); !strings.Contains(a.Verdict, want) {
		t.Errorf("verdict %q lacks %q", a.Verdict, want)
	}
}

// An outbox repair is in the event's timeline: a requeue or a release records the rows it changed
// by id, not by event_id, and a trace by event_id found no audit entry for an event the console had
// requeued. Another outbox's entry for the same row id, and a row id that only starts alike, are
// not this event's.
func TestTraceShowsTheConsolesOutboxRepairs(t *testing.T) {
	w := newTraceWorld(t)
	pgtest.Exec(t, w.outboxDSN, `UPDATE outbox_event SET status = 'DEAD', attempts = 10, last_error = 'boom' WHERE event_id = 'e-9'`)
	base := w.console(t, "")
	var id string
	for _, s := range getTrace(t, base, "event_id=e-9").steps("outbox orders") {
		if s.Found {
			id = strings.TrimPrefix(s.Link, "/outboxes/orders/events/")
		}
	}
	if id == "" {
		t.Fatal("the trace did not find e-9 in the outbox")
	}
	r := do(t, nil, "POST", base+"/api/v1/outboxes/orders/events/requeue", "application/json", `{"ids":[`+id+`],"reason":"fixed the serializer"}`)
	if r.status != http.StatusOK {
		t.Fatalf("requeue: %d %s", r.status, r.body)
	}
	steps := getTrace(t, base, "event_id=e-9").steps("audit log")
	var found []string
	for _, s := range steps {
		if s.Found {
			found = append(found, s.Detail)
		}
	}
	if len(found) == 0 || !strings.Contains(strings.Join(found, " | "), "outbox.requeue on outbox/orders") ||
		!strings.Contains(strings.Join(found, " | "), "fixed the serializer") {
		t.Fatalf("audit steps of e-9 after its requeue: %+v", steps)
	}
	// e-1's trace does not pick up e-9's requeue.
	for _, s := range getTrace(t, base, "event_id=e-1").steps("audit log") {
		if s.Found {
			t.Errorf("e-1's trace shows %q", s.Detail)
		}
	}
}

// produceDLT writes a Spring dead letter of message id to orders.DLT's partition p, dead-lettered
// by inventory-service at at, and returns its offset.
func (w traceWorld) produceDLT(t *testing.T, p int32, key, id string, at time.Time) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.broker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	res := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "orders.DLT", Partition: p, Key: []byte(key), Timestamp: at,
		Headers: []kgo.RecordHeader{
			{Key: "messageId", Value: []byte(id)},
			{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte("inventory-service")},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.StockException")},
		},
		Value: []byte(`{"event":"` + id + `"}`)})
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	return res[0].Record.Offset
}

// The outbox row narrows a trace to its key's partition and its time window, but a dead letter
// may be elsewhere (another key, a clock behind): e-2's, in another partition and two hours
// earlier, was "not found" after one partition's window was read. With nothing there, the rest
// of the budget reads the whole topic.
func TestTraceWidensWhenTheNarrowedSearchFindsNothing(t *testing.T) {
	w := newTraceWorld(t)
	other := (w.part + 1) % 6
	off := w.produceDLT(t, other, "order-elsewhere", "e-2", time.Now().Add(-2*time.Hour))
	base := w.console(t, "")
	a := getTrace(t, base, "message_id=e-2")
	t.Log(a.dump())
	s := a.steps("kafka main/orders.DLT")
	if len(s) != 1 || !s[0].Found || s[0].Place != fmt.Sprintf("orders.DLT/%d @ %d", other, off) {
		t.Errorf("orders.DLT steps: %+v", s)
	}
	if !strings.Contains(a.Verdict, "dead-lettered by inventory-service (StockException)") {
		t.Errorf("verdict %q", a.Verdict)
	}
	// Where nothing is, both readings are said: the narrowed one, then the whole topic.
	miss := getTrace(t, base, "aggregate_id=order-200").steps("kafka main/orders")
	if len(miss) != 1 || miss[0].Found || !strings.Contains(miss[0].Detail, "the key's partition") ||
		!strings.Contains(miss[0].Detail, "nothing there, so then searched orders partitions 0 offsets") ||
		!strings.Contains(miss[0].Detail, "(the whole topic, newest first)") {
		t.Errorf("order-200 record step: %+v", miss)
	}
}

// A replayed dead letter the search's budget did not reach is read at the offset the ledger
// names: the ledger step named orders.DLT/q/0 while the topic's step said the message was not
// found in it. The budget note says how far the cut partition was read.
func TestTraceReadsTheRecordTheLedgerNames(t *testing.T) {
	w := newTraceWorld(t)
	q := (w.part + 1) % 6
	created := time.Now().Add(-2 * time.Hour)
	off := w.produceDLT(t, q, "order-elsewhere", "e-3", created)
	for i := range 5 {
		w.produceDLT(t, q, "order-filler", fmt.Sprintf("f-%d", i), created.Add(time.Duration(i+1)*time.Second))
	}
	base := w.console(t, "search: {max_scan: 3}\n")
	replayDLT(t, base, q, off)
	a := getTrace(t, base, "message_id=e-3")
	t.Log(a.dump())
	var rec, note []traceStep
	for _, s := range a.steps("kafka main/orders.DLT") {
		if s.Found {
			rec = append(rec, s)
		} else {
			note = append(note, s)
		}
	}
	if len(rec) != 1 || rec[0].Place != fmt.Sprintf("orders.DLT/%d @ %d", q, off) || !strings.Contains(rec[0].Detail, "the replay ledger names") {
		t.Errorf("the ledger's record: %+v", rec)
	}
	if len(note) != 1 || !strings.Contains(note[0].Detail, fmt.Sprintf("partition %d read in part (", q)) {
		t.Errorf("budget note: %+v", note)
	}
	if !strings.Contains(a.Verdict, "dead-lettered by inventory-service (StockException)") {
		t.Errorf("verdict %q", a.Verdict)
	}
}

// A viewer (bearer token) cannot confirm a masked trace id by tracing it: the trace matched the
// records as fetched and found orders/p @ o by the hidden traceId header, where a search's filter
// on the same value matched nothing. An admin who asks to reveal traces by it.
func TestTraceAsViewerMatchesTheMaskedView(t *testing.T) {
	w := newTraceWorld(t)
	base := startConsole(t, basicAuth("")+fmt.Sprintf(`
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q}]
kafka:
  - {name: main, brokers: [%q]}
redaction: {headers: [traceId]}
`, pgtest.NewDatabase(t), w.outboxDSN, w.broker)+fmt.Sprintf(traceConsumers, w.outboxDSN))
	kafkaFound := func(token, query string) []traceStep {
		t.Helper()
		r := bearer(t, "GET", base+"/api/v1/trace?"+query, token, "")
		if r.status != 200 {
			t.Fatalf("%s %s: %d %s", token, query, r.status, r.body)
		}
		var out []traceStep
		for _, s := range decode[traceAnswer](t, r).Steps {
			if s.Kind == "kafka" && s.Found {
				out = append(out, s)
			}
		}
		return out
	}
	if s := kafkaFound("tok-viewer", "trace_id=trace-e-1"); len(s) != 0 {
		t.Errorf("the viewer found records by a masked trace id: %+v", s)
	}
	if s := kafkaFound("tok-admin", "trace_id=trace-e-1&reveal=true"); len(s) != 1 || s[0].Place != fmt.Sprintf("orders/%d @ %d", w.part, w.offsets["e-1"]) {
		t.Errorf("the admin revealing: %+v", s)
	}
	if s := kafkaFound("tok-viewer", "message_id=e-1"); len(s) != 2 {
		t.Errorf("the viewer by an id in clear: %+v", s)
	}
}
