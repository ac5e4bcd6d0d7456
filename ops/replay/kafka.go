package replay

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/search"
	"github.com/redrive/redrive/ops/source"
	"github.com/redrive/redrive/ops/triage"
)

// kafkaLocator names a dead-letter record. The topic ID is part of it: a topic deleted and created
// again under the same name holds other records at the same offsets.
func kafkaLocator(cluster, topic, topicID string, partition int32, offset int64) string {
	if topicID != "" {
		topic += "@" + topicID
	}
	return fmt.Sprintf("kafka:%s/%s/%d/%d", cluster, topic, partition, offset)
}

// kafkaKind replays from a Kafka dead-letter topic: a plan scans a range or explicit records, a job
// reads the claimed records again by offset and produces them to their original topics.
type kafkaKind struct{ e *Engine }

func (kafkaKind) batch() int { return batchSize }

func (k kafkaKind) cluster(name string) (KafkaCluster, error) {
	return configured(k.e.kafka, "source.cluster", "kafka cluster", name)
}

// kafkaPlan is one Kafka plan being read.
type kafkaPlan struct {
	e       *Engine
	k       KafkaCluster
	src     Source
	f       Filter
	topicID string
	dests   *destPartitions
	cel     *search.Filter // f.CEL compiled; nil when unset
	// pending are the items read but not yet emitted: their destination topics are looked up
	// together, in one metadata request per planChunk items.
	pending []pendingItem
}

// pendingItem is an item whose destination waits for its topic's partition count.
type pendingItem struct {
	it         Item
	header     *int32 // the partition the dead-letter headers name
	key        []byte
	redirected bool
}

// plan reads the selected range (or records) of a dead-letter topic and emits each record as an item.
func (k kafkaKind) plan(ctx context.Context, src *Source, f Filter, emit func(Item) error) error {
	c, err := k.cluster(src.Cluster)
	if err != nil {
		return err
	}
	if src.Topic == "" {
		return invalid("source.topic", "required")
	}
	// "records": [] (a client with nothing ticked) decodes to an empty list, absent to nil: only
	// absent selects by partition, offsets and filter; an empty list read as absent replayed the
	// whole topic.
	if src.Records != nil && len(src.Records) == 0 {
		return invalid("source.records", "empty — tick at least one record, or leave records out to select by offsets/filter")
	}
	parts, err := c.Partitions(ctx, src.Topic)
	if err != nil {
		return err
	}
	if src.Partition != nil && !hasPartition(parts, *src.Partition) {
		return invalid("source.partition", fmt.Sprintf("topic %s has partitions 0..%d", src.Topic, len(parts)-1))
	}
	id, err := c.TopicID(ctx, src.Topic)
	if err != nil {
		return err
	}
	// A selection made on a page read before the topic was deleted and created again names
	// records of the old topic: the offsets now hold others, never seen nor chosen.
	if src.TopicID != "" && id != "" && src.TopicID != id {
		return ops.Conflict("topic %s was deleted and created again since it was read (its records are others now): "+
			"open it again and choose anew", src.Topic)
	}
	src.TopicID = id
	cel, err := compileCEL(search.Kafka, f.CEL)
	if err != nil {
		return err
	}
	// resolution == "open" in a plan's filter reads the marks Redrive keeps of this topic.
	cel = cel.WithResolutions(triage.StateLookup(ctx, k.e.o.Store, src.Cluster, src.Topic, id))
	p := &kafkaPlan{e: k.e, k: c, src: *src, f: f, topicID: id, dests: newDestPartitions(c), cel: cel}
	if len(src.Records) > 0 {
		err = p.records(ctx, parts, emit)
	} else {
		err = p.ranges(ctx, parts, emit)
	}
	if err != nil {
		return err
	}
	return p.flush(ctx, emit)
}

// ranges reads the selected partition (or every one) over the selected offsets.
func (p *kafkaPlan) ranges(ctx context.Context, parts []kafkamodel.PartitionRange, emit func(Item) error) error {
	src := &p.src
	for _, pr := range parts {
		from, to, ok := src.span(pr)
		if !ok {
			continue
		}
		err := p.k.Scan(ctx, src.Topic, pr.Partition, from, to, func(r kafkamodel.Record) error { return p.emit(ctx, r, emit) })
		if err != nil {
			return err
		}
	}
	return nil
}

// span is the offsets [from, to) a Kafka source selects of partition pr; ok is false for a
// partition it does not select. Up to the last stable offset: a plan replays what a read_committed
// consumer got, never a record of an aborted transaction nor one a transaction still open holds.
func (src *Source) span(pr kafkamodel.PartitionRange) (from, to int64, ok bool) {
	if src.Partition != nil && pr.Partition != *src.Partition {
		return 0, 0, false
	}
	from, to = pr.Start, pr.Stable
	if src.FromOffset != nil {
		from = max(from, *src.FromOffset)
	}
	if src.ToOffset != nil && *src.ToOffset < to {
		to = *src.ToOffset + 1 // to_offset is inclusive; compared first so that MaxInt64 cannot overflow
	}
	return from, to, true
}

// planKafkaRecords reads explicit records: per partition, in offset order, one read per run of
// neighbouring offsets (a gap of up to recordGap records is read through rather than reconnected).
func (p *kafkaPlan) records(ctx context.Context, parts []kafkamodel.PartitionRange, emit func(Item) error) error {
	src := p.src
	if src.Partition != nil || src.FromOffset != nil || src.ToOffset != nil {
		return invalid("source.records", "give either records or partition and offsets, not both")
	}
	if len(src.Records) > MaxRecords {
		return invalid("source.records", fmt.Sprintf("at most %d records; use a partition and an offset range for more", MaxRecords))
	}
	bounds := map[int32]kafkamodel.PartitionRange{}
	for _, p := range parts {
		bounds[p.Partition] = p
	}
	wanted := map[int32][]int64{}
	for _, r := range src.Records {
		b, ok := bounds[r.Partition]
		switch {
		case !ok:
			return invalid("source.records", fmt.Sprintf("topic %s has no partition %d", src.Topic, r.Partition))
		case b.Start >= b.End:
			return invalid("source.records", fmt.Sprintf("record %d:%d does not exist (partition %d is empty)",
				r.Partition, r.Offset, r.Partition))
		case r.Offset < b.Start || r.Offset >= b.End:
			return invalid("source.records", fmt.Sprintf("record %d:%d does not exist (partition %d holds offsets %d to %d)",
				r.Partition, r.Offset, r.Partition, b.Start, b.End-1))
		case r.Offset >= b.Stable:
			return invalid("source.records", fmt.Sprintf("record %d:%d is past the partition's last stable offset %d: a transaction "+
				"opened before it is still open, and no read_committed consumer has received it; plan it once that transaction ends",
				r.Partition, r.Offset, b.Stable))
		}
		wanted[r.Partition] = append(wanted[r.Partition], r.Offset)
	}
	for _, pr := range parts {
		offsets := wanted[pr.Partition]
		slices.Sort(offsets)
		offsets = slices.Compact(offsets)
		for len(offsets) > 0 {
			n := 1 // the run: offsets[:n]
			for n < len(offsets) && offsets[n]-offsets[n-1] <= recordGap {
				n++
			}
			run := offsets[:n]
			i := 0
			var missing []int64 // offsets the committed read did not hand out
			err := p.k.Scan(ctx, src.Topic, pr.Partition, run[0], run[n-1]+1, func(r kafkamodel.Record) error {
				for i < len(run) && run[i] < r.Offset {
					missing = append(missing, run[i])
					i++
				}
				if i == len(run) || run[i] != r.Offset {
					return nil
				}
				i++
				return p.emit(ctx, r, emit)
			})
			if err != nil {
				return err
			}
			missing = append(missing, run[i:]...)
			if len(missing) > 0 {
				// Not a record a consumer received: aborted by its producer (an uncommitted read
				// shows it marked aborted), a transaction marker, or compacted away.
				return invalid("source.records", fmt.Sprintf("record %d:%d is no dead letter: it is a record of an aborted "+
					"transaction, a transaction marker, or gone from the log, and no consumer received it; it cannot be replayed",
					pr.Partition, missing[0]))
			}
			offsets = offsets[n:]
		}
	}
	return nil
}

// recordGap is how far apart two selected offsets may be and still be read in one pass.
const recordGap = 500

func hasPartition(parts []kafkamodel.PartitionRange, p int32) bool {
	for _, pr := range parts {
		if pr.Partition == p {
			return true
		}
	}
	return false
}

// emit hands on the record's item, unless the filter excludes it, once planChunk items wait
// for their destinations.
func (p *kafkaPlan) emit(ctx context.Context, r kafkamodel.Record, emit func(Item) error) error {
	it, ok, err := p.item(ctx, r)
	if err != nil || !ok {
		return err
	}
	if p.pending = append(p.pending, it); len(p.pending) < planChunk {
		return nil
	}
	return p.flush(ctx, emit)
}

// flush looks up the destination topics of the pending items not known yet, in one request,
// and emits the items in the order they were read. An item whose topic does not exist is
// skipped as unresolvable, saying so: produced, it failed in the job with the driver's text.
func (p *kafkaPlan) flush(ctx context.Context, emit func(Item) error) error {
	topics := make([]string, 0, len(p.pending))
	for _, pi := range p.pending {
		if pi.it.Destination.Kind != "" {
			topics = append(topics, pi.it.Destination.Topic)
		}
	}
	if err := p.dests.lookup(ctx, topics); err != nil {
		return err
	}
	for _, pi := range p.pending {
		it := pi.it
		if topic := it.Destination.Topic; it.Destination.Kind != "" {
			dest, ok := p.dests.resolve(topic, pi.header, pi.key)
			switch {
			case ok:
				dest.Cluster = p.src.Cluster
				it.Destination = dest
			case pi.redirected:
				it.Destination, it.Note = Destination{}, fmt.Sprintf("destination topic %s does not exist", topic)
			default:
				it.Destination, it.Note = Destination{}, fmt.Sprintf("original topic %s does not exist", topic)
			}
		}
		if err := emit(it); err != nil {
			return err
		}
	}
	p.pending = p.pending[:0]
	return nil
}

// item reads one record into an item whose destination (when it has one) is still to be
// resolved; false when the filter excludes it.
func (p *kafkaPlan) item(ctx context.Context, r kafkamodel.Record) (pendingItem, bool, error) {
	dl, f := r.DeadLetter, p.f
	var exception, original, group, msgID string
	if dl != nil {
		exception, original, group, msgID = dl.ExceptionType, dl.OriginalTopic, dl.ConsumerGroup, dl.MessageID
	}
	var stack string
	if dl != nil {
		stack = dl.Stacktrace
	}
	if ok, err := p.matches(ctx, r); err != nil || !ok {
		return pendingItem{}, false, err
	}
	if ed := p.src.Edit; ed != nil {
		diff, err := editDiff(r, ed)
		if err != nil {
			return pendingItem{}, false, err
		}
		if ed.FreshID != "" {
			diff.MessageID = &[2]string{escapeBytes(msgID), ed.FreshID}
		}
		if view := f.shown.Kafka; view != nil {
			shown := view(r)
			markMasked(diff, kafkaHeaderValues(r.Headers), kafkaHeaderValues(shown.Headers), msgID, messageIDOf(shown.DeadLetter))
		}
		if ed.Value != nil {
			// A value in a schema's wire format is published encoded back with its schema id:
			// encoded here, so an edit that does not fit (or a registry that is down) is refused
			// before anything is planned.
			_, enc, err := encodeEdit(ctx, p.k, p.src.Topic, r.Value, *ed.Value)
			if err != nil {
				return pendingItem{}, false, err
			}
			if enc != nil {
				diff.Encoding = enc.Describe()
				if vs := r.ValueSchema; vs != nil && vs.JSON != nil { // what was edited, not the bytes
					diff.ValueBefore = payload.Clip(string(vs.JSON), maxDiffText)
				}
			}
		}
		ed.Diff = diff
	}
	partition, offset := r.Partition, r.Offset
	redirect := p.src.Destination
	if redirect != nil {
		// Redirected (checked against replay.allowed_destinations when planned): the topic the
		// plan names, the partition by the key; the original topic's partition means nothing there.
		original, group, dl = redirect.Topic, "", nil
	}
	it := Item{Locator: kafkaLocator(p.src.Cluster, p.src.Topic, p.topicID, r.Partition, r.Offset), MessageID: msgID,
		ErrorGroup: ops.ErrorFingerprint(exception, stack), Partition: &partition, Position: &offset, ReplayCount: replayCount(r.Headers)}
	pi := pendingItem{key: r.Key, redirected: redirect != nil}
	switch {
	case original == "":
	case !validTopic(original):
		it.Note = fmt.Sprintf("its original topic %q (from the dead-letter headers) is not a valid Kafka topic name", escapeBytes(original))
	case original == p.src.Topic:
		// A record whose headers name the dead-letter topic itself (a consumer of the DLT that
		// failed and dead-lettered into it again, or a producer that wrote the DLT as the original)
		// would be published where it is: one more copy, never the consumer it failed for.
		it.Note = fmt.Sprintf("its destination is %s itself, the dead-letter topic it is in: publishing it there would only "+
			"add a copy; send it elsewhere with a destination (replay.allowed_destinations)", escapeBytes(original))
	default:
		if dl != nil {
			pi.header = dl.OriginalPartition
		}
		it.Destination = Destination{Kind: source.Kafka, Topic: original} // the partition when flushed
	}
	it.Consumer = p.e.consumerForGroup(p.src.Cluster, group)
	if it.Consumer == "" && original != "" {
		it.Consumer = p.e.consumerForTopic(p.src.Cluster, original)
	}
	pi.it = it
	return pi, true, nil
}

// matches reports whether the plan's filter selects r, judged on what the planner's actor may
// see of it (Filter.view): the time by the record's timestamp, the rest — error group, original
// topic, message id, CEL — by its content as shown, as a search's filter is.
func (p *kafkaPlan) matches(ctx context.Context, r kafkamodel.Record) (bool, error) {
	f := p.f
	if !f.matchTime(r.Timestamp) {
		return false, nil
	}
	shown := r
	if view := f.view.Kafka; view != nil && (f.ExceptionType != "" || f.OriginalTopic != "" || len(f.MessageIDs) > 0 || p.cel != nil) {
		shown = view(r)
	}
	var exception, stack, original string
	if dl := shown.DeadLetter; dl != nil {
		exception, stack, original = dl.ExceptionType, dl.Stacktrace, dl.OriginalTopic
	}
	if !ops.InErrorGroupTraced(exception, stack, f.ExceptionType) || (f.OriginalTopic != "" && original != f.OriginalTopic) ||
		!f.matchShownID(messageIDOf(r.DeadLetter), messageIDOf(shown.DeadLetter)) {
		return false, nil
	}
	if p.cel != nil {
		return p.cel.MatchKafka(ctx, shown)
	}
	return true, nil
}

// kafkaHeaderValues is each header's last value, by name.
func kafkaHeaderValues(hs []kafkamodel.Header) map[string]string {
	out := make(map[string]string, len(hs))
	for _, h := range hs {
		out[h.Key] = string(h.Value)
	}
	return out
}

// markMasked marks what of an edit's diff the message shows masked to everyone: the changed
// headers whose value (before, the message's) the view shows otherwise (shown), and the id
// before when the view shows another (shownID for id).
func markMasked(d *EditDiff, before, shown map[string]string, id, shownID string) {
	for k := range d.Headers {
		if v, ok := before[k]; ok && shown[k] != v {
			d.Masked = append(d.Masked, k)
		}
	}
	slices.Sort(d.Masked)
	d.MessageIDMasked = d.MessageID != nil && shownID != id
}

// destPartitions decides the partition a record goes back to: the one its dead-letter headers
// name when the original topic still has it, else the one its key hashes to. Each topic's
// partition count (or that it does not exist) is asked once.
type destPartitions struct {
	k      KafkaCluster
	counts map[string]int // -1: the topic does not exist
}

func newDestPartitions(k KafkaCluster) *destPartitions {
	return &destPartitions{k: k, counts: map[string]int{}}
}

// topicCounter asks many topics' partition counts in one metadata request (*kafka.Cluster does);
// a topic that does not exist is left out.
type topicCounter interface {
	PartitionCounts(ctx context.Context, topics ...string) (map[string]int, error)
}

// Partition sources.
const (
	PartitionFromHeader = "header" // the dead-letter headers name it (originalPartition and its spellings)
	PartitionFromKey    = "key"    // the key's hash (no header, or the partition is gone); -1 for a nil key: any
)

// lookup asks the partition counts of the topics not asked yet: in one request when the cluster
// can, else one topic at a time.
func (d *destPartitions) lookup(ctx context.Context, topics []string) error {
	var ask []string
	asked := map[string]bool{}
	for _, t := range topics {
		if _, ok := d.counts[t]; !ok && !asked[t] {
			ask, asked[t] = append(ask, t), true
		}
	}
	if len(ask) == 0 {
		return nil
	}
	if tc, ok := d.k.(topicCounter); ok {
		counts, err := tc.PartitionCounts(ctx, ask...)
		if err != nil {
			return err
		}
		for _, t := range ask {
			if n, ok := counts[t]; ok {
				d.counts[t] = n
			} else {
				d.counts[t] = -1
			}
		}
		return nil
	}
	for _, t := range ask {
		parts, err := d.k.Partitions(ctx, t)
		switch {
		case errors.Is(err, ops.ErrNotFound):
			d.counts[t] = -1
		case err != nil:
			return err
		default:
			d.counts[t] = len(parts)
		}
	}
	return nil
}

// resolve is where a record of a looked-up topic goes; false when the topic does not exist.
func (d *destPartitions) resolve(topic string, header *int32, key []byte) (Destination, bool) {
	n, ok := d.counts[topic]
	if !ok || n < 0 {
		return Destination{}, false
	}
	dest := Destination{Kind: source.Kafka, Topic: topic}
	if header != nil && *header >= 0 && int(*header) < n {
		dest.Partition, dest.PartitionSource = *header, PartitionFromHeader
		return dest, true
	}
	dest.Partition, dest.PartitionSource = d.k.KeyPartition(topic, key, n), PartitionFromKey
	return dest, true
}

// replayCount is Redrive's own counter on a record (the last occurrence wins).
func replayCount(headers []kafkamodel.Header) int {
	n := 0
	for _, h := range headers {
		if h.Key == HeaderReplayCount {
			n = parseCount(h.Value)
		}
	}
	return n
}

func (k kafkaKind) open(ctx context.Context, _ Job, src Source) (mover, error) {
	c, err := k.cluster(src.Cluster)
	if err != nil {
		return nil, err
	}
	if src.TopicID != "" {
		id, err := c.TopicID(ctx, src.Topic)
		switch {
		case errors.Is(err, ops.ErrNotFound):
			return nil, fmt.Errorf("%w: dead-letter topic %s was deleted since the plan was made: its records are gone",
				ops.ErrConflict, src.Topic)
		case err != nil:
			return nil, err
		case id != src.TopicID:
			return nil, ops.Conflict("dead-letter topic %s was deleted and created again since the plan was made: "+
				"its offsets now hold other records; make a new plan", src.Topic)
		}
	}
	return &kafkaRunner{e: k.e, k: c, src: src, dests: newDestPartitions(c)}, nil
}

type kafkaRunner struct {
	e       *Engine
	k       KafkaCluster
	src     Source
	readers map[int32]kafkamodel.PartitionReader // one fetch session per partition for the whole run
	dests   *destPartitions                      // the original topics' partitions now, not when planned
}

// finish marks the job's published records replayed, from the ledger: the sweep that completes
// the marks of batches whose afterSettle a crash or a store error cut short.
func (r *kafkaRunner) finish(ctx context.Context, job Job) error {
	return r.e.o.Store.MarkJobReplayed(ctx, job.ID)
}

// recordDecoder decodes a record a Reader read (*kafka.Cluster does), as a plan's Scan decodes
// it: a Reader's records come undecoded; the job checks each against the planned message id, and
// the replayed mark carries the record's error group.
type recordDecoder interface {
	DeadLetterOf(ctx context.Context, r kafkamodel.Record) *kafkamodel.DeadLetter
}

// close ends the run's fetch sessions.
func (r *kafkaRunner) close() {
	for _, rd := range r.readers {
		rd.Close()
	}
}

// move re-reads the claimed records by offset, checks that each is the planned one, produces them
// to their original topics with acks=all, and reports each by the broker's answer. Batches come in
// seq order, so each partition's reader only moves forward.
//
// A topic's records never change, but a topic deleted and created again under the same name holds
// other records at the same offsets. open's topic-ID check catches that before the run; the
// message id of every record read is checked against the plan's all the same, since a broker
// without topic IDs (before Kafka 2.8) gives open nothing to compare and the topic can be
// recreated between open's check and a read: a record that is not the planned one was never
// planned nor checked against the consumer's inbox, and is failed, never published.
func (r *kafkaRunner) move(ctx context.Context, job Job, items []Item, resumed map[int]bool) (moved, error) {
	byPartition := map[int32][]Item{}
	for _, it := range items {
		byPartition[*it.Partition] = append(byPartition[*it.Partition], it)
	}
	partitions := make([]int32, 0, len(byPartition))
	for p := range byPartition {
		partitions = append(partitions, p)
	}
	slices.Sort(partitions)
	var settled []LedgerOutcome
	out := make([]kafkamodel.Outgoing, 0, len(items))
	order := make([]Item, 0, len(items))
	marks := make([]triage.Mark, 0, len(items))
	decoder, _ := r.k.(recordDecoder)
	for _, p := range partitions {
		want := byPartition[p] // ascending offsets: plan order within a partition
		slices.SortFunc(want, func(a, b Item) int { return cmp.Compare(*a.Position, *b.Position) })
		if r.readers == nil {
			r.readers = map[int32]kafkamodel.PartitionReader{}
		}
		rd, ok := r.readers[p]
		if !ok {
			rd = r.k.NewReader(r.src.Topic, p)
			r.readers[p] = rd
		}
		i := 0
		err := rd.Read(ctx, *want[0].Position, *want[len(want)-1].Position+1, func(rec kafkamodel.Record) error {
			for i < len(want) && *want[i].Position < rec.Offset { // gone from the log (compaction)
				settled = append(settled, goneFromTopic(want[i]))
				i++
			}
			if i == len(want) || *want[i].Position != rec.Offset {
				return nil
			}
			it := want[i]
			i++
			var dl *kafkamodel.DeadLetter
			if decoder != nil {
				dl = decoder.DeadLetterOf(ctx, rec)
				if id := messageIDOf(dl); id != it.MessageID {
					settled = append(settled, notPlanned(it, id))
					return nil
				}
			}
			// The partition again, against the original topic as it is now: a partition named by
			// the headers that no longer exists falls back to the key.
			var header *int32
			if it.Destination.PartitionSource == PartitionFromHeader {
				header = &it.Destination.Partition
			}
			if err := r.dests.lookup(ctx, []string{it.Destination.Topic}); err != nil {
				return err
			}
			dest, ok := r.dests.resolve(it.Destination.Topic, header, rec.Key)
			if !ok { // deleted since the plan was made: producing would fail with the driver's words
				settled = append(settled, LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID,
					Outcome: LedgerFailed, Detail: fmt.Sprintf("topic %s does not exist", it.Destination.Topic)})
				return nil
			}
			o := kafkamodel.Outgoing{Topic: it.Destination.Topic, Key: rec.Key, Value: rec.Value,
				Headers: r.e.headers.kafka(rec.Headers, job, it, r.src.Topic+"/"+strconv.Itoa(int(p))+"/"+strconv.FormatInt(rec.Offset, 10))}
			if ed := r.src.Edit; ed != nil { // only the edited copy is ever produced
				o.Value, o.Headers = edited(o.Value, o.Headers, ed, r.e.o.MessageIDs.Headers, it.MessageID)
				if ed.Value != nil { // encoded back with the record's schema id when it has one
					v, _, err := encodeEdit(ctx, r.k, r.src.Topic, rec.Value, *ed.Value)
					switch {
					case errors.Is(err, ops.ErrInvalid) || errors.Is(err, ops.ErrConflict) || errors.Is(err, ops.ErrNotFound):
						settled = append(settled, LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID,
							Outcome: LedgerFailed, Detail: ops.Message(err)})
						return nil
					case err != nil: // the registry: the job pauses and tries again, publishing nothing meanwhile
						return err
					}
					o.Value = v
				}
			}
			if dest.PartitionSource == PartitionFromHeader {
				o.Partition = &dest.Partition
			}
			out = append(out, o)
			order = append(order, it)
			m := triage.Mark{RecordKey: triage.RecordKey{Partition: rec.Partition, Offset: rec.Offset}, ExceptionType: it.ErrorGroup}
			if dl != nil {
				m.ExceptionType, m.ExceptionCause = dl.ExceptionType, dl.ExceptionCause
			}
			marks = append(marks, m)
			return nil
		})
		if err != nil {
			return moved{}, err
		}
		for ; i < len(want); i++ { // deleted by retention since the plan was made
			settled = append(settled, goneFromTopic(want[i]))
		}
	}
	errs := r.k.Produce(ctx, out)
	for _, err := range errs {
		if errors.Is(err, kafkamodel.ErrNotAcknowledged) {
			// Whether the batch was written is unknown: the engine pauses the job, saying why, and
			// sends the batch again once the cluster answers (at least once, as after a crash).
			return moved{}, err
		}
	}
	published := marks[:0]
	for i, it := range order {
		o := LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID, Outcome: LedgerPublished}
		if resumed[it.Seq] {
			o.Detail = "resumed after an interruption: may be a duplicate the consumer's inbox absorbs"
		}
		if errs[i] != nil { // in words for a person: the log has the driver's
			o.Outcome, o.Detail = LedgerFailed, ops.Message(errs[i])
			r.e.o.Logger.Warn("replay: produce failed", "job", job.ID, "locator", it.Locator, "err", errs[i])
		} else {
			published = append(published, marks[i])
		}
		settled = append(settled, o)
	}
	return moved{outcomes: settled, afterSettle: func(ctx context.Context) error {
		// After the ledger (a record is never marked replayed ahead of it). A failure here does
		// not stop the job: the records are replayed whatever their mark says, and finish's
		// sweep from the ledger writes the marks that are missing.
		if err := r.e.o.Store.MarkReplayed(ctx, job.ID, job.Actor, r.src.Cluster, r.src.Topic, published); err != nil {
			r.e.o.Logger.Warn("replay: replayed marks deferred to the job's end", "job", job.ID, "err", err)
		}
		return nil
	}}, nil
}

func messageIDOf(dl *kafkamodel.DeadLetter) string {
	if dl == nil {
		return ""
	}
	return dl.MessageID
}

// notPlanned fails an item whose offset now holds another record (message id got).
func notPlanned(it Item, got string) LedgerOutcome {
	holds := "a record with no message id"
	if got != "" {
		holds = fmt.Sprintf("message %q", escapeBytes(got))
	}
	return LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID, Outcome: LedgerFailed,
		Detail: fmt.Sprintf(notPlannedWords+"%s, not %q; "+
			"the dead-letter topic was deleted and created again since the plan was made", holds, escapeBytes(it.MessageID))}
}

const notPlannedWords = "not the record the plan saw: its offset now holds "

// notPlannedIDs are the message ids a notPlanned detail quotes.
var notPlannedIDs = regexp.MustCompile(`(holds message |, not )"(?:[^"\\]|\\.)*"`)

// DetailMasked is a ledger row's detail (or a failure group's) as a reader who may not see
// message ids reads it: the ids a failure quotes — what an offset holds now and what the plan saw
// there (notPlanned) — replaced by mask. Other details quote no message content.
func DetailMasked(detail, mask string) string {
	if !strings.HasPrefix(detail, notPlannedWords) {
		return detail
	}
	return notPlannedIDs.ReplaceAllStringFunc(detail, func(q string) string {
		return notPlannedIDs.FindStringSubmatch(q)[1] + strconv.Quote(mask)
	})
}

func goneFromTopic(it Item) LedgerOutcome {
	return LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID,
		Outcome: LedgerFailed, Detail: "the record no longer exists in the dead-letter topic"}
}

// compileCEL compiles a plan's filter.cel once ("" is no filter); a bad one names filter.cel.
func compileCEL(kind search.Kind, expr string) (*search.Filter, error) {
	if expr == "" {
		return nil, nil
	}
	f, err := search.Compile(kind, expr)
	if err != nil {
		return nil, invalid("filter.cel", strings.TrimPrefix(err.Error(), "filter: "))
	}
	return f, nil
}

// maxDiffText bounds the value shown before and after an edit in its diff.
const maxDiffText = 4 << 10

// editDiff checks an edit against the record it changes and says what changes (diffEdit).
func editDiff(r kafkamodel.Record, ed *Edit) (*EditDiff, error) {
	last := map[string]string{}
	for _, h := range r.Headers {
		last[h.Key] = string(h.Value)
	}
	return diffEdit(r.Value, last, ed, "value")
}

// diffEdit checks an edit against the message it changes — its value (body) and its headers'
// last values — and says what changes: a value that was JSON must stay JSON; header names must
// be usable and not Redrive's own. what names the value for people (value, body).
func diffEdit(value []byte, headers map[string]string, ed *Edit, what string) (*EditDiff, error) {
	d := &EditDiff{Headers: map[string][2]string{}}
	if ed.Value != nil {
		if json.Valid(value) && !json.Valid([]byte(*ed.Value)) {
			return nil, invalid("edit.value", "the message's "+what+" is JSON: the new "+what+" must be valid JSON too")
		}
		if unusable(*ed.Value) {
			return nil, invalid("edit.value", "holds a NUL character or bytes that are not UTF-8")
		}
		d.ValueBefore, d.ValueAfter = payload.Clip(escapeBytes(string(value)), maxDiffText), payload.Clip(*ed.Value, maxDiffText)
	}
	for _, k := range ed.DropHeaders {
		if _, ok := headers[k]; !ok {
			return nil, invalid("edit.drop_headers", fmt.Sprintf("the message has no header %q", escapeBytes(k)))
		}
		d.Headers[k] = [2]string{escapeBytes(headers[k]), ""}
	}
	for k, v := range ed.SetHeaders {
		if k == "" || unusable(k) || unusable(v) || strings.HasPrefix(strings.ToLower(k), "x-redrive-") {
			return nil, invalid("edit.set_headers", fmt.Sprintf("header %q: a name (not x-redrive-*) and a value of UTF-8 text", escapeBytes(k)))
		}
		d.Headers[k] = [2]string{escapeBytes(headers[k]), v}
	}
	return d, nil
}

// edited applies an edit to a record about to be produced: its value, and its headers but
// Redrive's own (written by the replay, after the dropped and set ones). Under a new message id
// the id headers (idRules) carry it and HeaderOriginalMessageID the id it died with.
func edited(value []byte, headers []kafkamodel.Header, ed *Edit, idRules []string, originalID string) ([]byte, []kafkamodel.Header) {
	if ed.Value != nil {
		value = []byte(*ed.Value)
	}
	out := make([]kafkamodel.Header, 0, len(headers)+len(ed.SetHeaders))
	for _, h := range headers {
		_, set := ed.SetHeaders[h.Key]
		if !set && !slices.Contains(ed.DropHeaders, h.Key) {
			out = append(out, h)
		}
	}
	keys := slices.Sorted(maps.Keys(ed.SetHeaders))
	for _, k := range keys {
		out = append(out, kafkamodel.Header{Key: k, Value: []byte(ed.SetHeaders[k])})
	}
	if ed.FreshID != "" {
		names := idHeaderNames(idRules, func(name string) (string, bool) {
			for _, h := range out {
				if strings.EqualFold(h.Key, name) {
					return h.Key, true
				}
			}
			return "", false
		})
		out = slices.DeleteFunc(out, func(h kafkamodel.Header) bool { return slices.Contains(names, h.Key) })
		for _, n := range names {
			out = append(out, kafkamodel.Header{Key: n, Value: []byte(ed.FreshID)})
		}
		out = append(out, kafkamodel.Header{Key: HeaderOriginalMessageID, Value: []byte(originalID)})
	}
	return value, out
}
