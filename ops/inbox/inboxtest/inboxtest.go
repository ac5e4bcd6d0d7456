// Package inboxtest is the behavioural suite every inbox adapter passes (river's riverdrivertest
// is the model): the verdicts (processed, in progress, not processed) of one consumer's rows, in
// batches up to 100,000 ids, a trace's rows, hostile ids, a table that is missing, a database that
// ended its sessions, a busy pool and a database that is down. An adapter's test package runs it in
// one line,
//
//	func TestConformance(t *testing.T) { inboxtest.Exercise(t, newDB) }
//
// with newDB giving a fresh database holding the adapter's inbox table, and the few things a test
// must do in it beside the adapter (the DB interface). Every inbox format × database is one
// adapter and one such line: the seed's inbox_message and Eventuate Tram's received_messages, in
// PostgreSQL (pginbox) and MySQL/MariaDB (mysqlinbox).
package inboxtest

import (
	"testing"
	"time"

	"github.com/redrive/redrive/ops/inbox"
)

// Row is one inbox row as a consumer writes it. In a format whose rows all mean processed
// (Eventuate's), Processed is not written: the row's one time (creation_time) is received_at +
// ProcessedAfter, when the consumer's transaction wrote it.
type Row struct {
	MessageID string
	Consumer  string
	Processed bool          // processed_at set (to received_at + ProcessedAfter), else NULL
	Received  time.Duration // received_at = the database's now - Received
	// ProcessedAfter is how long after receiving the consumer committed (0: at once).
	ProcessedAfter time.Duration
}

// DB is one fresh database holding the adapter's inbox table (the seed's inbox_message, or
// Eventuate's received_messages), as an adapter's tests give it to Exercise. Its methods fail tb
// on error.
type DB interface {
	// RowsMeanProcessed says the format has no in-progress state: its consumer writes the row in
	// the transaction of the message's effect, so every row is a processed message (Eventuate).
	RowsMeanProcessed() bool
	// Open opens consumer's inbox the way the console does, from a consumers[] entry of a config
	// file naming table ("" for the format's default) with these pool settings (YAML; "" for
	// the defaults); it is closed when tb ends.
	Open(tb testing.TB, consumer, table, pool string) *inbox.Inbox
	// Insert writes rows as consumers would.
	Insert(tb testing.TB, rows ...Row)
	// TryInsert writes one row, returning the database's refusal instead of failing tb.
	TryInsert(tb testing.TB, row Row) error
	// Generate writes n rows of consumer, message ids prefix1 … prefixN, processed where i is a
	// multiple of processedEvery and in progress otherwise (all processed when RowsMeanProcessed).
	Generate(tb testing.TB, consumer, prefix string, n, processedEvery int)
	// KillSessions ends every other session of the database, as a restart or failover does, and
	// says how many it ended.
	KillSessions(tb testing.TB) int
	// LockTable takes, from a session of its own, a lock that makes every read of the table wait,
	// until release is called.
	LockTable(tb testing.TB) (release func())
	// WaitLockWaiters waits until at least n sessions of the database wait on a lock.
	WaitLockWaiters(tb testing.TB, n int)
	// OpenUnreachable opens, as Open does, an inbox whose DSN (of the database's kind) points
	// where nothing listens.
	OpenUnreachable(tb testing.TB, consumer string) *inbox.Inbox
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
		{"Verdicts", testVerdicts},
		{"VerdictsInBatches", testVerdictsInBatches},
		{"VerdictsOf100000IDs", testVerdictsOf100000IDs},
		{"Rows", testRows},
		{"OtherConsumersRows", testOtherConsumersRows},
		{"HostileIDs", testHostileIDs},
		{"MissingTableIsUnavailable", testMissingTableIsUnavailable},
		{"VerdictsAfterTheDatabaseDroppedItsSessions", testVerdictsAfterTheDatabaseDroppedItsSessions},
		{"TwentyLookupsOnTwoConnections", testTwentyLookupsOnTwoConnections},
		{"Busy", testBusy},
		{"DatabaseDownIsUnavailable", testDatabaseDownIsUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newDB(t))
		})
	}
}

// verdict is what a row written with processed says in db's format.
func verdict(db DB, processed bool) inbox.Verdict {
	if processed || db.RowsMeanProcessed() {
		return inbox.Processed
	}
	return inbox.InProgress
}
