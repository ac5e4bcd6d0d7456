// Package catalog is what a database's catalog says about one table of a service (an outbox, an
// inbox) for the account the console connects as, in words every database shares: its columns and
// their kinds of type, its indexes, the account's rights. The adapters of each database read it
// (ops/pgpool for PostgreSQL, ops/mysqlpool for MySQL and MariaDB) and give, with it, the Dialect
// that writes a fix in that database's own syntax; console doctor judges the facts and prints the
// fixes. Nothing here reads a database.
package catalog

// TableFacts are what the catalog says about one table for the account the console connects as.
// They are read from the catalog only: nothing is tried, nothing written.
type TableFacts struct {
	User     string // the account, as the database names it (current_user)
	Database string // the database the DSN names
	Table    string // the table as configured ("outbox_event", "billing.inbox_message")
	// Qualified is the table with its schema (PostgreSQL) or database (MySQL), quoted where it
	// must be, as a GRANT names it; the configured name when the table does not exist.
	Qualified string
	Exists    bool
	Columns   map[string]string // column → its type as the database writes it; only when Exists
	// Select and Update are, for the columns asked about, whether the account may SELECT / UPDATE
	// them (a table-, database- or server-wide grant counts).
	Select  map[string]bool
	Update  map[string]bool
	Indexes []Index // valid indexes, in no particular order
	// Dialect writes the fixes in the database's syntax. Set by the adapter that read the facts.
	Dialect Dialect
}

// Index is one index of a table: its name and key columns in order (expression keys are left out).
type Index struct {
	Name    string
	Columns []string
	Primary bool
	Unique  bool
	Partial bool // has a WHERE clause (PostgreSQL); MySQL has none
}

// TypeClass is the kind of a column's type, whatever the database calls it: what console doctor
// judges a mapped column by.
type TypeClass string

// Type classes.
const (
	Integer   TypeClass = "integer"   // smallint, integer, bigint; int, tinyint, mediumint
	Numeric   TypeClass = "numeric"   // numeric, decimal (integers in them read with a cast)
	Text      TypeClass = "text"      // text, varchar, char, citext, name; tinytext … longtext
	UUID      TypeClass = "uuid"      // uuid
	Timestamp TypeClass = "timestamp" // timestamp, timestamptz; datetime, timestamp
	Date      TypeClass = "date"      // date
	JSON      TypeClass = "json"      // json, jsonb
	XML       TypeClass = "xml"       // xml
	Binary    TypeClass = "binary"    // bytea; blob, binary, varbinary
	Boolean   TypeClass = "boolean"   // boolean
	Other     TypeClass = "other"     // an enum, a domain, a set, anything else
)

// Dialect writes, in one database's syntax, the statements console doctor prints as fixes, and
// reads that database's type names. Identifiers are quoted only where the database needs it, so a
// statement reads as a DBA would write it.
type Dialect interface {
	// Name is the database's name as a person knows it: "PostgreSQL", "MySQL/MariaDB".
	Name() string
	// Class is the kind of a type as the facts' Columns write it.
	Class(typ string) TypeClass
	// Grantee is the account as a GRANT names it: redrive, 'redrive'@'10.0.0.%'.
	Grantee(user string) string
	// GrantSelect gives the account SELECT on the table.
	GrantSelect(f TableFacts) string
	// GrantUpdate gives the account UPDATE on these columns of the table.
	GrantUpdate(f TableFacts, columns []string) string
	// CreateIndex creates an index named name on these columns, without blocking writers where the
	// database can.
	CreateIndex(f TableFacts, name string, columns []string) string
	// AddPrimaryKey adds a primary key on these columns.
	AddPrimaryKey(f TableFacts, columns []string) string
	// ConnectHint says what to check when the console cannot connect (dsnKey names the setting).
	ConnectHint(dsnKey string) string
	// MissingTableHint says what to check when the table is not found (tableKey names the setting).
	MissingTableHint(tableKey, user string) string
}
