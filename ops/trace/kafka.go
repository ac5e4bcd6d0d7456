package trace

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/search"
)

// Kafka: the record in its original topic, then in the retry topics and the dead-letter topics.
// A full scan is avoided where the trace knows better: an aggregate id is the record's key, so
// only the key's partition is read (a Spring DLT keeps the original partition number, so the DLT's
// same partition too); an outbox row's created_at and sent_at bound the time window read (found
// through the brokers' offsets-for-time index); without either, partitions are read newest first
// until the budget is spent, and the step says how far it got.

// window is the time a lookup reads; zero ends are open.
type window struct {
	from, to time.Time
	why      string // where the window comes from, for the step
}

// slack widens an outbox row's window: producer and database clocks differ, and a relay stamps
// sent_at after the broker's acknowledgement.
const slack = time.Minute

// hints are what the outbox rows and the query say about where the records are.
type hints struct {
	keys     []string // the records' keys (aggregate ids)
	original window   // of the records in their original topic
	dead     window   // of the retried and dead-lettered copies: not before the original
}

// windowTime is a time of the query as a window's bound, whose zero is "unbounded": a time
// before 1970 is the epoch, as early as a Kafka record can be (and where OffsetsAfter reads
// the log start), so 0001-01-01 is a bound, not no bound.
func windowTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	if epoch := time.Unix(0, 0); t.Before(epoch) {
		return epoch
	}
	return *t
}

func (r *run) hints() hints {
	var h hints
	if r.q.AggregateID != "" {
		h.keys = []string{r.q.AggregateID}
	}
	for _, e := range r.events {
		if e.AggregateID != "" && !contains(h.keys, e.AggregateID) {
			h.keys = append(h.keys, e.AggregateID)
		}
	}
	switch {
	case r.q.Since != nil || r.q.Until != nil:
		h.original = window{from: windowTime(r.q.Since), to: windowTime(r.q.Until), why: "the asked time window"}
		h.dead = h.original
	case len(r.events) > 0:
		var from, to time.Time
		allSent := true
		for _, e := range r.events {
			if from.IsZero() || e.CreatedAt.Before(from) {
				from = e.CreatedAt
			}
			if e.SentAt == nil {
				allSent = false
			} else if e.SentAt.After(to) {
				to = *e.SentAt
			}
		}
		h.original = window{from: from.Add(-slack), why: "from the outbox rows' created_at"}
		if allSent {
			h.original.to = to.Add(slack)
			h.original.why = "between the outbox rows' created_at and sent_at"
		}
		h.dead = window{from: h.original.from, why: "from the outbox rows' created_at"}
	}
	return h
}

// kafka looks the message up in one cluster: each original topic (the consumers' topics and
// those the dead-letter topics name) and each retry and dead-letter topic, concurrently, each with
// its own budget.
func (r *run) kafka(ctx context.Context, k KafkaCluster) {
	name := k.Name()
	lctx, cancel := context.WithTimeout(ctx, r.t.o.Budget.Time)
	dlts, err := k.DeadLetterTopics(lctx)
	cancel()
	if err != nil {
		r.emit([]Step{r.down(KindKafka, "kafka "+name, err)})
		return
	}
	isDL := map[string]bool{}
	for _, d := range dlts {
		isDL[d.Topic] = true
	}
	var originals []string
	for _, c := range r.t.o.Consumers {
		if c.Kafka != nil && c.Kafka.Cluster == name {
			for _, t := range c.Kafka.Topics {
				if !isDL[t] && !contains(originals, t) {
					originals = append(originals, t)
				}
			}
		}
	}
	for _, d := range dlts {
		if o := k.OriginalTopicOf(d.Topic); o != "" && !isDL[o] && !contains(originals, o) {
			originals = append(originals, o)
		}
	}
	sort.Strings(originals)
	if len(originals) == 0 && len(dlts) == 0 {
		r.emit([]Step{{Kind: KindKafka, Source: "kafka " + name, Ref: Ref{Cluster: name, Offset: -1},
			Detail: "no topic to search: no consumer names a topic of this cluster and it has no dead-letter topic"}})
		return
	}
	h := r.hints()
	var wg sync.WaitGroup
	for _, t := range originals {
		wg.Go(func() { r.emit(r.topic(ctx, k, t, "original", "", h)) })
	}
	for _, d := range dlts {
		role := "dead_letter"
		if d.Retry {
			role = "retry"
		}
		wg.Go(func() { r.emit(r.topic(ctx, k, d.Topic, role, k.OriginalTopicOf(d.Topic), h)) })
	}
	wg.Wait()
}

// errFirst stops a scan at its first match.
var errFirst = errors.New("first match")

// topic reads one topic within the budget and returns its steps: one per record found, and one
// saying what was searched when nothing was found or the budget ran out.
func (r *run) topic(ctx context.Context, k KafkaCluster, topic, role, original string, h hints) []Step {
	b := r.t.o.Budget
	deadline := time.Now().Add(b.Time)
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(2*time.Second))
	defer cancel()
	source := fmt.Sprintf("kafka %s/%s", k.Name(), topic)
	ref := Ref{Cluster: k.Name(), Topic: topic, Offset: -1}
	parts, err := k.Partitions(ctx, topic)
	if errors.Is(err, ops.ErrNotFound) {
		return []Step{{Kind: KindKafka, Source: source, Ref: ref, Detail: "the topic does not exist", fact: fact{role: role, topic: topic}}}
	}
	if err != nil {
		s := r.down(KindKafka, source, err)
		s.Ref, s.fact = ref, fact{role: role, topic: topic}
		return []Step{s}
	}
	win := h.original
	if role != "original" {
		win = h.dead
	}

	// Which partitions: the keys' (and, for a dead-letter topic, the original's partition
	// numbers), else all.
	selected, why := partitionsFor(ctx, k, topic, original, parts, h.keys)
	var lo, hi map[int32]int64
	if !win.from.IsZero() {
		if lo, err = k.OffsetsAfter(ctx, topic, win.from); err != nil {
			return []Step{r.down(KindKafka, source, err)}
		}
	}
	if !win.to.IsZero() {
		if hi, err = k.OffsetsAfter(ctx, topic, win.to); err != nil {
			return []Step{r.down(KindKafka, source, err)}
		}
	}
	order := "newest"
	if !win.from.IsZero() {
		order = "oldest" // from the window's start, where the record most likely is
	}
	// Without a window nor a key, a message id is one record: the newest copy answers, and the
	// rest of the log is not read for it.
	first := len(h.keys) == 0 && win.from.IsZero() && win.to.IsZero() && r.q.AggregateID == ""

	match := r.recordMatcher()
	var (
		hits      []kafka.Record
		scanned   int64
		searched  int
		stopped   string
		read      []string
		remaining = b.Records
	)
	for _, p := range selected {
		if remaining <= 0 {
			stopped = fmt.Sprintf("records budget of %d exceeded", b.Records)
			break
		}
		left := time.Until(deadline)
		if left <= 0 {
			stopped = "time budget of " + b.Time.String() + " exceeded"
			break
		}
		start, end := p.Start, p.End
		if o, ok := lo[p.Partition]; ok {
			start = max(start, o)
		}
		if o, ok := hi[p.Partition]; ok {
			end = min(end, o)
		}
		if end <= start {
			searched++
			if p.End <= p.Start {
				read = append(read, fmt.Sprintf("%d (empty)", p.Partition))
			} else {
				read = append(read, fmt.Sprintf("%d (no records in the window)", p.Partition))
			}
			continue
		}
		part, last := p.Partition, end-1
		var n int64
		res, err := search.ScanKafka(ctx, k, search.Query{Topic: topic, Partition: &part, Order: order,
			FromOffset: &start, ToOffset: &last, MaxScan: remaining, Timeout: left,
			Each: func(rec kafka.Record) error {
				n++
				if shown, ok := match(rec); ok {
					hits = append(hits, shown)
					if first {
						return errFirst
					}
				}
				return nil
			}})
		scanned += n
		remaining -= n
		switch {
		case errors.Is(err, errFirst):
			searched++
			read = append(read, fmt.Sprintf("%d (stopped at the newest match)", p.Partition))
		case err != nil:
			stopped = "could not read partition " + strconv.Itoa(int(p.Partition)) + ": " + r.t.errText(err)
		case res.Exhausted:
			searched++
			read = append(read, fmt.Sprintf("%d offsets %d–%d", p.Partition, start, last))
		case res.Stopped == search.StoppedMaxScan:
			stopped = fmt.Sprintf("records budget of %d exceeded", b.Records)
		default:
			stopped = "time budget of " + b.Time.String() + " exceeded"
		}
		if err != nil || stopped != "" || (first && len(hits) > 0) {
			break
		}
	}

	var steps []Step
	for _, rec := range hits {
		steps = append(steps, r.recordStep(k.Name(), role, rec))
	}
	summary := fmt.Sprintf("searched %s partition %s%s: %d records read", topic, strings.Join(read, ", "), whyText(why, win), scanned)
	if len(read) == 0 {
		summary = fmt.Sprintf("searched %s%s: %d records read", topic, whyText(why, win), scanned)
	}
	if len(read) > 1 {
		summary = strings.Replace(summary, " partition ", " partitions ", 1)
	}
	partial := ""
	if stopped != "" {
		partial = fmt.Sprintf("%s: %d of %d partitions searched, %s", topic, searched, len(selected), stopped)
		if len(selected) < len(parts) {
			partial += fmt.Sprintf(" (of the %d chosen of %d)", len(selected), len(parts))
		}
	}
	switch {
	case len(hits) == 0 && partial == "":
		steps = append(steps, Step{Kind: KindKafka, Source: source, Ref: ref, Detail: "not found: " + summary,
			fact: fact{role: role, topic: topic}})
	case partial != "":
		d := summary + "; not searched further — " + partial
		if len(hits) == 0 {
			d = "not found in what was searched: " + d
		}
		steps = append(steps, Step{Kind: KindKafka, Source: source, Ref: ref, Detail: d,
			fact: fact{role: role, topic: topic, partial: partial}})
	}
	return steps
}

// whyText says which partitions and window were read and why.
func whyText(why string, w window) string {
	var parts []string
	if why != "" {
		parts = append(parts, why)
	}
	switch {
	case !w.from.IsZero() && !w.to.IsZero():
		parts = append(parts, fmt.Sprintf("records from %s to %s, %s", stamp(w.from), stamp(w.to), w.why))
	case !w.from.IsZero():
		parts = append(parts, fmt.Sprintf("records from %s on, %s", stamp(w.from), w.why))
	case !w.to.IsZero():
		parts = append(parts, fmt.Sprintf("records until %s, %s", stamp(w.to), w.why))
	default:
		parts = append(parts, "newest first")
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// partitionsFor picks the partitions to read: the keys' partitions when keys are known (for a
// dead-letter topic also the original topic's key partitions, the number Spring's recoverer keeps
// when the DLT has it), else all of them.
func partitionsFor(ctx context.Context, k KafkaCluster, topic, original string, parts []kafka.PartitionRange, keys []string) ([]kafka.PartitionRange, string) {
	if len(keys) == 0 || len(parts) == 0 {
		return parts, ""
	}
	want := map[int32]bool{}
	for _, key := range keys {
		want[kafka.KeyPartition(topic, []byte(key), len(parts))] = true
	}
	why := "the key's partition"
	if original != "" {
		if op, err := k.Partitions(ctx, original); err == nil && len(op) > 0 {
			for _, key := range keys {
				if p := kafka.KeyPartition(original, []byte(key), len(op)); int(p) < len(parts) {
					want[p] = true
				}
			}
			why = "the key's partition here and in " + original
		}
	}
	var out []kafka.PartitionRange
	for _, p := range parts {
		if want[p.Partition] {
			out = append(out, p)
		}
	}
	return out, why + " (key " + strings.Join(keys, ", ") + ")"
}

// recordMatcher is whether a record is the traced message — its message id is one of the ids,
// its key the aggregate's (for an aggregate trace), its trace id the trace's — judged on what the
// reader may see of it (see seen), and the record as shown.
func (r *run) recordMatcher() func(kafka.Record) (kafka.Record, bool) {
	ids := r.q.ids()
	for _, e := range r.events {
		if r.q.AggregateID != "" && !contains(ids, e.EventID) {
			ids = append(ids, e.EventID)
		}
	}
	return seen(func(rec kafka.Record) bool {
		if r.q.AggregateID != "" && string(rec.Key) == r.q.AggregateID {
			return true
		}
		if len(ids) == 0 && r.q.TraceID == "" {
			return false
		}
		id, traceID := r.t.recordIDs(rec)
		return (id != "" && contains(ids, id)) || (r.q.TraceID != "" && traceID == r.q.TraceID)
	}, r.q.KafkaView)
}

// traceHeaders are the header names a record's trace id is read from, after the dead-letter
// decoding's traceId.
var traceHeaders = []string{"traceId", "trace_id", "x-trace-id", "X-B3-TraceId"}

// recordIDs are a record's message id (the message_id rules: the dead-letter decoding's, else the
// configured headers, else the JSON paths) and trace id.
func (t *Tracer) recordIDs(rec kafka.Record) (id, traceID string) {
	if dl := rec.DeadLetter; dl != nil {
		id, traceID = dl.MessageID, dl.TraceID
	}
	if id == "" {
		if id = kafka.LastHeader(rec.Headers, t.o.IDs.Headers); id == "" {
			id = ops.MessageIDFromJSON(rec.Value, t.o.IDs.JSONPaths)
		}
	}
	if traceID == "" {
		if traceID = kafka.LastHeader(rec.Headers, traceHeaders); traceID == "" {
			traceID = ops.MessageIDFromJSON(rec.Value, []string{"traceId", "trace_id"})
		}
	}
	return id, traceID
}

// recordStep describes a record found, as the reader may see it (rec is the view: recordMatcher's).
// Its message id, which the inboxes, the ledger and the audit log are then asked about, is the
// shown one: a masked id is not looked up, as its rows would name it.
func (r *run) recordStep(cluster, role string, rec kafka.Record) Step {
	shownID, _ := r.t.recordIDs(rec)
	f := fact{role: role, messageID: unmasked(shownID), key: string(rec.Key), topic: rec.Topic, partition: rec.Partition, offset: rec.Offset}
	var d []string
	switch role {
	case "dead_letter":
		d = append(d, "dead letter")
	case "retry":
		d = append(d, "retry")
	default:
		d = append(d, "published")
	}
	if rec.Key != nil {
		d = append(d, "key "+payload.Clip(text(rec.Key), 200))
	}
	if shownID != "" {
		d = append(d, "message id "+payload.Clip(shownID, 200))
	}
	if dl := rec.DeadLetter; dl != nil && role != "original" {
		if dl.OriginalTopic != "" {
			from := "from " + dl.OriginalTopic
			if dl.OriginalPartition != nil {
				from += "/" + strconv.Itoa(int(*dl.OriginalPartition))
			}
			if dl.OriginalOffset != nil {
				from += " @ " + strconv.FormatInt(*dl.OriginalOffset, 10)
			}
			d = append(d, from)
		}
		if dl.ConsumerGroup != "" {
			d = append(d, "by group "+payload.Clip(dl.ConsumerGroup, 200))
			f.by = consumerOfGroup(r.t.o.Consumers, cluster, dl.ConsumerGroup)
		}
		if dl.ExceptionType != "" {
			ex := payload.Clip(dl.ExceptionType, 300)
			if dl.ExceptionMessage != "" {
				ex += ": " + payload.Clip(dl.ExceptionMessage, 300)
			}
			d = append(d, ex)
			f.exception = shortType(dl.ExceptionType)
		} else if dl.ExceptionMessage != "" {
			d = append(d, payload.Clip(dl.ExceptionMessage, 300))
		}
		if dl.RetryCount != nil {
			d = append(d, fmt.Sprintf("attempt %d", *dl.RetryCount))
		}
		if dl.FirstFailedAt != "" {
			d = append(d, "first failed at "+payload.Clip(dl.FirstFailedAt, 64))
		}
	}
	d = append(d, fmt.Sprintf("%d bytes", rec.Size))
	return Step{Kind: KindKafka, Source: fmt.Sprintf("kafka %s/%s", cluster, rec.Topic), Found: true, At: timePtr(rec.Timestamp),
		Place: fmt.Sprintf("%s/%d @ %d", rec.Topic, rec.Partition, rec.Offset), Detail: strings.Join(d, "; "),
		Ref: Ref{Cluster: cluster, Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset}, fact: f}
}

// consumerOfGroup names the configured consumer of a group ("" → the group itself).
func consumerOfGroup(cs []configs.Consumer, cluster, group string) string {
	for _, c := range cs {
		if c.Kafka != nil && c.Kafka.Group == group && (c.Kafka.Cluster == "" || c.Kafka.Cluster == cluster) {
			return c.Name
		}
	}
	return group
}

// shortType is a class name without its package: org.example.DeserializationException →
// DeserializationException.
func shortType(fqcn string) string {
	if i := strings.LastIndexAny(fqcn, ".$"); i >= 0 && i < len(fqcn)-1 {
		return fqcn[i+1:]
	}
	return fqcn
}

// text is bytes as text: as they are when UTF-8, else a note of their size.
func text(b []byte) string {
	if s, enc := payload.Render(b); enc != payload.Binary {
		return s
	}
	return fmt.Sprintf("(%d bytes, binary)", len(b))
}
