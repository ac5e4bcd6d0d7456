package replay

import (
	"context"
	"fmt"
	"slices"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/source"
)

// maxOutboxEvents bounds an outbox plan.
const maxOutboxEvents = outbox.MaxIDs

// outboxKind replays DEAD or FAILED outbox events: the move is a requeue to READY, so the service's
// own relay publishes them.
type outboxKind struct{ e *Engine }

func (outboxKind) batch() int { return batchSize }

func (k outboxKind) table(name string) (OutboxTable, error) {
	return configured(k.e.outbox, "source.outbox", "outbox", name)
}

func (k outboxKind) open(_ context.Context, _ Job, src Source) (mover, error) {
	t, err := k.table(src.Outbox)
	if err != nil {
		return nil, err
	}
	return &outboxRunner{e: k.e, t: t, resetAttempts: src.ResetAttempts}, nil
}

// outboxLocator names one dead instance of an event: its event_id (unique, unlike the row id a
// recreated table reuses) and when it became available, so the event dying again after a
// requeue is a new instance.
func outboxLocator(outbox string, ev outbox.Event) string {
	return fmt.Sprintf("outbox:%s/%s/%d", outbox, ev.EventID, ev.AvailableAt.UnixMilli())
}

// plan turns DEAD or FAILED outbox events into items — given by id, or found by a filter
// (status, event type, aggregate, the plan filter's time, exception and message ids) up to Limit.
func (k outboxKind) plan(ctx context.Context, srcp *Source, f Filter, emit func(Item) error) error {
	src := *srcp
	t, err := k.table(src.Outbox)
	if err != nil {
		return err
	}
	// The relay publishes what the replay sets back to READY: the consumer reading its
	// destination guards the events with its inbox, by their event id.
	consumer := k.e.consumerForOutbox(src.Outbox)
	item := func(ev outbox.Event) (Item, bool) {
		if !f.matchIDs(ev.EventID) || !f.matchTime(ev.CreatedAt) ||
			(f.ExceptionType != "" && (ev.LastError == nil || !ops.InErrorGroup(*ev.LastError, f.ExceptionType))) {
			return Item{}, false
		}
		pos := ev.ID
		it := Item{Locator: outboxLocator(src.Outbox, ev),
			MessageID: ev.EventID, Consumer: consumer, Position: &pos, ErrorGroup: lastErrorGroup(ev.LastError)}
		if ev.Status == outbox.Dead || ev.Status == outbox.Failed {
			it.Destination = Destination{Kind: source.Outbox, Outbox: src.Outbox}
		}
		return it, true
	}
	if len(src.IDs) > 0 {
		return planOutboxIDs(ctx, t, src, item, emit)
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
func planOutboxIDs(ctx context.Context, t OutboxTable, src Source, item func(outbox.Event) (Item, bool), emit func(Item) error) error {
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

func lastErrorGroup(s *string) string {
	if s == nil {
		return ""
	}
	return ops.ErrorGroupKey(*s)
}

type outboxRunner struct {
	e             *Engine
	t             OutboxTable
	resetAttempts bool // the plan's choice: requeued events start counting attempts again
}

// move requeues the claimed events with the conditional update; an event that left DEAD or
// FAILED meanwhile (another operator, the relay), or whose row now holds another event, is
// reported failed, not moved.
func (r *outboxRunner) close() {}

func (r *outboxRunner) finish(context.Context, Job) error { return nil }

func (r *outboxRunner) move(ctx context.Context, job Job, move []Item, resumed map[int]bool) (moved, error) {
	ids := make([]int64, len(move))
	events := make([]string, len(move))
	for i, it := range move {
		ids[i], events[i] = *it.Position, it.MessageID
	}
	// Only rows that still hold the planned events: the event now at a reused id is not the one
	// whose inbox the plan and the run checked.
	done, err := r.t.RequeueEvents(ctx, ids, events, r.resetAttempts)
	if err != nil {
		return moved{}, err
	}
	settled := make([]LedgerOutcome, 0, len(move))
	requeued := map[int64]bool{}
	for _, id := range done {
		requeued[id] = true
	}
	// What holds a row this run could not requeue tells why. A resumed item was most likely
	// requeued by the interrupted run (its update committed, its ledger settle did not): it is no
	// longer DEAD or FAILED.
	var missed []int64
	for _, it := range move {
		if !requeued[*it.Position] {
			missed = append(missed, *it.Position)
		}
	}
	now := map[int64]outbox.Event{}
	if len(missed) > 0 {
		rows, err := r.t.Events(ctx, missed)
		if err != nil {
			return moved{}, err
		}
		for _, ev := range rows {
			now[ev.ID] = ev
		}
	}
	for _, it := range move {
		o := LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID, Outcome: LedgerPublished,
			Detail: "requeued to READY"}
		switch ev, ok := now[*it.Position]; {
		case requeued[*it.Position]:
		case ok && ev.EventID != it.MessageID:
			o.Outcome, o.Detail = LedgerFailed, fmt.Sprintf("the row now holds another event (%q), not %q: the outbox table was "+
				"emptied or recreated since the plan was made; the row was left as it is", ev.EventID, it.MessageID)
		case ok && resumed[it.Seq] && ev.Status != outbox.Dead && ev.Status != outbox.Failed:
			o.Detail = fmt.Sprintf("requeued to READY before an interruption (now %s)", ev.Status)
		default:
			o.Outcome, o.Detail = LedgerFailed, "the event is no longer DEAD or FAILED (or a relay holds it)"
		}
		settled = append(settled, o)
	}
	return moved{outcomes: settled, afterSettle: func(ctx context.Context) error {
		// After the ledger: the requeued DEAD events' resolution becomes replayed (with the job),
		// so that one dying again is open again. A failure does not stop the job: the events
		// were requeued whatever their mark says.
		if err := r.e.o.Store.MarkOutboxReplayed(ctx, job.ID, job.Actor, r.t.Name(), done); err != nil {
			r.e.o.Logger.Warn("replay: outbox replayed marks not written", "job", job.ID, "err", err)
		}
		return nil
	}}, nil
}
