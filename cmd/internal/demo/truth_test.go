package demo

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/trace"
)

// readTopic reads every record of topic (all partitions, start to end) with an independent
// client of the test's own, read_committed unless opts say otherwise.
func readTopic(t *testing.T, c *kfake.Cluster, topic string, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(kfaketest.Client(t, c))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want, next := map[int32]int64{}, map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	// As a read_committed consumer reads it (an aborted transaction's records and the markers take
	// offsets, and are no records): done when each partition's last record is the one before its
	// end (the demo's topics end with a committed record).
	cl := kfaketest.Client(t, c, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())}, opts...)...)
	var out []*kgo.Record
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: read %d records (up to %v of %v) in 30 s", topic, len(out), next, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			next[r.Partition] = r.Offset + 1
		})
	}
	return out
}

func header(r *kgo.Record, key string) string { return string(headerValue(r, key)) }

// byID indexes records by their messageId header, failing on a duplicate.
func byID(t *testing.T, recs []*kgo.Record) map[string]*kgo.Record {
	t.Helper()
	m := map[string]*kgo.Record{}
	for _, r := range recs {
		id := header(r, "messageId")
		if m[id] != nil {
			t.Errorf("%s is on %s twice (%d@%d and %d@%d)", id, r.Topic, m[id].Partition, m[id].Offset, r.Partition, r.Offset)
		}
		m[id] = r
	}
	return m
}

// checkDeadLetters checks that every record of dlt points, through Spring's original-partition
// and -offset headers, at the record of the same message id, key and value on topic.
func checkDeadLetters(t *testing.T, dlt []*kgo.Record, originals map[string]*kgo.Record, topic string, want int) {
	t.Helper()
	if len(dlt) != want {
		t.Errorf("%d dead letters, want %d", len(dlt), want)
	}
	for _, d := range dlt {
		id := header(d, "messageId")
		o := originals[id]
		if o == nil {
			t.Errorf("dead letter %d@%d: %s is not on %s", d.Partition, d.Offset, id, topic)
			continue
		}
		p := int32(binary.BigEndian.Uint32(headerValue(d, "kafka_dlt-original-partition")))
		off := int64(binary.BigEndian.Uint64(headerValue(d, "kafka_dlt-original-offset")))
		if header(d, "kafka_dlt-original-topic") != topic || p != o.Partition || off != o.Offset || d.Partition != o.Partition ||
			!bytes.Equal(d.Key, o.Key) || !bytes.Equal(d.Value, o.Value) || !d.Timestamp.After(o.Timestamp) {
			t.Errorf("dead letter %d@%d of %s says %s/%d@%d key %s; the original is %d@%d key %s", d.Partition, d.Offset, id,
				header(d, "kafka_dlt-original-topic"), p, off, d.Key, o.Partition, o.Offset, o.Key)
		}
	}
}

// The seeded outbox and the seeded topics agree: every SENT event is on orders once, with its
// event id as messageId, its aggregate id as key, in the key's partition, its payload as value,
// at its sent_at; every dead letter and retry points at its original record's real partition and
// offset, with the same key and value; a payments dead letter's originalOffset is its record's.
func TestSeededOutboxAndKafkaAgree(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	c := kfaketest.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := SeedOutbox(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	if err := SeedKafka(ctx, c.ListenAddrs()); err != nil {
		t.Fatal(err)
	}
	orders := byID(t, readTopic(t, c, OrdersTopic))
	conn := pgtest.Conn(t, dsn)
	rows, err := conn.Query(ctx, `SELECT event_id, aggregate_id, payload, sent_at FROM outbox_event WHERE status = 'SENT'`)
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	for rows.Next() {
		var id, agg, payload string
		var at time.Time
		if err := rows.Scan(&id, &agg, &payload, &at); err != nil {
			t.Fatal(err)
		}
		sent++
		r := orders[id]
		switch {
		case r == nil:
			t.Errorf("SENT %s is not on orders", id)
		case string(r.Key) != agg || string(r.Value) != payload || r.Partition != kafka.KeyPartition(OrdersTopic, r.Key, 3):
			t.Errorf("SENT %s (key %s): on orders %d@%d with key %s", id, agg, r.Partition, r.Offset, r.Key)
		case r.Timestamp.Sub(at).Abs() > 5*time.Second:
			t.Errorf("SENT %s at %s: produced at %s", id, at, r.Timestamp)
		}
	}
	if sent != HistorySize || len(orders) != HistorySize {
		t.Errorf("%d SENT rows, %d records on orders: want %d each", sent, len(orders), HistorySize)
	}
	checkDeadLetters(t, readTopic(t, c, "orders.DLT"), orders, OrdersTopic, 240)
	for _, r := range readTopic(t, c, "orders.retry-1") {
		o := orders[header(r, "messageId")]
		off := int64(binary.BigEndian.Uint64(headerValue(r, "kafka_original-offset")))
		if o == nil || off != o.Offset || !bytes.Equal(r.Key, o.Key) {
			t.Errorf("retry %d says offset %d of %s", r.Offset, off, header(r, "messageId"))
		}
	}
	payments := byID(t, readTopic(t, c, "payments"))
	for _, d := range readTopic(t, c, "payments-dlt") {
		o := payments[header(d, "originalMessageId")]
		if o == nil || header(d, "originalOffset") != strconv.FormatInt(o.Offset, 10) || header(d, "originalPartition") != fmt.Sprint(o.Partition) {
			t.Errorf("payments-dlt %d: points at %s/%s, the record is elsewhere", d.Offset, header(d, "originalPartition"), header(d, "originalOffset"))
		}
	}
}

// runFor runs f(ctx) in the background; stop ends it and waits for it.
func runFor(f func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f(ctx) }()
	return sync.OnceFunc(func() { cancel(); <-done })
}

// The relay produces what it marks SENT, and only that: after it ran, every event it sent (the
// seeded backlog's and its new ones) is on orders once, keyed by its aggregate in the key's
// partition, and no event it did not send (FAILED, READY, PROCESSING) is; a trace of such an event
// finds it on orders, as it finds an event of the seeded history.
func TestRelayProducesWhatItMarksSent(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	c := kfaketest.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := SeedOutbox(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	if err := SeedKafka(ctx, c.ListenAddrs()); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	stop := runFor(func(ctx context.Context) {
		RunRelay(ctx, dsn, c.ListenAddrs(), slog.New(slog.NewTextHandler(&logs, nil)))
	})
	defer stop()
	deadline := time.Now().Add(20 * time.Second)
	for pgtest.Value[int64](t, dsn, `SELECT count(*) FROM outbox_event WHERE status = 'SENT' AND event_id LIKE 'evt-live-%'`) < 10 {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("the relay sent fewer than 10 new events in 20 s; its log:\n%s", logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	if logs.Len() > 0 {
		t.Errorf("the relay logged:\n%s", logs.String())
	}
	orders := byID(t, readTopic(t, c, OrdersTopic))
	conn := pgtest.Conn(t, dsn)
	rows, err := conn.Query(ctx, `SELECT event_id, aggregate_id, payload, status FROM outbox_event WHERE event_id NOT LIKE 'evt-0%'`)
	if err != nil {
		t.Fatal(err)
	}
	var sent, other int
	var liveSent string
	for rows.Next() {
		var id, agg, payload, status string
		if err := rows.Scan(&id, &agg, &payload, &status); err != nil {
			t.Fatal(err)
		}
		r := orders[id]
		if status != "SENT" {
			other++
			if r != nil {
				t.Errorf("%s is %s in the outbox but on orders at %d@%d", id, status, r.Partition, r.Offset)
			}
			continue
		}
		sent++
		if strings.HasPrefix(id, "evt-live-") {
			liveSent = id
		}
		if r == nil || string(r.Key) != agg || string(r.Value) != payload || r.Partition != kafka.KeyPartition(OrdersTopic, r.Key, 3) {
			t.Errorf("SENT %s (key %s) is not on orders as sent: %v", id, agg, r)
		}
	}
	if want := HistorySize + sent; len(orders) != want {
		t.Errorf("orders holds %d records; the outbox has %d SENT (%d seeded, %d by the relay)", len(orders), want, HistorySize, sent)
	}
	t.Logf("the relay sent %d events; %d others are READY, PROCESSING, FAILED or DEAD", sent, other)

	// The console's trace finds a sent event on its topic.
	cfg, err := configs.Parse(fmt.Appendf(nil, `
auth: {mode: none}
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q}]
kafka: [{name: main, brokers: [%q]}]
consumers:
  - name: inventory-service
    inbox: {dsn: %q}
    kafka: {cluster: main, group: inventory-service, topics: [orders]}
`, dsn, dsn, c.ListenAddrs()[0], dsn), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ob, err := pgoutbox.Open(ctx, cfg.Outboxes[0])
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kafka.New(cfg.Kafka[0], cfg.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	tr := trace.New(trace.Options{Outboxes: []trace.Outbox{ob}, Kafka: []trace.KafkaCluster{kc}, IDs: ops.MessageIDRules(cfg.MessageID),
		Consumers: []ops.Consumer{{Name: "inventory-service", Kafka: &ops.ConsumerKafka{Cluster: "main", Group: "inventory-service", Topics: []string{"orders"}}}}})
	for _, id := range []string{liveSent, "evt-000042"} {
		res, err := tr.Trace(ctx, trace.Query{EventID: id})
		if err != nil {
			t.Fatal(err)
		}
		want := orders[id]
		found := false
		for _, s := range res.Steps {
			if s.Kind == trace.KindKafka && s.Found && s.Source == "kafka main/orders" &&
				strings.Contains(s.Place, fmt.Sprintf("%d", want.Offset)) {
				found = true
			}
		}
		if !found || strings.Contains(res.Verdict, "not found") {
			var b strings.Builder
			for _, s := range res.Steps {
				fmt.Fprintf(&b, "\n  %s %s found=%v %s %s", s.Kind, s.Source, s.Found, s.Place, s.Detail)
			}
			t.Errorf("trace of SENT %s (orders %d@%d): %s%s", id, want.Partition, want.Offset, res.Verdict, b.String())
		}
	}
}

// The refunds service in MariaDB: its outbox holds every state (stuck leases among the
// PROCESSING rows), its SENT events are on refunds as sent, refunds.DLT points at the real
// originals, fraud-check waits at the poison record (not JSON) with no member, so that its offset
// can be moved; live, the relay produces what it marks SENT and ledger-service records what it
// consumes in its MariaDB inbox.
func TestRefundsInMariaDBAgree(t *testing.T) {
	outDSN, inDSN := mysqltest.NewDatabase(t), mysqltest.NewDatabase(t)
	c := kfaketest.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := SeedRefunds(ctx, c.ListenAddrs(), outDSN, inDSN); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, st := range []string{"SENT", "READY", "PROCESSING", "FAILED", "DEAD"} {
		counts[st] = mysqltest.Value[int64](t, outDSN, `SELECT count(*) FROM outbox_event WHERE status = ?`, st)
	}
	stuck := mysqltest.Value[int64](t, outDSN, `SELECT count(*) FROM outbox_event WHERE status = 'PROCESSING' AND locked_until < UTC_TIMESTAMP(6)`)
	if counts["SENT"] != refundsHistory || counts["READY"] != 20 || counts["PROCESSING"] != 8 || counts["FAILED"] != 6 || counts["DEAD"] != 9 || stuck != 3 {
		t.Errorf("refunds outbox: %v, %d stuck", counts, stuck)
	}
	// The console's MariaDB adapter reads the same.
	cfg, err := configs.Parse(fmt.Appendf(nil, "auth: {mode: none}\nstore: {dsn: %q}\noutboxes: [{name: refunds, dsn: %q}]\n", pgtest.AdminDSN(t), outDSN),
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ob, err := mysqloutbox.Open(ctx, cfg.Outboxes[0])
	if err != nil {
		t.Fatal(err)
	}
	st, err := ob.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.StuckLeases != 3 {
		t.Errorf("the console's MariaDB outbox counts %d stuck leases, want 3: %+v", st.StuckLeases, st)
	}

	refunds := byID(t, readTopic(t, c, RefundsTopic))
	if len(refunds) != refundsHistory {
		t.Errorf("refunds holds %d records, want %d", len(refunds), refundsHistory)
	}
	checkDeadLetters(t, readTopic(t, c, RefundsDLT), refunds, RefundsTopic, 14)
	// Under them in the log, the dead letters of ledger-service's aborted transaction, one on
	// each partition: only a read_uncommitted reader gets them.
	var aborted []string
	all := readTopic(t, c, RefundsDLT, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	for _, r := range all {
		if header(r, "kafka_dlt-exception-fqcn") == "com.acme.ledger.LedgerUnavailableException" {
			aborted = append(aborted, fmt.Sprintf("%d@%d", r.Partition, r.Offset))
		}
	}
	if len(all) != 14+AbortedDeadLetters || len(aborted) != AbortedDeadLetters || aborted[0][0] == aborted[1][0] {
		t.Errorf("read uncommitted, refunds.DLT holds %d records, the aborted ones at %v; want 14 and %d aborted on both partitions",
			len(all), aborted, AbortedDeadLetters)
	}
	adm := kadm.NewClient(kfaketest.Client(t, c))
	fraud, err := adm.FetchOffsets(ctx, PoisonGroup)
	if err != nil {
		t.Fatal(err)
	}
	poison := refunds[fmt.Sprintf("rfd-evt-%06d", poisonEvent)]
	if o, ok := fraud.Lookup(RefundsTopic, poison.Partition); !ok || o.At != poison.Offset || bytes.HasPrefix(poison.Value, []byte("{")) {
		t.Errorf("fraud-check at %v; the poison record is %d@%d: %s", o, poison.Partition, poison.Offset, poison.Value)
	}
	groups, err := adm.DescribeGroups(ctx, PoisonGroup)
	if err != nil {
		t.Fatal(err)
	}
	if g := groups[PoisonGroup]; len(g.Members) != 0 {
		t.Errorf("fraud-check has members %v: its offsets could not be moved", g.Members)
	}

	var logs bytes.Buffer
	stop := runFor(func(ctx context.Context) {
		RunRefunds(ctx, c.ListenAddrs(), outDSN, inDSN, slog.New(slog.NewTextHandler(&logs, nil)))
	})
	defer stop()
	deadline := time.Now().Add(30 * time.Second)
	for mysqltest.Value[int64](t, inDSN, `SELECT count(*) FROM inbox_message WHERE message_id LIKE 'rfd-evt-live-%' AND processed_at IS NOT NULL`) < 3 {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("ledger-service processed fewer than 3 live refunds in 30 s; log:\n%s", logs.String())
		}
		time.Sleep(300 * time.Millisecond)
	}
	stop()
	if logs.Len() > 0 {
		t.Errorf("logged:\n%s", logs.String())
	}
	refunds = byID(t, readTopic(t, c, RefundsTopic))
	sent := mysqltest.Value[int64](t, outDSN, `SELECT count(*) FROM outbox_event WHERE status = 'SENT'`)
	if int64(len(refunds)) != sent {
		t.Errorf("refunds holds %d records, the outbox %d SENT events", len(refunds), sent)
	}
}

// Every start of the demo is fresh: Fresh drops what a run left — the store's ledger, the
// outbox's released leases, the RabbitMQ vhost's dead letters, a MariaDB database's tables — so
// that the next seed is the first seed again (five stuck leases, 62 messages in orders.dlq, not
// 124), never half kept.
func TestFreshStartDropsThePreviousRun(t *testing.T) {
	admin := pgtest.AdminDSN(t)
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	store, orders := "demo_store_"+suffix, "demo_orders_"+suffix
	dsnOf := func(db string) string {
		u := strings.SplitN(admin, "?", 2)
		i := strings.LastIndex(u[0], "/")
		out := u[0][:i+1] + db
		if len(u) == 2 {
			out += "?" + u[1]
		}
		return out
	}
	mysqlAdmin := mysqltest.AdminDSN(t)
	refunds := "demo_refunds_" + suffix
	vhost, amqpURL, mgmt := rabbittest.NewVhost(t)
	_, mgmtURL := rabbittest.Env(t)
	data := Data{PostgresAdmin: admin, PostgresDatabases: []string{store, orders}, MySQLAdmin: mysqlAdmin,
		MySQLDatabases: []string{refunds}, AMQPURL: amqpURL, ManagementURL: mgmtURL}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn := pgtest.Conn(t, admin)
		for _, db := range data.PostgresDatabases {
			_, _ = conn.Exec(ctx, `DROP DATABASE IF EXISTS `+db+` WITH (FORCE)`)
		}
		mysqltest.Exec(t, mysqlAdmin, "DROP DATABASE IF EXISTS "+refunds)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(n int) {
		t.Helper()
		if err := Fresh(ctx, data); err != nil {
			t.Fatalf("start %d: %v", n, err)
		}
		if got := pgtest.Value[int64](t, dsnOf(store), `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`); got != 0 {
			t.Errorf("start %d: the store kept %d tables of the previous run", n, got)
		}
		mysqlDSN := mysqlAdmin[:strings.LastIndex(mysqlAdmin, "/")+1] + refunds
		if got := mysqltest.Value[int64](t, mysqlDSN, `SELECT count(*) FROM information_schema.tables WHERE table_schema = ?`, refunds); got != 0 {
			t.Errorf("start %d: MariaDB's %s kept %d tables", n, refunds, got)
		}
		if err := SeedOutbox(ctx, dsnOf(orders)); err != nil {
			t.Fatal(err)
		}
		if stuck := pgtest.Value[int64](t, dsnOf(orders), `SELECT count(*) FROM outbox_event WHERE status = 'PROCESSING' AND locked_until < now() AT TIME ZONE 'UTC'`); stuck != 5 {
			t.Errorf("start %d: %d stuck leases, want the seed's 5", n, stuck)
		}
		if err := SeedRabbit(ctx, amqpURL, mgmtURL); err != nil {
			t.Fatal(err)
		}
		// 62 seeded; the live traffic the seed starts rejects a few more a minute, never 62 more.
		rabbittest.WaitFor(t, 30*time.Second, "orders.dlq at the seed's 62", func(context.Context) bool {
			q, err := mgmt.GetQueue(vhost, "orders.dlq")
			return err == nil && q.Messages >= 62 && q.Messages < 80
		})
		// What an operator does in a run: a store table (the ledger), released leases, a table
		// in MariaDB.
		pgtest.Exec(t, dsnOf(store), `CREATE TABLE replay_ledger (id int); INSERT INTO replay_ledger VALUES (1)`)
		pgtest.Exec(t, dsnOf(orders), `UPDATE outbox_event SET status = 'READY', locked_until = NULL WHERE status = 'PROCESSING'`)
		mysqltest.Exec(t, mysqlDSN, `CREATE TABLE outbox_event (id int)`)
	}
	run(1)
	run(2)
}
