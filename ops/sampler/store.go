package sampler

import (
	"context"
	"time"

	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/lease"
	"github.com/redrive/redrive/ops/triage"
)

// Store is what the sampler keeps in Redrive's store, one small interface per aggregate it
// touches; *store.Store (PostgreSQL) implements them all.
type Store interface {
	Leases
	Samples
	ErrorGroups
	Moves
	triage.Settled // how many dead letters are no longer open, for the open counts
}

// Moves count what Redrive's own jobs took out of RabbitMQ queues, so that the rest of what left a
// dead-letter queue is told apart as lost (queues.Queue.Lost). The replay jobs' published counts
// are the source: the ledger's transactions keep them, every replica's jobs write them to the one
// store before acking what they count, and summing them is one small read per sample — the audit
// log says what an operator asked for, not what left the queue, and a counter in the engine would
// miss the jobs other replicas run.
type Moves interface {
	RabbitMoved(ctx context.Context, broker string) ([]history.RabbitMoved, error)
}

// Leases elect the one replica that samples each source (a fenced lease per source) and list the
// replicas alive.
type Leases interface {
	AcquireSourceLease(ctx context.Context, source, owner string, ttl time.Duration) (lease.Lease, bool, error)
	RenewSourceLease(ctx context.Context, l lease.Lease) (lease.Lease, error)
	ReleaseSourceLease(ctx context.Context, l lease.Lease) error
	SourceLeases(ctx context.Context) ([]lease.State, error)
	HeartbeatReplica(ctx context.Context, id string, ttl time.Duration) ([]string, error)
	RemoveReplica(ctx context.Context, id string) error
}

// Samples are the snapshots every replica serves and the history behind the charts; a write is
// fenced by the lease it was sampled under.
type Samples interface {
	WriteSample(ctx context.Context, l lease.Lease, w history.SampleWrite) error
	SnapshotIfChanged(ctx context.Context, kind, name string, have time.Time) (history.Snapshot, error)
	KafkaGroupSamples(ctx context.Context, cluster, group string, since time.Time) ([]history.KafkaGroupSample, error)
	KafkaGroupHistory(ctx context.Context, cluster, group string, since, until time.Time, maxPoints, topK int) (history.KafkaHistory, error)
	RabbitQueueSamples(ctx context.Context, broker string, since time.Time) ([]history.RabbitQueueSample, error)
	RabbitQueueHistory(ctx context.Context, broker, vhost, queue string, since, until time.Time, maxPoints int) ([]history.RabbitQueuePoint, error)
	PruneHistory(ctx context.Context, before time.Time) (int64, error)
}

// ErrorGroups are the dead-letter error groups the leader folds each round's new records into.
type ErrorGroups interface {
	RecordErrorGroups(ctx context.Context, window time.Duration, sightings []history.ErrorGroupSighting) error
}
