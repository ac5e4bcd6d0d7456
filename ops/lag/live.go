package lag

import (
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
)

// WithOffsets is g with the committed and end offsets read a moment ago (kafka.GroupOffsetsNow) in
// place of the sampled ones, on the partitions the sample knows: each lag is end − committed again
// (end − log start, the sampled one, when the group never committed there or its commit lies
// below the log start, as the sample counts it), less the offsets the sample found hold no record
// past a position that has not moved (NoRecords), and the topics' and the group's totals follow.
// A partition the read did not list keeps its sampled numbers, and so does a partition whose
// commit the read no longer finds (its offsets expired: the sample said what it was). The verdict,
// rate and catch-up stay the sampler's (they come from its window), and a time lag is kept unless
// the partition has caught up (then 0). A share group, whose position is not a committed offset,
// is returned as it is. g is not modified: a snapshot's groups are shared.
func (g Group) WithOffsets(o kafkamodel.GroupOffsets) Group {
	if g.Kind() == kafkamodel.GroupShare {
		return g
	}
	topics := make([]kafkamodel.TopicLag, len(g.Topics))
	var total int64
	for i, t := range g.Topics {
		parts := make([]kafkamodel.PartitionLag, len(t.Partitions))
		copy(parts, t.Partitions)
		var sum int64
		for j := range parts {
			p := &parts[j]
			end, ok := o.End[t.Topic][p.Partition]
			if ok {
				committed, has := o.Committed[t.Topic][p.Partition]
				switch {
				case has:
					if committed != p.Committed { // what the sample found past the old position is not past the new one
						p.NoRecords = 0
					}
					p.End, p.Committed, p.Error = end, committed, ""
					p.Lag = max(kafkamodel.CommittedLag(committed, p.Start, end)-p.NoRecords, 0)
				case p.Committed < 0 && p.Start >= 0:
					p.End, p.Lag = end, max(end-p.Start-p.NoRecords, 0)
				}
				if p.Lag == 0 {
					p.TimeLag = 0
				}
			}
			if p.Lag > 0 {
				sum += p.Lag
			}
		}
		t.Partitions, t.Lag = parts, sum
		if sum == 0 {
			t.MaxTimeLag = 0
		}
		topics[i] = t
		total += sum
	}
	g.Topics, g.TotalLag = topics, total
	if total == 0 {
		g.MaxTimeLag = 0
	}
	return g
}
