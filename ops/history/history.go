// Package history is what the sampler records of the sources it watches and the store keeps:
// each source's latest snapshot, the lag history of Kafka groups (per partition), the depth
// history of RabbitMQ queues, and the error groups seen in dead-letter topics. The sampler writes
// it (ops/sampler), the store (ops/store) keeps it in PostgreSQL, the health rules and pages read
// it. It imports nothing of the console, so both sides can.
package history

import "time"

// ErrorGroupSighting is what one sampler round saw of an error group in a dead-letter source:
// its records' oldest and newest timestamps and how many.
type ErrorGroupSighting struct {
	Source          string // kafka/<cluster>/<topic>
	Key             string // ops.ErrorGroupKey of the type and cause
	ExceptionType   string
	ExceptionCause  string
	FirstAt, LastAt time.Time
	Count           int64
	SampleMessage   string
	SamplePartition int32
	SampleOffset    int64
	// SampleMaskedBy names the redaction rules SampleMessage was masked by when it was stored
	// (redact.Rules.Digest; "" without rules).
	SampleMaskedBy string
}

// ErrorGroupEpisode is a group whose current episode started at EpisodeStart: its first record
// after at least the window without one (or ever).
type ErrorGroupEpisode struct {
	ErrorGroupSighting
	EpisodeStart time.Time
}

// Snapshot kinds: what a snapshot row describes.
const (
	SnapshotKafka  = "kafka"  // Name is a Kafka cluster
	SnapshotRabbit = "rabbit" // Name is a RabbitMQ broker
)

// Snapshot is the latest sample of one source. Data is the sampler's own JSON encoding; the store
// does not look inside.
type Snapshot struct {
	Kind string
	Name string
	// At is when Data was sampled; zero when no sample has succeeded yet (Data is then "{}").
	At time.Time
	// Error is why the last sample failed, at ErrorAt; empty when it succeeded.
	Error   string
	ErrorAt time.Time
	Data    []byte
}

// KafkaGroupSample is one consumer group at one sample time: one row of kafka_group_sample.
type KafkaGroupSample struct {
	Cluster  string
	Group    string
	At       time.Time // stored with microsecond precision
	TotalLag int64
	State    string
	Members  int
	Status   string // the group's status code when sampled
	// MaxTimeLag is the group's largest partition time lag when sampled; -1 when unknown.
	MaxTimeLag time.Duration
	Partitions []KafkaPartitionSample
}

// KafkaPartitionSample is one partition of a KafkaGroupSample.
type KafkaPartitionSample struct {
	Topic     string
	Partition int32
	Committed int64 // -1 when nothing is committed
	Lag       int64 // -1 when unknown
}

// KafkaPartitionKey names one partition.
type KafkaPartitionKey struct {
	Topic     string
	Partition int32
}

// KafkaHistory is a group's history downsampled for a chart.
type KafkaHistory struct {
	// Partitions are the group's top partitions by their highest lag over the whole range, highest
	// first; each point carries their lag in this order.
	Partitions []KafkaPartitionKey
	Points     []KafkaHistoryPoint
}

// KafkaHistoryPoint is one bucket of a KafkaHistory.
type KafkaHistoryPoint struct {
	At       time.Time // the newest sample in the bucket
	TotalLag int64     // the highest total lag sampled in the bucket
	// MaxTimeLag is the highest group time lag sampled in the bucket; -1 when none is known.
	MaxTimeLag time.Duration
	// Partitions holds the highest lag of History.Partitions[i] in the bucket, -1 when the bucket
	// has no known lag for it.
	Partitions []int64
}

// MaxHistoryPoints bounds KafkaGroupHistory's maxPoints.
const MaxHistoryPoints = 10_000

// SampleWrite is what one sample of one source stores. Exactly one of Snapshot (a good sample)
// and Error (a failed one) applies: a non-empty Error records the failure with ErrorAt and keeps
// the last good data; otherwise Snapshot replaces the stored one. Kafka and Rabbit are the history
// rows to append (either may be empty).
type SampleWrite struct {
	Snapshot Snapshot
	Kind     string // the snapshot kind of an Error write
	Name     string // the snapshot name of an Error write
	Error    string
	ErrorAt  time.Time
	Kafka    []KafkaGroupSample
	Rabbit   []RabbitQueueSample
}

// RabbitQueueSample is one queue at one sample time: one row of rabbit_queue_sample.
type RabbitQueueSample struct {
	Broker    string
	Vhost     string
	Queue     string
	At        time.Time // stored with microsecond precision
	Ready     int64
	Unacked   int64
	Consumers int
	// Rates in messages per second, as the management API reported them when sampled.
	PublishRate   float64
	DeliverRate   float64
	AckRate       float64
	RedeliverRate float64
}

// RabbitMoved is how many messages Redrive's replay and discard jobs have taken out of one
// RabbitMQ queue, all jobs together, ever: a count that only grows (unless jobs are deleted), so
// the difference between two samples is what Redrive moved in between.
type RabbitMoved struct {
	Vhost, Queue string
	Messages     int64
}

// RabbitQueuePoint is one bucket of a queue's downsampled history.
type RabbitQueuePoint struct {
	At        time.Time // the newest sample in the bucket
	Ready     int64     // the highest ready count sampled in the bucket
	Unacked   int64     // the highest unacked count sampled in the bucket
	Consumers int       // the most consumers sampled in the bucket
	// The rates' averages over the bucket's samples, in messages per second.
	PublishRate   float64
	DeliverRate   float64
	AckRate       float64
	RedeliverRate float64
}

// Freshness says how old a snapshot is, as of the read (the sampler's LatestKafka and LatestRabbit set
// it).
type Freshness struct {
	// Age is how long ago the data was sampled (now − At); zero when never sampled.
	Age time.Duration
	// Stale is set when the source's last sampling (the later of At and ErrorAt) is more than
	// StaleAfter Intervals old, or it was never sampled and the sampler started that long ago.
	Stale bool
	// Since is how long ago the last sampling (good or failed) was; for a stale snapshot's note.
	Since time.Duration
}
