package pgoutbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
)

// An outbox whose id column is integer (SERIAL, which console doctor accepts) takes ids beyond
// that range as ids no row has. pgx prepared the id parameters as int4 and failed to encode such
// an id in the client, which read as the database not answering: a 503 for a mistyped id.
func TestIntegerIDBeyondItsRange(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ddl := strings.Replace(pgoutbox.SeedDDL, "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "SERIAL PRIMARY KEY", 1)
	if ddl == pgoutbox.SeedDDL {
		t.Fatal("the seed's id column is no longer BIGINT GENERATED ALWAYS AS IDENTITY: update the test")
	}
	pgtest.Exec(t, dsn, ddl)
	pgtest.Exec(t, dsn, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, created_at)
		VALUES ('e-1', 'Order', 'o-1', 'OrderCreated', 1, '{}', 'DEAD', 5, now(), now()),
		       ('e-2', 'Order', 'o-2', 'OrderCreated', 1, '{}', 'SENT', 1, now(), now())`)
	if typ := pgtest.Value[string](t, dsn, `SELECT data_type FROM information_schema.columns
		WHERE table_name = 'outbox_event' AND column_name = 'id'`); typ != "integer" {
		t.Fatalf("id is %s, want integer", typ)
	}
	o := openConfigured(t, "orders", dsn, "")
	ctx := context.Background()
	const beyond = 3_000_000_000
	t.Run("Event", func(t *testing.T) {
		for _, id := range []int64{1 << 31, beyond} {
			if _, err := o.Event(ctx, id); !errors.Is(err, ops.ErrNotFound) || errors.Is(err, ops.ErrUnavailable) {
				t.Errorf("event %d: %v; want not found", id, err)
			}
		}
	})
	t.Run("ListBefore", func(t *testing.T) {
		page, err := o.List(ctx, outbox.Filter{Before: beyond})
		if err != nil || len(page.Events) != 2 {
			t.Fatalf("events before %d: %+v, %v; want both", int64(beyond), page, err)
		}
	})
	t.Run("Events", func(t *testing.T) {
		events, err := o.Events(ctx, []int64{1, beyond})
		if err != nil || len(events) != 1 || events[0].EventID != "e-1" {
			t.Fatalf("events 1 and %d: %+v, %v; want e-1", int64(beyond), events, err)
		}
	})
	t.Run("Deaths", func(t *testing.T) {
		if d, err := o.Deaths(ctx, []int64{1, beyond}); err != nil || len(d) != 1 {
			t.Fatalf("dead of 1 and %d: %v, %v; want 1", int64(beyond), d, err)
		}
	})
	t.Run("ReleaseStuck", func(t *testing.T) {
		if n, err := o.ReleaseStuck(ctx, []int64{beyond}); err != nil || n != 0 {
			t.Fatalf("release %d: %d, %v; want 0", int64(beyond), n, err)
		}
	})
	t.Run("Requeue", func(t *testing.T) {
		if n, err := o.Requeue(ctx, []int64{beyond}, false); err != nil || n != 0 {
			t.Fatalf("requeue %d: %d, %v; want 0", int64(beyond), n, err)
		}
		if moved, err := o.RequeueEvents(ctx, []int64{beyond, 1}, []string{"e-x", "e-1"}, false); err != nil || len(moved) != 1 || moved[0] != 1 {
			t.Fatalf("requeue events %d and 1: %v, %v; want [1]", int64(beyond), moved, err)
		}
	})
}
