// Package sampler collects what the dashboards show — Kafka consumer lag, RabbitMQ queue depths,
// rates and dead-letter topology — on an interval, in the background, each source on exactly one
// console replica at a time (a lease per source with a fencing token, see leadership.go), and stores both the latest snapshot and the
// history in the console's store. Pages read the stored snapshot, so any number of viewers and replicas cost the brokers
// one set of admin calls per interval.
package sampler

import (
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/lag"
)

// KafkaSnapshot is one cluster's consumer groups as last sampled.
type KafkaSnapshot struct {
	Cluster string
	At      time.Time // when the sample was taken; zero when none exists yet
	// Error is set when the last sampling of this cluster failed (the cluster is unreachable);
	// Groups then holds the last good sample, taken at At.
	Error   string
	ErrorAt time.Time
	Groups  []KafkaGroup
	// DeadLetterTopics are the cluster's dead-letter and retry topics with their sizes, as of At;
	// empty when the source does not list them or the listing failed.
	DeadLetterTopics []kafka.DLTopic
	Freshness
}

// KafkaGroup is a group with its Burrow-style verdict and trend.
type KafkaGroup struct {
	kafka.Group
	Status     lag.Status            // the group's (worst partition's) status, with its reason
	Partitions map[string]lag.Status // key "topic/partition"; only non-OK entries
	Rate       float64               // messages consumed per second over the window
	CatchUp    time.Duration         // time to catch up at the current slope; 0 = no lag; < 0 = not shrinking
	RateKnown  bool                  // false until the window holds two samples
	// TopicRates are, per topic the group consumes, the messages it consumed and the messages
	// produced to the topic per second over the window (its partitions' committed and end offsets'
	// slopes): a consumer's pipeline compares them stage by stage. Nil until RateKnown.
	TopicRates map[string]TopicRate
}

// PartitionStatus is the status of one of the group's partitions: its own verdict when the
// sampler found something wrong there, else OK — or, for a group without members (EMPTY) or gone
// (DEAD), the group's, which every partition shares.
func (g KafkaGroup) PartitionStatus(topic string, partition int32) lag.Status {
	if st, ok := g.Partitions[partitionKey(topic, partition)]; ok {
		return st
	}
	if g.Status.Code == lag.StatusEmpty || g.Status.Code == lag.StatusDead {
		return g.Status
	}
	return lag.Status{Code: lag.StatusOK}
}

// judged is g with the verdicts of gs: the group's status and its partitions' that are not OK.
func judged(g kafka.Group, gs lag.GroupStatus) KafkaGroup {
	kg := KafkaGroup{Group: g, Status: gs.Status}
	for _, ps := range gs.Partitions {
		if ps.Status.Code != lag.StatusOK {
			if kg.Partitions == nil {
				kg.Partitions = map[string]lag.Status{}
			}
			kg.Partitions[partitionKey(ps.Topic, ps.Partition)] = ps.Status
		}
	}
	return kg
}

// JudgeOnce gives a group read straight from the cluster (one the latest snapshot does not have
// yet) its statuses from that one sample: no rate, no trend, only what one sample can tell.
func JudgeOnce(g kafka.Group, rules configs.LagRules, now time.Time) KafkaGroup {
	var parts []lag.PartitionSamples
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, lag.PartitionSamples{Topic: t.Topic, Partition: p.Partition,
				Samples: []lag.Sample{{At: now, Committed: p.Committed, End: p.End, Lag: p.Lag, TimeLag: p.TimeLag}}})
		}
	}
	return judged(g, lag.EvaluateGroup(rules, g.State, g.Members, parts, now))
}

// TopicRate is one topic's consumption (by a group) and production rates, messages per second.
type TopicRate struct{ Consumed, Produced float64 }

// GroupPoint is one point of a group's history.
type GroupPoint struct {
	At       time.Time
	TotalLag int64
	// MaxTimeLag is the group's highest time lag in the point's bucket; -1 when unknown.
	MaxTimeLag time.Duration
	// Partitions holds the lag of the group's top partitions (by lag over the range), key
	// "topic/partition"; the same keys in every point of one answer.
	Partitions map[string]int64
}
