package replay

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/store"
)

func kafkaLocator(cluster, topic string, partition int32, offset int64) string {
	return fmt.Sprintf("kafka:%s/%s/%d/%d", cluster, topic, partition, offset)
}

// planKafka reads the selected range of a dead-letter topic and emits each record as an item.
func (e *Engine) planKafka(ctx context.Context, src Source, f Filter, emit func(Item) error) error {
	k, ok := e.kafka[src.Cluster]
	if !ok {
		return fmt.Errorf("kafka cluster %q is not configured: %w", src.Cluster, ops.ErrNotFound)
	}
	if src.Topic == "" {
		return invalid("source.topic", "required")
	}
	parts, err := k.Partitions(ctx, src.Topic)
	if err != nil {
		return err
	}
	if src.Partition != nil && !hasPartition(parts, *src.Partition) {
		return invalid("source.partition", fmt.Sprintf("topic %s has partitions 0..%d", src.Topic, len(parts)-1))
	}
	if len(src.Records) > 0 {
		return e.planKafkaRecords(ctx, k, src, f, parts, emit)
	}
	for _, p := range parts {
		if src.Partition != nil && p.Partition != *src.Partition {
			continue
		}
		from, to := p.Start, p.End // [from, to)
		if src.FromOffset != nil {
			from = max(from, *src.FromOffset)
		}
		if src.ToOffset != nil {
			to = min(to, *src.ToOffset+1)
		}
		err := k.Scan(ctx, src.Topic, p.Partition, from, to, func(r kafka.Record) error {
			if it, ok := e.kafkaItem(src, f, r); ok {
				return emit(it)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// planKafkaRecords reads explicit records: per partition, in offset order, one read per run of
// neighbouring offsets (a gap of up to recordGap records is read through rather than reconnected).
func (e *Engine) planKafkaRecords(ctx context.Context, k KafkaCluster, src Source, f Filter, parts []kafka.PartitionRange, emit func(Item) error) error {
	if src.Partition != nil || src.FromOffset != nil || src.ToOffset != nil {
		return invalid("source.records", "give either records or partition and offsets, not both")
	}
	if len(src.Records) > MaxRecords {
		return invalid("source.records", fmt.Sprintf("at most %d records; use a partition and an offset range for more", MaxRecords))
	}
	bounds := map[int32]kafka.PartitionRange{}
	for _, p := range parts {
		bounds[p.Partition] = p
	}
	wanted := map[int32][]int64{}
	for _, r := range src.Records {
		b, ok := bounds[r.Partition]
		switch {
		case !ok:
			return invalid("source.records", fmt.Sprintf("topic %s has no partition %d", src.Topic, r.Partition))
		case r.Offset < b.Start || r.Offset >= b.End:
			return invalid("source.records", fmt.Sprintf("record %d:%d does not exist (partition %d holds offsets %d to %d)",
				r.Partition, r.Offset, r.Partition, b.Start, b.End-1))
		}
		wanted[r.Partition] = append(wanted[r.Partition], r.Offset)
	}
	for _, p := range parts {
		offsets := wanted[p.Partition]
		slices.Sort(offsets)
		offsets = slices.Compact(offsets)
		for len(offsets) > 0 {
			n := 1 // the run: offsets[:n]
			for n < len(offsets) && offsets[n]-offsets[n-1] <= recordGap {
				n++
			}
			run := offsets[:n]
			i := 0
			err := k.Scan(ctx, src.Topic, p.Partition, run[0], run[n-1]+1, func(r kafka.Record) error {
				for i < len(run) && run[i] < r.Offset {
					i++
				}
				if i == len(run) || run[i] != r.Offset {
					return nil
				}
				if it, ok := e.kafkaItem(src, f, r); ok {
					return emit(it)
				}
				return nil
			})
			if err != nil {
				return err
			}
			offsets = offsets[n:]
		}
	}
	return nil
}

// recordGap is how far apart two selected offsets may be and still be read in one pass.
const recordGap = 500

func hasPartition(parts []kafka.PartitionRange, p int32) bool {
	for _, pr := range parts {
		if pr.Partition == p {
			return true
		}
	}
	return false
}

// kafkaItem resolves one record; false when the filter excludes it.
func (e *Engine) kafkaItem(src Source, f Filter, r kafka.Record) (Item, bool) {
	dl := r.DeadLetter
	var exception, original, group, msgID string
	if dl != nil {
		exception, original, group, msgID = dl.ExceptionType, dl.OriginalTopic, dl.ConsumerGroup, dl.MessageID
	}
	if (f.ExceptionType != "" && exception != f.ExceptionType) || (f.OriginalTopic != "" && original != f.OriginalTopic) ||
		!f.matchIDs(msgID) || !f.matchTime(r.Timestamp) {
		return Item{}, false
	}
	partition, offset := r.Partition, r.Offset
	it := Item{Locator: kafkaLocator(src.Cluster, src.Topic, r.Partition, r.Offset), MessageID: msgID,
		ErrorGroup: exception, Partition: &partition, Position: &offset, ReplayCount: replayCount(r.Headers)}
	if original != "" {
		it.Destination = Destination{Kind: "kafka", Cluster: src.Cluster, Topic: original}
	}
	it.Consumer = e.consumerForGroup(src.Cluster, group)
	if it.Consumer == "" && original != "" {
		it.Consumer = e.consumerForTopic(src.Cluster, original)
	}
	return it, true
}

// replayCount is Redrive's own counter on a record (the last occurrence wins).
func replayCount(headers []kafka.Header) int {
	n := 0
	for _, h := range headers {
		if h.Key == HeaderReplayCount {
			n = parseCount(h.Value)
		}
	}
	return n
}

type kafkaRunner struct {
	e       *Engine
	k       KafkaCluster
	src     Source
	readers map[int32]*kafka.Reader // one fetch session per partition for the whole run
}

// Close ends the run's fetch sessions.
func (r *kafkaRunner) Close() {
	for _, rd := range r.readers {
		rd.Close()
	}
}

// move re-reads the claimed records by offset (the DLT is immutable, so they are exactly the
// planned ones), produces them to their original topics with acks=all, and reports each by the
// broker's answer. Batches come in seq order, so each partition's reader only moves forward.
func (r *kafkaRunner) move(ctx context.Context, job store.ReplayJob, items []Item, resumed map[int]bool) ([]store.LedgerOutcome, error) {
	byPartition := map[int32][]Item{}
	for _, it := range items {
		byPartition[*it.Partition] = append(byPartition[*it.Partition], it)
	}
	partitions := make([]int32, 0, len(byPartition))
	for p := range byPartition {
		partitions = append(partitions, p)
	}
	slices.Sort(partitions)
	var settled []store.LedgerOutcome
	out := make([]kafka.Outgoing, 0, len(items))
	order := make([]Item, 0, len(items))
	for _, p := range partitions {
		want := byPartition[p] // ascending offsets: plan order within a partition
		slices.SortFunc(want, func(a, b Item) int { return cmp.Compare(*a.Position, *b.Position) })
		if r.readers == nil {
			r.readers = map[int32]*kafka.Reader{}
		}
		rd, ok := r.readers[p]
		if !ok {
			rd = r.k.NewReader(r.src.Topic, p)
			r.readers[p] = rd
		}
		i := 0
		err := rd.Read(ctx, *want[0].Position, *want[len(want)-1].Position+1, func(rec kafka.Record) error {
			for i < len(want) && *want[i].Position < rec.Offset { // gone from the log (compaction)
				settled = append(settled, goneFromTopic(want[i]))
				i++
			}
			if i == len(want) || *want[i].Position != rec.Offset {
				return nil
			}
			it := want[i]
			i++
			out = append(out, kafka.Outgoing{Topic: it.Destination.Topic, Key: rec.Key, Value: rec.Value,
				Headers: replayHeaders(rec.Headers, r.e.strip, job, it, r.src.Topic+"/"+strconv.Itoa(int(p))+"/"+strconv.FormatInt(rec.Offset, 10))})
			order = append(order, it)
			return nil
		})
		if err != nil {
			return nil, err
		}
		for ; i < len(want); i++ { // deleted by retention since the plan was made
			settled = append(settled, goneFromTopic(want[i]))
		}
	}
	errs := r.k.Produce(ctx, out)
	for i, it := range order {
		o := store.LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID, Outcome: store.LedgerPublished}
		if resumed[it.Seq] {
			o.Detail = "resumed after an interruption: may be a duplicate the consumer's inbox absorbs"
		}
		if errs[i] != nil {
			o.Outcome, o.Detail = store.LedgerFailed, errs[i].Error()
		}
		settled = append(settled, o)
	}
	return settled, nil
}

func goneFromTopic(it Item) store.LedgerOutcome {
	return store.LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID,
		Outcome: store.LedgerFailed, Detail: "the record no longer exists in the dead-letter topic"}
}

// replayHeaders keeps the record's headers but the failed attempt's exception story, and adds
// Redrive's own.
func replayHeaders(in []kafka.Header, strip headerStripper, job store.ReplayJob, it Item, source string) []kafka.Header {
	out := make([]kafka.Header, 0, len(in)+4)
	for _, h := range in {
		if !strip.strips(h.Key) {
			out = append(out, h)
		}
	}
	return append(out,
		kafka.Header{Key: HeaderReplayID, Value: []byte(job.ID)},
		kafka.Header{Key: HeaderReplayCount, Value: []byte(strconv.Itoa(it.ReplayCount + 1))},
		kafka.Header{Key: HeaderReplayedBy, Value: []byte(job.Actor)},
		kafka.Header{Key: HeaderSource, Value: []byte(source)},
	)
}
