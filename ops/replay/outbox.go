package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/store"
)

// maxOutboxIDs bounds an outbox plan (one row read per id).
const maxOutboxIDs = 10_000

// planOutbox turns DEAD or FAILED outbox events into items; the action is a requeue to READY, so
// the service's own relay publishes them.
func (e *Engine) planOutbox(ctx context.Context, src Source, emit func(Item) error) error {
	t, ok := e.outbox[src.Outbox]
	if !ok {
		return fmt.Errorf("outbox %q is not configured: %w", src.Outbox, ops.ErrNotFound)
	}
	if len(src.IDs) == 0 || len(src.IDs) > maxOutboxIDs {
		return invalid("source.ids", fmt.Sprintf("give between 1 and %d event ids", maxOutboxIDs))
	}
	for _, id := range src.IDs {
		ev, err := t.Event(ctx, id)
		if errors.Is(err, ops.ErrNotFound) {
			return invalid("source.ids", fmt.Sprintf("event %d does not exist in outbox %s", id, src.Outbox))
		}
		if err != nil {
			return err
		}
		pos := ev.ID
		it := Item{Locator: fmt.Sprintf("outbox:%s/%d/%d", src.Outbox, ev.ID, ev.AvailableAt.UnixMilli()),
			MessageID: ev.EventID, Position: &pos, ErrorGroup: firstLine(ev.LastError)}
		if ev.Status == outbox.Dead || ev.Status == outbox.Failed {
			it.Destination = Destination{Kind: "outbox", Outbox: src.Outbox}
		}
		if err := emit(it); err != nil {
			return err
		}
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
	e *Engine
	t OutboxTable
}

// move requeues the claimed events with the conditional update; an event that left DEAD or
// FAILED meanwhile (another operator, the relay) is reported failed, not moved.
func (r *outboxRunner) move(ctx context.Context, _ store.ReplayJob, move []Item, _ map[int]bool) ([]store.LedgerOutcome, error) {
	ids := make([]int64, len(move))
	for i, it := range move {
		ids[i] = *it.Position
	}
	done, err := r.t.RequeueIDs(ctx, ids, false)
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
