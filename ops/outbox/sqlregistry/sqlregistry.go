// Package sqlregistry reads the registry-format outbox tables (outbox.Registry) — Spring
// Modulith's event publication registry, namastack-outbox's outbox_record and Debezium's
// insert-only outbox — over a database connection an adapter gives it: pgoutbox's (PostgreSQL)
// and mysqloutbox's (MySQL and MariaDB). The SQL of each format is written once here, in the
// database's dialect (Dialect); every statement is built from configured, validated
// identifiers, quoted. Nothing is ever written. What the two adapters share for the seed's format
// too — its Open (OpenSeed), the pool's names and size, a query's row loop — is in adapter.go.
package sqlregistry

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/catalog"
	"github.com/redrive/redrive/ops/outbox"
)

// Conn is a database as an adapter gives it: its pool, its errors in the ops kinds.
type Conn interface {
	// Query runs query and calls row for each row it returns.
	Query(ctx context.Context, query string, args []any, row func(scan func(dest ...any) error) error) error
	// ColumnTypes reads the table's columns from the catalog, lower-cased name → data type; an
	// empty map when there is no such table.
	ColumnTypes(ctx context.Context, table string) (map[string]string, error)
	// Estimate is the database's own estimate of the table's rows (planner or InnoDB statistics).
	Estimate(ctx context.Context) (float64, error)
	// Inspect reads the table's catalog facts for console doctor (outbox.Columns of the mapping).
	Inspect(ctx context.Context) (catalog.TableFacts, error)
	Close()
	// Wrap makes a driver's error an ops kind naming the outbox and op, the driver's text only
	// its internal cause.
	Wrap(op string, err error) error
}

// Dialect is how a database spells what the formats' SQL needs.
type Dialect struct {
	Postgres bool
	// Table quotes a configured table (table or schema.table); Column one column name.
	Table, Column func(string) string
}

func (d Dialect) param(i int) string {
	if d.Postgres {
		return fmt.Sprintf("$%d", i)
	}
	return "?"
}

// text reads a column as text (a PostgreSQL uuid or jsonb as its text).
func (d Dialect) text(expr string) string {
	if d.Postgres {
		return expr + "::text"
	}
	return expr
}

// when reads a timestamp column as an instant (a TIMESTAMP in the session's UTC).
func (d Dialect) when(expr string) string {
	if d.Postgres {
		return expr + "::timestamptz"
	}
	return expr
}

// age is the seconds from expr to the database's now.
func (d Dialect) age(expr string) string {
	if d.Postgres {
		return "EXTRACT(EPOCH FROM (now() - " + d.when(expr) + "))::float8"
	}
	return "TIMESTAMPDIFF(MICROSECOND, " + expr + ", NOW(6)) / 1000000"
}

// recent is "expr is within the rate window".
func (d Dialect) recent(expr string) string {
	secs := int(outbox.RateWindow / time.Second)
	if d.Postgres {
		return fmt.Sprintf("%s > now() - interval '%d seconds'", d.when(expr), secs)
	}
	return fmt.Sprintf("%s > NOW(6) - INTERVAL %d SECOND", expr, secs)
}

// Open is the registry of cfg (a format other than the seed) in d's SQL, over the adapter's store
// that newStore prepares, read through conn(store). It is each adapter's OpenRegistry.
func Open[S any](ctx context.Context, cfg configs.Outbox, d Dialect,
	newStore func(context.Context, configs.Outbox) (S, error), conn func(S) Conn) (*outbox.Outbox, error) {
	store, err := newStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	f := outbox.FormatNamed(cfg.Format)
	s := &Store{name: cfg.Name, cfg: cfg, d: d, conn: conn(store), format: f}
	return outbox.NewRegistry(settings(cfg), f, s), nil
}

// Store is one registry-format table; it implements outbox.Registry.
type Store struct {
	name   string
	cfg    configs.Outbox
	d      Dialect
	conn   Conn
	format outbox.Format
}

var _ outbox.Registry = (*Store)(nil)

// Ping checks that the table is reachable and readable.
func (s *Store) Ping(ctx context.Context) error {
	return s.conn.Wrap("ping", s.conn.Query(ctx, "SELECT 1 FROM "+s.d.Table(s.cfg.Table)+" WHERE 1 = 0", nil,
		func(func(...any) error) error { return nil }))
}

// Close releases the connections.
func (s *Store) Close() { s.conn.Close() }

// Inspect reads the table's catalog facts (its columns, the account's SELECT on the mapped ones).
func (s *Store) Inspect(ctx context.Context) (catalog.TableFacts, error) { return s.conn.Inspect(ctx) }

// col is the configured column of a logical name, quoted; "" when unmapped.
func (s *Store) col(logical string) string {
	name := s.cfg.Columns.Other[logical]
	if name == "" {
		return ""
	}
	return s.d.Column(name)
}

// shape is one read of a format's table: the expressions of a Record's fields ("" for none) and
// the condition of each state.
type shape struct {
	table                                                             string
	id, state, typ, key, agg, created, completed, retry, resubmit, at string
	errText, payload                                                  string
	// stateWhere is the condition selecting a state's rows (arguments from p).
	stateWhere func(st outbox.Status) string
	// uuidID: the id column is PostgreSQL's uuid, compared as one (an id that is no UUID names
	// no row).
	uuidID bool
}

var uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)

// layout reads what the table has (the status column of a Spring Modulith v2 registry, the id's
// type) and returns the shape of table.
func (s *Store) layout(ctx context.Context, table string) (shape, string, error) {
	types, err := s.conn.ColumnTypes(ctx, table)
	if err != nil {
		return shape{}, "", s.conn.Wrap("read the table's columns", err)
	}
	has := func(logical string) bool {
		name := s.cfg.Columns.Other[logical]
		_, ok := types[strings.ToLower(name)]
		return name != "" && ok
	}
	sh := shape{table: s.d.Table(table), id: s.col("id")}
	sh.uuidID = s.d.Postgres && types[strings.ToLower(s.cfg.Columns.Other["id"])] == "uuid"
	note := ""
	switch s.format.Name {
	case outbox.FormatSpringModulith.Name:
		sh.typ, sh.key, sh.payload = s.col("event_type"), s.col("listener_id"), s.col("serialized_event")
		sh.created, sh.completed = s.col("publication_date"), s.col("completion_date")
		v2 := has("status")
		if v2 {
			sh.state, sh.at, sh.resubmit = s.col("status"), s.col("completion_attempts"), s.col("last_resubmission_date")
		} else if len(types) > 0 {
			note = "v1 layout (no status column): incomplete publications (no completion_date) are shown as PUBLISHED"
		}
		sh.stateWhere = func(st outbox.Status) string {
			switch {
			case st == "COMPLETED":
				return sh.completed + " IS NOT NULL"
			case !v2 && st == "PUBLISHED":
				return sh.completed + " IS NULL"
			case !v2:
				return "1 = 0"
			case st == modulithUnstated:
				return sh.completed + " IS NULL AND (" + sh.state + " IS NULL OR " + sh.state + " = '" + modulithUnstated + "')"
			}
			return sh.completed + " IS NULL AND " + sh.state + " = '" + string(st) + "'"
		}
	case outbox.FormatNamastack.Name:
		sh.state, sh.typ, sh.key, sh.agg = s.col("status"), s.col("record_type"), s.col("handler_id"), s.col("record_key")
		sh.created, sh.completed, sh.retry = s.col("created_at"), s.col("completed_at"), s.col("next_retry_at")
		sh.at, sh.errText, sh.payload = s.col("failure_count"), s.col("failure_reason"), s.col("payload")
		sh.stateWhere = func(st outbox.Status) string { return sh.state + " = '" + string(st) + "'" }
	case outbox.FormatDebezium.Name:
		sh.typ, sh.key, sh.agg, sh.payload = s.col("type"), s.col("aggregateid"), s.col("aggregatetype"), s.col("payload")
		sh.created = s.col("created_at")
		sh.stateWhere = func(outbox.Status) string { return "1 = 0" }
	}
	return sh, note, nil
}

// selectList is the columns a Record is read from, in scan order.
func (s *Store) selectList(sh shape, withPayload bool) string {
	or := func(expr, none string) string {
		if expr == "" {
			return none
		}
		return expr
	}
	d := s.d
	nullText, nullTime := "CAST(NULL AS CHAR)", "CAST(NULL AS DATETIME)"
	if d.Postgres {
		nullText, nullTime = "NULL::text", "NULL::timestamptz"
	}
	textOr := func(expr string) string {
		if expr == "" {
			return nullText
		}
		return d.text(expr)
	}
	timeOr := func(expr string) string {
		if expr == "" {
			return nullTime
		}
		return d.when(expr)
	}
	payload := nullText
	if withPayload {
		payload = textOr(sh.payload)
	}
	return strings.Join([]string{d.text(sh.id), textOr(sh.state), textOr(sh.typ), textOr(sh.key), textOr(sh.agg),
		timeOr(sh.created), timeOr(sh.completed), timeOr(sh.retry), timeOr(sh.resubmit),
		or(sh.at, "0"), textOr(sh.errText), payload}, ", ")
}

func scanRecord(scan func(...any) error) (outbox.Record, error) {
	var id, state, typ, key, agg, errText, payload sql.NullString
	var created, completed, retry, resubmit sql.NullTime
	var attempts sql.NullInt64
	if err := scan(&id, &state, &typ, &key, &agg, &created, &completed, &retry, &resubmit, &attempts, &errText, &payload); err != nil {
		return outbox.Record{}, err
	}
	r := outbox.Record{ID: id.String, State: outbox.Status(state.String), Type: typ.String, Key: key.String,
		Aggregate: agg.String, Attempts: int(attempts.Int64), Payload: payload.String}
	if created.Valid {
		r.Created = created.Time
	}
	at := func(t sql.NullTime) *time.Time {
		if !t.Valid {
			return nil
		}
		v := t.Time
		return &v
	}
	r.Completed, r.NextRetry, r.Resubmit = at(completed), at(retry), at(resubmit)
	if errText.Valid {
		e := errText.String
		r.Error = &e
	}
	return r, nil
}

// modulithPublished is every incomplete publication of a v1 registry, which has no status.
const modulithPublished = "PUBLISHED"

// modulithUnstated is what Spring Modulith reads a v2 registry's NULL status as when the row has
// no completion_date (JdbcEventPublicationRepositoryV2's JdbcEventPublication.getStatus; its
// findFailedPublications selects such rows with the FAILED ones for resubmission).
const modulithUnstated = "PROCESSING"

// stated gives a Spring Modulith publication the state Spring Modulith reads it as: COMPLETED
// whenever it has a completion_date or is archived, whatever its status says (a JPA registry
// before 2.0.2 left FAILED there, spring-modulith#1521); without a status, PUBLISHED in a v1
// registry and PROCESSING in a v2 one.
func (s *Store) stated(r outbox.Record, archived, v1 bool) outbox.Record {
	if s.format.Name != outbox.FormatSpringModulith.Name {
		return r
	}
	switch {
	case archived || r.Completed != nil:
		r.State = "COMPLETED"
	case r.State == "" && v1:
		r.State = modulithPublished
	case r.State == "":
		r.State = modulithUnstated
	}
	return r
}

// Stats counts the rows per state: Spring Modulith's incomplete ones (completion_date IS NULL,
// its index) by status and its completed ones (in the archive table in archive mode; none in
// delete mode), namastack's by status (its status index), Debezium's in all; with the oldest
// incomplete row's age and the incomplete rows grouped by key and type.
func (s *Store) Stats(ctx context.Context) (outbox.RecordStats, error) {
	sh, note, err := s.layout(ctx, s.cfg.Table)
	if err != nil {
		return outbox.RecordStats{}, err
	}
	rs := outbox.RecordStats{Counts: map[outbox.Status]int64{}, Note: note}
	var oldest sql.NullFloat64
	add := func(state string, n int64, age sql.NullFloat64) {
		rs.Counts[outbox.Status(state)] += n
		rs.Total += n
		if age.Valid && (!oldest.Valid || age.Float64 > oldest.Float64) {
			oldest = age
		}
	}
	addRow := func(scan func(...any) error) error { // a row of (state, count, oldest age)
		var st string
		var n int64
		var age sql.NullFloat64
		if err := scan(&st, &n, &age); err != nil {
			return err
		}
		add(st, n, age)
		return nil
	}
	q := func(op, query string, row func(scan func(...any) error) error) error {
		return s.conn.Wrap(op, s.conn.Query(ctx, query, nil, row))
	}
	var incomplete, groupKey string
	switch s.format.Name {
	case outbox.FormatSpringModulith.Name:
		incomplete = sh.completed + " IS NULL"
		state, group := "'"+modulithPublished+"'", "" // v1: no status, one state
		if sh.state != "" {
			state = "COALESCE(" + s.d.text(sh.state) + ", '" + modulithUnstated + "')"
			groupKey, group = state, " GROUP BY "+state
		}
		err = q("count the incomplete publications", "SELECT "+state+", count(*), max("+s.d.age(sh.created)+") FROM "+sh.table+
			" WHERE "+incomplete+group, addRow)
		if err != nil {
			return rs, err
		}
		switch s.cfg.CompletionMode {
		case "delete":
			rs.CompletedGone = true
		case "archive":
			var n int64
			if err := q("count the archived publications", "SELECT count(*) FROM "+s.d.Table(s.cfg.ArchiveTable), func(scan func(...any) error) error {
				return scan(&n)
			}); err != nil {
				return rs, err
			}
			rs.Counts["COMPLETED"] += n
			rs.Total += n
		}
		// The completed publications are the bulk of a registry in update mode: counted exactly on a
		// small table, else the database's estimate minus the incomplete ones (no scan of millions).
		est, err := s.conn.Estimate(ctx)
		if err != nil {
			return rs, s.conn.Wrap("estimate the table's rows", err)
		}
		var n int64
		if est > outbox.ExactSentBelow {
			n, rs.CompletedIsEstimate = max(0, int64(est)-rs.Total), true
		} else if err := q("count the completed publications", "SELECT count(*) FROM "+sh.table+" WHERE "+sh.completed+" IS NOT NULL",
			func(scan func(...any) error) error { return scan(&n) }); err != nil {
			return rs, err
		}
		rs.Counts["COMPLETED"] += n
		rs.Total += n
	case outbox.FormatNamastack.Name:
		incomplete = sh.state + " <> 'COMPLETED'"
		groupKey = s.d.text(sh.state)
		err = q("count the records", "SELECT "+s.d.text(sh.state)+", count(*), max(CASE WHEN "+incomplete+" THEN "+s.d.age(sh.created)+
			" END) FROM "+sh.table+" GROUP BY "+sh.state, addRow)
		if err != nil {
			return rs, err
		}
	case outbox.FormatDebezium.Name:
		ageExpr := "NULL"
		if sh.created != "" {
			ageExpr = "max(" + s.d.age(sh.created) + ")"
		}
		err = q("count the rows", "SELECT count(*), "+ageExpr+" FROM "+sh.table, func(scan func(...any) error) error {
			var n int64
			var age sql.NullFloat64
			if err := scan(&n, &age); err != nil {
				return err
			}
			add("", n, age)
			return nil
		})
		if err != nil {
			return rs, err
		}
		delete(rs.Counts, "")
		if sh.created != "" {
			var n int64
			if err := q("count the recent rows", "SELECT count(*) FROM "+sh.table+" WHERE "+s.d.recent(sh.created),
				func(scan func(...any) error) error { return scan(&n) }); err != nil {
				return rs, err
			}
			rs.RecentRows = &n
		}
		incomplete = "1 = 1"
	}
	if oldest.Valid {
		age := time.Duration(oldest.Float64 * float64(time.Second))
		rs.OldestAge = &age
	}
	if s.format.Name == outbox.FormatNamastack.Name && sh.created != "" {
		var n int64
		if err := q("count the recent records", "SELECT count(*) FROM "+sh.table+" WHERE "+s.d.recent(sh.created),
			func(scan func(...any) error) error { return scan(&n) }); err != nil {
			return rs, err
		}
		rs.RecentRows = &n
	}
	if s.format.Name == outbox.FormatSpringModulith.Name {
		// A publication of the window is incomplete or was completed after it was published, so
		// within the window too: both are ranges of Spring Modulith's completion_date index.
		var n int64
		if err := q("count the recent publications", "SELECT count(*) FROM "+sh.table+" WHERE ("+sh.completed+" IS NULL OR "+
			s.d.recent(sh.completed)+") AND "+s.d.recent(sh.created),
			func(scan func(...any) error) error { return scan(&n) }); err != nil {
			return rs, err
		}
		rs.RecentRows = &n
	}
	// The incomplete rows per state, key and type: the view a person fixes one listener from.
	key, typ, at := s.d.text(sh.key), s.d.text(sh.typ), "0"
	if sh.at != "" {
		at = "max(" + sh.at + ")"
	}
	ageExpr := "0"
	if sh.created != "" {
		ageExpr = "max(" + s.d.age(sh.created) + ")"
	}
	selectState, groupBy := groupKey, groupKey+", "+key+", "+typ
	switch {
	case s.format.Name == outbox.FormatDebezium.Name: // no states: its rows per aggregate type and type
		key = s.d.text(sh.agg)
		selectState, groupBy = "''", key+", "+typ
	case groupKey == "": // a v1 registry: every incomplete publication is PUBLISHED
		selectState, groupBy = "'"+modulithPublished+"'", key+", "+typ
	}
	err = q("group the incomplete rows", fmt.Sprintf("SELECT %s, %s, %s, count(*), %s, %s FROM %s WHERE %s GROUP BY %s ORDER BY count(*) DESC, 2, 3 LIMIT %d",
		selectState, key, typ, ageExpr, at, sh.table, incomplete, groupBy, outbox.MaxGroups),
		func(scan func(...any) error) error {
			var g outbox.RecordGroup
			var st, k, t sql.NullString
			var age sql.NullFloat64
			var attempts sql.NullInt64
			if err := scan(&st, &k, &t, &g.Count, &age, &attempts); err != nil {
				return err
			}
			g.State, g.Key, g.Type = outbox.Status(st.String), k.String, t.String
			g.Oldest, g.MaxAttempts = time.Duration(age.Float64*float64(time.Second)), int(attempts.Int64)
			rs.Groups = append(rs.Groups, g)
			return nil
		})
	return rs, err
}

// Records lists the records matching f, newest first (by creation time, then id).
func (s *Store) Records(ctx context.Context, f outbox.RecordFilter) ([]outbox.Record, error) {
	table := s.cfg.Table
	if s.format.Name == outbox.FormatSpringModulith.Name && s.cfg.CompletionMode == "archive" && f.State == "COMPLETED" {
		table = s.cfg.ArchiveTable
	}
	sh, _, err := s.layout(ctx, table)
	if err != nil {
		return nil, err
	}
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return s.d.param(len(args)) }
	if f.State != "" {
		if table == s.cfg.ArchiveTable {
			where = append(where, "1 = 1")
		} else {
			where = append(where, sh.stateWhere(f.State))
		}
	}
	if f.Type != "" && sh.typ != "" {
		where = append(where, sh.typ+" = "+arg(f.Type))
	}
	if f.Key != "" && sh.key != "" {
		where = append(where, sh.key+" = "+arg(f.Key))
	}
	order := s.d.text(sh.id) + " DESC"
	if sh.created != "" {
		order = sh.created + " DESC, " + order
	}
	if c := f.Cursor; c != nil {
		if sh.created != "" {
			t1, t2 := arg(c.Created), arg(c.Created)
			where = append(where, "("+s.d.when(sh.created)+" < "+t1+" OR ("+s.d.when(sh.created)+" = "+t2+" AND "+s.d.text(sh.id)+" < "+arg(c.ID)+"))")
		} else {
			where = append(where, s.d.text(sh.id)+" < "+arg(c.ID))
		}
	}
	query := "SELECT " + s.selectList(sh, false) + " FROM " + sh.table
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += fmt.Sprintf(" ORDER BY %s LIMIT %d", order, f.Limit)
	var out []outbox.Record
	err = s.conn.Query(ctx, query, args, func(scan func(...any) error) error {
		r, err := scanRecord(scan)
		out = append(out, s.stated(r, table == s.cfg.ArchiveTable, sh.state == ""))
		return err
	})
	return out, s.conn.Wrap("list the records", err)
}

// Record reads one record with its payload (in the archive table too, in archive mode).
func (s *Store) Record(ctx context.Context, id string) (outbox.Record, error) {
	tables := []string{s.cfg.Table}
	if s.format.Name == outbox.FormatSpringModulith.Name && s.cfg.CompletionMode == "archive" {
		tables = append(tables, s.cfg.ArchiveTable)
	}
	for _, table := range tables {
		sh, _, err := s.layout(ctx, table)
		if err != nil {
			return outbox.Record{}, err
		}
		if sh.uuidID && !uuidRe.MatchString(id) {
			break // no row of a uuid column has it
		}
		cond := sh.id + " = " + s.d.param(1)
		if sh.uuidID {
			cond = sh.id + " = " + s.d.param(1) + "::uuid"
		}
		var r outbox.Record
		found := false
		err = s.conn.Query(ctx, "SELECT "+s.selectList(sh, true)+" FROM "+sh.table+" WHERE "+cond, []any{id},
			func(scan func(...any) error) error {
				var err error
				r, err = scanRecord(scan)
				found = true
				return err
			})
		if err != nil {
			return outbox.Record{}, s.conn.Wrap("read the record", err)
		}
		if found {
			return s.stated(r, table == s.cfg.ArchiveTable, sh.state == ""), nil
		}
	}
	return outbox.Record{}, ops.NotFound("record %q not found in outbox %q", ops.Echo(id), s.name)
}
