package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
)

// RunRelay plays the orders service and its outbox relay until ctx ends, so the demo's outbox
// moves: a new event every second; the relay claims due READY rows with a 20 s lease (FOR UPDATE
// SKIP LOCKED, as the seed describes), and a moment later marks them SENT — or, one time in six,
// FAILED with a retry a minute later. The seeded PROCESSING rows of a "crashed" relay stay stuck.
// A statement that fails is logged to log, each distinct error once (the loop would repeat it
// every second), and the loop goes on.
func RunRelay(ctx context.Context, dsn string, log *slog.Logger) {
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
	every(ctx, time.Second, func(n int) error {
		relayStep(ctx, conn, n, failed)
		return nil
	})
}

// relayStep is the relay's n-th second: a new READY event, then a claim of up to four due events,
// each marked SENT or, one time in six, FAILED.
func relayStep(ctx context.Context, conn *pgx.Conn, n int, failed relayErrors) {
	id := fmt.Sprintf("evt-live-%d-%d", time.Now().Unix(), n)
	// $1 is the event_id column (varchar) and a json_build_object argument: one type, text, for both.
	_, err := conn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version,
		payload, status, attempts, available_at, created_at)
		VALUES ($1::text, 'Order', $2::text, 'OrderCreated', 1, json_build_object('messageId', $1::text, 'orderId', $2::text)::text,
		        'READY', 0, now(), now())`, id, fmt.Sprintf("ord-%d", 60000+n))
	failed.note("insert an event", err)
	rows, err := conn.Query(ctx, `UPDATE outbox_event SET status = 'PROCESSING', locked_until = now() + interval '20 seconds',
			attempts = attempts + 1
		WHERE id IN (SELECT id FROM outbox_event WHERE status IN ('READY', 'FAILED') AND available_at <= now()
		             ORDER BY available_at LIMIT 4 FOR UPDATE SKIP LOCKED)
		RETURNING id`)
	if err != nil {
		failed.note("claim events", err)
		return
	}
	claimed, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		failed.note("claim events", err)
		return
	}
	for _, id := range claimed {
		if rand.IntN(6) == 0 {
			_, err := conn.Exec(ctx, `UPDATE outbox_event SET status = 'FAILED', locked_until = NULL,
				available_at = now() + interval '1 minute',
				last_error = 'org.apache.kafka.common.errors.TimeoutException: Expiring 1 record(s) for orders-1: 30000 ms has passed'
				WHERE id = $1 AND status = 'PROCESSING'`, id)
			failed.note("mark an event FAILED", err)
			continue
		}
		_, err := conn.Exec(ctx, `UPDATE outbox_event SET status = 'SENT', locked_until = NULL, sent_at = now()
			WHERE id = $1 AND status = 'PROCESSING'`, id)
		failed.note("mark an event SENT", err)
	}
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
