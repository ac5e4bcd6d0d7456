package pgoutbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops/outbox"
)

// List builds the filter's WHERE on the table's columns; timestamps are compared as timestamptz,
// in the session's UTC.
func (s *Store) List(ctx context.Context, f outbox.Filter) ([]outbox.Event, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.StuckOnly { // Check: Status is PROCESSING or none
		where = append(where, fmt.Sprintf("%s = 'PROCESSING' AND %s < now()", s.q.status, s.q.lockedUntil))
	} else if f.Status != "" {
		where = append(where, s.q.status+" = "+arg(string(f.Status)))
	}
	if f.EventType != "" {
		where = append(where, s.q.eventType+" = "+arg(f.EventType))
	}
	if f.AggregateID != "" {
		where = append(where, s.q.aggregateID+" = "+arg(f.AggregateID))
	}
	if !f.CreatedFrom.IsZero() {
		where = append(where, s.q.createdAt+" >= "+arg(f.CreatedFrom.UTC())+"::timestamptz")
	}
	if !f.CreatedTo.IsZero() {
		where = append(where, s.q.createdAt+" < "+arg(f.CreatedTo.UTC())+"::timestamptz")
	}
	if f.Before > 0 {
		where = append(where, s.q.id+" < "+arg(f.Before)+"::bigint")
	}
	sql := s.q.selectEvent
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += fmt.Sprintf(" ORDER BY %s DESC LIMIT %s", s.q.id, arg(f.Limit))
	return s.queryEvents(ctx, "list events", sql, args...)
}

// stuckSQL is the first page of the stuck-only list, for EXPLAIN in tests and benchmarks.
func (s *Store) stuckSQL() string {
	return fmt.Sprintf("%s WHERE %s = 'PROCESSING' AND %s < now() ORDER BY %s DESC LIMIT 51",
		s.q.selectEvent, s.q.status, s.q.lockedUntil, s.q.id)
}

// Events reads the events with these ids in id order.
func (s *Store) Events(ctx context.Context, ids []int64) ([]outbox.Event, error) {
	return s.queryEvents(ctx, "read events", fmt.Sprintf("%s WHERE %s = ANY($1::bigint[]) ORDER BY %s", s.q.selectEvent, s.q.id, s.q.id), ids)
}

// Find reads a trace's rows by event_id and aggregate_id.
func (s *Store) Find(ctx context.Context, eventIDs []string, aggregateID string, limit int) ([]outbox.Event, error) {
	sql := fmt.Sprintf("%s WHERE %s::text = ANY($1) OR ($2 <> '' AND %s::text = $2) ORDER BY %s LIMIT $3",
		s.q.selectEvent, s.q.eventID, s.q.aggregateID, s.q.id)
	return s.queryEvents(ctx, "find events", sql, eventIDs, aggregateID, limit)
}

// queryEvents runs sql (the table's selectEvent and what follows) on the pool and reads the events
// it selects, what naming the read in an error: the lists, the reads by id and the trace's lookup.
func (s *Store) queryEvents(ctx context.Context, what, sql string, args ...any) ([]outbox.Event, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, s.wrap(what, err)
	}
	events, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, s.wrap(what, err)
	}
	return events, nil
}

// Event returns one event with its payload.
func (s *Store) Event(ctx context.Context, id int64) (outbox.Event, error) {
	sql := strings.Replace(s.q.selectEvent, " FROM ", ", "+s.q.payload+"::text FROM ", 1) + " WHERE " + s.q.id + " = $1::bigint"
	row, _ := s.pool.Query(ctx, sql, id)
	e, err := pgx.CollectExactlyOneRow(row, func(r pgx.CollectableRow) (outbox.Event, error) {
		var e outbox.Event
		err := r.Scan(append(eventDest(&e), &e.Payload)...)
		return e, err
	})
	if err != nil {
		return outbox.Event{}, s.wrap(fmt.Sprintf("event %d", id), err)
	}
	return e, nil
}

func eventDest(e *outbox.Event) []any {
	return []any{&e.ID, &e.EventID, &e.AggregateType, &e.AggregateID, &e.EventType, (*string)(&e.Status),
		&e.Attempts, &e.AvailableAt, &e.LockedUntil, &e.LastError, &e.CreatedAt, &e.SentAt, &e.SchemaVersion}
}

func scanEvent(r pgx.CollectableRow) (outbox.Event, error) {
	var e outbox.Event
	err := r.Scan(eventDest(&e)...)
	return e, err
}

// Deaths names those of ids that are DEAD now.
func (s *Store) Deaths(ctx context.Context, ids []int64) (map[int64]string, error) {
	rows, err := s.pool.Query(ctx, s.q.deaths, ids)
	if err != nil {
		return nil, s.wrap("dead events", err)
	}
	out := map[int64]string{}
	var e outbox.Event
	if _, err := pgx.ForEachRow(rows, []any{&e.ID, &e.EventID, &e.AvailableAt}, func() error { out[e.ID] = e.Death(); return nil }); err != nil {
		return nil, s.wrap("dead events", err)
	}
	return out, nil
}

// releaseBatch bounds one UPDATE so that releasing many stuck rows never asks for a huge lock set
// in one statement.
const releaseBatch = 5000

// inTx runs change and then audit in one transaction of the outbox's database, and commits; an
// audit error is returned as it is. The transaction is READ COMMITTED whatever the database's
// default: under REPEATABLE READ a row a relay changed after the first statement would fail the
// whole repair with a serialization error instead of being re-checked and left alone.
func (s *Store) inTx(ctx context.Context, op string, audit outbox.AuditFunc, change func(tx pgx.Tx) (int64, error)) (int64, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return 0, s.wrap(op, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	n, err := change(tx)
	if err != nil {
		return 0, err
	}
	if err := audit(ctx, tx, n); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, s.wrap(op+": commit", err)
	}
	return n, nil
}

// ReleaseStuck releases in batches of releaseBatch that share one transaction: the rows are stuck
// ones, which no relay holds, and SKIP LOCKED never waits for one it does.
func (s *Store) ReleaseStuck(ctx context.Context, ids []int64, audit outbox.AuditFunc) (int64, error) {
	return s.inTx(ctx, "release stuck leases", audit, func(tx pgx.Tx) (int64, error) {
		var total int64
		for {
			tag, err := tx.Exec(ctx, s.q.release, ids, releaseBatch)
			if err != nil {
				return total, s.wrap("release stuck leases", err)
			}
			total += tag.RowsAffected()
			if tag.RowsAffected() < releaseBatch {
				return total, nil
			}
		}
	})
}

// Requeue moves the DEAD or FAILED rows of ids (still holding eventIDs, when given) to READY in
// one statement.
func (s *Store) Requeue(ctx context.Context, ids []int64, eventIDs []string, resetAttempts bool, audit outbox.AuditFunc) ([]int64, error) {
	sql := s.q.requeue
	if resetAttempts {
		sql = s.q.requeueReset
	}
	var moved []int64
	_, err := s.inTx(ctx, "requeue", audit, func(tx pgx.Tx) (int64, error) {
		rows, err := tx.Query(ctx, sql, ids, eventIDs)
		if err != nil {
			return 0, s.wrap("requeue", err)
		}
		moved, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return 0, s.wrap("requeue", err)
		}
		return int64(len(moved)), nil
	})
	if err != nil {
		return nil, err
	}
	return moved, nil
}
