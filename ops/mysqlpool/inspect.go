package mysqlpool

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/redrive/redrive/ops/catalog"
)

// InspectTable reads the catalog.TableFacts of table (a validated identifier, optionally
// database-qualified) from information_schema: selectCols and updateCols are the columns whose
// SELECT and UPDATE rights are checked, counting a column's, the table's, the database's and the
// server-wide grants of the account and of its current role. MySQL shows an account only the
// tables and columns it has some right on: one it has none on reads as missing. An error means the
// database could not be asked, not that something is missing.
func (p *Pool) InspectTable(ctx context.Context, table string, selectCols, updateCols []string) (catalog.TableFacts, error) {
	f := catalog.TableFacts{Table: table, Qualified: Qualified(table), Columns: map[string]string{},
		Select: map[string]bool{}, Update: map[string]bool{}, Dialect: Dialect{}}
	err := p.Do(ctx, func(c *sql.Conn) error {
		var role sql.NullString
		if err := c.QueryRowContext(ctx, `SELECT CURRENT_USER(), DATABASE(), CURRENT_ROLE()`).Scan(&f.User, &f.Database, &role); err != nil {
			return err
		}
		schema, name := f.Database, table
		if i := strings.IndexByte(table, '.'); i >= 0 {
			schema, name = table[:i], table[i+1:]
		}
		f.Qualified = Ident(schema) + "." + Ident(name)
		var n int
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.TABLES
			WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`, schema, name).Scan(&n); err != nil {
			return fmt.Errorf("inspect %s: %w", table, err)
		}
		if n == 0 {
			f.Qualified = Qualified(table)
			return nil
		}
		f.Exists = true
		asked := map[string]bool{}
		for _, col := range append(slices.Clone(selectCols), updateCols...) {
			asked[col] = true
		}
		if err := eachRow(ctx, c, func(r *sql.Rows) error {
			var col, typ, extra, nullable string
			var def sql.NullString
			if err := r.Scan(&col, &typ, &extra, &nullable, &def); err != nil {
				return err
			}
			f.Columns[col] = typ
			if asked[col] && onUpdate.MatchString(extra) {
				f.Columns[col] = autoUpdated(f.Qualified, col, typ, extra, nullable == "YES", def)
			}
			return nil
		}, `SELECT COLUMN_NAME, COLUMN_TYPE, EXTRA, IS_NULLABLE, COLUMN_DEFAULT FROM information_schema.COLUMNS
			WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`, schema, name); err != nil {
			return fmt.Errorf("inspect %s: columns: %w", table, err)
		}
		grantees := []string{Dialect{}.Grantee(f.User)}
		if role.Valid && role.String != "" && role.String != "NONE" {
			grantees = append(grantees, "'"+strings.ReplaceAll(role.String, "'", "''")+"'")
		}
		held := map[string]bool{} // "SELECT", "UPDATE", "SELECT col", "UPDATE col"
		in := strings.TrimSuffix(strings.Repeat("?,", len(grantees)), ",")
		args := func(extra ...any) []any {
			a := make([]any, 0, len(grantees)+len(extra))
			for _, g := range grantees {
				a = append(a, g)
			}
			return append(a, extra...)
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`SELECT PRIVILEGE_TYPE, '' FROM information_schema.USER_PRIVILEGES WHERE GRANTEE IN (` + in + `)`, args()},
			{`SELECT PRIVILEGE_TYPE, '' FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE IN (` + in + `) AND TABLE_SCHEMA = ?`, args(schema)},
			{`SELECT PRIVILEGE_TYPE, '' FROM information_schema.TABLE_PRIVILEGES WHERE GRANTEE IN (` + in + `)
				AND TABLE_SCHEMA = ? AND TABLE_NAME = ?`, args(schema, name)},
			{`SELECT PRIVILEGE_TYPE, COLUMN_NAME FROM information_schema.COLUMN_PRIVILEGES WHERE GRANTEE IN (` + in + `)
				AND TABLE_SCHEMA = ? AND TABLE_NAME = ?`, args(schema, name)},
		} {
			if err := eachRow(ctx, c, func(r *sql.Rows) error {
				var priv, col string
				if err := r.Scan(&priv, &col); err != nil {
					return err
				}
				held[strings.TrimSpace(strings.ToUpper(priv)+" "+col)] = true
				return nil
			}, q.sql, q.args...); err != nil {
				return fmt.Errorf("inspect %s: rights: %w", table, err)
			}
		}
		for _, cr := range []struct {
			cols []string
			priv string
			into map[string]bool
		}{{selectCols, "SELECT", f.Select}, {updateCols, "UPDATE", f.Update}} {
			for _, col := range cr.cols {
				if _, ok := f.Columns[col]; !ok {
					continue // reported as a missing column
				}
				cr.into[col] = held[cr.priv] || held[cr.priv+" "+col]
			}
		}
		byName := map[string]*catalog.Index{}
		var order []string
		if err := eachRow(ctx, c, func(r *sql.Rows) error {
			var idx, col string
			var nonUnique int
			if err := r.Scan(&idx, &nonUnique, &col); err != nil {
				return err
			}
			ix := byName[idx]
			if ix == nil {
				ix = &catalog.Index{Name: idx, Primary: idx == "PRIMARY", Unique: nonUnique == 0}
				byName[idx] = ix
				order = append(order, idx)
			}
			ix.Columns = append(ix.Columns, col)
			return nil
		}, `SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS
			WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME IS NOT NULL ORDER BY INDEX_NAME, SEQ_IN_INDEX`,
			schema, name); err != nil {
			return fmt.Errorf("inspect %s: indexes: %w", table, err)
		}
		for _, idx := range order {
			f.Indexes = append(f.Indexes, *byName[idx])
		}
		return nil
	})
	if err != nil {
		return f, fmt.Errorf("inspect %s: %w", table, err)
	}
	return f, nil
}

// onUpdate finds ON UPDATE in a column's EXTRA ("on update current_timestamp(6)", MySQL 8's
// "DEFAULT_GENERATED on update CURRENT_TIMESTAMP(6)").
var onUpdate = regexp.MustCompile(`(?i)\bon update\b`)

// nowExpr is a COLUMN_DEFAULT that is the current time.
var nowExpr = regexp.MustCompile(`(?i)^(current_timestamp|now|localtimestamp|localtime)(\(\d*\))?$`)

// autoUpdated is the type of a mapped column that every UPDATE of a row sets to the time of the
// update, as the doctor prints it: the type, what that breaks, and the ALTER TABLE that keeps its
// default without the ON UPDATE. Every timestamp the console maps is a moment of the row's life
// (created_at, Spring Modulith's PUBLICATION_DATE, available_at, …), never its last change;
// MariaDB before 10.10 (explicit_defaults_for_timestamp OFF) gives the first TIMESTAMP NOT NULL
// column of a table DEFAULT and ON UPDATE current_timestamp unless it says otherwise — Spring
// Modulith's PUBLICATION_DATE and namastack's created_at among them. Class reads it as a date: a
// timestamp the doctor warns about.
func autoUpdated(table, col, typ, extra string, nullable bool, def sql.NullString) string {
	upd := strings.TrimSpace(extra[onUpdate.FindStringIndex(extra)[0]:])
	null := "NOT NULL"
	if nullable {
		null = "NULL"
	}
	precision := ""
	if i := strings.IndexByte(typ, '('); i >= 0 {
		precision = typ[i:]
	}
	d := " DEFAULT " + def.String
	switch {
	case !def.Valid && nullable, strings.EqualFold(def.String, "NULL"):
		d = " DEFAULT NULL"
	case !def.Valid && strings.HasPrefix(strings.ToLower(typ), "timestamp"):
		d = " DEFAULT current_timestamp" + precision // without one, the first TIMESTAMP NOT NULL gets ON UPDATE again
	case !def.Valid:
		d = ""
	case nowExpr.MatchString(def.String), strings.HasPrefix(def.String, "'"): // an expression; MariaDB's literal, quoted
	default: // MySQL's literal, unquoted
		d = " DEFAULT '" + strings.ReplaceAll(def.String, "'", "''") + "'"
	}
	return fmt.Sprintf("%s %s: every UPDATE of a row sets it to the time of that update, so what the console reads from it "+
		"(a row's age, when it was created or published) restarts at each status change; "+
		"ALTER TABLE %s MODIFY %s %s %s%s;", typ, upd, table, Ident(col), typ, null, d)
}

// eachRow runs query on c and calls f for each row.
func eachRow(ctx context.Context, c *sql.Conn, f func(*sql.Rows) error, query string, args ...any) error {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := f(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// plainIdent is an identifier MySQL reads the same quoted or not.
var plainIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Ident quotes s with backquotes, only when it must be quoted.
func Ident(s string) string {
	if plainIdent.MatchString(s) {
		return s
	}
	return Quote(s)
}

// Quote always quotes s with backquotes, for a statement the console runs.
func Quote(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// Qualified is a configured table (table or database.table) as a statement names it.
func Qualified(table string) string {
	parts := strings.Split(table, ".")
	for i, p := range parts {
		parts[i] = Ident(p)
	}
	return strings.Join(parts, ".")
}

// QuotedTable is a configured table, every part quoted, for the console's own statements.
func QuotedTable(table string) string {
	parts := strings.Split(table, ".")
	for i, p := range parts {
		parts[i] = Quote(p)
	}
	return strings.Join(parts, ".")
}

// Dialect is MySQL's and MariaDB's catalog.Dialect: the fixes console doctor prints, in their
// syntax, and COLUMN_TYPE's names read as type classes.
type Dialect struct{}

var _ catalog.Dialect = Dialect{}

// Name is "MySQL/MariaDB".
func (Dialect) Name() string { return "MySQL/MariaDB" }

// Class reads an information_schema COLUMN_TYPE ("bigint(20)", "varchar(128)", "datetime(6)").
func (Dialect) Class(typ string) catalog.TypeClass {
	t := strings.ToLower(strings.TrimSpace(typ))
	if onUpdate.MatchString(t) {
		return catalog.Date // a time it cannot trust: autoUpdated
	}
	if i := strings.IndexAny(t, "( "); i >= 0 {
		t = t[:i]
	}
	switch t {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		return catalog.Integer
	case "decimal", "numeric", "float", "double", "real":
		return catalog.Numeric
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		return catalog.Text
	case "uuid":
		return catalog.UUID
	case "datetime", "timestamp":
		return catalog.Timestamp
	case "date":
		return catalog.Date
	case "json": // MySQL's; MariaDB's JSON is a longtext with a check
		return catalog.JSON
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return catalog.Binary
	case "bit", "bool", "boolean":
		return catalog.Boolean
	}
	return catalog.Other // an enum or a set: read as text
}

// Grantee writes CURRENT_USER()'s user@host as 'user'@'host' (a role, without a host, as 'role').
func (Dialect) Grantee(user string) string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	i := strings.LastIndexByte(user, '@')
	if i < 0 {
		return q(user)
	}
	return q(user[:i]) + "@" + q(user[i+1:])
}

func idents(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = Ident(c)
	}
	return strings.Join(q, ", ")
}

// GrantSelect is GRANT SELECT ON database.table.
func (d Dialect) GrantSelect(f catalog.TableFacts) string {
	return fmt.Sprintf("GRANT SELECT ON %s TO %s;", f.Qualified, d.Grantee(f.User))
}

// GrantUpdate is a column-level GRANT UPDATE.
func (d Dialect) GrantUpdate(f catalog.TableFacts, cols []string) string {
	return fmt.Sprintf("GRANT UPDATE (%s) ON %s TO %s;", idents(cols), f.Qualified, d.Grantee(f.User))
}

// CreateIndex builds the index online (ALGORITHM=INPLACE, LOCK=NONE): the relay keeps writing.
func (Dialect) CreateIndex(f catalog.TableFacts, name string, cols []string) string {
	return fmt.Sprintf("CREATE INDEX %s ON %s (%s) ALGORITHM=INPLACE LOCK=NONE;", Ident(name), f.Qualified, idents(cols))
}

// AddPrimaryKey is ALTER TABLE … ADD PRIMARY KEY.
func (Dialect) AddPrimaryKey(f catalog.TableFacts, cols []string) string {
	return fmt.Sprintf("ALTER TABLE %s ADD PRIMARY KEY (%s);", f.Qualified, idents(cols))
}

// ConnectHint names the URL's parts and the account's host part.
func (Dialect) ConnectHint(dsnKey string) string {
	return fmt.Sprintf("check %s (host, port, user, password, database) and that the account may connect from the console's address ('user'@'host')", dsnKey)
}

// MissingTableHint says to qualify the table with its database, and that MySQL hides a table from
// an account with no right on it.
func (d Dialect) MissingTableHint(tableKey, user string) string {
	return fmt.Sprintf("check %s; qualify it (database.table) when it is not in the URL's database, and grant %s a right on it: MySQL hides a table from an account that has none",
		tableKey, d.Grantee(user))
}
