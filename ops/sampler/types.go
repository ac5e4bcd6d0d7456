// Package sampler collects what the dashboards show — Kafka consumer lag, RabbitMQ queue depths,
// rates and dead-letter topology — on an interval, in the background, each source on exactly one
// console replica at a time (a lease per source with a fencing token, see leadership.go), and stores both the latest snapshot and the
// history in the console's store. Pages read the stored snapshot, so any number of viewers and replicas cost the brokers
// one set of admin calls per interval.
package sampler

import (
	"time"

	"github.com/redrive/redrive/ops/kafka"
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
	Status     kafka.Status            // the group's (worst partition's) status, with its reason
	Partitions map[string]kafka.Status // key "topic/partition"; only non-OK entries
	Rate       float64                 // messages consumed per second over the window
	CatchUp    time.Duration           // time to catch up at the current slope; 0 = no lag; < 0 = not shrinking
	RateKnown  bool                    // false until the window holds two samples
	// TopicRates are, per topic the group consumes, the messages it consumed and the messages
	// produced to the topic per second over the window (its partitions' committed and end offsets'
	// slopes): a consumer's pipeline compares them stage by stage. Nil until RateKnown.
	TopicRates map[string]TopicRate
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
