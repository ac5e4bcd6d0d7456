package lag

import (
	"strconv"
	"time"

	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
)

// The lag read model: a cluster's consumer groups as the sampler last saw them (Snapshot), each
// with its verdict and trend (Group), and a group's history (Point).

// SampledAt, Source and WithError let the sampler keep snapshots of every kind alike.
func (s Snapshot) SampledAt() time.Time { return s.At }

func (s Snapshot) Source() string { return s.Cluster }

func (s Snapshot) WithError(msg string, at time.Time) Snapshot {
	s.Error, s.ErrorAt = msg, at
	return s
}

// Snapshot is one cluster's consumer groups as last sampled.
type Snapshot struct {
	Cluster string
	At      time.Time // when the sample was taken; zero when none exists yet
	// Error is set when the last sampling of this cluster failed (the cluster is unreachable);
	// Groups then holds the last good sample, taken at At.
	Error   string
	ErrorAt time.Time
	Groups  []Group
	// DeadLetterTopics are the cluster's dead-letter and retry topics with their sizes, as of At;
	// empty when the source does not list them or the listing failed.
	DeadLetterTopics []kafkamodel.DLTopic
	// Transactions are the transactions open on the cluster's partitions as of At (each holds
	// its partition's last stable offset); empty when none is, or the source does not list them.
	Transactions []kafkamodel.OpenTransaction
	// Refreshing is set on an answer served while a re-sample of the cluster runs behind it
	// (sampler.FreshKafka's stale while revalidate): the next read shows newer offsets.
	Refreshing bool
	history.Freshness
}

// Group is a group with its Burrow-style verdict and trend.
type Group struct {
	kafkamodel.Group
	Status     Status            // the group's (worst partition's) status, with its reason
	Partitions map[string]Status // key "topic/partition"; only non-OK entries
	Rate       float64           // messages consumed per second over the window
	CatchUp    time.Duration     // time to catch up at the current slope; 0 = no lag; < 0 = not shrinking
	// RateKnown is false until the window holds two samples, and for a group without members
	// whose committed offsets moved only once or twice in the window (moved by hand, not consumed).
	RateKnown bool
	// TopicRates are, per topic the group consumes, the messages it consumed and the messages
	// produced to the topic per second over the window (its partitions' committed and end offsets'
	// slopes): a consumer's pipeline compares them stage by stage. Nil until RateKnown.
	TopicRates map[string]TopicRate
}

// PartitionStatus is the status of one of the group's partitions: its own verdict when the
// sampler found something wrong there, else OK — or, for a group without members (EMPTY) or gone
// (DEAD), the group's, which every partition shares.
func (g Group) PartitionStatus(topic string, partition int32) Status {
	if st, ok := g.Partitions[PartitionKey(topic, partition)]; ok {
		return st
	}
	if g.Status.Code == StatusEmpty || g.Status.Code == StatusDead {
		return g.Status
	}
	return Status{Code: StatusOK}
}

// Judged is g with the verdicts of gs: the group's status and its partitions' that are not OK.
func Judged(g kafkamodel.Group, gs GroupStatus) Group {
	kg := Group{Group: g, Status: gs.Status}
	for _, ps := range gs.Partitions {
		if ps.Status.Code != StatusOK {
			if kg.Partitions == nil {
				kg.Partitions = map[string]Status{}
			}
			kg.Partitions[PartitionKey(ps.Topic, ps.Partition)] = ps.Status
		}
	}
	return kg
}

// JudgeOnce gives a group read straight from the cluster (one the latest snapshot does not have
// yet) its statuses from that one sample: no rate, no trend, only what one sample can tell.
func JudgeOnce(g kafkamodel.Group, rules Rules, now time.Time) Group {
	var parts []PartitionSamples
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, PartitionSamples{Topic: t.Topic, Partition: p.Partition,
				Samples: []Sample{{At: now, Committed: Position(g, p), End: p.End, Lag: p.Lag, TimeLag: p.TimeLag}}})
		}
	}
	return Judged(g, EvaluateOf(g, rules, 0, parts, now))
}

// Position is the offset a group's trend is read from on one of its partitions: the committed
// offset, or in a share group the share-partition start offset (-1 when none).
func Position(g kafkamodel.Group, p kafkamodel.PartitionLag) int64 {
	if g.Kind() == kafkamodel.GroupShare {
		return p.ShareStart
	}
	return p.Committed
}

// EvaluateOf judges g from its partitions' samples (taken with Position) by the rules of its
// type: EvaluateShareGroup for a share group, EvaluateGroup for the others.
func EvaluateOf(g kafkamodel.Group, rules Rules, every time.Duration, parts []PartitionSamples, now time.Time) GroupStatus {
	if g.Kind() == kafkamodel.GroupShare {
		return EvaluateShareGroup(rules, every, g.State, g.Members, parts, now)
	}
	return EvaluateGroup(rules, every, g.State, g.Members, parts, now)
}

// TopicRate is one topic's consumption (by a group) and production rates, messages per second.
type TopicRate struct{ Consumed, Produced float64 }

// Point is one point of a group's history.
type Point struct {
	At       time.Time
	TotalLag int64
	// MaxTimeLag is the group's highest time lag in the point's bucket; -1 when unknown.
	MaxTimeLag time.Duration
	// Partitions holds the lag of the group's top partitions (by lag over the range), key
	// "topic/partition"; the same keys in every point of one answer.
	Partitions map[string]int64
}

// PartitionKey is the key of Group.Partitions and Point.Partitions: "topic/partition".
func PartitionKey(topic string, partition int32) string {
	return topic + "/" + strconv.FormatInt(int64(partition), 10)
}
