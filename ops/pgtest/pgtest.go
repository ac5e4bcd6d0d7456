// Package pgtest gives each test its own database on the real PostgreSQL that `make test` starts
// (REDRIVE_TEST_PG_DSN). Tests never share tables, so they run in parallel and leave nothing behind.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops/testenv"
	"github.com/redrive/redrive/ops/waittest"
)

// EnvDSN names the variable holding the admin DSN of the test PostgreSQL.
const EnvDSN = "REDRIVE_TEST_PG_DSN"

// AdminDSN returns the admin DSN, failing the test (never skipping it) when it is missing.
func AdminDSN(tb testing.TB) string {
	tb.Helper()
	return testenv.Var(tb, EnvDSN, "PostgreSQL")
}

// NewDatabase creates an empty database for this test, drops it at cleanup, and returns its DSN.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	admin := AdminDSN(tb)
	name := testenv.Name()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("pgtest: connect %s: %v", EnvDSN, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, admin); err == nil {
			_, _ = conn.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			conn.Close(ctx)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatalf("pgtest: parse %s: %v", EnvDSN, err)
	}
	u.Path = "/" + name
	return u.String()
}

// Exec runs SQL statements on dsn, failing the test on error.
func Exec(tb testing.TB, dsn string, sql string, args ...any) {
	tb.Helper()
	ctx, conn, done := connect(tb, dsn, 5*time.Minute)
	defer done()
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		tb.Fatalf("pgtest: exec %.80q: %v", sql, err)
	}
}

// Value runs a query of one row and one column on dsn and returns its value, failing the test on
// error: what a test reads back to check a change (a row's status, a count).
func Value[T any](tb testing.TB, dsn, sql string, args ...any) T {
	tb.Helper()
	ctx, conn, done := connect(tb, dsn, time.Minute)
	defer done()
	var v T
	if err := conn.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
		tb.Fatalf("pgtest: query %.80q: %v", sql, err)
	}
	return v
}

// WaitLockWaiters waits until at least n sessions of dsn's database wait on a lock (a table lock, an
// advisory lock): the moment a test that holds a lock has its victims where it wants them. It asks
// pg_stat_activity rather than sleeping and hoping the victims got there.
func WaitLockWaiters(tb testing.TB, dsn string, n int) {
	tb.Helper()
	waitSessions(tb, dsn, fmt.Sprintf("%d sessions waiting on a lock", n), n, `wait_event_type = 'Lock'`)
}

// WaitRunning waits until a statement of dsn's database whose text is like pattern (ILIKE) is
// running: the moment a test that slows a statement down (a sleeping trigger) has it in flight.
func WaitRunning(tb testing.TB, dsn, pattern string) {
	tb.Helper()
	waitSessions(tb, dsn, fmt.Sprintf("a statement like %q running", pattern), 1,
		`state = 'active' AND query ILIKE $1 AND pid <> pg_backend_pid()`, pattern)
}

// waitSessions waits until at least n sessions of dsn's database match where (over
// pg_stat_activity, with args), what naming them on failure.
func waitSessions(tb testing.TB, dsn, what string, n int, where string, args ...any) {
	tb.Helper()
	ctx, conn, done := connect(tb, dsn, 30*time.Second)
	defer done()
	waittest.For(tb, 20*time.Second, what, func() (int, bool) {
		var found int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND `+where, args...).Scan(&found); err != nil {
			tb.Fatalf("pgtest: pg_stat_activity: %v", err)
		}
		return found, found >= n
	})
}

// Conn is a connection of the test's own to dsn (a relay holding a row lock, a check reading the
// store), closed when the test ends.
func Conn(tb testing.TB, dsn string) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		tb.Fatalf("pgtest: connect: %v", err)
	}
	tb.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// connect opens a connection to dsn for a helper's statements, bounded by within; done closes it.
func connect(tb testing.TB, dsn string, within time.Duration) (ctx context.Context, conn *pgx.Conn, done func()) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		cancel()
		tb.Fatalf("pgtest: connect: %v", err)
	}
	return ctx, conn, func() { _ = conn.Close(context.Background()); cancel() }
}
