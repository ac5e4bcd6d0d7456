package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/catalog"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/outbox"
)

// The checks of the services' tables — outboxes and inboxes, in PostgreSQL or MySQL/MariaDB. The
// facts come from the adapter's Inspect (the catalog only); each fix is written by the facts'
// Dialect, in the syntax of the database it is for.

func (d *Doctor) checkOutbox(ctx context.Context, r *recorder, i int, cfg configs.Outbox) {
	key := fmt.Sprintf("outboxes[%d]", i)
	o, release, ok := adapter(r, d.ad.Outboxes, cfg.Name, "check "+key+".dsn", func() (*outbox.Outbox, error) {
		if d.ad.OpenOutbox == nil {
			return nil, fmt.Errorf("outbox %s: the doctor was given no way to open it", cfg.Name)
		}
		return d.ad.OpenOutbox(ctx, cfg)
	})
	if !ok {
		return
	}
	defer release()
	f, err := o.Inspect(ctx)
	if !tableChecks(r, key, "dsn", f, err) {
		return
	}
	cols := outbox.Columns(outbox.ColumnNames(cfg.Columns))
	var missing, bad, odd []string
	failed := false
	for _, c := range cols {
		typ, ok := f.Columns[c.Name]
		if !ok {
			missing = append(missing, fmt.Sprintf("%s.columns.%s = %s", key, c.Logical, c.Name))
			failed = true
			continue
		}
		switch typeFit(c.Kind, f.Dialect.Class(typ)) {
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
	if cfg.Format != "" && cfg.Format != configs.OutboxFormatSeed {
		// A registry format: the console only reads it (no repaired columns, no relay index).
		selectCheck(r, f)
		return
	}
	idx := slices.IndexFunc(f.Indexes, func(ix catalog.Index) bool {
		return len(ix.Columns) >= 2 && ix.Columns[0] == status && ix.Columns[1] == avail && !ix.Partial
	})
	if idx >= 0 {
		r.ok("index ("+status+", "+avail+")", "%s", f.Indexes[idx].Name)
	} else {
		parts := strings.Split(cfg.Table, ".")
		r.warn("index ("+status+", "+avail+")",
			f.Dialect.CreateIndex(f, "idx_"+parts[len(parts)-1]+"_ready", []string{status, avail}),
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
		r.warn("UPDATE", f.Dialect.GrantUpdate(f, noUpdate), "%s may not update %s: not needed while read_only is true", f.User, strings.Join(noUpdate, ", "))
	default:
		r.fail("UPDATE", f.Dialect.GrantUpdate(f, noUpdate), "%s may not update %s: releasing a stuck lease and requeueing DEAD events will fail", f.User, strings.Join(noUpdate, ", "))
	}
}

// tableChecks reports the connection and the table's existence; false when nothing more can be
// checked.
func tableChecks(r *recorder, key, dsnKey string, f catalog.TableFacts, err error) bool {
	if err != nil {
		hint := fmt.Sprintf("check %s.%s (host, port, user, password, database)", key, dsnKey)
		if f.Dialect != nil {
			hint = f.Dialect.ConnectHint(key + "." + dsnKey)
		}
		r.fail("connect", hint, "cannot connect: %s", short(err))
		return false
	}
	r.ok("connect", "database %s as %s", f.Database, f.User)
	if !f.Exists {
		r.fail("table", f.Dialect.MissingTableHint(key+".table", f.User),
			"table %s does not exist in database %s (or %s may not see it)", f.Table, f.Database, f.User)
		return false
	}
	r.ok("table", "%s", f.Qualified)
	return true
}

func selectCheck(r *recorder, f catalog.TableFacts) {
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
	r.fail("SELECT", f.Dialect.GrantSelect(f),
		"%s may not read %s of %s", f.User, strings.Join(no, ", "), f.Qualified)
}

var kindWants = map[outbox.ColumnKind]string{
	outbox.KindInteger:   "an integer type (integer, bigint)",
	outbox.KindText:      "a text type (text, varchar)",
	outbox.KindTimestamp: "timestamp or timestamptz",
	outbox.KindPayload:   "text, json or jsonb",
}

// typeFit judges a column's type, by its class, for its use.
func typeFit(k outbox.ColumnKind, c catalog.TypeClass) Status {
	switch k {
	case outbox.KindInteger:
		switch c {
		case catalog.Integer:
			return OK
		case catalog.Numeric:
			return Warning
		}
		return Failed
	case outbox.KindTimestamp:
		switch c {
		case catalog.Timestamp:
			return OK
		case catalog.Date:
			return Warning
		}
		return Failed
	case outbox.KindPayload:
		switch c {
		case catalog.Text, catalog.JSON, catalog.XML:
			return OK
		}
		return Warning // bytes, or something read as text
	default:
		switch c {
		case catalog.Text, catalog.UUID:
			return OK
		case catalog.Integer, catalog.Numeric, catalog.Binary, catalog.Boolean, catalog.JSON, catalog.Timestamp:
			return Failed
		}
		return Warning // an enum or a domain: read as text
	}
}

func (d *Doctor) checkInbox(ctx context.Context, r *recorder, i int, c configs.Consumer) {
	key := fmt.Sprintf("consumers[%d].inbox", i)
	in, release, ok := adapter(r, d.ad.Inboxes, c.Name, "check "+key+".dsn", func() (*inbox.Inbox, error) {
		if d.ad.OpenInbox == nil {
			return nil, fmt.Errorf("inbox %s: the doctor was given no way to open it", c.Name)
		}
		return d.ad.OpenInbox(ctx, c.Name, *c.Inbox)
	})
	if !ok {
		return
	}
	defer release()
	f, err := in.Inspect(ctx)
	if !tableChecks(r, key, "dsn", f, err) {
		return
	}
	cols := c.Inbox.Columns
	mapped := []struct{ logical, name string }{{"message_id", cols.MessageID}, {"consumer", cols.Consumer},
		{"received_at", cols.ReceivedAt}, {"processed_at", cols.ProcessedAt}}
	key2 := []string{cols.MessageID, cols.Consumer}
	if c.Inbox.Format == configs.InboxEventuate {
		mapped = []struct{ logical, name string }{{"message_id", cols.MessageID}, {"consumer_id", cols.ConsumerID},
			{"creation_time", cols.CreationTime}}
		key2 = []string{cols.ConsumerID, cols.MessageID}
	}
	var missing, logical []string
	for _, m := range mapped {
		logical = append(logical, m.logical)
		if _, ok := f.Columns[m.name]; !ok {
			missing = append(missing, fmt.Sprintf("%s.columns.%s = %s", key, m.logical, m.name))
		}
	}
	switch {
	case len(missing) > 0:
		r.fail("columns", "map the logical columns to the table's real names under "+key+".columns",
			"no such column: %s", strings.Join(missing, ", "))
	case c.Inbox.Format == configs.InboxEventuate && f.Dialect.Class(f.Columns[cols.CreationTime]) != catalog.Integer:
		r.fail("columns", "map "+key+".columns.creation_time to the BIGINT column Eventuate Tram writes",
			"%s is %s, needs an integer (Eventuate's creation_time: epoch milliseconds)", cols.CreationTime, f.Columns[cols.CreationTime])
	case c.Inbox.Format == configs.InboxEventuate:
		r.ok("columns", "%s exist; format eventuate: a row means processed (Eventuate Tram writes it in the handler's transaction), there is no in-progress state",
			strings.Join(logical, ", "))
	default:
		r.ok("columns", "%s exist", strings.Join(logical, ", "))
	}
	pk := slices.IndexFunc(f.Indexes, func(ix catalog.Index) bool {
		return (ix.Primary || ix.Unique) && !ix.Partial && len(ix.Columns) == 2 &&
			slices.Contains(ix.Columns, key2[0]) && slices.Contains(ix.Columns, key2[1])
	})
	switch {
	case pk >= 0 && f.Indexes[pk].Primary:
		r.ok("primary key", "(%s)", strings.Join(f.Indexes[pk].Columns, ", "))
	case pk >= 0:
		r.ok("primary key", "unique index %s on (%s)", f.Indexes[pk].Name, strings.Join(f.Indexes[pk].Columns, ", "))
	default:
		r.warn("primary key", f.Dialect.AddPrimaryKey(f, key2),
			"no primary key on (%s, %s): a consumer can record a message twice, and each look-up scans the table", key2[0], key2[1])
	}
	selectCheck(r, f)
}
