package pgoutbox_test

import (
	"context"
	"os"
	"strings"

	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
)

const bigRows = 5_000_000

func setupBig(b *testing.B) (*outbox.Outbox, string) {
	b.Helper()
	dsn := os.Getenv("REDRIVE_BENCH_OUTBOX_DSN") // reuse a table across runs when set
	if dsn == "" {
		dsn = pgtest.NewDatabase(b)
		pgtest.Exec(b, dsn, pgoutbox.SeedDDL)
		// 96% SENT; 2% READY backlog, 0.1% PROCESSING (in flight, half of it stuck), 0.9% FAILED, 1% DEAD.
		pgtest.Exec(b, dsn, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type,
			schema_version, payload, status, attempts, available_at, locked_until, last_error, created_at, sent_at)
			SELECT 'evt-' || g, 'Order', 'order-' || (g % 100000), 'OrderCreated', 1,
			       '{"orderId":"order-' || g || '","amount":' || (g % 1000) || '}',
			       s.status, 1, now() - make_interval(secs => g % 3600),
			       CASE WHEN s.status = 'PROCESSING' THEN now() - make_interval(secs => g % 120 - 60) END,
			       CASE WHEN s.status IN ('FAILED','DEAD') THEN 'broker timeout' END,
			       now() - make_interval(secs => (5000000 - g) / 100),
			       CASE WHEN s.status = 'SENT' THEN now() END
			FROM generate_series(1, $1) g,
			LATERAL (SELECT CASE WHEN g % 1000 < 960 THEN 'SENT' WHEN g % 1000 < 980 THEN 'READY'
			                     WHEN g % 1000 = 980 THEN 'PROCESSING' WHEN g % 1000 < 990 THEN 'FAILED'
			                     ELSE 'DEAD' END AS status) s`, bigRows)
		// As autovacuum would leave it: statistics current, visibility map set.
		pgtest.Exec(b, dsn, `VACUUM (FREEZE, ANALYZE) outbox_event`)
	}
	return openConfigured(b, "big", dsn, ""), dsn
}

// BenchmarkOverview5M compares the overview (Stats) with the naive GROUP BY over the whole table,
// on the same 5,000,000-row table in the same run.
func BenchmarkOverview5M(b *testing.B) {
	o, dsn := setupBig(b)
	ctx := context.Background()
	s, err := pgoutbox.New(ctx, configs.Outbox{Name: "big", DSN: configs.Secret(dsn), Table: "outbox_event", Columns: seedColumns()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if plan := explain(b, dsn, s.StuckSQL()); !strings.Contains(plan, "Index") {
		b.Fatalf("stuck list does not use an index:\n%s", plan)
	}
	b.Run("Stats", func(b *testing.B) {
		for b.Loop() {
			if _, err := o.Stats(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CachedStats", func(b *testing.B) { // what the panels and the API serve
		for b.Loop() {
			if _, err := o.CachedStats(ctx, outbox.StatsMaxAge); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("NaiveGroupBy", func(b *testing.B) {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		for b.Loop() {
			rows, err := conn.Query(ctx, `SELECT status, count(*) FROM outbox_event GROUP BY status`)
			if err != nil {
				b.Fatal(err)
			}
			rows.Close()
		}
	})
	b.Run("StuckList", func(b *testing.B) {
		for b.Loop() {
			if _, err := o.List(ctx, outbox.Filter{StuckOnly: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DeadListDeepPage", func(b *testing.B) {
		for b.Loop() {
			if _, err := o.List(ctx, outbox.Filter{Status: outbox.Dead, Before: bigRows / 2}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
