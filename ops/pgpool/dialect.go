package pgpool

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops/catalog"
)

// Dialect is PostgreSQL's catalog.Dialect: the fixes console doctor prints for a table in
// PostgreSQL, and format_type's names read as type classes.
type Dialect struct{}

var _ catalog.Dialect = Dialect{}

// plainIdent is an identifier PostgreSQL reads the same quoted or not.
var plainIdent = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// Ident quotes s for a statement to copy, only when it must be quoted.
func Ident(s string) string {
	if plainIdent.MatchString(s) {
		return s
	}
	return pgx.Identifier{s}.Sanitize()
}

func idents(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = Ident(c)
	}
	return strings.Join(q, ", ")
}

// Name is "PostgreSQL".
func (Dialect) Name() string { return "PostgreSQL" }

// Class reads a format_type name.
func (Dialect) Class(typ string) catalog.TypeClass {
	t := strings.ToLower(typ)
	for _, c := range []struct {
		prefixes []string
		class    catalog.TypeClass
	}{
		{[]string{"smallint", "integer", "bigint"}, catalog.Integer},
		{[]string{"numeric"}, catalog.Numeric},
		{[]string{"text", "character", "citext", "name"}, catalog.Text},
		{[]string{"uuid"}, catalog.UUID},
		{[]string{"timestamp"}, catalog.Timestamp},
		{[]string{"date"}, catalog.Date},
		{[]string{"json"}, catalog.JSON}, // json, jsonb
		{[]string{"xml"}, catalog.XML},
		{[]string{"bytea"}, catalog.Binary},
		{[]string{"boolean"}, catalog.Boolean},
	} {
		for _, p := range c.prefixes {
			if strings.HasPrefix(t, p) {
				return c.class
			}
		}
	}
	return catalog.Other // an enum or a domain: read as text
}

// Grantee is the role's name, quoted where it must be.
func (Dialect) Grantee(user string) string { return Ident(user) }

// GrantSelect is GRANT SELECT ON the table.
func (d Dialect) GrantSelect(f catalog.TableFacts) string {
	return fmt.Sprintf("GRANT SELECT ON %s TO %s;", f.Qualified, d.Grantee(f.User))
}

// GrantUpdate is a column-level GRANT UPDATE.
func (d Dialect) GrantUpdate(f catalog.TableFacts, cols []string) string {
	return fmt.Sprintf("GRANT UPDATE (%s) ON %s TO %s;", idents(cols), f.Qualified, d.Grantee(f.User))
}

// CreateIndex builds the index CONCURRENTLY: the relay keeps writing meanwhile.
func (Dialect) CreateIndex(f catalog.TableFacts, name string, cols []string) string {
	return fmt.Sprintf("CREATE INDEX CONCURRENTLY %s ON %s (%s);", Ident(name), f.Qualified, idents(cols))
}

// AddPrimaryKey is ALTER TABLE … ADD PRIMARY KEY.
func (Dialect) AddPrimaryKey(f catalog.TableFacts, cols []string) string {
	return fmt.Sprintf("ALTER TABLE %s ADD PRIMARY KEY (%s);", f.Qualified, idents(cols))
}

// ConnectHint names the DSN's parts and pg_hba.conf.
func (Dialect) ConnectHint(dsnKey string) string {
	return fmt.Sprintf("check %s (host, port, user, password, database) and pg_hba.conf", dsnKey)
}

// MissingTableHint says to schema-qualify a table that is not on the role's search_path.
func (Dialect) MissingTableHint(tableKey, user string) string {
	return fmt.Sprintf("check %s; schema-qualify it (schema.table) when it is not on %s's search_path", tableKey, user)
}
