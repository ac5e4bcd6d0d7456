package outbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
)

// Event is one outbox row. Payload is filled only by Event (the detail view).
type Event struct {
	ID            int64
	EventID       string
	AggregateType string
	AggregateID   string
	EventType     string
	Status        Status
	Attempts      int
	AvailableAt   time.Time
	LockedUntil   *time.Time
	LastError     *string
	CreatedAt     time.Time
	SentAt        *time.Time
	SchemaVersion int
	Payload       string
}

// Stuck reports whether the row is PROCESSING with an expired lease at now.
func (e Event) Stuck(now time.Time) bool {
	return e.Status == Processing && e.LockedUntil != nil && e.LockedUntil.Before(now)
}

// Filter selects events for List. Zero fields do not filter.
type Filter struct {
	Status      Status
	EventType   string
	AggregateID string
	// StuckOnly selects the PROCESSING events whose lease expired; with a Status, that must be
	// PROCESSING (Check).
	StuckOnly   bool
	CreatedFrom time.Time
	CreatedTo   time.Time
	// Before is the keyset cursor: only ids below it (the list is newest first).
	Before int64
	Limit  int // 1..MaxLimit; 0 means DefaultLimit
}

// Page sizes of the event list.
const (
	DefaultLimit = 50
	MaxLimit     = 500
	// MaxIDs caps the ids of one release or requeue request.
	MaxIDs = 10_000
)

// Page is one page of events, newest first.
type Page struct {
	Events []Event
	// NextCursor continues the list; 0 when this is the last page.
	NextCursor int64
}

// Check refuses a filter that cannot select anything it says: stuck events are PROCESSING ones,
// so StuckOnly with another Status (DEAD, READY…) is an ops.ErrInvalid rather than one of the two
// silently ignored.
func (f Filter) Check() error {
	if f.StuckOnly && f.Status != "" && f.Status != Processing {
		return ops.Invalid("status", fmt.Sprintf("stuck=true lists PROCESSING events with an expired lease; it cannot be combined with status=%s", f.Status))
	}
	return nil
}

// List returns events matching f, newest first, with keyset pagination on id. A filter Check
// refuses is an ops.ErrInvalid.
func (o *Outbox) List(ctx context.Context, f Filter) (Page, error) {
	if f.Limit == 0 {
		f.Limit = DefaultLimit
	}
	if f.Limit < 1 || f.Limit > MaxLimit {
		return Page{}, ops.Invalid("limit", fmt.Sprintf("must be between 1 and %d", MaxLimit))
	}
	if err := f.Check(); err != nil {
		return Page{}, err
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.StuckOnly { // Check: Status is PROCESSING or none
		where = append(where, fmt.Sprintf("%s = 'PROCESSING' AND %s < now()", o.q.status, o.q.lockedUntil))
	} else if f.Status != "" {
		where = append(where, o.q.status+" = "+arg(string(f.Status)))
	}
	if f.EventType != "" {
		where = append(where, o.q.eventType+" = "+arg(f.EventType))
	}
	if f.AggregateID != "" {
		where = append(where, o.q.aggregateID+" = "+arg(f.AggregateID))
	}
	if !f.CreatedFrom.IsZero() {
		where = append(where, o.q.createdAt+" >= "+arg(f.CreatedFrom.UTC())+"::timestamptz")
	}
	if !f.CreatedTo.IsZero() {
		where = append(where, o.q.createdAt+" < "+arg(f.CreatedTo.UTC())+"::timestamptz")
	}
	if f.Before > 0 {
		where = append(where, o.q.id+" < "+arg(f.Before))
	}
	sql := o.q.selectEvent
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += fmt.Sprintf(" ORDER BY %s DESC LIMIT %s", o.q.id, arg(f.Limit+1))

	events, err := o.queryEvents(ctx, "list events", sql, args...)
	if err != nil {
		return Page{}, err
	}
	page := Page{Events: events}
	if len(events) > f.Limit {
		page.Events = events[:f.Limit]
		page.NextCursor = page.Events[f.Limit-1].ID
	}
	return page, nil
}

// stuckSQL is the first page of the stuck-only list, for EXPLAIN in tests and benchmarks.
func (o *Outbox) stuckSQL() string {
	return fmt.Sprintf("%s WHERE %s = 'PROCESSING' AND %s < now() ORDER BY %s DESC LIMIT 51",
		o.q.selectEvent, o.q.status, o.q.lockedUntil, o.q.id)
}

// Events reads the events with these ids (at most MaxIDs, no payloads), in id order; ids that do
// not exist are left out.
func (o *Outbox) Events(ctx context.Context, ids []int64) ([]Event, error) {
	if len(ids) > MaxIDs {
		return nil, ops.Invalid("ids", fmt.Sprintf("at most %d per request", MaxIDs))
	}
	return o.queryEvents(ctx, "read events", fmt.Sprintf("%s WHERE %s = ANY($1) ORDER BY %s", o.q.selectEvent, o.q.id, o.q.id), ids)
}

// queryEvents runs sql (the table's selectEvent and what follows) on the pool and reads the events
// it selects, what naming the read in an error: the lists, the reads by id and the trace's lookup.
func (o *Outbox) queryEvents(ctx context.Context, what, sql string, args ...any) ([]Event, error) {
	rows, err := o.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, o.wrap(what, err)
	}
	events, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, o.wrap(what, err)
	}
	return events, nil
}

// Event returns one event with its payload. Unknown id → ops.ErrNotFound.
func (o *Outbox) Event(ctx context.Context, id int64) (Event, error) {
	sql := strings.Replace(o.q.selectEvent, " FROM ", ", "+o.q.payload+"::text FROM ", 1) + " WHERE " + o.q.id + " = $1"
	row, _ := o.pool.Query(ctx, sql, id)
	e, err := pgx.CollectExactlyOneRow(row, func(r pgx.CollectableRow) (Event, error) {
		var e Event
		err := r.Scan(append(eventDest(&e), &e.Payload)...)
		return e, err
	})
	if err != nil {
		return Event{}, o.wrap(fmt.Sprintf("event %d", id), err)
	}
	return e, nil
}

func eventDest(e *Event) []any {
	return []any{&e.ID, &e.EventID, &e.AggregateType, &e.AggregateID, &e.EventType, (*string)(&e.Status),
		&e.Attempts, &e.AvailableAt, &e.LockedUntil, &e.LastError, &e.CreatedAt, &e.SentAt, &e.SchemaVersion}
}

func scanEvent(r pgx.CollectableRow) (Event, error) {
	var e Event
	err := r.Scan(eventDest(&e)...)
	return e, err
}

// releaseBatch bounds one UPDATE so that releasing many stuck rows never asks for a huge lock set
// in one statement.
const releaseBatch = 5000

// AuditFunc writes the audit row of a change while the change's transaction is still open, so that
// the change commits only once its audit row is written. It receives that transaction (to write
// the row in it when the audit log lives in the same database, making the two one commit) and how
// many rows the change touched. An error rolls the change back: nothing is changed unaudited.
type AuditFunc func(ctx context.Context, tx pgx.Tx, changed int64) error

// ErrAudit wraps the error of an AuditFunc: the change was rolled back because its audit row could
// not be written.
type ErrAudit struct{ Err error }

func (e *ErrAudit) Error() string { return "audit: " + e.Err.Error() }
func (e *ErrAudit) Unwrap() error { return e.Err }

// inTx runs change and then audit in one transaction of the outbox's database, and commits.
func (o *Outbox) inTx(ctx context.Context, op string, audit AuditFunc, change func(tx pgx.Tx) (int64, error)) (int64, error) {
	tx, err := o.pool.Begin(ctx)
	if err != nil {
		return 0, o.wrap(op, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	n, err := change(tx)
	if err != nil {
		return 0, err
	}
	if audit != nil {
		if err := audit(ctx, tx, n); err != nil {
			return 0, &ErrAudit{Err: err}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, o.wrap(op+": commit", err)
	}
	return n, nil
}

// ReleaseStuck moves PROCESSING rows whose lease expired back to READY: the given ids, or every
// stuck row when ids is nil. A row a relay still holds (row-locked) is skipped, and a row whose
// state changed meanwhile no longer matches the WHERE, so a live relay never loses its row.
// Returns how many rows were released.
func (o *Outbox) ReleaseStuck(ctx context.Context, ids []int64) (int64, error) {
	return o.ReleaseStuckAudited(ctx, ids, nil)
}

// ReleaseStuckAudited is ReleaseStuck in one transaction that commits only after audit has written
// its row (see AuditFunc); an audit error is an *ErrAudit and nothing was released. The batches
// share that transaction: the rows are stuck ones, which no relay holds, and SKIP LOCKED never
// waits for one it does.
func (o *Outbox) ReleaseStuckAudited(ctx context.Context, ids []int64, audit AuditFunc) (int64, error) {
	if ids != nil && len(ids) == 0 {
		return 0, nil
	}
	if len(ids) > MaxIDs {
		return 0, ops.Invalid("ids", fmt.Sprintf("at most %d per request", MaxIDs))
	}
	defer o.invalidate()
	return o.inTx(ctx, "release stuck leases", audit, func(tx pgx.Tx) (int64, error) {
		var total int64
		for {
			tag, err := tx.Exec(ctx, o.q.release, ids, releaseBatch)
			if err != nil {
				return total, o.wrap("release stuck leases", err)
			}
			total += tag.RowsAffected()
			if tag.RowsAffected() < releaseBatch {
				return total, nil
			}
		}
	})
}

// Requeue moves the given DEAD or FAILED rows to READY, due now. Rows in any other state, or held
// by a relay, are left alone and not counted. resetAttempts also sets attempts to 0, giving the
// event the relay's full retry budget again.
func (o *Outbox) Requeue(ctx context.Context, ids []int64, resetAttempts bool) (int64, error) {
	moved, err := o.RequeueAudited(ctx, ids, resetAttempts, nil)
	return int64(len(moved)), err
}

// RequeueAudited is Requeue in one transaction that commits only after audit has written its row
// (see AuditFunc); an audit error is an *ErrAudit and nothing was requeued. It returns the ids it
// moved.
func (o *Outbox) RequeueAudited(ctx context.Context, ids []int64, resetAttempts bool, audit AuditFunc) ([]int64, error) {
	var done []int64
	_, err := o.requeue(ctx, ids, resetAttempts, func(ctx context.Context, tx pgx.Tx, moved []int64) error {
		done = moved
		if audit == nil {
			return nil
		}
		return audit(ctx, tx, int64(len(moved)))
	})
	if err != nil {
		return nil, err
	}
	return done, nil
}

// RequeueIDs is Requeue returning which ids it moved.
func (o *Outbox) RequeueIDs(ctx context.Context, ids []int64, resetAttempts bool) ([]int64, error) {
	return o.RequeueAudited(ctx, ids, resetAttempts, nil)
}

func (o *Outbox) requeue(ctx context.Context, ids []int64, resetAttempts bool, audit func(context.Context, pgx.Tx, []int64) error) (int64, error) {
	if len(ids) == 0 {
		return 0, ops.Invalid("ids", "give at least one event id")
	}
	if len(ids) > MaxIDs {
		return 0, ops.Invalid("ids", fmt.Sprintf("at most %d per request", MaxIDs))
	}
	sql := o.q.requeue
	if resetAttempts {
		sql = o.q.requeueReset
	}
	defer o.invalidate()
	var moved []int64
	return o.inTx(ctx, "requeue", func(ctx context.Context, tx pgx.Tx, _ int64) error {
		return audit(ctx, tx, moved)
	}, func(tx pgx.Tx) (int64, error) {
		rows, err := tx.Query(ctx, sql, ids)
		if err != nil {
			return 0, o.wrap("requeue", err)
		}
		moved, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return 0, o.wrap("requeue", err)
		}
		return int64(len(moved)), nil
	})
}
