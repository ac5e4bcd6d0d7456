// Package outboxtest is the behavioural suite every outbox adapter passes (river's
// riverdrivertest is the model): counts, relay delay, stuck leases, the release that never steals
// a live relay's row, two operators releasing the same rows, requeue, the event list and detail,
// hostile bytes, a 250,000-row table, a busy pool and a database that is down. An adapter's test
// package runs it in one line,
//
//	func TestConformance(t *testing.T) { outboxtest.Exercise(t, newDB) }
//
// with newDB giving a fresh database that holds the seed's outbox_event table (and nothing else),
// and the few things a test must do in it beside the adapter: write rows as a relay would, hold a
// row or the table as a relay would. Those are the DB interface.
package outboxtest

import (
	"testing"
	"time"

	"github.com/redrive/redrive/ops/outbox"
)

// Row is one outbox row as a relay writes it. Times are offsets from the database's own clock.
// Zero fields take the defaults noted.
type Row struct {
	Status      outbox.Status // required
	EventID     string        // "" for a fresh unique id
	EventType   string        // "" for OrderCreated
	AggregateID string        // "" for o-<a random number>
	Payload     string        // "" for {"orderId":"o-1"}
	LastError   string        // "" for NULL
	Attempts    int           // 0 for 2
	AvailableIn time.Duration // available_at = now + AvailableIn
	LockedFor   time.Duration // locked_until = now + LockedFor, PROCESSING rows only (else NULL)
}

// DB is one fresh database holding the seed's outbox table, outbox_event, with its
// (status, available_at) index, as an adapter's tests give it to Exercise. Its methods fail tb on
// error (Insert says so for a value the database refuses).
type DB interface {
	// Open opens the table as outbox name the way the console does, from an outboxes[] entry of
	// a config file with these pool settings (YAML: "max_conns: 1, acquire_timeout: 200ms"; ""
	// for the defaults); it is closed when tb ends.
	Open(tb testing.TB, name, pool string) *outbox.Outbox
	// Insert writes rows as a relay would, in order, and returns their ids.
	Insert(tb testing.TB, rows ...Row) []int64
	// TryInsert writes one row, returning the database's refusal (a NUL in a PostgreSQL text
	// column) instead of failing tb.
	TryInsert(tb testing.TB, row Row) (int64, error)
	// Generate writes n rows, ids 1..n in order, event_id e<i>, aggregate o<i>: DEAD where i is a
	// multiple of deadEvery, SENT otherwise; then refreshes the table's statistics as the
	// database's own maintenance would (ANALYZE).
	Generate(tb testing.TB, n, deadEvery int)
	// Status reads a row's status.
	Status(tb testing.TB, id int64) string
	// Delete removes a row.
	Delete(tb testing.TB, id int64)
	// Relay opens a session of a relay's own, with a transaction begun, rolled back when tb ends
	// unless committed.
	Relay(tb testing.TB) Relay
	// LockTable takes, from a session of its own, a lock that makes every statement of the outbox
	// on the table wait (a table lock held in an open transaction), until release is called.
	LockTable(tb testing.TB) (release func())
	// WaitLockWaiters waits until at least n sessions of the database wait on a lock.
	WaitLockWaiters(tb testing.TB, n int)
	// OpenUnreachable opens, as Open does, an outbox whose DSN (of the database's kind) points
	// where nothing listens.
	OpenUnreachable(tb testing.TB) *outbox.Outbox
	// WriteInZone makes Insert's session write in loc from now on, as a service whose sessions
	// run in that zone does: its CURRENT_TIMESTAMP is loc's wall clock.
	WriteInZone(tb testing.TB, loc *time.Location)
}

// Relay is a relay's session, inside its open transaction.
type Relay interface {
	// Lock holds the row as a relay mid-publish does (SELECT … FOR UPDATE).
	Lock(tb testing.TB, id int64)
	// Claim gives the row a fresh lease of d (UPDATE … SET locked_until = now + d).
	Claim(tb testing.TB, id int64, d time.Duration)
	// Send marks the row SENT, as a relay does once the broker confirmed.
	Send(tb testing.TB, id int64)
	// Commit ends the transaction.
	Commit(tb testing.TB)
}

// NewDB gives each test a fresh DB.
type NewDB func(t *testing.T) DB

// Exercise runs the suite against the adapter whose databases newDB makes. Subtests run in
// parallel, each on its own database.
func Exercise(t *testing.T, newDB NewDB) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, db DB)
	}{
		{"Stats", testStats},
		{"StatsEstimatesSentOnLargeTables", testStatsEstimatesSentOnLargeTables},
		{"StuckAtLeaseBoundary", testStuckAtLeaseBoundary},
		{"ReleaseNeverStealsARowALiveRelayHolds", testReleaseNeverStealsARowALiveRelayHolds},
		{"ReleaseRacingAClaim", testReleaseRacingAClaim},
		{"TwoReleasersReleaseEachRowOnce", testTwoReleasersReleaseEachRowOnce},
		{"ReleaseAudited", testReleaseAudited},
		{"RequeueOnlyTouchesDeadAndFailed", testRequeueOnlyTouchesDeadAndFailed},
		{"RequeueSkipsARowARelayHolds", testRequeueSkipsARowARelayHolds},
		{"ListAndDetail", testListAndDetail},
		{"FindAndCountDead", testFindAndCountDead},
		{"HostileBytes", testHostileBytes},
		{"TwentyReadersOnTwoConnections", testTwentyReadersOnTwoConnections},
		{"Busy", testBusy},
		{"DatabaseDownIsUnavailable", testDatabaseDownIsUnavailable},
		{"TimestampsInTheWritersZone", testTimestampsInTheWritersZone},
		{"FiltersMatchExactly", testFiltersMatchExactly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newDB(t))
		})
	}
}
