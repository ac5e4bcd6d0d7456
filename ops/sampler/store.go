package sampler

import (
	"context"
	"time"

	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/triage"
)

// Store is what the sampler keeps in Redrive's store, one small interface per aggregate it
// touches; *store.Store (PostgreSQL) implements them all.
type Store interface {
	Leases
	Samples
	ErrorGroups
	triage.Settled // how many dead letters are no longer open, for the open counts
}

// Leases elect the one replica that samples each source (a fenced lease per source) and list the
// replicas alive.
type Leases interface {
	AcquireSourceLease(ctx context.Context, source, owner string, ttl time.Duration) (store.SourceLease, bool, error)
	RenewSourceLease(ctx context.Context, l store.SourceLease) (store.SourceLease, error)
	ReleaseSourceLease(ctx context.Context, l store.SourceLease) error
	SourceLeases(ctx context.Context) ([]store.LeaseState, error)
	HeartbeatReplica(ctx context.Context, id string, ttl time.Duration) ([]string, error)
	RemoveReplica(ctx context.Context, id string) error
}

// Samples are the snapshots every replica serves and the history behind the charts; a write is
// fenced by the lease it was sampled under.
type Samples interface {
	WriteSample(ctx context.Context, l store.SourceLease, w store.SampleWrite) error
	SnapshotIfChanged(ctx context.Context, kind, name string, have time.Time) (store.Snapshot, error)
	KafkaGroupSamples(ctx context.Context, cluster, group string, since time.Time) ([]store.KafkaGroupSample, error)
	KafkaGroupHistory(ctx context.Context, cluster, group string, since, until time.Time, maxPoints, topK int) (store.KafkaHistory, error)
	RabbitQueueSamples(ctx context.Context, broker string, since time.Time) ([]store.RabbitQueueSample, error)
	RabbitQueueHistory(ctx context.Context, broker, vhost, queue string, since, until time.Time, maxPoints int) ([]store.RabbitQueuePoint, error)
	PruneHistory(ctx context.Context, before time.Time) (int64, error)
}

// ErrorGroups are the dead-letter error groups the leader folds each round's new records into.
type ErrorGroups interface {
	RecordErrorGroups(ctx context.Context, window time.Duration, sightings []store.ErrorGroupSighting) error
}

var _ Store = (*store.Store)(nil)
