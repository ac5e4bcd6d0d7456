package pgoutbox

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/sqlregistry"
)

// OpenRegistry is the registry-format outbox of cfg (spring-modulith, namastack or debezium; a
// postgres:// DSN), read with sqlregistry's SQL over this adapter's pool.
func OpenRegistry(ctx context.Context, cfg configs.Outbox) (*outbox.Outbox, error) {
	d := sqlregistry.Dialect{Postgres: true,
		Table:  func(t string) string { return pgx.Identifier(strings.Split(t, ".")).Sanitize() },
		Column: func(c string) string { return pgx.Identifier{c}.Sanitize() }}
	return sqlregistry.Open(ctx, cfg, d, New, func(s *Store) sqlregistry.Conn { return registryConn{s} })
}

// registryConn is the Store's pool and errors as sqlregistry.Conn (its Inspect and Close are the
// Store's).
type registryConn struct{ *Store }

func (c registryConn) Query(ctx context.Context, query string, args []any, row func(scan func(...any) error) error) error {
	rows, err := c.pool.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return sqlregistry.EachRow(rows, row)
}

func (c registryConn) ColumnTypes(ctx context.Context, table string) (map[string]string, error) {
	out := map[string]string{}
	err := c.Query(ctx, `SELECT lower(a.attname), t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`,
		[]any{pgx.Identifier(strings.Split(table, ".")).Sanitize()}, func(scan func(...any) error) error {
			var name, typ string
			if err := scan(&name, &typ); err != nil {
				return err
			}
			out[name] = typ
			return nil
		})
	return out, err
}

func (c registryConn) Estimate(ctx context.Context) (float64, error) {
	var n float64
	err := c.pool.QueryRow(ctx, c.q.estimate).Scan(&n)
	return n, err
}
func (c registryConn) Wrap(op string, err error) error { return c.wrap(op, err) }
