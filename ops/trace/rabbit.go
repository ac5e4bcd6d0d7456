package trace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/search"
)

// RabbitMQ: the message in the broker's dead-letter and retry queues. A queue has no index to
// look a message up by, so its head is browsed — safely, as every browse of the console: the
// queue is left as it was, and browses of one queue take turns across replicas (rabbit.Broker).
// The broker's queues share one budget and are read one after the other.

func (r *run) rabbit(ctx context.Context, b RabbitBroker) {
	name := b.Name()
	budget := r.t.o.Budget
	deadline := time.Now().Add(budget.Time)
	tctx, cancel := context.WithDeadline(ctx, deadline)
	topo, err := b.Topology(tctx)
	cancel()
	if err != nil {
		s := r.down(KindRabbitMQ, "rabbitmq "+name, err)
		s.Ref.Broker = name
		r.emit([]Step{s})
		return
	}
	type candidate struct {
		q    rabbitmodel.Queue
		role string
	}
	var queues []candidate
	for _, q := range topo.Queues {
		switch {
		case topo.RetryQueues[q.Ref()]:
			queues = append(queues, candidate{q, "retry"})
		case topo.DLQs[q.Ref()]:
			queues = append(queues, candidate{q, "dlq"})
		}
	}
	sort.Slice(queues, func(i, j int) bool {
		if queues[i].q.Vhost != queues[j].q.Vhost {
			return queues[i].q.Vhost < queues[j].q.Vhost
		}
		return queues[i].q.Name < queues[j].q.Name
	})
	if len(queues) == 0 {
		r.emit([]Step{{Kind: KindRabbitMQ, Source: "rabbitmq " + name, Ref: Ref{Broker: name, Offset: -1},
			Detail: "no dead-letter or retry queue on this broker"}})
		return
	}
	skipped := 0
	if len(queues) > maxQueues {
		skipped = len(queues) - maxQueues
		queues = queues[:maxQueues]
	}
	match := r.messageMatcher()
	remaining := min(budget.Records, rabbitmodel.MaxPeek)
	stopped := ""
	searched := 0 // queues browsed, wholly or in part, or seen empty: what "n of m queues searched" counts
	timeUp := "time budget of " + budget.Time.String() + " exceeded"
	for _, c := range queues {
		q := c.q
		source := fmt.Sprintf("rabbitmq %s/%s", name, q.Name)
		ref := Ref{Broker: name, Vhost: q.Vhost, Queue: q.Name, Offset: -1}
		where := fmt.Sprintf("%s (vhost %s)", q.Name, q.Vhost)
		left := time.Until(deadline)
		if stopped == "" && (left <= 0 || remaining <= 0) {
			stopped = timeUp
			if remaining <= 0 {
				stopped = fmt.Sprintf("records budget of %d exceeded", budget.Records)
			}
		}
		if stopped != "" {
			r.emit([]Step{{Kind: KindRabbitMQ, Source: source, Ref: ref, Place: where, fact: fact{role: c.role, partial: stopped},
				Detail: fmt.Sprintf("not searched: %s: %d of %d queues searched, %s", name, searched, len(queues), stopped)}})
			continue
		}
		if q.Ready == 0 && q.Type != rabbitmodel.TypeStream {
			searched++
			r.emit([]Step{{Kind: KindRabbitMQ, Source: source, Ref: ref, Place: where, fact: fact{role: c.role},
				Detail: "not found: the queue held no ready message"}})
			continue
		}
		// The scan stops reading at the budget's end (it returns what it took, in a moment more):
		// what it found by then counts, and the queue was searched in part.
		var hits []rabbitmodel.Message
		res, err := search.ScanRabbit(ctx, b, search.RabbitQuery{Vhost: q.Vhost, Queue: q.Name, MaxScan: int(remaining), Timeout: left,
			Each: func(m rabbitmodel.Message) error {
				if shown, ok := match(m); ok {
					hits = append(hits, shown)
				}
				return nil
			}})
		if err != nil {
			d := "not searched: " + r.t.errText(err)
			if errors.Is(err, ops.ErrConflict) {
				d = "not browsed: " + ops.Message(err)
			}
			// What was found before the read failed was found all the same: the queue was then
			// searched in part, not down.
			r.emit(append(r.messageSteps(name, c.role, q, hits), Step{Kind: KindRabbitMQ, Source: source, Ref: ref, Place: where,
				Down: errors.Is(err, ops.ErrUnavailable) && len(hits) == 0, Detail: d, fact: fact{role: c.role, partial: d}}))
			continue
		}
		remaining -= res.Scanned
		ready := res.Browse.Ready
		if ready == 0 { // a scan out of time before the browse began knows only the statistics' count
			ready = q.Ready
		}
		steps := r.messageSteps(name, c.role, q, hits)
		note := ""
		switch {
		case res.Stopped == search.StoppedTimeout && res.Scanned == 0:
			stopped = timeUp
			d := fmt.Sprintf("not searched: %s before the queue could be read", stopped)
			r.emit([]Step{{Kind: KindRabbitMQ, Source: source, Ref: ref, Place: where, Detail: d, fact: fact{role: c.role, partial: d}}})
			continue
		case res.Stopped == search.StoppedTimeout:
			stopped = timeUp
			note = fmt.Sprintf("%s: first %d of %d messages read, %s", q.Name, res.Scanned, ready, timeUp)
		case res.Stopped == search.StoppedMaxScan:
			note = fmt.Sprintf("%s: first %d of %d messages read, records budget of %d exceeded", q.Name, res.Scanned, ready, budget.Records)
		case !res.Browse.Complete && len(res.Browse.Notes) > 0:
			note = q.Name + ": " + strings.Join(res.Browse.Notes, " ")
		}
		searched++
		summary := fmt.Sprintf("browsed the head of %s: %d messages read, left in place", where, res.Scanned)
		switch {
		case len(hits) == 0 && note == "":
			steps = append(steps, Step{Kind: KindRabbitMQ, Source: source, Ref: ref, Place: where, Detail: "not found: " + summary,
				fact: fact{role: c.role}})
		case note != "":
			d := summary + "; " + note
			if len(hits) == 0 {
				d = "not found in what was read: " + d
			}
			steps = append(steps, Step{Kind: KindRabbitMQ, Source: source, Ref: ref, Place: where, Detail: d,
				fact: fact{role: c.role, partial: note}})
		}
		r.emit(steps)
	}
	if skipped > 0 {
		r.emit([]Step{{Kind: KindRabbitMQ, Source: "rabbitmq " + name, Ref: Ref{Broker: name, Offset: -1},
			Detail: fmt.Sprintf("not searched: %d more dead-letter and retry queues (a trace browses at most %d)", skipped, maxQueues),
			fact:   fact{partial: fmt.Sprintf("%d queues not searched", skipped)}}})
	}
}

// rabbitTraceHeaders and rabbitAggregateHeaders are where a message's trace id and aggregate id
// are read from, before its JSON body.
var (
	rabbitTraceHeaders     = []string{"traceId", "trace_id", "x-trace-id"}
	rabbitAggregateHeaders = []string{"aggregateId", "aggregate_id", "x-aggregate-id"}
)

// messageMatcher is whether a message is the traced one — its message id (the message_id rules),
// message_id or correlation_id property is an id; its aggregate or trace id (a header, else the
// body's JSON) is the query's — judged on what the reader may see of it (see seen), and the
// message as shown.
func (r *run) messageMatcher() func(rabbitmodel.Message) (rabbitmodel.Message, bool) {
	ids := r.q.ids()
	return seen(func(m rabbitmodel.Message) bool {
		for _, v := range []string{m.MessageID, m.Properties.MessageID, m.Properties.CorrelationID} {
			if v != "" && slices.Contains(ids, v) {
				return true
			}
		}
		if r.q.AggregateID != "" && messageField(m, rabbitAggregateHeaders, []string{"aggregateId", "aggregate_id"}) == r.q.AggregateID {
			return true
		}
		return r.q.TraceID != "" && messageField(m, rabbitTraceHeaders, []string{"traceId", "trace_id"}) == r.q.TraceID
	}, r.q.RabbitView)
}

func messageField(m rabbitmodel.Message, headers, paths []string) string {
	for _, name := range headers {
		for _, h := range m.Headers {
			if strings.EqualFold(h.Key, name) && strings.TrimSpace(h.Value) != "" {
				return strings.TrimSpace(h.Value)
			}
		}
	}
	return ops.MessageIDFromJSON(m.Body, paths)
}

// messageSteps are the steps of the messages found in queue q (messageStep), with room for one more.
func (r *run) messageSteps(broker, role string, q rabbitmodel.Queue, found []rabbitmodel.Message) []Step {
	steps := make([]Step, 0, len(found)+1)
	for _, m := range found {
		steps = append(steps, r.messageStep(broker, role, q, m))
	}
	return steps
}

// messageStep describes a message found, as the reader may see it (m is the view: messageMatcher's;
// its message id is the shown one, as recordStep's).
func (r *run) messageStep(broker, role string, q rabbitmodel.Queue, m rabbitmodel.Message) Step {
	f := fact{role: role, messageID: unmasked(m.MessageID)}
	label := "dead letter"
	if role == "retry" {
		label = "waiting for a retry"
	}
	d := []string{label}
	if m.MessageID != "" {
		d = append(d, "message id "+payload.Clip(m.MessageID, 200))
	}
	var at *time.Time
	if dl := m.DeadLetter; dl != nil {
		if dl.OriginalQueue != "" {
			d = append(d, "from queue "+payload.Clip(dl.OriginalQueue, 200))
			f.by = consumerOfQueue(r.t.o.Consumers, broker, q.Vhost, dl.OriginalQueue)
		} else if dl.OriginalExchange != "" {
			d = append(d, "from exchange "+payload.Clip(dl.OriginalExchange, 200))
		}
		if dl.Reason != "" {
			d = append(d, fmt.Sprintf("%s ×%d", dl.Reason, max(dl.Count, 1)))
			f.exception = dl.Reason
		}
		if dl.ExceptionMessage != "" {
			d = append(d, payload.Clip(dl.ExceptionMessage, 300))
		}
		if dl.ReplayCount > 0 {
			d = append(d, fmt.Sprintf("replayed %d times by Redrive", dl.ReplayCount))
		}
		at = dl.FirstDeathAt
		if len(dl.Deaths) > 0 && dl.Deaths[0].Time != nil {
			at = dl.Deaths[0].Time
		}
	}
	if at == nil {
		at = m.Properties.Timestamp
	}
	d = append(d, fmt.Sprintf("%d bytes", m.Size))
	var when *time.Time
	if at != nil {
		when = timePtr(*at)
	}
	return Step{Kind: KindRabbitMQ, Source: fmt.Sprintf("rabbitmq %s/%s", broker, q.Name), Found: true, At: when,
		Place:  fmt.Sprintf("%s (vhost %s) position %d", q.Name, q.Vhost, m.Position),
		Detail: strings.Join(d, "; "), Ref: Ref{Broker: broker, Vhost: q.Vhost, Queue: q.Name, Offset: -1}, fact: f}
}

// consumerOfQueue names the configured consumer of a queue ("" → the queue itself).
func consumerOfQueue(cs []ops.Consumer, broker, vhost, queue string) string {
	for _, c := range cs {
		if r := c.RabbitMQ; r != nil && r.Queue == queue && (r.Broker == "" || r.Broker == broker) && (r.Vhost == "" || r.Vhost == vhost) {
			return c.Name
		}
	}
	return "the consumer of " + queue
}
