package pgoutbox_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/outboxtest"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
)

func TestConformance(t *testing.T) { outboxtest.Exercise(t, newDB) }

// db is a fresh PostgreSQL database with the seed's outbox table, and a connection of the test's
// own that writes rows as a relay would.
type db struct {
	dsn  string
	mu   *sync.Mutex
	conn *pgx.Conn
}

func newDB(t *testing.T) outboxtest.DB {
	dsn := pgtest.NewDatabase(t)
	pgtest.Exec(t, dsn, pgoutbox.SeedDDL)
	conn := pgtest.Conn(t, dsn)
	// Relays write the seed's TIMESTAMP columns in UTC.
	if _, err := conn.Exec(context.Background(), `SET timezone = 'UTC'`); err != nil {
		t.Fatal(err)
	}
	return db{dsn: dsn, mu: new(sync.Mutex), conn: conn}
}

func (d db) WriteInZone(tb testing.TB, loc *time.Location) {
	tb.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.conn.Exec(context.Background(), `SELECT set_config('timezone', $1, false)`, loc.String()); err != nil {
		tb.Fatal(err)
	}
}

func (d db) Open(tb testing.TB, name, pool string) *outbox.Outbox {
	return openConfigured(tb, name, d.dsn, pool)
}

func (d db) OpenUnreachable(tb testing.TB) *outbox.Outbox {
	return openConfigured(tb, "x", "postgres://postgres@127.0.0.1:1/nope?connect_timeout=1", "")
}

// openConfigured opens the outbox name at dsn as the console does, from a config file's outboxes
// entry with the pool settings pool ("" for the defaults); it is closed when tb ends.
func openConfigured(tb testing.TB, name, dsn, pool string) *outbox.Outbox {
	tb.Helper()
	if pool != "" {
		pool = ", " + pool
	}
	cfg, err := configs.Parse([]byte(`
auth: {mode: none}
store: {dsn: "`+dsn+`"}
outboxes: [{name: `+name+`, dsn: "`+dsn+`"`+pool+`}]
`), func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	o, err := pgoutbox.Open(context.Background(), cfg.Outboxes[0])
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(o.Close)
	return o
}

const insertRow = `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version,
		payload, status, attempts, available_at, locked_until, last_error, created_at)
	VALUES (coalesce(nullif($1, ''), gen_random_uuid()::text), 'Order',
		coalesce(nullif($2, ''), 'o-' || floor(random()*1000)::text), coalesce(nullif($3, ''), 'OrderCreated'), 1,
		coalesce(nullif($4, ''), '{"orderId":"o-1"}'), $5, $6, now() + make_interval(secs => $7),
		now() + make_interval(secs => $8), nullif($9, ''), now())
	RETURNING id`

func (d db) TryInsert(tb testing.TB, r outboxtest.Row) (int64, error) {
	tb.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	var locked *float64
	if r.Status == outbox.Processing {
		s := r.LockedFor.Seconds()
		locked = &s
	}
	attempts := r.Attempts
	if attempts == 0 {
		attempts = 2
	}
	var id int64
	err := d.conn.QueryRow(context.Background(), insertRow, r.EventID, r.AggregateID, r.EventType, r.Payload, string(r.Status),
		attempts, r.AvailableIn.Seconds(), locked, r.LastError).Scan(&id)
	return id, err
}

func (d db) Insert(tb testing.TB, rows ...outboxtest.Row) []int64 {
	tb.Helper()
	ids := make([]int64, len(rows))
	for i, r := range rows {
		id, err := d.TryInsert(tb, r)
		if err != nil {
			tb.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

func (d db) Generate(tb testing.TB, n, deadEvery int) {
	pgtest.Exec(tb, d.dsn, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type,
		schema_version, payload, status, available_at, created_at)
		SELECT 'e' || g, 'Order', 'o' || g, 'OrderCreated', 1, '{}',
		       CASE WHEN g % $2 = 0 THEN 'DEAD' ELSE 'SENT' END, now(), now()
		FROM generate_series(1, $1::int) g`, n, deadEvery)
	pgtest.Exec(tb, d.dsn, `ANALYZE outbox_event`)
}

func (d db) Status(tb testing.TB, id int64) string {
	tb.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	var s string
	if err := d.conn.QueryRow(context.Background(), `SELECT status FROM outbox_event WHERE id = $1`, id).Scan(&s); err != nil {
		tb.Fatal(err)
	}
	return s
}

func (d db) Delete(tb testing.TB, id int64) {
	pgtest.Exec(tb, d.dsn, `DELETE FROM outbox_event WHERE id = $1`, id)
}

// relay is a relay's session in an open transaction.
type relay struct{ tx pgx.Tx }

func (d db) Relay(tb testing.TB) outboxtest.Relay {
	tb.Helper()
	tx, err := pgtest.Conn(tb, d.dsn).Begin(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return relay{tx}
}

func (r relay) exec(tb testing.TB, sql string, args ...any) {
	tb.Helper()
	if _, err := r.tx.Exec(context.Background(), sql, args...); err != nil {
		tb.Fatal(err)
	}
}

func (r relay) Lock(tb testing.TB, id int64) {
	r.exec(tb, `SELECT 1 FROM outbox_event WHERE id = $1 FOR UPDATE`, id)
}

func (r relay) Claim(tb testing.TB, id int64, d time.Duration) {
	r.exec(tb, `UPDATE outbox_event SET locked_until = now() + make_interval(secs => $2) WHERE id = $1`, id, d.Seconds())
}

func (r relay) Send(tb testing.TB, id int64) {
	r.exec(tb, `UPDATE outbox_event SET status = 'SENT', sent_at = now() WHERE id = $1`, id)
}

func (r relay) Commit(tb testing.TB) {
	if err := r.tx.Commit(context.Background()); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		tb.Fatal(err)
	}
}

func (d db) LockTable(tb testing.TB) (release func()) {
	tb.Helper()
	tx, err := pgtest.Conn(tb, d.dsn).Begin(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `LOCK TABLE outbox_event IN ACCESS EXCLUSIVE MODE`); err != nil {
		tb.Fatal(err)
	}
	return func() { _ = tx.Rollback(context.Background()) }
}

func (d db) WaitLockWaiters(tb testing.TB, n int) { pgtest.WaitLockWaiters(tb, d.dsn, n) }

// The stuck-lease list is read with an index, not a scan of the table.
func TestStuckListUsesAnIndex(t *testing.T) {
	d := newDB(t).(db)
	d.Generate(t, 250_000, 100)
	s, err := pgoutbox.New(context.Background(), configs.Outbox{Name: "orders", DSN: configs.Secret(d.dsn), Table: "outbox_event",
		Columns: seedColumns()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if plan := explain(t, d.dsn, s.StuckSQL()); !strings.Contains(plan, "Index") {
		t.Errorf("the stuck-lease list must use an index; plan:\n%s", plan)
	}
}

// seedColumns are the seed's column names, as configs.Load defaults them.
func seedColumns() configs.OutboxColumns {
	cfg, err := configs.Parse([]byte("auth: {mode: none}\nstore: {dsn: 'postgres://x/y'}\noutboxes: [{name: a, dsn: 'postgres://x/y'}]\n"),
		func(string) string { return "" })
	if err != nil {
		panic(err)
	}
	return cfg.Outboxes[0].Columns
}

func explain(t testing.TB, dsn, sql string) string {
	t.Helper()
	conn := pgtest.Conn(t, dsn)
	rows, err := conn.Query(context.Background(), "EXPLAIN "+sql)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
