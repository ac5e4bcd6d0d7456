package mysqloutbox_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
	"github.com/redrive/redrive/ops/outbox/outboxtest"
)

// Every registry format passes the registry suite on MySQL/MariaDB.
func TestRegistryConformance(t *testing.T) {
	for _, f := range outboxtest.RegistryFormats {
		t.Run(f, func(t *testing.T) { outboxtest.ExerciseRegistry(t, f, newRegistryDB) })
	}
}

type registryDB struct{ dsn string }

func newRegistryDB(t *testing.T) outboxtest.RegistryDB {
	return registryDB{dsn: mysqltest.NewDatabase(t)}
}

func (registryDB) Postgres() bool                         { return false }
func (d registryDB) Exec(tb testing.TB, statement string) { mysqltest.Exec(tb, d.dsn, statement) }
func (d registryDB) Now(tb testing.TB) time.Time {
	return mysqltest.Value[time.Time](tb, d.dsn, "SELECT NOW(6)").UTC()
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
		params[i], args[i] = "?", row[c]
	}
	mysqltest.Exec(tb, d.dsn, "INSERT INTO "+table+" ("+strings.Join(cols, ", ")+") VALUES ("+strings.Join(params, ", ")+")", args...)
}

func (d registryDB) Open(tb testing.TB, name, settings string, unreachable bool) *outbox.Outbox {
	tb.Helper()
	dsn := d.dsn
	if unreachable {
		dsn = "mysql://redrive@127.0.0.1:1/nope?timeout=1s"
	}
	cfg, err := configs.Parse([]byte(`
auth: {mode: none}
store: {dsn: "postgres://x@127.0.0.1/y"}
outboxes: [{name: `+name+`, dsn: "`+dsn+`", `+settings+`}]
`), func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	o, err := mysqloutbox.OpenRegistry(context.Background(), cfg.Outboxes[0])
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(o.Close)
	return o
}
