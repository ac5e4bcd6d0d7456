// Package lease is who does what among the console's replicas: the lease each sampled source is
// led under (with a fencing token, so a replica that lost it cannot write), the replicas'
// heartbeats and the replay jobs they hold. The store (ops/store) keeps them; the sampler and the
// notifier take leases; /api/v1/replicas shows them.
package lease

import (
	"time"

	"github.com/redrive/redrive/ops"
)

// ErrFenced is returned (wrapping ops.ErrConflict) by the store's RenewSourceLease and WriteSample when the lease's
// token is no longer the current one: another replica took the source over, so the caller has
// lost leadership and must not write.
var ErrFenced = ops.Conflict("the lease was taken over (fencing token is not current)")

// Lease is one replica's leadership of one sampled source, as the store's AcquireSourceLease grants it. Times are
// the database's clock, so replicas with skewed clocks agree on who leads.
type Lease struct {
	Source    string // "kafka/<cluster>", "rabbitmq/<broker>"
	Owner     string // the replica's ID; "" when released
	Token     int64  // the fencing token: incremented at each takeover
	ExpiresAt time.Time
	// TTL is how long the lease was granted or renewed for; WriteSample bounds how long it may
	// hold the lease row by it. Zero in leases read by SourceLeases.
	TTL time.Duration
}

// State is a lease as stored, for listing.
type State struct {
	Lease
	RenewedAt time.Time
	// Valid is whether the lease is held and not past its expiry (by the database's clock).
	Valid bool
}

// Replica is one console replica taking part in sampling, with its heartbeat.
type Replica struct {
	ID          string
	StartedAt   time.Time
	HeartbeatAt time.Time
	ExpiresAt   time.Time
	Live        bool // the heartbeat has not expired (by the database's clock)
}

// ReplicaJob is a replay job held by a replica (replay_job.lease_owner).
type ReplicaJob struct {
	ID         string
	Status     string
	Owner      string
	LeaseUntil time.Time
}

// ReplicaView is what /api/v1/replicas shows: the replicas known to the store, every source's
// lease and the replay jobs whose lease is held. Read-only.
type ReplicaView struct {
	Replicas []Replica
	Leases   []State
	Jobs     []ReplicaJob
}
