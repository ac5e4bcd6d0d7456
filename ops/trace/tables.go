package trace

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/payload"
)

// The lookups of tables (outboxes, inboxes, the ledger, the audit log): each an indexed read
// bounded by Budget.Rows and Budget.Time.

// outboxes looks the ids (or the aggregate) up in every outbox at once and returns the rows found.
func (r *run) outboxes(ctx context.Context) ([]outbox.Event, []audit.RowRef) {
	var (
		mu   sync.Mutex
		all  []outbox.Event
		rows []audit.RowRef
		wg   sync.WaitGroup
	)
	ids := r.q.ids()
	for _, o := range r.t.o.Outboxes {
		wg.Go(func() {
			source := "outbox " + o.Name()
			if len(ids) == 0 && r.q.AggregateID == "" {
				r.emit([]Step{{Kind: KindOutbox, Source: source, Ref: Ref{Outbox: o.Name(), Offset: -1},
					Detail: "not searched: an outbox is looked up by event_id or aggregate_id, and a trace id is not a column of it"}})
				return
			}
			lctx, cancel := context.WithTimeout(ctx, min(r.t.o.Budget.Time, outboxTime))
			defer cancel()
			events, err := o.Find(lctx, ids, r.q.AggregateID, r.t.o.Budget.Rows)
			if err != nil {
				r.emit([]Step{r.down(KindOutbox, source, err)})
				return
			}
			mu.Lock()
			all = append(all, events...)
			for _, e := range events {
				rows = append(rows, audit.RowRef{Target: audit.OutboxTarget(o.Name()), ID: e.ID})
			}
			mu.Unlock()
			r.emit(outboxSteps(o.Name(), r.shownErrors(lctx, o, events), ids, r.q.AggregateID, r.t.o.Budget.Rows))
		})
	}
	wg.Wait()
	return all, rows
}

// shownErrors is events with each last_error as the reader may see it (Query.OutboxView): the row
// is read again with its payload, whose masking decides; a row that cannot be read shows none.
func (r *run) shownErrors(ctx context.Context, o Outbox, events []outbox.Event) []outbox.Event {
	if r.q.OutboxView == nil {
		return events
	}
	out := make([]outbox.Event, len(events))
	for i, e := range events {
		out[i] = e
		if e.LastError == nil || *e.LastError == "" {
			continue
		}
		full, err := o.Event(ctx, e.ID)
		if err != nil {
			hidden := "(not shown: the row's payload, which decides what of it is masked, could not be read)"
			out[i].LastError = &hidden
			continue
		}
		out[i].LastError = r.q.OutboxView(full).LastError
	}
	return out
}

func outboxSteps(name string, events []outbox.Event, ids []string, aggregate string, limit int) []Step {
	source := "outbox " + name
	if len(events) == 0 {
		return []Step{{Kind: KindOutbox, Source: source, Ref: Ref{Outbox: name, Offset: -1},
			Detail: "no row with " + lookedFor(ids, aggregate) + " (the whole table was searched)"}}
	}
	now := time.Now()
	out := make([]Step, 0, len(events))
	for _, e := range events {
		d := []string{fmt.Sprintf("%s %s of %s %s, status %s, attempts %d", e.EventType, e.EventID, e.AggregateType, e.AggregateID, e.Status, e.Attempts)}
		d = append(d, "available_at "+stamp(e.AvailableAt))
		stuck := e.Stuck(now)
		if e.LockedUntil != nil {
			lease := "locked_until " + stamp(*e.LockedUntil)
			if stuck {
				lease += " — the lease expired: stuck in PROCESSING"
			}
			d = append(d, lease)
		}
		if e.SentAt != nil {
			d = append(d, "sent_at "+stamp(*e.SentAt))
		}
		if e.LastError != nil && *e.LastError != "" {
			d = append(d, "last_error: "+payload.Clip(*e.LastError, 300))
		}
		out = append(out, Step{Kind: KindOutbox, Source: source, Found: true, At: timePtr(e.CreatedAt),
			Place: fmt.Sprintf("row %d", e.ID), Detail: strings.Join(d, "; "),
			Ref:  Ref{Outbox: name, EventID: e.ID, Offset: -1},
			fact: fact{status: string(e.Status), stuck: stuck, messageID: e.EventID, key: e.AggregateID, sentAt: e.SentAt, createdAt: e.CreatedAt}})
	}
	if len(events) >= limit {
		out[len(out)-1].Detail += fmt.Sprintf(" (the first %d rows are shown; there may be more)", limit)
	}
	return out
}

// inboxes reads every consumer's inbox rows for the ids, and says which consumers that take the
// message's topic or queue have no inbox to ask.
func (r *run) inboxes(ctx context.Context, ids []string) {
	var wg sync.WaitGroup
	configured := map[string]bool{}
	for _, in := range r.t.o.Inboxes {
		configured[in.Consumer()] = true
	}
	var mu sync.Mutex
	told := map[[2]string]bool{} // another consumer's row, told once when two inboxes share a table
	for _, in := range r.t.o.Inboxes {
		wg.Go(func() {
			source := "inbox " + in.Consumer()
			if len(ids) == 0 {
				r.emit([]Step{{Kind: KindInbox, Source: source, Ref: Ref{Offset: -1},
					Detail: "not searched: no message id was found to look up"}})
				return
			}
			lctx, cancel := context.WithTimeout(ctx, r.t.o.Budget.Time)
			defer cancel()
			rows, err := in.Rows(lctx, ids, r.t.o.Budget.Rows)
			if err != nil {
				r.emit([]Step{r.down(KindInbox, source, err)})
				return
			}
			r.emit(inboxSteps(in.Consumer(), ids, rows))
			// The seed's inbox is shared (a consumer column): a row another consumer wrote for the
			// message is "processed by someone else, not by this one" — what the person tracing
			// needs to see. A configured consumer's own lookup tells its rows.
			others, err := in.OtherRows(lctx, ids, r.t.o.Budget.Rows)
			if err != nil {
				r.emit([]Step{r.down(KindInbox, source+" (other consumers' rows)", err)})
				return
			}
			var fresh []inbox.Row
			mu.Lock()
			for _, o := range others {
				k := [2]string{o.Consumer, o.MessageID}
				if !configured[o.Consumer] && !told[k] {
					told[k] = true
					fresh = append(fresh, o)
				}
			}
			mu.Unlock()
			if len(fresh) > 0 {
				r.emit(otherInboxSteps(in.Consumer(), fresh))
			}
		})
	}
	wg.Wait()
	have := map[string]bool{}
	for _, in := range r.t.o.Inboxes {
		have[in.Consumer()] = true
	}
	var steps []Step
	for _, c := range r.t.o.Consumers {
		if !have[c.Name] && (c.Kafka != nil || c.RabbitMQ != nil) {
			steps = append(steps, Step{Kind: KindInbox, Source: "inbox " + c.Name, Ref: Ref{Offset: -1},
				Detail: "no inbox is configured for " + c.Name + ": whether it processed the message cannot be told"})
		}
	}
	if len(steps) > 0 {
		r.emit(steps)
	}
}

// otherInboxSteps tell the rows consumers with no inbox of their own configured wrote in the
// inbox table of consumer: informative, they decide nothing about this consumer's verdict.
func otherInboxSteps(consumer string, rows []inbox.Row) []Step {
	out := make([]Step, 0, len(rows))
	for _, row := range rows {
		s := Step{Kind: KindInbox, Source: "inbox " + row.Consumer, Found: true, Place: "message " + row.MessageID, Ref: Ref{Offset: -1}}
		switch {
		case row.Processed && row.ProcessedAt != nil:
			s.At = timePtr(*row.ProcessedAt)
			s.Detail = fmt.Sprintf("processed by %s at %s — another consumer writing in %s's inbox table, not %s", row.Consumer,
				stamp(*row.ProcessedAt), consumer, consumer)
		case row.Processed: // an Eventuate row without creation_time
			s.Detail = fmt.Sprintf("processed by %s (at a time its row does not keep) — another consumer writing in %s's inbox table, not %s",
				row.Consumer, consumer, consumer)
		default:
			s.Detail = fmt.Sprintf("received by %s but not processed — another consumer writing in %s's inbox table, not %s",
				row.Consumer, consumer, consumer)
			if row.ReceivedAt != nil {
				s.At = timePtr(*row.ReceivedAt)
			}
		}
		out = append(out, s)
	}
	return out
}

func inboxSteps(consumer string, ids []string, rows []inbox.Row) []Step {
	source := "inbox " + consumer
	seen := map[string]bool{}
	var out []Step
	for _, row := range rows {
		seen[row.MessageID] = true
		s := Step{Kind: KindInbox, Source: source, Found: true, Place: "message " + row.MessageID, Ref: Ref{Offset: -1},
			fact: fact{messageID: row.MessageID}}
		// Row.Processed is the adapter's verdict of its format: the seed's processed_at, or any
		// Eventuate row (received and processed are one time there, or none).
		switch {
		case row.Processed && row.ProcessedAt != nil:
			s.At, s.fact.status = timePtr(*row.ProcessedAt), string(inbox.Processed)
			s.Detail = fmt.Sprintf("processed by %s at %s", consumer, stamp(*row.ProcessedAt))
			if row.ReceivedAt != nil && !row.ReceivedAt.Equal(*row.ProcessedAt) {
				s.Detail += " (received " + stamp(*row.ReceivedAt) + ")"
			}
		case row.Processed:
			s.fact.status = string(inbox.Processed)
			s.Detail = fmt.Sprintf("processed by %s, at a time its row does not keep", consumer)
		default:
			s.fact.status = string(inbox.InProgress)
			s.Detail = "received by " + consumer
			if row.ReceivedAt != nil {
				s.At = timePtr(*row.ReceivedAt)
				s.Detail += " at " + stamp(*row.ReceivedAt)
			}
			s.Detail += " but not processed: no processed_at (maybe mid-transaction, or rolled back)"
		}
		out = append(out, s)
	}
	for _, id := range ids {
		if !seen[id] {
			out = append(out, Step{Kind: KindInbox, Source: source, Place: "message " + id, Ref: Ref{Offset: -1},
				Detail: "no row: not processed by " + consumer, fact: fact{messageID: id, status: string(inbox.NotProcessed)}})
		}
	}
	return out
}

// replays lists the ledger rows of the ids: which jobs moved the message, with what outcome.
func (r *run) replays(ctx context.Context, ids []string) {
	if r.t.o.Ledger == nil {
		return
	}
	const source = "replay ledger"
	if len(ids) == 0 {
		r.emit([]Step{{Kind: KindReplay, Source: source, Ref: Ref{Offset: -1}, Detail: "not searched: no message id was found to look up"}})
		return
	}
	lctx, cancel := context.WithTimeout(ctx, r.t.o.Budget.Time)
	defer cancel()
	rows, err := r.t.o.Ledger.ReplaysOf(lctx, ids, r.t.o.Budget.Rows)
	if err != nil {
		r.emit([]Step{r.down(KindReplay, source, err)})
		return
	}
	if len(rows) == 0 {
		r.emit([]Step{{Kind: KindReplay, Source: source, Ref: Ref{Offset: -1},
			Detail: "no replay job moved " + lookedFor(ids, "")}})
		return
	}
	steps := make([]Step, 0, len(rows))
	for _, e := range rows {
		d := fmt.Sprintf("job %s (%s, by %s) from %s: %s", e.JobID, e.JobStatus, e.Actor, e.Locator, e.Outcome)
		if e.Detail != "" {
			d += " — " + payload.Clip(e.Detail, 300)
		}
		steps = append(steps, Step{Kind: KindReplay, Source: source, Found: true, At: timePtr(e.At),
			Place: fmt.Sprintf("job %s item %d", e.JobID, e.Seq), Detail: d, Ref: Ref{JobID: e.JobID, Offset: -1},
			fact: fact{status: e.Outcome, messageID: e.MessageID, locator: e.Locator, note: e.Detail}})
	}
	r.emit(steps)
}

// audit lists the audit entries naming an id (or the aggregate) since the query's Since (or
// AuditWindow ago).
func (r *run) audit(ctx context.Context, ids []string) {
	if r.t.o.Audit == nil {
		return
	}
	const source = "audit log"
	since := time.Now().Add(-AuditWindow)
	if r.q.Since != nil {
		since = *r.q.Since
	}
	needles := append([]string{}, ids...)
	if r.q.AggregateID != "" {
		needles = append(needles, r.q.AggregateID)
	}
	if r.q.TraceID != "" {
		needles = append(needles, r.q.TraceID)
	}
	<-r.outboxDone // the rows found: a release or requeue names them by id
	lctx, cancel := context.WithTimeout(ctx, r.t.o.Budget.Time)
	defer cancel()
	search := r.t.o.Audit.AuditNamingMasked
	if r.q.AuditContent {
		search = r.t.o.Audit.AuditNaming
	}
	entries, err := search(lctx, needles, r.rows, since, r.t.o.Budget.Rows)
	if err != nil {
		r.emit([]Step{r.down(KindAudit, source, err)})
		return
	}
	if len(entries) == 0 {
		r.emit([]Step{{Kind: KindAudit, Source: source, Ref: Ref{Offset: -1},
			Detail: fmt.Sprintf("no entry names %s since %s", lookedFor(needles, ""), stamp(since))}})
		return
	}
	steps := make([]Step, 0, len(entries))
	for _, e := range entries {
		d := fmt.Sprintf("%s on %s by %s: %s", e.Action, e.Target, e.Actor, e.Outcome)
		if e.Reason != "" {
			d += " — reason: " + payload.Clip(e.Reason, 200)
		}
		steps = append(steps, Step{Kind: KindAudit, Source: source, Found: true, At: timePtr(e.At),
			Place: fmt.Sprintf("entry %d", e.ID), Detail: d, Ref: Ref{AuditID: e.ID, Offset: -1}})
	}
	r.emit(steps)
}

// lookedFor names what a lookup searched for: "event_id e-1", "aggregate_id order-100".
func lookedFor(ids []string, aggregate string) string {
	var parts []string
	if len(ids) > 0 {
		parts = append(parts, "id "+strings.Join(ids, " or "))
	}
	if aggregate != "" {
		parts = append(parts, "aggregate_id "+aggregate)
	}
	if len(parts) == 0 {
		return "these ids"
	}
	return strings.Join(parts, " or ")
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
