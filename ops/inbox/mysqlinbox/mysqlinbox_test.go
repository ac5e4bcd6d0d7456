package mysqlinbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/inbox/inboxtest"
	"github.com/redrive/redrive/ops/inbox/mysqlinbox"
	"github.com/redrive/redrive/ops/mysqltest"
)

func TestConformance(t *testing.T) { inboxtest.Exercise(t, newDB) }

// db is a fresh MariaDB database with the seed's inbox table, and a connection of the test's own
// that writes rows as consumers would.
type db struct {
	dsn  string
	mu   *sync.Mutex
	conn *sql.Conn
}

func newDB(t *testing.T) inboxtest.DB {
	dsn := mysqltest.NewDatabase(t)
	mysqltest.Exec(t, dsn, mysqlinbox.SeedDDL)
	return db{dsn: dsn, mu: new(sync.Mutex), conn: mysqltest.Conn(t, dsn)}
}

func (d db) RowsMeanProcessed() bool { return false }

func (d db) Open(tb testing.TB, consumer, table, pool string) *inbox.Inbox {
	return openConfigured(tb, d.dsn, consumer, table, pool)
}

func (d db) OpenUnreachable(tb testing.TB, consumer string) *inbox.Inbox {
	return openConfigured(tb, "mysql://redrive@127.0.0.1:1/nope?timeout=1s", consumer, "", "")
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
store: {dsn: "postgres://x@127.0.0.1/y"}
consumers: [{name: %s, inbox: {dsn: %q%s}}]`, consumer, dsn, pool)), func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	open := mysqlinbox.Open
	if format == "eventuate" {
		open = mysqlinbox.OpenEventuate
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
	_, err := d.conn.ExecContext(context.Background(), `INSERT INTO inbox_message VALUES (?, ?,
		NOW(6) - INTERVAL ? MICROSECOND, IF(?, NOW(6) - INTERVAL ? MICROSECOND + INTERVAL ? MICROSECOND, NULL))`,
		r.MessageID, r.Consumer, r.Received.Microseconds(), r.Processed, r.Received.Microseconds(), r.ProcessedAfter.Microseconds())
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

// Generate writes with MariaDB's sequence engine (seq_1_to_N).
func (d db) Generate(tb testing.TB, consumer, prefix string, n, processedEvery int) {
	mysqltest.Exec(tb, d.dsn, fmt.Sprintf(`INSERT INTO inbox_message SELECT concat(?, seq), ?, NOW(6),
		IF(seq %% %d = 0, NOW(6), NULL) FROM seq_1_to_%d`, processedEvery, n), prefix, consumer)
}

func (d db) KillSessions(tb testing.TB) int { return mysqltest.KillSessions(tb, d.dsn) }

// LockTable holds LOCK TABLES … WRITE: every other session's read of the table waits for it.
func (d db) LockTable(tb testing.TB) (release func()) {
	tb.Helper()
	c := mysqltest.Conn(tb, d.dsn)
	if _, err := c.ExecContext(context.Background(), `LOCK TABLES inbox_message WRITE`); err != nil {
		tb.Fatal(err)
	}
	return func() { _, _ = c.ExecContext(context.Background(), `UNLOCK TABLES`) }
}

func (d db) WaitLockWaiters(tb testing.TB, n int) { mysqltest.WaitLockWaiters(tb, d.dsn, n) }
