package pgoutbox_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
)

// A release on a database whose default isolation is REPEATABLE READ, where a relay finishes
// sending a stuck row after the release's first batch took its snapshot and before the second
// batch reaches the row. The second batch failed with a serialization error (40001) and the whole
// release rolled back; read committed, it re-checks the row, leaves it SENT and releases the rest.
func TestReleaseUnderARepeatableReadDefault(t *testing.T) {
	d := newDB(t).(db)
	batch := pgoutbox.ReleaseBatch
	last := int64(batch + 1) // the second batch's only row
	pgtest.Exec(t, d.dsn, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version,
		payload, status, attempts, available_at, locked_until, created_at)
		SELECT 'e' || g, 'Order', 'o' || g, 'OrderCreated', 1, '{}', 'PROCESSING', 1, now(),
		       (now() AT TIME ZONE 'UTC') - interval '1 hour', now()
		FROM generate_series(1, $1::int) g`, last)
	// The first batch's update of its last row waits for a lock the test holds: its statement has
	// taken the snapshot, and it has not locked the second batch's row.
	pgtest.Exec(t, d.dsn, `CREATE FUNCTION gate() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF OLD.id = `+strconv.Itoa(batch)+` THEN PERFORM pg_advisory_xact_lock(7); END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER gate BEFORE UPDATE ON outbox_event FOR EACH ROW EXECUTE FUNCTION gate()`)
	pgtest.Exec(t, d.dsn, `DO $$ BEGIN
		EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation = %L', current_database(), 'repeatable read');
	END $$`)
	if iso := pgtest.Value[string](t, d.dsn, `SHOW transaction_isolation`); iso != "repeatable read" {
		t.Fatalf("a new session's isolation is %q, want repeatable read", iso)
	}
	o := d.Open(t, "orders", "")
	gate := pgtest.Conn(t, d.dsn)
	if _, err := gate.Exec(context.Background(), `SELECT pg_advisory_lock(7)`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n, err := o.ReleaseStuck(ctx, nil)
		done <- result{n, err}
	}()
	pgtest.WaitLockWaiters(t, d.dsn, 1)
	pgtest.Exec(t, d.dsn, `UPDATE outbox_event SET status = 'SENT', sent_at = now() WHERE id = $1`, last)
	if _, err := gate.Exec(context.Background(), `SELECT pg_advisory_unlock(7)`); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.n != int64(batch) {
		t.Fatalf("release = %d, %v; want %d", r.n, r.err, batch)
	}
	if s := d.Status(t, last); s != "SENT" {
		t.Errorf("the row the relay sent is %s", s)
	}
	if n := pgtest.Value[int64](t, d.dsn, `SELECT count(*) FROM outbox_event WHERE status = 'READY'`); n != int64(batch) {
		t.Errorf("%d rows released, want %d", n, batch)
	}
}
