package triage

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/outbox"
)

// OutboxTable is what resolving reads of a service's outbox (never writes); *outbox.Outbox
// implements it.
type OutboxTable interface {
	Name() string
	Events(ctx context.Context, ids []int64) ([]outbox.Event, error)
	List(ctx context.Context, f outbox.Filter) (outbox.Page, error)
	Deaths(ctx context.Context, ids []int64) (map[int64]string, error)
}

// Marks is whether r, a mark read from the store, is about e's death now (outbox.Event.Death): a
// mark about an earlier death — the event requeued by anyone and dead again — or of an event that
// is not DEAD is no mark of this one.
func Marks(r Resolution, e outbox.Event) bool {
	return e.Status == outbox.Dead && marksDeath(r.Death, e.Death())
}

// marksDeath is whether a mark about death marked ("" for any) is about death now.
func marksDeath(marked, now string) bool { return marked == "" || marked == now }

// MaxOutboxScan bounds the DEAD events a filter selects: more is refused, not resolved in part.
const MaxOutboxScan = 100_000

// WithOutboxes wires the outboxes whose DEAD events can be resolved.
func (t *Triage) WithOutboxes(outboxes []OutboxTable) *Triage {
	t.outboxes = map[string]OutboxTable{}
	for _, o := range outboxes {
		t.outboxes[o.Name()] = o
	}
	return t
}

// OutboxFilter selects DEAD events by what the outbox page filters on.
type OutboxFilter struct {
	EventType, AggregateID string
	Since, Until           time.Time // created_at
}

// OutboxRequest is one resolution of DEAD events of an outbox: exactly one of Events (row ids)
// and Filter.
type OutboxRequest struct {
	Outbox        string
	Events        []int64
	Filter        *OutboxFilter
	State, Reason string
	Actor         access.Actor
}

// ResolveOutbox puts the selected DEAD events into the state in Redrive's store — the service's
// table is only read — audited (action outbox.resolve) before the change. Errors: ErrNotFound
// (outbox), ErrInvalid (in the user's words), ErrUnavailable.
func (t *Triage) ResolveOutbox(ctx context.Context, r OutboxRequest) (Result, error) {
	o, ok := t.outboxes[r.Outbox]
	if !ok {
		return Result{}, ops.NotFound("outbox %q is not configured", r.Outbox)
	}
	if err := checkState(r.State, r.Reason); err != nil {
		return Result{}, err
	}
	if (len(r.Events) > 0) == (r.Filter != nil) {
		return Result{}, ops.Invalid("body", "give exactly one of events or filter")
	}
	detail := map[string]any{"outbox": r.Outbox, "state": r.State}
	var ids []int64
	var deaths []string
	var res Result
	var err error
	if len(r.Events) > 0 {
		detail["events"] = len(r.Events)
		ids, deaths, res, err = deadEvents(ctx, o, r.Events)
	} else {
		f := *r.Filter
		if f.EventType == "" && f.AggregateID == "" && f.Since.IsZero() && f.Until.IsZero() {
			return Result{}, ops.Invalid("filter", "empty: give event_type, aggregate_id, since or until")
		}
		detail["filter"] = map[string]any{"event_type": f.EventType, "aggregate_id": f.AggregateID, "since": f.Since, "until": f.Until}
		ids, deaths, res, err = deadMatching(ctx, o, f)
	}
	if err != nil {
		return Result{}, err
	}
	detail["matched"] = res.Matched
	e := audit.WithClient(ctx, audit.Entry{Actor: r.Actor.Name, Role: r.Actor.Role.String(), Action: "outbox.resolve",
		Target: audit.OutboxTarget(r.Outbox), Reason: r.Reason, Detail: detail})
	res.Updated, err = t.store.SetOutboxResolutions(ctx, e, r.Outbox, ids, deaths, r.State, r.Reason)
	return res, err
}

// deadEvents checks that each named event is in the outbox and DEAD: only DEAD events wait for
// an operator's decision. It returns them with their deaths (outbox.Event.Death).
func deadEvents(ctx context.Context, o OutboxTable, ids []int64) ([]int64, []string, Result, error) {
	if len(ids) > MaxRecords {
		return nil, nil, Result{}, ops.Invalid("events", fmt.Sprintf("at most %d per request; resolve a filter for more", MaxRecords))
	}
	events, err := o.Events(ctx, ids)
	if err != nil {
		return nil, nil, Result{}, err
	}
	byID := make(map[int64]outbox.Event, len(events))
	for _, e := range events {
		byID[e.ID] = e
	}
	deaths := make([]string, len(ids))
	for i, id := range ids {
		switch e, ok := byID[id]; {
		case !ok:
			return nil, nil, Result{}, ops.Invalid("events", fmt.Sprintf("event %d is not in outbox %s", id, o.Name()))
		case e.Status != outbox.Dead:
			return nil, nil, Result{}, ops.Invalid("events", fmt.Sprintf("event %d is %s: only DEAD events are resolved", id, e.Status))
		default:
			deaths[i] = e.Death()
		}
	}
	return ids, deaths, Result{Matched: int64(len(events)), Scanned: int64(len(events))}, nil
}

// deadMatching lists the DEAD events the filter selects, page by page (newest first), with their
// deaths, refusing a selection larger than MaxOutboxScan rather than resolving part of it.
func deadMatching(ctx context.Context, o OutboxTable, f OutboxFilter) ([]int64, []string, Result, error) {
	lf := outbox.Filter{Status: outbox.Dead, EventType: f.EventType, AggregateID: f.AggregateID, CreatedFrom: f.Since, CreatedTo: f.Until,
		Limit: outbox.MaxLimit}
	var ids []int64
	var deaths []string
	for {
		page, err := o.List(ctx, lf)
		if err != nil {
			return nil, nil, Result{}, err
		}
		for _, e := range page.Events {
			ids, deaths = append(ids, e.ID), append(deaths, e.Death())
		}
		if len(ids) > MaxOutboxScan {
			return nil, nil, Result{}, ops.Invalid("filter", fmt.Sprintf("it selects more than %d DEAD events; resolve a narrower one", MaxOutboxScan))
		}
		if page.NextCursor == 0 {
			break
		}
		lf.Before = page.NextCursor
	}
	return ids, deaths, Result{Matched: int64(len(ids)), Scanned: int64(len(ids))}, nil
}

// OutboxResolutions reads the resolution of each event (open when never marked).
func (t *Triage) OutboxResolutions(ctx context.Context, name string, ids []int64) (map[int64]Resolution, error) {
	return t.store.OutboxResolutions(ctx, name, ids)
}

// OutboxRequeued records that an operator requeued events (not a replay job, which marks them
// replayed): their resolved or ignored marks are opened, so that an event that dies again is
// counted as open, not hidden by a decision about its earlier death.
func (t *Triage) OutboxRequeued(ctx context.Context, actor access.Actor, name string, ids []int64) error {
	_, err := t.store.ReopenRequeuedOutbox(ctx, actor.Name, name, ids)
	return err
}

// SettledDead counts the outbox's events that are DEAD and marked resolved or ignored for the
// death they are in (marksDeath): what the overview stops counting. One a replay sent back that died
// again is replayed, so open again; one requeued elsewhere that died again has another death.
func (t *Triage) SettledDead(ctx context.Context, name string) (int64, error) {
	o, ok := t.outboxes[name]
	if !ok {
		return 0, nil
	}
	marked, err := t.store.SettledOutboxEvents(ctx, name)
	if err != nil || len(marked) == 0 {
		return 0, err
	}
	ids := slices.Sorted(maps.Keys(marked))
	var n int64
	for chunk := range slices.Chunk(ids, settledChunk) {
		deaths, err := o.Deaths(ctx, chunk)
		if err != nil {
			return 0, err
		}
		for id, d := range deaths {
			if marksDeath(marked[id], d) {
				n++
			}
		}
	}
	return n, nil
}

// settledChunk is how many marked events one read of the outbox checks.
const settledChunk = 10_000
