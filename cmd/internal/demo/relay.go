package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// OrdersTopic is where the orders service's relay produces its outbox's events.
const OrdersTopic = "orders"

// claimed is an outbox row a relay claimed (PROCESSING, under its lease).
type claimed struct {
	id                              int64
	eventID, aggregateID, eventType string
	payload                         string
}

// relayTable is one service's outbox as its relay uses it, in its database's dialect.
type relayTable interface {
	// insert writes a new READY event (the service's business transaction).
	insert(ctx context.Context, eventID, aggregateID string) error
	// claim leases up to n due READY or FAILED rows (FOR UPDATE SKIP LOCKED).
	claim(ctx context.Context, n int) ([]claimed, error)
	// sent marks a claimed row SENT, failed marks it FAILED with a retry a minute later; both
	// only while the row is still PROCESSING.
	sent(ctx context.Context, id int64) error
	failed(ctx context.Context, id int64, lastError string) error
}

// relay plays a service and its outbox relay: every second perSecond new events, then a claim of
// up to 2×perSecond due events, each produced to topic and marked SENT once Kafka acknowledged
// it — or, one time in six, FAILED without producing (a timeout, retried a minute later); an
// event Kafka refuses is FAILED with Kafka's error. What is SENT is on topic, with the event id
// as its messageId header and the aggregate id as its key (so it lands in the key's partition).
type relay struct {
	table     relayTable
	kafka     *kgo.Client
	topic     string
	prefix    string // of the new events' ids: evt-live-<unix>-<n>
	aggregate func(n int) string
	perSecond int
	failWith  string // the last_error of a simulated failure
	failed    relayErrors
}

// RunRelay plays the orders service and its outbox relay (PostgreSQL at dsn) until ctx ends, so
// the demo's outbox moves and what it marks SENT is on Kafka's orders topic (brokers): five new
// events a second, claimed with a 20 s lease (FOR UPDATE SKIP LOCKED, as the seed describes),
// produced (acks=all) and then marked SENT — or, one time in six, FAILED with a retry a minute
// later. The seeded PROCESSING rows of a "crashed" relay stay stuck. A statement that fails is
// logged to log, each distinct error once (the loop would repeat it every second), and the loop
// goes on.
func RunRelay(ctx context.Context, dsn string, brokers []string, log *slog.Logger) {
	failed := relayErrors{log: log, seen: map[string]bool{}}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		failed.note("connect", err)
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `SET timezone = 'UTC'`); err != nil {
		failed.note("set the time zone", err)
		return
	}
	cl, err := relayClient(brokers)
	if err != nil {
		failed.note("connect to Kafka", err)
		return
	}
	defer cl.Close()
	r := &relay{table: pgRelay{conn}, kafka: cl, topic: OrdersTopic, prefix: "evt-live", perSecond: 5, failed: failed,
		aggregate: func(n int) string { return fmt.Sprintf("ord-%d", 60000+n%5000) },
		failWith:  "org.apache.kafka.common.errors.TimeoutException: Expiring 1 record(s) for orders-1: 30000 ms has passed since batch creation"}
	r.run(ctx)
}

// relayClient produces as a Java relay does: acks=all, idempotent, the key's partition (murmur2).
func relayClient(brokers []string) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), kgo.ProducerLinger(0))
}

func (r *relay) run(ctx context.Context) {
	every(ctx, time.Second, func(n int) error {
		r.step(ctx, n)
		return nil
	})
}

// step is the relay's n-th second.
func (r *relay) step(ctx context.Context, n int) {
	for k := range r.perSecond {
		i := n*r.perSecond + k
		r.failed.note("insert an event", r.table.insert(ctx, fmt.Sprintf("%s-%d-%d", r.prefix, time.Now().Unix(), i), r.aggregate(i)))
	}
	rows, err := r.table.claim(ctx, 2*r.perSecond)
	if err != nil {
		r.failed.note("claim events", err)
		return
	}
	var recs []*kgo.Record
	var sending []claimed
	for _, c := range rows {
		if rand.IntN(6) == 0 {
			r.failed.note("mark an event FAILED", r.table.failed(ctx, c.id, r.failWith))
			continue
		}
		sending = append(sending, c)
		recs = append(recs, &kgo.Record{Topic: r.topic, Key: []byte(c.aggregateID), Value: []byte(c.payload),
			Headers: []kgo.RecordHeader{{Key: "messageId", Value: []byte(c.eventID)}, {Key: "eventType", Value: []byte(c.eventType)}}})
	}
	if len(recs) == 0 {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	res := r.kafka.ProduceSync(pctx, recs...)
	cancel()
	for i, pr := range res {
		if pr.Err != nil {
			if ctx.Err() != nil {
				return // the rows stay PROCESSING; their leases expire, as a crashed relay's would
			}
			r.failed.note("produce an event", pr.Err)
			r.failed.note("mark an event FAILED", r.table.failed(ctx, sending[i].id, "produce to "+r.topic+": "+pr.Err.Error()))
			continue
		}
		r.failed.note("mark an event SENT", r.table.sent(ctx, sending[i].id))
	}
}

// pgRelay is the orders outbox in PostgreSQL.
type pgRelay struct{ conn *pgx.Conn }

func (p pgRelay) insert(ctx context.Context, eventID, aggregateID string) error {
	// $1 is the event_id column (varchar) and a json_build_object argument: one type, text, for both.
	_, err := p.conn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version,
		payload, status, attempts, available_at, created_at)
		VALUES ($1::text, 'Order', $2::text, 'OrderCreated', 1,
		        json_build_object('messageId', $1::text, 'eventType', 'OrderCreated', 'aggregateId', $2::text,
		            'occurredAt', now(), 'schemaVersion', 1, 'payload', json_build_object('orderId', $2::text))::text,
		        'READY', 0, now(), now())`, eventID, aggregateID)
	return err
}

func (p pgRelay) claim(ctx context.Context, n int) ([]claimed, error) {
	rows, err := p.conn.Query(ctx, `UPDATE outbox_event SET status = 'PROCESSING', locked_until = now() + interval '20 seconds',
			attempts = attempts + 1
		WHERE id IN (SELECT id FROM outbox_event WHERE status IN ('READY', 'FAILED') AND available_at <= now()
		             ORDER BY available_at LIMIT $1 FOR UPDATE SKIP LOCKED)
		RETURNING id, event_id, aggregate_id, event_type, payload`, n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (claimed, error) {
		var c claimed
		err := row.Scan(&c.id, &c.eventID, &c.aggregateID, &c.eventType, &c.payload)
		return c, err
	})
}

func (p pgRelay) sent(ctx context.Context, id int64) error {
	_, err := p.conn.Exec(ctx, `UPDATE outbox_event SET status = 'SENT', locked_until = NULL, sent_at = now()
		WHERE id = $1 AND status = 'PROCESSING'`, id)
	return err
}

func (p pgRelay) failed(ctx context.Context, id int64, lastError string) error {
	_, err := p.conn.Exec(ctx, `UPDATE outbox_event SET status = 'FAILED', locked_until = NULL,
		available_at = now() + interval '1 minute', last_error = $2
		WHERE id = $1 AND status = 'PROCESSING'`, id, lastError)
	return err
}

// relayErrors logs the relay's failures, each distinct one once.
type relayErrors struct {
	log  *slog.Logger
	seen map[string]bool
}

// note logs err (nil: nothing) unless the same step failed the same way before; an error that
// comes of ctx ending is not one.
func (r relayErrors) note(step string, err error) {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	key := step + ": " + err.Error()
	if r.seen[key] {
		return
	}
	if len(r.seen) >= 100 { // errors that name a row each are distinct: remember a bounded few
		clear(r.seen)
	}
	r.seen[key] = true
	r.log.Error("demo relay: "+step+" failed (each distinct error is logged once)", "err", err)
}
