package doctor

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/pgpool"
	"github.com/redrive/redrive/ops/store"
)

// plainIdent is an identifier PostgreSQL reads the same quoted or not.
var plainIdent = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// ident quotes s for a statement to copy, only when it must be quoted.
func ident(s string) string {
	if plainIdent.MatchString(s) {
		return s
	}
	return pgx.Identifier{s}.Sanitize()
}

func (d *Doctor) checkStore(ctx context.Context, r *recorder) {
	var f store.Facts
	var err error
	if d.ad.Store != nil {
		f, err = d.ad.Store.Inspect(ctx)
	} else {
		f, err = store.Inspect(ctx, string(d.cfg.Store.DSN))
	}
	if err != nil {
		r.fail("connect", "check store.dsn (host, port, user, password, database) and that PostgreSQL accepts the console's address (pg_hba.conf)",
			"cannot connect: %s", short(err))
		return
	}
	r.ok("connect", "database %s as %s", f.Database, f.User)
	switch {
	case !f.SchemaExists:
		r.ok("migrations", "schema %s does not exist yet: the first start creates it and applies %d migrations", store.Schema, len(f.Pending))
	case len(f.Pending) > 0:
		r.warn("migrations", "nothing to do by hand: the next start applies them (under a lock, once for all replicas)",
			"%d of %d migrations pending: %s", len(f.Pending), len(f.Applied)+len(f.Pending), strings.Join(f.Pending, ", "))
	default:
		r.ok("migrations", "all %d applied", len(f.Applied))
	}
	user := ident(f.User)
	if !f.SchemaExists {
		if f.CreateOnDatabase {
			r.ok("migration rights", "%s may create schema %s in database %s", f.User, store.Schema, f.Database)
		} else {
			r.fail("migration rights", fmt.Sprintf("GRANT CREATE ON DATABASE %s TO %s;", ident(f.Database), user),
				"%s may not create schema %s in database %s: the console cannot start", f.User, store.Schema, f.Database)
		}
		return
	}
	var fixes []string
	var why []string
	if !f.CreateOnSchema {
		fixes = append(fixes, fmt.Sprintf("GRANT USAGE, CREATE ON SCHEMA %s TO %s;", store.Schema, user))
		why = append(why, fmt.Sprintf("no CREATE on schema %s (owned by %s)", store.Schema, f.SchemaOwner))
	}
	for _, t := range f.NotOwned {
		fixes = append(fixes, fmt.Sprintf("ALTER TABLE %s.%s OWNER TO %s;", store.Schema, ident(t), user))
	}
	if len(f.NotOwned) > 0 {
		why = append(why, fmt.Sprintf("does not own %s", strings.Join(f.NotOwned, ", ")))
	}
	switch {
	case len(fixes) == 0:
		r.ok("migration rights", "%s may run migrations in schema %s", f.User, store.Schema)
	case len(f.Pending) > 0:
		r.fail("migration rights", strings.Join(fixes, "\n"), "%s %s: the pending migrations will fail at start", f.User, strings.Join(why, "; "))
	default:
		r.warn("migration rights", strings.Join(fixes, "\n"), "%s %s: the next version's migrations would fail", f.User, strings.Join(why, "; "))
	}
}

func (d *Doctor) checkOutbox(ctx context.Context, r *recorder, i int, cfg configs.Outbox) {
	key := fmt.Sprintf("outboxes[%d]", i)
	o, release, ok := adapter(r, d.ad.Outboxes, cfg.Name, "check "+key+".dsn", func() (*outbox.Outbox, error) { return outbox.Open(ctx, cfg) })
	if !ok {
		return
	}
	defer release()
	f, err := o.Inspect(ctx, cfg)
	if !tableChecks(r, key, "dsn", f, err) {
		return
	}
	cols := outbox.Columns(cfg.Columns)
	var missing, bad, odd []string
	failed := false
	for _, c := range cols {
		typ, ok := f.Columns[c.Name]
		if !ok {
			missing = append(missing, fmt.Sprintf("%s.columns.%s = %s", key, c.Logical, c.Name))
			failed = true
			continue
		}
		switch typeFit(c.Kind, typ) {
		case Failed:
			bad = append(bad, fmt.Sprintf("%s is %s, needs %s", c.Name, typ, kindWants[c.Kind]))
			failed = true
		case Warning:
			odd = append(odd, fmt.Sprintf("%s is %s (read as %s)", c.Name, typ, c.Kind))
		}
	}
	switch {
	case failed:
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "no such column: "+strings.Join(missing, ", "))
		}
		parts = append(parts, bad...)
		r.fail("columns", "map the logical columns to the table's real names under "+key+".columns, or fix the column types",
			"%s", strings.Join(append(parts, odd...), "; "))
	case len(odd) > 0:
		r.warn("columns", "", "all %d mapped columns exist; %s", len(cols), strings.Join(odd, "; "))
	default:
		r.ok("columns", "all %d mapped columns exist with usable types", len(cols))
	}

	status, avail := cfg.Columns.Status, cfg.Columns.AvailableAt
	idx := slices.IndexFunc(f.Indexes, func(ix pgpool.Index) bool {
		return len(ix.Columns) >= 2 && ix.Columns[0] == status && ix.Columns[1] == avail && !ix.Partial
	})
	if idx >= 0 {
		r.ok("index ("+status+", "+avail+")", "%s", f.Indexes[idx].Name)
	} else {
		parts := strings.Split(cfg.Table, ".")
		r.warn("index ("+status+", "+avail+")",
			fmt.Sprintf("CREATE INDEX CONCURRENTLY %s ON %s (%s, %s);", ident("idx_"+parts[len(parts)-1]+"_ready"), f.Qualified, ident(status), ident(avail)),
			"no index on (%s, %s): the relay's claim and the console's counts scan the whole table", status, avail)
	}

	selectCheck(r, f)
	var noUpdate []string
	for _, c := range cols {
		if c.Repaired && f.Columns[c.Name] != "" && !f.Update[c.Name] {
			noUpdate = append(noUpdate, c.Name)
		}
	}
	var repaired []string
	for _, c := range cols {
		if c.Repaired {
			repaired = append(repaired, c.Name)
		}
	}
	switch {
	case len(noUpdate) == 0:
		r.ok("UPDATE", "%s may update %s (release leases, requeue)", f.User, strings.Join(repaired, ", "))
	case d.cfg.ReadOnly:
		r.warn("UPDATE", grantUpdate(noUpdate, f), "%s may not update %s: not needed while read_only is true", f.User, strings.Join(noUpdate, ", "))
	default:
		r.fail("UPDATE", grantUpdate(noUpdate, f), "%s may not update %s: releasing a stuck lease and requeueing DEAD events will fail", f.User, strings.Join(noUpdate, ", "))
	}
}

func grantUpdate(cols []string, f pgpool.TableFacts) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = ident(c)
	}
	return fmt.Sprintf("GRANT UPDATE (%s) ON %s TO %s;", strings.Join(q, ", "), f.Qualified, ident(f.User))
}

// tableChecks reports the connection and the table's existence; false when nothing more can be
// checked.
func tableChecks(r *recorder, key, dsnKey string, f pgpool.TableFacts, err error) bool {
	if err != nil {
		r.fail("connect", fmt.Sprintf("check %s.%s (host, port, user, password, database) and pg_hba.conf", key, dsnKey),
			"cannot connect: %s", short(err))
		return false
	}
	r.ok("connect", "database %s as %s", f.Database, f.User)
	if !f.Exists {
		r.fail("table", fmt.Sprintf("check %s.table; schema-qualify it (schema.table) when it is not on %s's search_path", key, f.User),
			"table %s does not exist in database %s (or %s may not see it)", f.Table, f.Database, f.User)
		return false
	}
	r.ok("table", "%s", f.Qualified)
	return true
}

func selectCheck(r *recorder, f pgpool.TableFacts) {
	var no []string
	for c, ok := range f.Select {
		if !ok {
			no = append(no, c)
		}
	}
	slices.Sort(no)
	if len(no) == 0 {
		r.ok("SELECT", "%s may read the table", f.User)
		return
	}
	r.fail("SELECT", fmt.Sprintf("GRANT SELECT ON %s TO %s;", f.Qualified, ident(f.User)),
		"%s may not read %s of %s", f.User, strings.Join(no, ", "), f.Qualified)
}

var kindWants = map[outbox.ColumnKind]string{
	outbox.KindInteger:   "an integer type (integer, bigint)",
	outbox.KindText:      "a text type (text, varchar)",
	outbox.KindTimestamp: "timestamp or timestamptz",
	outbox.KindPayload:   "text, json or jsonb",
}

// typeFit judges a column's type (format_type) for its use.
func typeFit(k outbox.ColumnKind, typ string) Status {
	t := strings.ToLower(typ)
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(t, p) {
				return true
			}
		}
		return false
	}
	switch k {
	case outbox.KindInteger:
		switch {
		case has("smallint", "integer", "bigint"):
			return OK
		case has("numeric"):
			return Warning
		}
		return Failed
	case outbox.KindTimestamp:
		switch {
		case has("timestamp"):
			return OK
		case has("date"):
			return Warning
		}
		return Failed
	case outbox.KindPayload:
		switch {
		case has("text", "character", "json", "jsonb", "xml"):
			return OK
		case has("bytea"):
			return Warning
		}
		return Warning
	default:
		switch {
		case has("text", "character", "uuid", "citext", "name"):
			return OK
		case has("bigint", "integer", "smallint", "numeric", "bytea", "boolean", "json", "timestamp"):
			return Failed
		}
		return Warning // an enum or a domain: read as text
	}
}

func (d *Doctor) checkInbox(ctx context.Context, r *recorder, i int, c configs.Consumer) {
	key := fmt.Sprintf("consumers[%d].inbox", i)
	in, release, ok := adapter(r, d.ad.Inboxes, c.Name, "check "+key+".dsn", func() (*inbox.Inbox, error) { return inbox.Open(ctx, c.Name, *c.Inbox) })
	if !ok {
		return
	}
	defer release()
	f, err := in.Inspect(ctx, *c.Inbox)
	if !tableChecks(r, key, "dsn", f, err) {
		return
	}
	cols := c.Inbox.Columns
	var missing []string
	for _, m := range []struct{ logical, name string }{{"message_id", cols.MessageID}, {"consumer", cols.Consumer},
		{"received_at", cols.ReceivedAt}, {"processed_at", cols.ProcessedAt}} {
		if _, ok := f.Columns[m.name]; !ok {
			missing = append(missing, fmt.Sprintf("%s.columns.%s = %s", key, m.logical, m.name))
		}
	}
	if len(missing) > 0 {
		r.fail("columns", "map the logical columns to the table's real names under "+key+".columns",
			"no such column: %s", strings.Join(missing, ", "))
	} else {
		r.ok("columns", "message_id, consumer, received_at, processed_at exist")
	}
	key2 := []string{cols.MessageID, cols.Consumer}
	pk := slices.IndexFunc(f.Indexes, func(ix pgpool.Index) bool {
		return (ix.Primary || ix.Unique) && !ix.Partial && len(ix.Columns) == 2 &&
			slices.Contains(ix.Columns, key2[0]) && slices.Contains(ix.Columns, key2[1])
	})
	switch {
	case pk >= 0 && f.Indexes[pk].Primary:
		r.ok("primary key", "(%s)", strings.Join(f.Indexes[pk].Columns, ", "))
	case pk >= 0:
		r.ok("primary key", "unique index %s on (%s)", f.Indexes[pk].Name, strings.Join(f.Indexes[pk].Columns, ", "))
	default:
		r.warn("primary key", fmt.Sprintf("ALTER TABLE %s ADD PRIMARY KEY (%s, %s);", f.Qualified, ident(key2[0]), ident(key2[1])),
			"no primary key on (%s, %s): a consumer can record a message twice, and each look-up scans the table", key2[0], key2[1])
	}
	selectCheck(r, f)
}
