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

// List returns events matching f, newest first, with keyset pagination on id.
func (o *Outbox) List(ctx context.Context, f Filter) (Page, error) {
	if f.Limit == 0 {
		f.Limit = DefaultLimit
	}
	if f.Limit < 1 || f.Limit > MaxLimit {
		return Page{}, ops.Invalid("limit", fmt.Sprintf("must be between 1 and %d", MaxLimit))
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.StuckOnly {
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

	rows, err := o.pool.Query(ctx, sql, args...)
	if err != nil {
		return Page{}, o.wrap("list events", err)
	}
	events, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return Page{}, o.wrap("list events", err)
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
	rows, err := o.pool.Query(ctx, fmt.Sprintf("%s WHERE %s = ANY($1) ORDER BY %s", o.q.selectEvent, o.q.id, o.q.id), ids)
	if err != nil {
		return nil, o.wrap("read events", err)
	}
	events, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, o.wrap("read events", err)
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

// releaseBatch bounds one UPDATE so that releasing many stuck rows never holds a huge lock set.
const releaseBatch = 5000

// ReleaseStuck moves PROCESSING rows whose lease expired back to READY: the given ids, or every
// stuck row when ids is nil. A row a relay still holds (row-locked) is skipped, and a row whose
// state changed meanwhile no longer matches the WHERE, so a live relay never loses its row.
// Returns how many rows were released.
func (o *Outbox) ReleaseStuck(ctx context.Context, ids []int64) (int64, error) {
	if ids != nil && len(ids) == 0 {
		return 0, nil
	}
	if len(ids) > MaxIDs {
		return 0, ops.Invalid("ids", fmt.Sprintf("at most %d per request", MaxIDs))
	}
	var total int64
	defer o.invalidate()
	for {
		tag, err := o.pool.Exec(ctx, o.q.release, ids, releaseBatch)
		if err != nil {
			return total, o.wrap("release stuck leases", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < releaseBatch {
			return total, nil
		}
	}
}

// Requeue moves the given DEAD or FAILED rows to READY, due now. Rows in any other state, or held
// by a relay, are left alone and not counted. resetAttempts also sets attempts to 0, giving the
// event the relay's full retry budget again.
func (o *Outbox) Requeue(ctx context.Context, ids []int64, resetAttempts bool) (int64, error) {
	done, err := o.RequeueIDs(ctx, ids, resetAttempts)
	return int64(len(done)), err
}

// RequeueIDs is Requeue returning which ids it moved.
func (o *Outbox) RequeueIDs(ctx context.Context, ids []int64, resetAttempts bool) ([]int64, error) {
	if len(ids) == 0 {
		return nil, ops.Invalid("ids", "give at least one event id")
	}
	if len(ids) > MaxIDs {
		return nil, ops.Invalid("ids", fmt.Sprintf("at most %d per request", MaxIDs))
	}
	sql := o.q.requeue
	if resetAttempts {
		sql = o.q.requeueReset
	}
	defer o.invalidate()
	rows, err := o.pool.Query(ctx, sql, ids)
	if err != nil {
		return nil, o.wrap("requeue", err)
	}
	done, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, o.wrap("requeue", err)
	}
	return done, nil
}
