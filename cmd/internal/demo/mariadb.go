package demo

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/inbox/mysqlinbox"
	"github.com/redrive/redrive/ops/mysqlpool"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
)

// The refunds service keeps its outbox in MariaDB (database refunds) and its relay produces to
// Kafka's refunds topic; ledger-service consumes that topic with its inbox in MariaDB too
// (database ledger), dead-lettering to refunds.DLT; fraud-check, another group of refunds, crashed
// on a record it cannot parse and is down, its offset on that record.
const (
	RefundsTopic    = "refunds"
	RefundsDLT      = "refunds.DLT"
	RefundsConsumer = "ledger-service"
	PoisonGroup     = "fraud-check"
	// refundsHistory is how many SENT events the refunds outbox and topic hold when seeded.
	refundsHistory = 1200
	// poisonEvent is the SENT event whose payload is not JSON (a form-encoded body a release of
	// the refunds service wrote for a day): fraud-check stops on it.
	poisonEvent = 37
)

// refundHistory is the refunds service's delivered history at now: event g is rfd-evt-%06d,
// created g×120 s ago and sent 2 s later, newest first.
func refundHistory(now time.Time) []sentEvent {
	now = now.UTC().Truncate(time.Millisecond)
	out := make([]sentEvent, 0, refundsHistory)
	for g := 1; g <= refundsHistory; g++ {
		typ := "RefundRequested"
		if g%3 == 0 {
			typ = "RefundIssued"
		}
		id, agg := fmt.Sprintf("rfd-evt-%06d", g), fmt.Sprintf("rfd-%d", 70000+g%300)
		created := now.Add(-time.Duration(g*120) * time.Second)
		payload, _ := json.Marshal(map[string]any{"messageId": id, "eventType": typ, "aggregateId": agg,
			"occurredAt": created, "schemaVersion": 1,
			"payload": map[string]any{"refundId": agg, "orderId": fmt.Sprintf("ord-%d", 10000+g%900),
				"amount": float64(5+g%80) + 0.99, "currency": "EUR"}})
		if g == poisonEvent {
			payload = fmt.Appendf(nil, "refundId=%s&amount=12,50&currency=EUR", agg)
		}
		out = append(out, sentEvent{EventID: id, AggregateType: "Refund", AggregateID: agg, EventType: typ,
			Payload: string(payload), CreatedAt: created, SentAt: created.Add(2 * time.Second)})
	}
	return out
}

// openMySQL opens a mysql:// URL as the console reads it, several statements allowed per Exec.
func openMySQL(dsn string) (*sql.DB, error) {
	cfg, err := mysqlpool.ParseURL(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MultiStatements = true
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// SeedRefunds fills the refunds outbox (MariaDB at outboxDSN) in every state, ledger-service's
// inbox (inboxDSN) and the refunds topics of brokers, all from one history so that they agree:
// every SENT event is on refunds in its key's partition with its event id as messageId; each
// refunds.DLT record points at its original's partition and offset; half the history (and none
// of the poison) is processed in the inbox, some only received. It commits ledger-service at the
// end of the seeded topic (RunRefunds then consumes what the relay adds) and fraud-check on the
// poison record, with no member. The outbox and inbox tables are created; a database already
// holding events is left as it is.
func SeedRefunds(ctx context.Context, brokers []string, outboxDSN, inboxDSN string) error {
	out, err := openMySQL(outboxDSN)
	if err != nil {
		return fmt.Errorf("demo: refunds outbox: %w", err)
	}
	defer out.Close()
	in, err := openMySQL(inboxDSN)
	if err != nil {
		return fmt.Errorf("demo: ledger inbox: %w", err)
	}
	defer in.Close()
	if _, err := out.ExecContext(ctx, mysqloutbox.SeedDDL); err != nil {
		return fmt.Errorf("demo: refunds outbox: %w", err)
	}
	if _, err := in.ExecContext(ctx, mysqlinbox.SeedDDL); err != nil {
		return fmt.Errorf("demo: ledger inbox: %w", err)
	}
	var n int
	if err := out.QueryRowContext(ctx, `SELECT count(*) FROM outbox_event`).Scan(&n); err != nil || n > 0 {
		return err
	}
	now := time.Now().UTC()
	history := refundHistory(now)
	rows := make([][]any, 0, len(history)+60)
	for _, e := range history {
		rows = append(rows, []any{e.EventID, e.AggregateType, e.AggregateID, e.EventType, 1, e.Payload, "SENT", 1,
			e.CreatedAt, nil, nil, e.CreatedAt, e.SentAt})
	}
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	event := func(id, agg, typ string) string {
		b, _ := json.Marshal(map[string]any{"messageId": id, "eventType": typ, "aggregateId": agg, "schemaVersion": 1,
			"payload": map[string]any{"refundId": agg, "currency": "EUR"}})
		return string(b)
	}
	for g := 1; g <= 20; g++ { // READY: most due (the relay is behind), some retries later
		id, agg := fmt.Sprintf("rfd-evt-r%d", g), fmt.Sprintf("rfd-%d", 71000+g)
		avail := ago(time.Duration(300-g*10) * time.Second)
		if g > 14 {
			avail = now.Add(time.Duration(g*30) * time.Second)
		}
		rows = append(rows, []any{id, "Refund", agg, "RefundRequested", 1, event(id, agg, "RefundRequested"), "READY", g / 15 * 2,
			avail, nil, nil, ago(time.Duration(320-g*10) * time.Second), nil})
	}
	for g := 1; g <= 8; g++ { // PROCESSING: five live leases, three of a relay that died
		id, agg := fmt.Sprintf("rfd-evt-p%d", g), fmt.Sprintf("rfd-%d", 72000+g)
		lease := now.Add(10 * time.Minute)
		if g <= 3 {
			lease = ago(time.Duration(2*g) * time.Minute)
		}
		rows = append(rows, []any{id, "Refund", agg, "RefundIssued", 1, event(id, agg, "RefundIssued"), "PROCESSING", 1,
			ago(10 * time.Minute), lease, nil, ago(11 * time.Minute), nil})
	}
	for g := 1; g <= 6; g++ { // FAILED: waiting for their next attempt
		id, agg := fmt.Sprintf("rfd-evt-f%d", g), fmt.Sprintf("rfd-%d", 73000+g)
		rows = append(rows, []any{id, "Refund", agg, "RefundRequested", 1, event(id, agg, "RefundRequested"), "FAILED", 1 + g%3,
			now.Add(time.Duration(g) * time.Minute), nil,
			"org.apache.kafka.common.errors.NotEnoughReplicasException: Messages are rejected since there are fewer in-sync replicas than required.",
			ago(time.Duration(20+g) * time.Minute), nil})
	}
	deadErrors := []string{
		"org.apache.kafka.common.errors.RecordTooLargeException: The message is 2097152 bytes when serialized which is larger than 1048576",
		"com.fasterxml.jackson.databind.exc.InvalidDefinitionException: Java 8 date/time type `java.time.Instant` not supported by default",
		"org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access topics: [refunds.v2]",
	}
	for g := 1; g <= 9; g++ { // DEAD: past max attempts
		id, agg := fmt.Sprintf("rfd-evt-d%d", g), fmt.Sprintf("rfd-%d", 74000+g)
		rows = append(rows, []any{id, "Refund", agg, "RefundIssued", 1, event(id, agg, "RefundIssued"), "DEAD", 10,
			ago(time.Duration(g) * time.Hour), nil, deadErrors[g%len(deadErrors)], ago(time.Duration(g)*time.Hour + 15*time.Minute), nil})
	}
	const cols = `(event_id, aggregate_type, aggregate_id, event_type, schema_version, payload, status, attempts,
		available_at, locked_until, last_error, created_at, sent_at)`
	if err := insertRows(ctx, out, "INSERT INTO outbox_event "+cols, 13, rows); err != nil {
		return fmt.Errorf("demo: seed refunds outbox: %w", err)
	}

	// ledger-service processed the even events and has received, not finished, a few others.
	var inbox [][]any
	for g, e := range history {
		switch {
		case g+1 == poisonEvent:
		case (g+1)%2 == 0:
			inbox = append(inbox, []any{e.EventID, RefundsConsumer, e.SentAt.Add(time.Second), e.SentAt.Add(2 * time.Second)})
		case (g+1)%9 == 1:
			inbox = append(inbox, []any{e.EventID, RefundsConsumer, e.SentAt.Add(time.Second), nil})
		}
	}
	if err := insertRows(ctx, in, "INSERT INTO inbox_message (message_id, consumer, received_at, processed_at)", 4, inbox); err != nil {
		return fmt.Errorf("demo: seed ledger inbox: %w", err)
	}
	return seedRefundsTopics(ctx, brokers, history)
}

// insertRows inserts rows (each of width values) with prefix … VALUES, 500 rows a statement.
func insertRows(ctx context.Context, db *sql.DB, prefix string, width int, rows [][]any) error {
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", width), ",") + ")"
	for len(rows) > 0 {
		batch := rows[:min(500, len(rows))]
		rows = rows[len(batch):]
		args := make([]any, 0, len(batch)*width)
		for _, r := range batch {
			args = append(args, r...)
		}
		q := prefix + " VALUES " + strings.TrimSuffix(strings.Repeat(one+",", len(batch)), ",")
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

func seedRefundsTopics(ctx context.Context, brokers []string, history []sentEvent) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, topic := range []string{RefundsTopic, RefundsDLT} {
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
			return fmt.Errorf("demo: create %s: %w", topic, err)
		}
	}
	recs := make([]*kgo.Record, 0, len(history))
	for i := len(history) - 1; i >= 0; i-- {
		recs = append(recs, historyRecord(RefundsTopic, 2, history[i]))
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("demo: produce refunds: %w", err)
	}
	placed := map[string]*kgo.Record{}
	for _, r := range recs {
		placed[string(headerValue(r, "messageId"))] = r
	}
	// ledger-service's dead letters: ids spread over processed and unprocessed events.
	failures := []struct{ fqcn, message string }{
		{"com.acme.ledger.CurrencyMismatchException", "refund %s is in EUR, the charge was in USD"},
		{"org.springframework.dao.CannotAcquireLockException", "could not obtain lock on ledger_account for refund %s; Lock wait timeout exceeded"},
	}
	var dead []*kgo.Record
	for i := range 14 {
		orig := placed[fmt.Sprintf("rfd-evt-%06d", 2+i*13)]
		f := failures[i%len(failures)]
		dead = append(dead, &kgo.Record{Topic: RefundsDLT, Partition: orig.Partition, Key: orig.Key, Value: orig.Value,
			Timestamp: orig.Timestamp.Add(time.Minute),
			Headers: []kgo.RecordHeader{
				{Key: "kafka_dlt-original-topic", Value: []byte(RefundsTopic)},
				{Key: "kafka_dlt-original-partition", Value: be32(orig.Partition)},
				{Key: "kafka_dlt-original-offset", Value: be64(orig.Offset)},
				{Key: "kafka_dlt-original-timestamp", Value: be64(orig.Timestamp.UnixMilli())},
				{Key: "kafka_dlt-original-consumer-group", Value: []byte(RefundsConsumer)},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte(f.fqcn)},
				{Key: "kafka_dlt-exception-message", Value: []byte(fmt.Sprintf(f.message, orig.Key))},
				{Key: "messageId", Value: headerValue(orig, "messageId")},
			}})
	}
	// In the order they failed, as a DLT is written: a page merged across partitions by time
	// then reads newest first down each partition (the history is newest first, its dead letters
	// were made in that order).
	sort.SliceStable(dead, func(a, b int) bool { return dead[a].Timestamp.Before(dead[b].Timestamp) })
	if err := abortDeadLetters(ctx, brokers, placed); err != nil {
		return err
	}
	if err := cl.ProduceSync(ctx, dead...).FirstErr(); err != nil {
		return fmt.Errorf("demo: produce %s: %w", RefundsDLT, err)
	}
	// ledger-service has read the seeded topic; fraud-check stopped at the poison record.
	ends, err := adm.ListEndOffsets(ctx, RefundsTopic)
	if err != nil {
		return fmt.Errorf("demo: %s end offsets: %w", RefundsTopic, err)
	}
	ledger, fraud := kadm.Offsets{}, kadm.Offsets{}
	poison := placed[fmt.Sprintf("rfd-evt-%06d", poisonEvent)]
	ends.Each(func(o kadm.ListedOffset) {
		ledger.AddOffset(o.Topic, o.Partition, o.Offset, -1)
		at := o.Offset
		if o.Partition == poison.Partition {
			at = poison.Offset
		}
		fraud.AddOffset(o.Topic, o.Partition, at, -1)
	})
	for group, o := range map[string]kadm.Offsets{RefundsConsumer: ledger, PoisonGroup: fraud} {
		if _, err := adm.CommitOffsets(ctx, group, o); err != nil {
			return fmt.Errorf("demo: commit %s: %w", group, err)
		}
	}
	return nil
}

// AbortedDeadLetters is how many dead letters ledger-service's aborted transaction wrote to
// refunds.DLT, one on each partition, before the committed ones.
const AbortedDeadLetters = 2

// abortDeadLetters writes dead letters to refunds.DLT in a transaction and aborts it, as a
// transactional Spring consumer does when it dies before committing (the records stay in the log,
// each partition gets an abort marker): a read_committed consumer, kcat with
// -X isolation.level=read_committed and the console never see them; the console's admin read
// (isolation=uncommitted) shows them marked aborted. Kafka 4 readers that show or replay them are
// wrong.
func abortDeadLetters(ctx context.Context, brokers []string, placed map[string]*kgo.Record) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID(RefundsConsumer+"-dlt-0"))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		return fmt.Errorf("demo: begin a transaction: %w", err)
	}
	for p := range int32(AbortedDeadLetters) {
		var orig *kgo.Record
		for i := 190; orig == nil || orig.Partition != p; i += 13 { // older than the committed ones after them
			orig = placed[fmt.Sprintf("rfd-evt-%06d", i)]
		}
		r := &kgo.Record{Topic: RefundsDLT, Partition: p, Key: orig.Key, Value: orig.Value, Timestamp: orig.Timestamp.Add(time.Minute),
			Headers: []kgo.RecordHeader{
				{Key: "kafka_dlt-original-topic", Value: []byte(RefundsTopic)},
				{Key: "kafka_dlt-original-partition", Value: be32(orig.Partition)},
				{Key: "kafka_dlt-original-offset", Value: be64(orig.Offset)},
				{Key: "kafka_dlt-original-consumer-group", Value: []byte(RefundsConsumer)},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.ledger.LedgerUnavailableException")},
				{Key: "kafka_dlt-exception-message", Value: []byte("ledger database unreachable; this dead letter's transaction was aborted")},
				{Key: "messageId", Value: headerValue(orig, "messageId")},
			}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return fmt.Errorf("demo: produce in a transaction: %w", err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("demo: abort the transaction: %w", err)
	}
	return nil
}

// RunRefunds plays the refunds service's relay (its outbox in MariaDB at outboxDSN: an event a
// second, produced to refunds before it is marked SENT) and ledger-service, which consumes refunds
// and writes each message it processed to its inbox (inboxDSN), until ctx ends. Errors are logged
// to log, each distinct one once.
func RunRefunds(ctx context.Context, brokers []string, outboxDSN, inboxDSN string, log *slog.Logger) {
	failed := relayErrors{log: log, seen: map[string]bool{}}
	out, err := openMySQL(outboxDSN)
	if err != nil {
		failed.note("open the refunds outbox", err)
		return
	}
	defer out.Close()
	cl, err := relayClient(brokers)
	if err != nil {
		failed.note("connect to Kafka", err)
		return
	}
	defer cl.Close()
	go consumeRefunds(ctx, brokers, inboxDSN, relayErrors{log: log, seen: map[string]bool{}})
	r := &relay{table: mysqlRelay{out}, kafka: cl, topic: RefundsTopic, prefix: "rfd-evt-live", perSecond: 1, failed: failed,
		aggregate: func(n int) string { return fmt.Sprintf("rfd-%d", 75000+n%3000) },
		failWith:  "org.apache.kafka.common.errors.NotEnoughReplicasException: Messages are rejected since there are fewer in-sync replicas than required."}
	r.run(ctx)
}

// consumeRefunds is ledger-service: it consumes refunds from its committed offsets and records
// each message in its inbox, processed, before committing.
func consumeRefunds(ctx context.Context, brokers []string, inboxDSN string, failed relayErrors) {
	in, err := openMySQL(inboxDSN)
	if err != nil {
		failed.note("open the ledger inbox", err)
		return
	}
	defer in.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(RefundsConsumer), kgo.ConsumeTopics(RefundsTopic),
		kgo.DisableAutoCommit())
	if err != nil {
		failed.note("consume refunds", err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollRecords(ctx, 50)
		recs := fs.Records()
		ok := true
		for _, r := range recs {
			id := headerValue(r, "messageId")
			if id == nil {
				continue
			}
			_, err := in.ExecContext(ctx, `INSERT IGNORE INTO inbox_message (message_id, consumer, received_at, processed_at)
				VALUES (?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`, string(id), RefundsConsumer)
			if err != nil {
				failed.note("record a message in the ledger inbox", err)
				ok = false
				break
			}
		}
		if ok && len(recs) > 0 {
			failed.note("commit ledger-service", cl.CommitRecords(ctx, recs...))
		}
	}
}

// mysqlRelay is the refunds outbox in MariaDB (no UPDATE … RETURNING there: the claim selects
// FOR UPDATE SKIP LOCKED, then updates, in one transaction).
type mysqlRelay struct{ db *sql.DB }

func (m mysqlRelay) insert(ctx context.Context, eventID, aggregateID string) error {
	_, err := m.db.ExecContext(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version,
		payload, status, attempts, available_at, created_at)
		VALUES (?, 'Refund', ?, 'RefundRequested', 1,
		        JSON_OBJECT('messageId', ?, 'eventType', 'RefundRequested', 'aggregateId', ?, 'schemaVersion', 1,
		            'payload', JSON_OBJECT('refundId', ?, 'currency', 'EUR')),
		        'READY', 0, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`, eventID, aggregateID, eventID, aggregateID, aggregateID)
	return err
}

func (m mysqlRelay) claim(ctx context.Context, n int) (out []claimed, err error) {
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	rows, err := tx.QueryContext(ctx, `SELECT id, event_id, aggregate_id, event_type, payload FROM outbox_event
		WHERE status IN ('READY', 'FAILED') AND available_at <= UTC_TIMESTAMP(6)
		ORDER BY available_at LIMIT ? FOR UPDATE SKIP LOCKED`, n)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var c claimed
		if err := rows.Scan(&c.id, &c.eventID, &c.aggregateID, &c.eventType, &c.payload); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, c := range out {
		if _, err := tx.ExecContext(ctx, `UPDATE outbox_event SET status = 'PROCESSING',
			locked_until = UTC_TIMESTAMP(6) + INTERVAL 20 SECOND, attempts = attempts + 1 WHERE id = ?`, c.id); err != nil {
			return nil, err
		}
	}
	return out, tx.Commit()
}

func (m mysqlRelay) sent(ctx context.Context, id int64) error {
	_, err := m.db.ExecContext(ctx, `UPDATE outbox_event SET status = 'SENT', locked_until = NULL, sent_at = UTC_TIMESTAMP(6)
		WHERE id = ? AND status = 'PROCESSING'`, id)
	return err
}

func (m mysqlRelay) failed(ctx context.Context, id int64, lastError string) error {
	_, err := m.db.ExecContext(ctx, `UPDATE outbox_event SET status = 'FAILED', locked_until = NULL,
		available_at = UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE, last_error = ? WHERE id = ? AND status = 'PROCESSING'`, lastError, id)
	return err
}
