package mysqlinbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/inbox/inboxtest"
	"github.com/redrive/redrive/ops/inbox/mysqlinbox"
	"github.com/redrive/redrive/ops/mysqltest"
)

func TestEventuateConformance(t *testing.T) { inboxtest.Exercise(t, newEventuateDB) }

// eventuateDB is a fresh MariaDB database with Eventuate Tram's received_messages, written as its
// duplicate detector writes it: a row (consumer_id, message_id, creation_time in epoch
// milliseconds, ROUND(UNIX_TIMESTAMP(CURTIME(4)) * 1000) in Eventuate) in the handler's
// transaction.
type eventuateDB struct{ db }

func newEventuateDB(t *testing.T) inboxtest.DB {
	dsn := mysqltest.NewDatabase(t)
	mysqltest.Exec(t, dsn, mysqlinbox.EventuateDDL)
	return eventuateDB{db{dsn: dsn, mu: new(sync.Mutex), conn: mysqltest.Conn(t, dsn)}}
}

func (d eventuateDB) RowsMeanProcessed() bool { return true }

func (d eventuateDB) Open(tb testing.TB, consumer, table, pool string) *inbox.Inbox {
	return openFormat(tb, d.dsn, consumer, table, pool, "eventuate")
}

func (d eventuateDB) OpenUnreachable(tb testing.TB, consumer string) *inbox.Inbox {
	return openFormat(tb, "mysql://redrive@127.0.0.1:1/nope?timeout=1s", consumer, "", "", "eventuate")
}

func (d eventuateDB) TryInsert(tb testing.TB, r inboxtest.Row) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, err := d.conn.ExecContext(context.Background(), `INSERT INTO received_messages (consumer_id, message_id, creation_time)
		VALUES (?, ?, ROUND(UNIX_TIMESTAMP(NOW(4)) * 1000) - ?)`, r.Consumer, r.MessageID, (r.Received - r.ProcessedAfter).Milliseconds())
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

// Generate writes with MariaDB's sequence engine (seq_1_to_N).
func (d eventuateDB) Generate(tb testing.TB, consumer, prefix string, n, _ int) {
	mysqltest.Exec(tb, d.dsn, fmt.Sprintf(`INSERT INTO received_messages (consumer_id, message_id, creation_time)
		SELECT ?, concat(?, seq), ROUND(UNIX_TIMESTAMP(NOW(4)) * 1000) FROM seq_1_to_%d`, n), consumer, prefix)
}

// LockTable holds LOCK TABLES … WRITE: every other session's read of the table waits for it.
func (d eventuateDB) LockTable(tb testing.TB) (release func()) {
	tb.Helper()
	c := mysqltest.Conn(tb, d.dsn)
	if _, err := c.ExecContext(context.Background(), `LOCK TABLES received_messages WRITE`); err != nil {
		tb.Fatal(err)
	}
	return func() { _, _ = c.ExecContext(context.Background(), `UNLOCK TABLES`) }
}

// A row Eventuate wrote without creation_time (versions before it had one) still means
// processed; the trace gets it with no time. A row still inside the handler's open transaction is
// not seen (the pool reads committed): not processed, until it commits.
func TestEventuateRowsWithoutTimeAndUncommitted(t *testing.T) {
	d := newEventuateDB(t).(eventuateDB)
	mysqltest.Exec(t, d.dsn, `INSERT INTO received_messages (consumer_id, message_id) VALUES ('orderService', 'm-old')`)
	ctx := context.Background()
	tx, err := mysqltest.Open(t, d.dsn).BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `INSERT INTO received_messages (consumer_id, message_id, creation_time) VALUES ('orderService', 'm-open', 1)`); err != nil {
		t.Fatal(err)
	}
	in := d.Open(t, "orderService", "", "")
	v, err := in.Verdicts(ctx, []string{"m-old", "m-open"})
	if err != nil || v["m-old"] != inbox.Processed || v["m-open"] != inbox.NotProcessed {
		t.Fatalf("verdicts %v, %v", v, err)
	}
	rows, err := in.Rows(ctx, []string{"m-old"}, 5)
	if err != nil || len(rows) != 1 || rows[0].ReceivedAt != nil || rows[0].ProcessedAt != nil || !rows[0].Processed {
		t.Fatalf("rows %+v, %v", rows, err)
	}
	if err := tx.Commit(); err != nil {
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
