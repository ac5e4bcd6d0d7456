package outbox

import (
	"context"

	"github.com/redrive/redrive/ops/catalog"
)

// Store is one outbox table as an adapter of its database reads and repairs it: the PostgreSQL
// one (ops/outbox/pgoutbox), the MySQL/MariaDB one (ops/outbox/mysqloutbox). The table's name and
// columns are the adapter's business (configured, validated identifiers); the Outbox gives it
// checked input only — a Filter that passed Check with a Limit in 1..MaxLimit+1, at most MaxIDs
// ids — and keeps the rules every database shares.
//
// Errors are the ops kinds, naming the outbox: ops.ErrNotFound for an event that does not exist,
// ops.ErrUnavailable when the database cannot be reached, refuses the query (a missing table or
// right: the message says to run console doctor) or its pool is busy. A driver's error text,
// which names hosts and users, is only ever an ops.Error's internal cause.
//
// Every adapter passes ops/outbox/outboxtest.Exercise.
type Store interface {
	// Ping checks that the table is reachable and readable.
	Ping(ctx context.Context) error
	// Close releases the connections.
	Close()
	// Stats is the overview: the exact count of each Unsent state, the stuck leases, the age of
	// the oldest due READY row, and SENT, exact below ExactSentBelow rows (by the database's own
	// estimate) and that estimate minus the others above it, SentIsEstimate set. It must stay
	// cheap on a 5,000,000-row table: no scan of the SENT rows.
	Stats(ctx context.Context) (Stats, error)
	// List returns at most f.Limit events matching f (already checked), newest (highest id)
	// first, without payloads. StuckOnly selects PROCESSING rows whose lease ended before the
	// database's now; Before is an exclusive upper bound on id; CreatedFrom/CreatedTo bound
	// created_at as [from, to).
	List(ctx context.Context, f Filter) ([]Event, error)
	// Events reads the events with these ids, without payloads, in id order; missing ids are left
	// out.
	Events(ctx context.Context, ids []int64) ([]Event, error)
	// Event reads one event with its payload; ops.ErrNotFound when there is none.
	Event(ctx context.Context, id int64) (Event, error)
	// Find reads the events whose event_id is one of eventIDs, or whose aggregate_id is
	// aggregateID when that is not "", oldest (lowest id) first, at most limit.
	Find(ctx context.Context, eventIDs []string, aggregateID string, limit int) ([]Event, error)
	// ReleaseStuck moves PROCESSING rows whose lease ended before the database's now back to
	// READY with no lease — the given ids, or every stuck row when ids is nil — in one
	// transaction: the rows are selected FOR UPDATE SKIP LOCKED (a row a relay holds is skipped,
	// never waited for) in bounded batches, and the UPDATE repeats the selecting condition, so a
	// row whose state or lease changed meanwhile is left alone. audit (never nil) is called with
	// the number released before the commit; its error rolls everything back and is returned as
	// it is. Returns how many rows were released.
	ReleaseStuck(ctx context.Context, ids []int64, audit AuditFunc) (int64, error)
	// Requeue moves those of ids that are DEAD or FAILED, and not held by a relay (SKIP LOCKED), to
	// READY, due at the database's now, with no lease; resetAttempts also sets attempts to 0. When
	// eventIDs is not nil (then as long as ids), a row moves only if its event_id is still exactly
	// eventIDs at the same place, checked under the row's lock: a row id is reused after TRUNCATE …
	// RESTART IDENTITY or a recreated table. As ReleaseStuck, in one transaction that audit (never
	// nil, called with the count before the commit) can roll back. Returns the ids it moved.
	Requeue(ctx context.Context, ids []int64, eventIDs []string, resetAttempts bool, audit AuditFunc) ([]int64, error)
	// Deaths names (Event.Death) those of ids that are DEAD now.
	Deaths(ctx context.Context, ids []int64) (map[int64]string, error)
	// Inspect reads from the catalog only, for console doctor, the table's columns and their
	// types, its indexes, and the account's SELECT on every mapped column and UPDATE on the
	// repaired ones (Columns); nothing is tried or written. An error means the database could not
	// be asked, not that something is missing.
	Inspect(ctx context.Context) (catalog.TableFacts, error)
}
