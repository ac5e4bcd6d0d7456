package replay

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/store"
)

func kafkaLocator(cluster, topic string, partition int32, offset int64) string {
	return fmt.Sprintf("kafka:%s/%s/%d/%d", cluster, topic, partition, offset)
}

// planKafka reads the selected range of a dead-letter topic and turns each record into an item.
func (e *Engine) planKafka(ctx context.Context, src Source, f Filter) ([]Item, error) {
	k, ok := e.kafka[src.Cluster]
	if !ok {
		return nil, fmt.Errorf("kafka cluster %q is not configured: %w", src.Cluster, ops.ErrNotFound)
	}
	if src.Topic == "" {
		return nil, invalid("source.topic", "required")
	}
	parts, err := k.Partitions(ctx, src.Topic)
	if err != nil {
		return nil, err
	}
	var items []Item
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
				if len(items) >= MaxPlanItems {
					return invalid("source", fmt.Sprintf("selects more than %d messages; narrow the offsets or the filter", MaxPlanItems))
				}
				items = append(items, it)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if src.Partition != nil && !hasPartition(parts, *src.Partition) {
		return nil, invalid("source.partition", fmt.Sprintf("topic %s has partitions 0..%d", src.Topic, len(parts)-1))
	}
	return items, nil
}

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
	mu      sync.Mutex              // readers are read one batch at a time
	readers map[int32]*kafka.Reader // one fetch session per partition for the whole run
}

// Close ends the run's fetch sessions.
func (r *kafkaRunner) Close() {
	for _, rd := range r.readers {
		rd.Close()
	}
}

// runBatch re-reads the claimed records by offset (the DLT is immutable, so they are exactly the
// planned ones), produces them to their original topics with acks=all, and settles each by the
// broker's answer.
func (r *kafkaRunner) runBatch(ctx context.Context, job store.ReplayJob, items []Item) ([]store.LedgerOutcome, error) {
	g, err := r.e.gate(ctx, job, items)
	if err != nil || len(g.move) == 0 {
		return g.settled, err
	}
	move, resumed, settled := g.move, g.resumed, g.settled
	// Read each partition's span once; keep the records the batch needs.
	want := map[int32]map[int64]Item{}
	for _, it := range move {
		if want[*it.Partition] == nil {
			want[*it.Partition] = map[int64]Item{}
		}
		want[*it.Partition][*it.Position] = it
	}
	var out []kafka.Outgoing
	var order []Item
	partitions := make([]int32, 0, len(want))
	for p := range want {
		partitions = append(partitions, p)
	}
	sort.Slice(partitions, func(i, j int) bool { return partitions[i] < partitions[j] })
	for _, p := range partitions {
		lo, hi := int64(-1), int64(-1)
		for off := range want[p] {
			if lo < 0 || off < lo {
				lo = off
			}
			hi = max(hi, off)
		}
		r.mu.Lock()
		if r.readers == nil {
			r.readers = map[int32]*kafka.Reader{}
		}
		rd, ok := r.readers[p]
		if !ok {
			rd = r.k.NewReader(r.src.Topic, p)
			r.readers[p] = rd
		}
		err := rd.Read(ctx, lo, hi+1, func(rec kafka.Record) error {
			it, ok := want[p][rec.Offset]
			if !ok {
				return nil
			}
			delete(want[p], rec.Offset)
			out = append(out, kafka.Outgoing{Topic: it.Destination.Topic, Key: rec.Key, Value: rec.Value,
				Headers: replayHeaders(rec.Headers, job, it, fmt.Sprintf("%s/%d/%d", r.src.Topic, p, rec.Offset))})
			order = append(order, it)
			return nil
		})
		r.mu.Unlock()
		if err != nil {
			return nil, err
		}
		for _, it := range want[p] { // deleted by retention since the plan was made
			settled = append(settled, store.LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID,
				Outcome: "failed", Detail: "the record no longer exists in the dead-letter topic"})
		}
	}
	errs := r.k.Produce(ctx, out)
	for i, it := range order {
		o := store.LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID, Outcome: "published",
			Detail: "to " + it.Destination.Topic}
		if resumed[it.Seq] {
			o.Detail += " (resumed after an interruption: may be a duplicate the consumer's inbox absorbs)"
		}
		if errs[i] != nil {
			o.Outcome, o.Detail = "failed", errs[i].Error()
		}
		settled = append(settled, o)
	}
	return settled, nil
}

// replayHeaders keeps the record's headers but the failed attempt's exception story, and adds
// Redrive's own.
func replayHeaders(in []kafka.Header, job store.ReplayJob, it Item, source string) []kafka.Header {
	out := make([]kafka.Header, 0, len(in)+4)
	for _, h := range in {
		if !strippedHeader(h.Key) {
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
