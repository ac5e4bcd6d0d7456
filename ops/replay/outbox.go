package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/store"
)

// maxOutboxEvents bounds an outbox plan.
const maxOutboxEvents = outbox.MaxIDs

// planOutbox turns DEAD or FAILED outbox events into items — given by id, or found by a filter
// (status, event type, aggregate, the plan filter's time, exception and message ids) up to Limit —
// and the action is a requeue to READY, so the service's own relay publishes them.
func (e *Engine) planOutbox(ctx context.Context, src Source, f Filter, emit func(Item) error) error {
	t, ok := e.outbox[src.Outbox]
	if !ok {
		return fmt.Errorf("outbox %q is not configured: %w", src.Outbox, ops.ErrNotFound)
	}
	item := func(ev outbox.Event) (Item, bool) {
		if !f.matchIDs(ev.EventID) || !f.matchTime(ev.CreatedAt) ||
			(f.ExceptionType != "" && (ev.LastError == nil || !strings.Contains(*ev.LastError, f.ExceptionType))) {
			return Item{}, false
		}
		pos := ev.ID
		it := Item{Locator: fmt.Sprintf("outbox:%s/%d/%d", src.Outbox, ev.ID, ev.AvailableAt.UnixMilli()),
			MessageID: ev.EventID, Position: &pos, ErrorGroup: firstLine(ev.LastError)}
		if ev.Status == outbox.Dead || ev.Status == outbox.Failed {
			it.Destination = Destination{Kind: "outbox", Outbox: src.Outbox}
		}
		return it, true
	}
	if len(src.IDs) > 0 {
		return e.planOutboxIDs(ctx, t, src, item, emit)
	}
	if src.Limit < 1 || src.Limit > maxOutboxEvents {
		return invalid("source.limit", fmt.Sprintf("give event ids, or a limit between 1 and %d (with optional status, "+
			"event_type, aggregate_id and a filter)", maxOutboxEvents))
	}
	statuses := []outbox.Status{outbox.Dead, outbox.Failed}
	switch outbox.Status(src.Status) {
	case "":
	case outbox.Dead, outbox.Failed:
		statuses = []outbox.Status{outbox.Status(src.Status)}
	default:
		return invalid("source.status", "DEAD or FAILED (or leave it out for both)")
	}
	left := src.Limit
	for _, status := range statuses {
		lf := outbox.Filter{Status: status, EventType: src.EventType, AggregateID: src.AggregateID,
			CreatedFrom: f.Since, CreatedTo: f.Until, Limit: outbox.MaxLimit}
		for left > 0 {
			page, err := t.List(ctx, lf)
			if err != nil {
				return err
			}
			for _, ev := range page.Events {
				if it, ok := item(ev); ok && left > 0 {
					left--
					if err := emit(it); err != nil {
						return err
					}
				}
			}
			if page.NextCursor == 0 {
				break
			}
			lf.Before = page.NextCursor
		}
	}
	return nil
}

// planOutboxIDs reads the given events in batches; an id that does not exist is an error naming it.
func (e *Engine) planOutboxIDs(ctx context.Context, t OutboxTable, src Source, item func(outbox.Event) (Item, bool), emit func(Item) error) error {
	if len(src.IDs) > maxOutboxEvents {
		return invalid("source.ids", fmt.Sprintf("give between 1 and %d event ids", maxOutboxEvents))
	}
	ids := slices.Clone(src.IDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		events, err := t.Events(ctx, ids[:n])
		if err != nil {
			return err
		}
		found := make(map[int64]bool, len(events))
		for _, ev := range events {
			found[ev.ID] = true
		}
		for _, id := range ids[:n] {
			if !found[id] {
				return invalid("source.ids", fmt.Sprintf("event %d does not exist in outbox %s", id, src.Outbox))
			}
		}
		for _, ev := range events {
			if it, ok := item(ev); ok {
				if err := emit(it); err != nil {
					return err
				}
			}
		}
		ids = ids[n:]
	}
	return nil
}

func firstLine(s *string) string {
	if s == nil {
		return ""
	}
	for i, c := range *s {
		if c == '\n' || c == ':' || i > 120 {
			return (*s)[:i]
		}
	}
	return *s
}

type outboxRunner struct {
	e             *Engine
	t             OutboxTable
	resetAttempts bool // the plan's choice: requeued events start counting attempts again
}

// move requeues the claimed events with the conditional update; an event that left DEAD or
// FAILED meanwhile (another operator, the relay) is reported failed, not moved.
func (r *outboxRunner) move(ctx context.Context, _ store.ReplayJob, move []Item, _ map[int]bool) ([]store.LedgerOutcome, error) {
	ids := make([]int64, len(move))
	for i, it := range move {
		ids[i] = *it.Position
	}
	done, err := r.t.RequeueIDs(ctx, ids, r.resetAttempts)
	if err != nil {
		return nil, err
	}
	settled := make([]store.LedgerOutcome, 0, len(move))
	moved := map[int64]bool{}
	for _, id := range done {
		moved[id] = true
	}
	for _, it := range move {
		o := store.LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID, Outcome: store.LedgerPublished,
			Detail: "requeued to READY"}
		if !moved[*it.Position] {
			o.Outcome, o.Detail = store.LedgerFailed, "the event is no longer DEAD or FAILED (or a relay holds it)"
		}
		settled = append(settled, o)
	}
	return settled, nil
}
