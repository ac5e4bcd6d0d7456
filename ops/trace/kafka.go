package trace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
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
		if e.AggregateID != "" && !slices.Contains(h.keys, e.AggregateID) {
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
				if !isDL[t] && !slices.Contains(originals, t) {
					originals = append(originals, t)
				}
			}
		}
	}
	for _, d := range dlts {
		if o := k.OriginalTopicOf(d.Topic); o != "" && !isDL[o] && !slices.Contains(originals, o) {
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
		// The step links to the cluster, not to a topic page that would answer 404.
		return []Step{{Kind: KindKafka, Source: source, Ref: Ref{Cluster: k.Name(), Offset: -1}, Detail: "the topic does not exist", fact: fact{role: role, topic: topic}}}
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
	remaining := b.Records
	p := r.read(ctx, k, topic, selected, lo, hi, order, first, match, &remaining, deadline)
	summary := p.summary(topic, whyText(why, win))
	// A window the query asks for is the reader's bound; one the outbox rows suggest is a guess.
	asked := r.q.Since != nil || r.q.Until != nil
	if len(p.hits) == 0 && p.stopped == "" && (len(selected) < len(parts) || (!asked && (lo != nil || hi != nil))) {
		// The key's partition and the outbox rows' window say where the record should be, not
		// where it must be: a producer may partition by another key or by hand, a recoverer may
		// write the dead letter to another partition, clocks differ. Nothing there is not "not
		// found": the rest of the budget reads the whole topic (within an asked window), newest
		// first.
		why := " (the whole topic, newest first)"
		if !asked {
			lo, hi = nil, nil
		} else {
			why = whyText("every partition", win)
		}
		w := r.read(ctx, k, topic, parts, lo, hi, "newest", r.q.AggregateID == "", match, &remaining, deadline)
		summary += "; nothing there, so then " + w.summary(topic, why)
		w.scanned += p.scanned
		p, selected = w, parts
	}

	var steps []Step
	for _, rec := range p.hits {
		steps = append(steps, r.recordStep(k.Name(), role, rec))
	}
	partial := ""
	if p.stopped != "" {
		partial = fmt.Sprintf("%s: %d of %d partitions searched", topic, p.searched, len(selected))
		if len(selected) < len(parts) {
			partial += fmt.Sprintf(" (of the %d chosen of %d)", len(selected), len(parts))
		}
		if p.cut != "" {
			partial += ", " + p.cut
		}
		partial += ", " + p.stopped
	}
	switch {
	case len(p.hits) == 0 && partial == "":
		steps = append(steps, Step{Kind: KindKafka, Source: source, Ref: ref, Detail: "not found: " + summary,
			fact: fact{role: role, topic: topic}})
	case partial != "":
		d := summary + "; not searched further — " + partial
		if len(p.hits) == 0 {
			d = "not found in what was searched: " + d
		}
		steps = append(steps, Step{Kind: KindKafka, Source: source, Ref: ref, Detail: d,
			fact: fact{role: role, topic: topic, partial: partial}})
	}
	return steps
}

// pass is one reading of a topic's partitions, one after the other, within what is left of the
// topic's budget.
type pass struct {
	hits     []kafkamodel.Record // as shown
	scanned  int64
	searched int      // partitions read to their end (or to the first match)
	read     []string // what was read of each of them
	// cut and cutRead say how far the partition the pass stopped in was read, for the step's
	// budget note and for its list of what was read.
	cut, cutRead string
	stopped      string // why the pass ended before its last partition ("" when it did not)
}

// summary says what a pass read: "searched orders partitions 0 offsets 0–79, 1 (empty) (why): 80
// records read".
func (p pass) summary(topic, why string) string {
	read := p.read
	if p.cutRead != "" {
		read = append(read[:len(read):len(read)], p.cutRead)
	}
	switch len(read) {
	case 0:
		return fmt.Sprintf("searched %s%s: %d records read", topic, why, p.scanned)
	case 1:
		return fmt.Sprintf("searched %s partition %s%s: %d records read", topic, read[0], why, p.scanned)
	}
	return fmt.Sprintf("searched %s partitions %s%s: %d records read", topic, strings.Join(read, ", "), why, p.scanned)
}

// read reads parts of topic (each bounded by lo and hi, the window's offsets, when they have it)
// in order, handing each record to match, until the end, the first match (first), or the
// budget: *remaining records, the deadline.
func (r *run) read(ctx context.Context, k KafkaCluster, topic string, parts []kafkamodel.PartitionRange, lo, hi map[int32]int64,
	order string, first bool, match func(kafkamodel.Record) (kafkamodel.Record, bool), remaining *int64, deadline time.Time) pass {
	b := r.t.o.Budget
	var out pass
	for _, p := range parts {
		if *remaining <= 0 {
			out.stopped = fmt.Sprintf("records budget of %d exceeded", b.Records)
			break
		}
		left := time.Until(deadline)
		if left <= 0 {
			out.stopped = "time budget of " + b.Time.String() + " exceeded"
			break
		}
		start, end := p.Start, p.Stable // what a read_committed consumer gets
		if o, ok := lo[p.Partition]; ok {
			start = max(start, o)
		}
		if o, ok := hi[p.Partition]; ok {
			end = min(end, o)
		}
		if end <= start {
			out.searched++
			if p.Stable <= p.Start {
				out.read = append(out.read, fmt.Sprintf("%d (empty)", p.Partition))
			} else {
				out.read = append(out.read, fmt.Sprintf("%d (no records in the window)", p.Partition))
			}
			continue
		}
		part, last := p.Partition, end-1
		var n int64
		res, err := search.ScanKafka(ctx, k, search.Query{Topic: topic, Partition: &part, Order: order,
			FromOffset: &start, ToOffset: &last, MaxScan: *remaining, Timeout: left,
			Each: func(rec kafkamodel.Record) error {
				n++
				if shown, ok := match(rec); ok {
					out.hits = append(out.hits, shown)
					if first {
						return errFirst
					}
				}
				return nil
			}})
		out.scanned += n
		*remaining -= n
		switch {
		case errors.Is(err, errFirst):
			out.searched++
			out.read = append(out.read, fmt.Sprintf("%d (stopped at the newest match)", p.Partition))
		case err != nil:
			out.stopped = "could not read partition " + strconv.Itoa(int(p.Partition)) + ": " + r.t.errText(err)
		case res.Exhausted:
			out.searched++
			out.read = append(out.read, fmt.Sprintf("%d offsets %d–%d", p.Partition, start, last))
		case res.Stopped == search.StoppedMaxScan:
			out.stopped = fmt.Sprintf("records budget of %d exceeded", b.Records)
		default:
			out.stopped = "time budget of " + b.Time.String() + " exceeded"
		}
		if out.stopped != "" && n > 0 {
			// Say how far the budget let it read: "partition 0 read in part (70656 records,
			// offsets 29344–99999 of 0–99999)".
			how := fmt.Sprintf("%d records", n)
			if next, ok := res.Next[part]; ok {
				from, to := start, next-1
				if order != "oldest" {
					from, to = next+1, last
				}
				how += fmt.Sprintf(", offsets %d–%d of %d–%d", from, to, start, last)
			}
			out.cut = fmt.Sprintf("partition %d read in part (%s)", part, how)
			out.cutRead = fmt.Sprintf("%d in part (%s)", part, how)
		}
		if err != nil || out.stopped != "" || (first && len(out.hits) > 0) {
			break
		}
	}
	return out
}

// recordAt locates a record: a cluster's topic, partition and offset.
type recordAt struct {
	cluster, topic string
	partition      int32
	offset         int64
}

// kafkaLocator reads a Kafka dead letter's ledger locator, kafka:<cluster>/<topic>[@<topic
// id>]/<partition>/<offset> (ops/replay).
func kafkaLocator(l string) (recordAt, bool) {
	rest, ok := strings.CutPrefix(l, "kafka:")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) < 4 {
		return recordAt{}, false
	}
	n := len(parts)
	p, err1 := strconv.ParseInt(parts[n-2], 10, 32)
	o, err2 := strconv.ParseInt(parts[n-1], 10, 64)
	topic, _, _ := strings.Cut(parts[n-3], "@")
	if err1 != nil || err2 != nil || topic == "" {
		return recordAt{}, false
	}
	return recordAt{cluster: strings.Join(parts[:n-3], "/"), topic: topic, partition: int32(p), offset: o}, true
}

// ledgerNamed reads, by their offsets, the dead letters the replay ledger's steps name that the
// topics' searches did not find (their budget ended first, or the record lies outside where
// they looked): a ledger step naming orders.DLT/0/0 beside a search that says it did not find the
// message read as a contradiction. Each is one record, matched as any other (on what the
// reader may see); one that is gone or is not the message adds nothing, and the ledger step
// still says what the job did.
func (r *run) ledgerNamed(ctx context.Context) {
	r.mu.Lock()
	have := map[recordAt]bool{}
	for _, s := range r.steps {
		if s.Kind == KindKafka && s.Found {
			have[recordAt{s.Ref.Cluster, s.Ref.Topic, s.Ref.Partition, s.Ref.Offset}] = true
		}
	}
	var want []recordAt
	for _, s := range r.steps {
		if at, ok := kafkaLocator(s.fact.locator); ok && s.Kind == KindReplay && !have[at] {
			have[at] = true
			want = append(want, at)
		}
	}
	r.mu.Unlock()
	if len(want) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.t.o.Budget.Time)
	defer cancel()
	match := r.recordMatcher()
	var steps []Step
	for _, at := range want {
		for _, k := range r.t.o.Kafka {
			if k.Name() != at.cluster {
				continue
			}
			_, _ = search.ScanKafka(ctx, k, search.Query{Topic: at.topic, Partition: &at.partition, Order: "oldest",
				FromOffset: &at.offset, ToOffset: &at.offset, MaxScan: 1, Each: func(rec kafkamodel.Record) error {
					if shown, ok := match(rec); ok && rec.Offset == at.offset {
						s := r.recordStep(at.cluster, "dead_letter", shown)
						s.Detail += "; read at the offset the replay ledger names"
						steps = append(steps, s)
					}
					return nil
				}})
		}
	}
	if len(steps) > 0 {
		r.emit(steps)
	}
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
func partitionsFor(ctx context.Context, k KafkaCluster, topic, original string, parts []kafkamodel.PartitionRange, keys []string) ([]kafkamodel.PartitionRange, string) {
	if len(keys) == 0 || len(parts) == 0 {
		return parts, ""
	}
	want := map[int32]bool{}
	for _, key := range keys {
		want[k.KeyPartition(topic, []byte(key), len(parts))] = true
	}
	why := "the key's partition"
	if original != "" {
		if op, err := k.Partitions(ctx, original); err == nil && len(op) > 0 {
			for _, key := range keys {
				if p := k.KeyPartition(original, []byte(key), len(op)); int(p) < len(parts) {
					want[p] = true
				}
			}
			why = "the key's partition here and in " + original
		}
	}
	var out []kafkamodel.PartitionRange
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
func (r *run) recordMatcher() func(kafkamodel.Record) (kafkamodel.Record, bool) {
	ids := r.q.ids()
	for _, e := range r.events {
		if r.q.AggregateID != "" && !slices.Contains(ids, e.EventID) {
			ids = append(ids, e.EventID)
		}
	}
	return seen(func(rec kafkamodel.Record) bool {
		if r.q.AggregateID != "" && string(rec.Key) == r.q.AggregateID {
			return true
		}
		if len(ids) == 0 && r.q.TraceID == "" {
			return false
		}
		id, traceID := r.t.recordIDs(rec)
		return (id != "" && slices.Contains(ids, id)) || (r.q.TraceID != "" && traceID == r.q.TraceID)
	}, r.q.KafkaView)
}

// traceHeaders are the header names a record's trace id is read from, after the dead-letter
// decoding's traceId.
var traceHeaders = []string{"traceId", "trace_id", "x-trace-id", "X-B3-TraceId"}

// recordIDs are a record's message id (the message_id rules: the dead-letter decoding's, else the
// configured headers, else the JSON paths) and trace id.
func (t *Tracer) recordIDs(rec kafkamodel.Record) (id, traceID string) {
	if dl := rec.DeadLetter; dl != nil {
		id, traceID = dl.MessageID, dl.TraceID
	}
	if id == "" {
		if id = kafkamodel.LastHeader(rec.Headers, t.o.IDs.Headers); id == "" {
			id = ops.MessageIDFromJSON(rec.Value, t.o.IDs.JSONPaths)
		}
	}
	if traceID == "" {
		if traceID = kafkamodel.LastHeader(rec.Headers, traceHeaders); traceID == "" {
			traceID = ops.MessageIDFromJSON(rec.Value, []string{"traceId", "trace_id"})
		}
	}
	return id, traceID
}

// recordStep describes a record found, as the reader may see it (rec is the view: recordMatcher's).
// Its message id, which the inboxes, the ledger and the audit log are then asked about, is the
// shown one: a masked id is not looked up, as its rows would name it.
func (r *run) recordStep(cluster, role string, rec kafkamodel.Record) Step {
	shownID, _ := r.t.recordIDs(rec)
	f := fact{role: role, messageID: unmasked(shownID), key: string(rec.Key), topic: rec.Topic, partition: rec.Partition, offset: rec.Offset}
	var d []string
	// A record carrying Redrive's x-redrive-replay-id is a replay copy a job published, not the
	// service's own publication: the trace said "published to orders/0 at offset 1466" of one.
	job := ReplayCopyOf(rec)
	switch {
	case role == "original" && job != "":
		f.role = RoleReplayCopy
		d = append(d, "replay copy published by Redrive's job "+payload.Clip(job, 64))
	case role == "dead_letter" && job != "":
		d = append(d, "dead letter of a replay copy (Redrive's job "+payload.Clip(job, 64)+")")
	case role == "dead_letter":
		d = append(d, "dead letter")
	case role == "retry":
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
func consumerOfGroup(cs []ops.Consumer, cluster, group string) string {
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

// RoleReplayCopy is the role of a record in the original topic that a Redrive replay job
// published (it carries x-redrive-replay-id): the message again, not its first publication.
const RoleReplayCopy = "replay_copy"

// ReplayCopyOf is the replay job that published rec (its x-redrive-replay-id header, as
// ops/replay writes it), "" when rec is no replay copy.
func ReplayCopyOf(rec kafkamodel.Record) string {
	for _, h := range rec.Headers {
		if strings.EqualFold(h.Key, "x-redrive-replay-id") {
			if v := strings.TrimSpace(string(h.Value)); v != "" {
				return v
			}
			return "unknown"
		}
	}
	return ""
}
