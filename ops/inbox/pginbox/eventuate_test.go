package pginbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/inbox/inboxtest"
	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/pgtest"
)

func TestEventuateConformance(t *testing.T) { inboxtest.Exercise(t, newEventuateDB) }

// eventuateDB is a fresh PostgreSQL database with Eventuate Tram's received_messages, written as
// its duplicate detector writes it: a row (consumer_id, message_id, creation_time in epoch
// milliseconds) in the handler's transaction.
type eventuateDB struct{ db }

func newEventuateDB(t *testing.T) inboxtest.DB {
	dsn := pgtest.NewDatabase(t)
	pgtest.Exec(t, dsn, pginbox.EventuateDDL)
	return eventuateDB{db{dsn: dsn, mu: new(sync.Mutex), conn: pgtest.Conn(t, dsn)}}
}

func (d eventuateDB) RowsMeanProcessed() bool { return true }

func (d eventuateDB) Open(tb testing.TB, consumer, table, pool string) *inbox.Inbox {
	return openFormat(tb, d.dsn, consumer, table, pool, "eventuate")
}

func (d eventuateDB) OpenUnreachable(tb testing.TB, consumer string) *inbox.Inbox {
	return openFormat(tb, "postgres://postgres@127.0.0.1:1/nope?connect_timeout=1", consumer, "", "", "eventuate")
}

func (d eventuateDB) TryInsert(tb testing.TB, r inboxtest.Row) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, err := d.conn.Exec(context.Background(), `INSERT INTO received_messages (consumer_id, message_id, creation_time)
		VALUES ($1, $2, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint - $3::bigint)`,
		r.Consumer, r.MessageID, (r.Received - r.ProcessedAfter).Milliseconds())
	return err
}

func (d eventuateDB) Insert(tb testing.TB, rows ...inboxtest.Row) {
	tb.Helper()
	for _, r := range rows {
		if err := d.TryInsert(tb, r); err != nil {
			tb.Fatal(err)
		}
	}
}

func (d eventuateDB) Generate(tb testing.TB, consumer, prefix string, n, _ int) {
	pgtest.Exec(tb, d.dsn, `INSERT INTO received_messages (consumer_id, message_id, creation_time)
		SELECT $1, $2 || g, (EXTRACT(EPOCH FROM now()) * 1000)::bigint FROM generate_series(1, $3::int) g`, consumer, prefix, n)
}

func (d eventuateDB) LockTable(tb testing.TB) (release func()) {
	tb.Helper()
	tx, err := pgtest.Conn(tb, d.dsn).Begin(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `LOCK TABLE received_messages IN ACCESS EXCLUSIVE MODE`); err != nil {
		tb.Fatal(err)
	}
	return func() { _ = tx.Rollback(context.Background()) }
}

// A row Eventuate wrote without creation_time (versions before it had one) still means
// processed; the trace gets it with no time. A row still inside the handler's open transaction is
// not seen: not processed, until it commits.
func TestEventuateRowsWithoutTimeAndUncommitted(t *testing.T) {
	d := newEventuateDB(t).(eventuateDB)
	pgtest.Exec(t, d.dsn, `INSERT INTO received_messages (consumer_id, message_id) VALUES ('orderService', 'm-old')`)
	tx, err := pgtest.Conn(t, d.dsn).Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `INSERT INTO received_messages (consumer_id, message_id, creation_time)
		VALUES ('orderService', 'm-open', 1)`); err != nil {
		t.Fatal(err)
	}
	in := d.Open(t, "orderService", "", "")
	ctx := context.Background()
	v, err := in.Verdicts(ctx, []string{"m-old", "m-open"})
	if err != nil || v["m-old"] != inbox.Processed || v["m-open"] != inbox.NotProcessed {
		t.Fatalf("verdicts %v, %v", v, err)
	}
	rows, err := in.Rows(ctx, []string{"m-old"}, 5)
	if err != nil || len(rows) != 1 || rows[0].ReceivedAt != nil || rows[0].ProcessedAt != nil || !rows[0].Processed {
		t.Fatalf("rows %+v, %v", rows, err)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	v, err = in.Verdicts(ctx, []string{"m-open"})
	if err != nil || v["m-open"] != inbox.Processed {
		t.Fatalf("after the commit: %v, %v", v, err)
	}
	rows, err = in.Rows(ctx, []string{"m-open"}, 5)
	if err != nil || len(rows) != 1 || rows[0].ProcessedAt == nil || !rows[0].ProcessedAt.Equal(time.UnixMilli(1)) {
		t.Fatalf("rows %+v, %v: creation_time 1 is 1970-01-01T00:00:00.001Z", rows, err)
	}
}
