package mysqloutbox

import (
	"context"
	"database/sql"
	"strings"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/mysqlpool"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/sqlregistry"
)

// OpenRegistry is the registry-format outbox of cfg (spring-modulith, namastack or debezium; a
// mysql:// DSN), read with sqlregistry's SQL over this adapter's pool.
func OpenRegistry(ctx context.Context, cfg configs.Outbox) (*outbox.Outbox, error) {
	d := sqlregistry.Dialect{Table: mysqlpool.QuotedTable, Column: mysqlpool.Quote}
	return sqlregistry.Open(ctx, cfg, d, New, func(s *Store) sqlregistry.Conn { return registryConn{s} })
}

// registryConn is the Store's pool and errors as sqlregistry.Conn (its Inspect and Close are the
// Store's).
type registryConn struct{ *Store }

func (c registryConn) Query(ctx context.Context, query string, args []any, row func(scan func(...any) error) error) error {
	return c.pool.Do(ctx, func(conn *sql.Conn) error {
		rows, err := conn.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		return sqlregistry.EachRow(rows, row)
	})
}

func (c registryConn) ColumnTypes(ctx context.Context, table string) (map[string]string, error) {
	schema, name := any(nil), table
	if i := strings.IndexByte(table, '.'); i >= 0 {
		schema, name = table[:i], table[i+1:]
	}
	out := map[string]string{}
	err := c.Query(ctx, `SELECT LOWER(COLUMN_NAME), DATA_TYPE FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?`, []any{schema, name}, func(scan func(...any) error) error {
		var col, typ string
		if err := scan(&col, &typ); err != nil {
			return err
		}
		out[col] = typ
		return nil
	})
	return out, err
}

func (c registryConn) Estimate(ctx context.Context) (float64, error) {
	var n float64
	err := c.row(ctx, c.q.estimate, c.q.estimateArgs, &n)
	return n, err
}
func (c registryConn) Wrap(op string, err error) error { return c.wrap(op, err) }
