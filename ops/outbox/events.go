package outbox

import (
	"context"
	"fmt"
	"time"

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
	want := f.Limit
	f.Limit++ // one more tells whether there is a next page
	events, err := o.store.List(ctx, f)
	if err != nil {
		return Page{}, err
	}
	f.Limit = want
	page := Page{Events: events}
	if len(events) > f.Limit {
		page.Events = events[:f.Limit]
		page.NextCursor = page.Events[f.Limit-1].ID
	}
	return page, nil
}

// Events reads the events with these ids (at most MaxIDs, no payloads), in id order; ids that do
// not exist are left out.
func (o *Outbox) Events(ctx context.Context, ids []int64) ([]Event, error) {
	if len(ids) > MaxIDs {
		return nil, ops.Invalid("ids", fmt.Sprintf("at most %d per request", MaxIDs))
	}
	return o.store.Events(ctx, ids)
}

// Event returns one event with its payload. Unknown id → ops.ErrNotFound.
func (o *Outbox) Event(ctx context.Context, id int64) (Event, error) {
	return o.store.Event(ctx, id)
}

// AuditFunc writes the audit row of a change while the change's transaction is still open, so that
// the change commits only once its audit row is written. It receives that transaction (to write
// the row in it when the audit log lives in the same database, making the two one commit) and how
// many rows the change touched. An error rolls the change back: nothing is changed unaudited.
//
// tx is the change's transaction as the adapter of the outbox's database holds it (audit.Tx): only
// the audit log's own adapter may recognise it as one of its database.
type AuditFunc func(ctx context.Context, tx Tx, changed int64) error

// Tx is an adapter's open transaction, opaque to the domain (audit.Tx).
type Tx = any

// ErrAudit wraps the error of an AuditFunc: the change was rolled back because its audit row could
// not be written.
type ErrAudit struct{ Err error }

func (e *ErrAudit) Error() string { return "audit: " + e.Err.Error() }
func (e *ErrAudit) Unwrap() error { return e.Err }

// audited is audit as a Store calls it: never nil, and an error it returns is kept so that the
// caller reports it as an *ErrAudit (nothing was changed) rather than as the database's.
func audited(audit AuditFunc) (AuditFunc, *error) {
	failed := new(error)
	return func(ctx context.Context, tx Tx, changed int64) error {
		if audit == nil {
			return nil
		}
		err := audit(ctx, tx, changed)
		*failed = err
		return err
	}, failed
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
	a, failed := audited(audit)
	n, err := o.store.ReleaseStuck(ctx, ids, a)
	if *failed != nil {
		return 0, &ErrAudit{Err: *failed}
	}
	if err != nil {
		return 0, err
	}
	return n, nil
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
	return o.requeue(ctx, ids, nil, resetAttempts, audit)
}

// RequeueIDs is Requeue returning which ids it moved.
func (o *Outbox) RequeueIDs(ctx context.Context, ids []int64, resetAttempts bool) ([]int64, error) {
	return o.RequeueAudited(ctx, ids, resetAttempts, nil)
}

// RequeueEvents is RequeueIDs of rows that still hold the events chosen: eventIDs[i] is the
// event_id ids[i] held then. A row that now holds another event (its id reused after the table
// was truncated or recreated) is left alone and not returned.
func (o *Outbox) RequeueEvents(ctx context.Context, ids []int64, eventIDs []string, resetAttempts bool) ([]int64, error) {
	if len(eventIDs) != len(ids) {
		return nil, ops.Invalid("ids", "give the event id of each row")
	}
	return o.requeue(ctx, ids, eventIDs, resetAttempts, nil)
}

// requeue is the Requeue of the Store with the domain's checks; eventIDs nil moves any event.
func (o *Outbox) requeue(ctx context.Context, ids []int64, eventIDs []string, resetAttempts bool, audit AuditFunc) ([]int64, error) {
	if len(ids) == 0 {
		return nil, ops.Invalid("ids", "give at least one event id")
	}
	if len(ids) > MaxIDs {
		return nil, ops.Invalid("ids", fmt.Sprintf("at most %d per request", MaxIDs))
	}
	defer o.invalidate()
	a, failed := audited(audit)
	moved, err := o.store.Requeue(ctx, ids, eventIDs, resetAttempts, a)
	if *failed != nil {
		return nil, &ErrAudit{Err: *failed}
	}
	if err != nil {
		return nil, err
	}
	return moved, nil
}
