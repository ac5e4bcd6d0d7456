package pgpool

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops/catalog"
)

// TableFacts are what the catalog says about one table for the role the pool connects as
// (catalog.TableFacts); InspectTable reads them from pg_catalog and the has_*_privilege functions
// only: nothing is tried, nothing written.
type TableFacts = catalog.TableFacts

// Index is one index of a table (catalog.Index).
type Index = catalog.Index

// InspectTable reads the TableFacts of table (validated identifier, optionally schema-qualified):
// selectCols and updateCols are the columns whose SELECT and UPDATE rights are checked. An error
// means the database could not be asked (connection, login), not that something is missing.
func (p *Pool) InspectTable(ctx context.Context, table string, selectCols, updateCols []string) (TableFacts, error) {
	f := TableFacts{Table: table, Qualified: pgx.Identifier(strings.Split(table, ".")).Sanitize(),
		Columns: map[string]string{}, Select: map[string]bool{}, Update: map[string]bool{}, Dialect: Dialect{}}
	var oid *uint32
	var qualified *string
	err := p.QueryRow(ctx, `SELECT current_user::text, current_database()::text, to_regclass($1)::oid,
			(SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c
			 JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1))`,
		f.Qualified).Scan(&f.User, &f.Database, &oid, &qualified)
	if err != nil {
		return f, fmt.Errorf("inspect %s: %w", table, err)
	}
	if oid == nil {
		return f, nil
	}
	f.Exists = true
	if qualified != nil {
		f.Qualified = *qualified
	}
	rows, err := p.Query(ctx, `SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped`, *oid)
	if err != nil {
		return f, fmt.Errorf("inspect %s: columns: %w", table, err)
	}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return f, fmt.Errorf("inspect %s: columns: %w", table, err)
		}
		f.Columns[name] = typ
	}
	if err := rows.Err(); err != nil {
		return f, fmt.Errorf("inspect %s: columns: %w", table, err)
	}
	for _, c := range []struct {
		cols []string
		priv string
		into map[string]bool
	}{{selectCols, "SELECT", f.Select}, {updateCols, "UPDATE", f.Update}} {
		for _, col := range c.cols {
			if _, ok := f.Columns[col]; !ok {
				continue // reported as a missing column
			}
			var ok bool
			if err := p.QueryRow(ctx, `SELECT has_column_privilege($1::oid, $2::text, $3::text)`, *oid, col, c.priv).Scan(&ok); err != nil {
				return f, fmt.Errorf("inspect %s: %s on %s: %w", table, c.priv, col, err)
			}
			c.into[col] = ok
		}
	}
	rows, err = p.Query(ctx, `SELECT ci.relname::text, i.indisprimary, i.indisunique, i.indpred IS NOT NULL,
			coalesce((SELECT array_agg(a.attname::text ORDER BY k.ord)
			 FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
			 JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum), '{}')
		FROM pg_index i JOIN pg_class ci ON ci.oid = i.indexrelid
		WHERE i.indrelid = $1 AND i.indisvalid`, *oid)
	if err != nil {
		return f, fmt.Errorf("inspect %s: indexes: %w", table, err)
	}
	for rows.Next() {
		var ix Index
		if err := rows.Scan(&ix.Name, &ix.Primary, &ix.Unique, &ix.Partial, &ix.Columns); err != nil {
			rows.Close()
			return f, fmt.Errorf("inspect %s: indexes: %w", table, err)
		}
		f.Indexes = append(f.Indexes, ix)
	}
	if err := rows.Err(); err != nil {
		return f, fmt.Errorf("inspect %s: indexes: %w", table, err)
	}
	return f, nil
}
