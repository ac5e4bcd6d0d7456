package mysqloutbox_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
)

const bigRows = 5_000_000

func setupBig(b *testing.B) (*outbox.Outbox, string) {
	b.Helper()
	dsn := os.Getenv("REDRIVE_BENCH_MYSQL_OUTBOX_DSN") // reuse a table across runs when set
	if dsn == "" {
		dsn = mysqltest.NewDatabase(b)
		mysqltest.Exec(b, dsn, mysqloutbox.SeedDDL)
		// The PostgreSQL benchmark's table: 96% SENT; 2% READY backlog, 0.1% PROCESSING (in
		// flight, half of it stuck), 0.9% FAILED, 1% DEAD. MariaDB's sequence engine writes it,
		// a million rows a statement.
		for from := 1; from <= bigRows; from += 1_000_000 {
			mysqltest.Exec(b, dsn, fmt.Sprintf(`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type,
				schema_version, payload, status, attempts, available_at, locked_until, last_error, created_at, sent_at)
				SELECT concat('evt-', g), 'Order', concat('order-', g %% 100000), 'OrderCreated', 1,
				       concat('{"orderId":"order-', g, '","amount":', g %% 1000, '}'),
				       s, 1, UTC_TIMESTAMP(6) - INTERVAL (g %% 3600) SECOND,
				       IF(s = 'PROCESSING', UTC_TIMESTAMP(6) - INTERVAL (g %% 120 - 60) SECOND, NULL),
				       IF(s IN ('FAILED','DEAD'), 'broker timeout', NULL),
				       UTC_TIMESTAMP(6) - INTERVAL ((5000000 - g) DIV 100) SECOND,
				       IF(s = 'SENT', UTC_TIMESTAMP(6), NULL)
				FROM (SELECT CAST(seq AS SIGNED) AS g, CASE WHEN seq %% 1000 < 960 THEN 'SENT' WHEN seq %% 1000 < 980 THEN 'READY'
				                     WHEN seq %% 1000 = 980 THEN 'PROCESSING' WHEN seq %% 1000 < 990 THEN 'FAILED'
				                     ELSE 'DEAD' END AS s
				      FROM seq_%d_to_%d) t`, from, from+999_999))
		}
		// As InnoDB's own statistics would leave it.
		mysqltest.Exec(b, dsn, `ANALYZE TABLE outbox_event`)
	}
	return openConfigured(b, "big", dsn, ""), dsn
}

// BenchmarkOverview5M compares the overview (Stats) with the naive GROUP BY over the whole table,
// on the same 5,000,000-row MariaDB table in the same run, as the PostgreSQL benchmark does.
func BenchmarkOverview5M(b *testing.B) {
	o, dsn := setupBig(b)
	ctx := context.Background()
	s, err := mysqloutbox.New(ctx, configs.Outbox{Name: "big", DSN: configs.Secret(dsn), Table: "outbox_event", Columns: seedColumns()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if plan := explain(b, dsn, s.StuckSQL()); !strings.Contains(plan, "idx_outbox_ready") {
		b.Fatalf("stuck list does not use the status index:\n%s", plan)
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
		conn := mysqltest.Conn(b, dsn)
		for b.Loop() {
			rows, err := conn.QueryContext(ctx, `SELECT status, count(*) FROM outbox_event GROUP BY status`)
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
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
