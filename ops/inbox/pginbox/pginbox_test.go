package pginbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/inbox/inboxtest"
	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/pgtest"
)

func TestConformance(t *testing.T) { inboxtest.Exercise(t, newDB) }

// db is a fresh PostgreSQL database with the seed's inbox table, and a connection of the test's
// own that writes rows as consumers would.
type db struct {
	dsn  string
	mu   *sync.Mutex
	conn *pgx.Conn
}

func newDB(t *testing.T) inboxtest.DB {
	dsn := pgtest.NewDatabase(t)
	pgtest.Exec(t, dsn, pginbox.SeedDDL)
	conn := pgtest.Conn(t, dsn)
	if _, err := conn.Exec(context.Background(), `SET timezone = 'UTC'`); err != nil {
		t.Fatal(err)
	}
	return db{dsn: dsn, mu: new(sync.Mutex), conn: conn}
}

func (d db) RowsMeanProcessed() bool { return false }

func (d db) Open(tb testing.TB, consumer, table, pool string) *inbox.Inbox {
	return openConfigured(tb, d.dsn, consumer, table, pool)
}

func (d db) OpenUnreachable(tb testing.TB, consumer string) *inbox.Inbox {
	return openConfigured(tb, "postgres://postgres@127.0.0.1:1/nope?connect_timeout=1", consumer, "", "")
}

// openConfigured opens consumer's inbox at dsn as the console does, from a config file's consumers
// entry with the table and pool settings given ("" for the defaults); it is closed when tb ends.
func openConfigured(tb testing.TB, dsn, consumer, table, pool string) *inbox.Inbox {
	tb.Helper()
	return openFormat(tb, dsn, consumer, table, pool, "")
}

// openFormat opens, as openConfigured, an inbox of format ("" for the default) with its adapter.
func openFormat(tb testing.TB, dsn, consumer, table, pool, format string) *inbox.Inbox {
	tb.Helper()
	if format != "" {
		pool = "format: " + format + ", " + pool
	}
	if table != "" {
		pool = "table: " + table + ", " + pool
	}
	if pool != "" {
		pool = ", " + pool
	}
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
consumers: [{name: %s, inbox: {dsn: %q%s}}]`, dsn, consumer, dsn, pool)), func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	open := pginbox.Open
	if format == "eventuate" {
		open = pginbox.OpenEventuate
	}
	in, err := open(context.Background(), consumer, *cfg.Consumers[0].Inbox)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(in.Close)
	return in
}

func (d db) TryInsert(tb testing.TB, r inboxtest.Row) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, err := d.conn.Exec(context.Background(), `INSERT INTO inbox_message VALUES ($1, $2,
		now() - make_interval(secs => $3), CASE WHEN $4 THEN now() - make_interval(secs => $3) + make_interval(secs => $5) END)`,
		r.MessageID, r.Consumer, r.Received.Seconds(), r.Processed, r.ProcessedAfter.Seconds())
	return err
}

func (d db) Insert(tb testing.TB, rows ...inboxtest.Row) {
	tb.Helper()
	for _, r := range rows {
		if err := d.TryInsert(tb, r); err != nil {
			tb.Fatal(err)
		}
	}
}

func (d db) Generate(tb testing.TB, consumer, prefix string, n, processedEvery int) {
	pgtest.Exec(tb, d.dsn, `INSERT INTO inbox_message SELECT $1 || g, $2, now(), CASE WHEN g % $4 = 0 THEN now() END
		FROM generate_series(1, $3::int) g`, prefix, consumer, n, processedEvery)
}

func (d db) KillSessions(tb testing.TB) int {
	return pgtest.Value[int](tb, d.dsn, `SELECT count(*)::int FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()) t`)
}

func (d db) LockTable(tb testing.TB) (release func()) {
	tb.Helper()
	tx, err := pgtest.Conn(tb, d.dsn).Begin(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `LOCK TABLE inbox_message IN ACCESS EXCLUSIVE MODE`); err != nil {
		tb.Fatal(err)
	}
	return func() { _ = tx.Rollback(context.Background()) }
}

func (d db) WaitLockWaiters(tb testing.TB, n int) { pgtest.WaitLockWaiters(tb, d.dsn, n) }
