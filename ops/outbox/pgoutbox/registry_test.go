package pgoutbox_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/outboxtest"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
)

// Every registry format passes the registry suite on PostgreSQL.
func TestRegistryConformance(t *testing.T) {
	for _, f := range outboxtest.RegistryFormats {
		t.Run(f, func(t *testing.T) { outboxtest.ExerciseRegistry(t, f, newRegistryDB) })
	}
}

type registryDB struct{ dsn string }

func newRegistryDB(t *testing.T) outboxtest.RegistryDB {
	dsn := pgtest.NewDatabase(t)
	// Libraries write TIMESTAMP columns in UTC, as the console reads them.
	pgtest.Exec(t, dsn, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET timezone TO ''UTC''', current_database()); END $$`)
	return registryDB{dsn: dsn}
}

func (registryDB) Postgres() bool                         { return true }
func (d registryDB) Exec(tb testing.TB, statement string) { pgtest.Exec(tb, d.dsn, statement) }
func (d registryDB) Now(tb testing.TB) time.Time {
	return pgtest.Value[time.Time](tb, d.dsn, "SELECT now()").UTC()
}

func (d registryDB) Insert(tb testing.TB, table string, row map[string]any) {
	cols := slices.Sorted(func(yield func(string) bool) {
		for k := range row {
			if !yield(k) {
				return
			}
		}
	})
	params, args := make([]string, len(cols)), make([]any, len(cols))
	for i, c := range cols {
		params[i], args[i] = fmt.Sprintf("$%d", i+1), row[c]
		if t, ok := row[c].(time.Time); ok {
			params[i] = fmt.Sprintf("$%d::timestamptz", i+1) // a TIMESTAMP column takes it in the database's UTC
			args[i] = t
		}
	}
	pgtest.Exec(tb, d.dsn, "INSERT INTO "+table+" ("+strings.Join(cols, ", ")+") VALUES ("+strings.Join(params, ", ")+")", args...)
}

func (d registryDB) Open(tb testing.TB, name, settings string, unreachable bool) *outbox.Outbox {
	tb.Helper()
	dsn := d.dsn
	if unreachable {
		dsn = "postgres://postgres@127.0.0.1:1/nope?connect_timeout=1"
	}
	cfg, err := configs.Parse([]byte(`
auth: {mode: none}
store: {dsn: "`+d.dsn+`"}
outboxes: [{name: `+name+`, dsn: "`+dsn+`", `+settings+`}]
`), func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	o, err := pgoutbox.OpenRegistry(context.Background(), cfg.Outboxes[0])
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(o.Close)
	return o
}
