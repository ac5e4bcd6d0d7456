package kafkamodel

import (
	"time"
)

// DLTopic is a dead-letter (or retry) topic and how much it holds.
type DLTopic struct {
	Topic string
	// TopicID is the topic's Kafka ID when its offsets were read ("" when the broker has none): a
	// topic deleted and created again under the same name has another, and the resolutions of the
	// one before are not its records'.
	TopicID    string
	Retry      bool // an intermediate retry topic (*.retry*, ".retry"/"-retry" in the name), not a final DLT
	Partitions []DLPartition
	// Records is the sum of the partitions' Records: the data records a read_committed consumer
	// gets, counted (no transaction marker, no record of an aborted transaction, nothing past the
	// last stable offset); an upper bound while Counted is false.
	Records int64
	// Counted is true when every partition's count is exact; false while the records of a large
	// topic are still being counted (each listing reads for a few seconds and goes on from there),
	// and for a snapshot stored before records were counted, whose Records are offsets.
	Counted bool
	// Arrived is how many data records arrived since the console first listed the topic (the sum
	// of the partitions' Arrived), ArrivalsCounted whether it is known: its slope is the inflow
	// of dead letters, which the end offsets' slope overstates by a marker per transaction.
	Arrived         int64
	ArrivalsCounted bool
	// NewestAt is the timestamp of the newest record across partitions (the last record of each
	// non-empty partition); zero when the topic is empty or the read ran out of time.
	NewestAt time.Time
	// Settled is how many of Records are no longer open (resolved, ignored or replayed): filled
	// by ops/triage from the console's store when the topic is read; zero (all open) until then.
	Settled int64
	// InflowPerSecond is how many records a second arrived over the sampler's window (the slope
	// of the partitions' summed end offsets); InflowKnown is false until two samples span some
	// time. Set by ops/sampler, not by Cluster.DeadLetterTopics.
	InflowPerSecond float64
	InflowKnown     bool
}

// Open is how many of the topic's records are still open.
func (t DLTopic) Open() int64 { return max(0, t.Records-t.Settled) }

// DLPartition is one partition of a dead-letter topic.
type DLPartition struct {
	Partition int32
	Start     int64
	End       int64 // the high watermark
	// Stable is the last stable offset: a transaction still open began there (End when none is).
	Stable int64
	// Records are the data records in [Start, Stable) a read_committed consumer gets, counted;
	// while Counted is false, the records counted so far plus the offsets not read yet.
	Records int64
	Counted bool
	// Arrived is how many data records arrived since the console first listed the partition.
	Arrived int64
}

// Offsets is how many offsets the partition spans, End − Start: what Records was before records
// were counted, and still the most it can be.
func (p DLPartition) Offsets() int64 { return p.End - p.Start }
