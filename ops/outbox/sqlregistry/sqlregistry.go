// Package sqlregistry reads the registry-format outbox tables (outbox.Registry) — Spring
// Modulith's event publication registry, namastack-outbox's outbox_record and Debezium's
// insert-only outbox — over a database connection an adapter gives it: pgoutbox's (PostgreSQL)
// and mysqloutbox's (MySQL and MariaDB). The SQL of each format is written once here, in the
// database's dialect (Dialect); every statement is built from configured, validated
// identifiers, quoted. Nothing is ever written. What the two adapters share for the seed's format
// too — its Open (OpenSeed), the pool's names and size, a query's row loop — is in adapter.go.
package sqlregistry

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
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

// olderThan is "expr is more than age before the database's now".
func (d Dialect) olderThan(expr string, age time.Duration) string {
	if d.Postgres {
		return fmt.Sprintf("%s < now() - interval '%d microseconds'", d.when(expr), age.Microseconds())
	}
	return fmt.Sprintf("%s < NOW(6) - INTERVAL %d MICROSECOND", expr, age.Microseconds())
}

// equal is "expr equals the value v" byte for byte, v's parameters made by arg. MySQL's = compares
// under the column's collation, which may ignore case, accents and trailing spaces: it keeps its
// index seek and a comparison of the bytes (in utf8mb4, the connection's character set) makes it
// exact.
func (d Dialect) equal(expr string, v any, arg func(any) string) string {
	if d.Postgres {
		return expr + " = " + arg(v)
	}
	return expr + " = " + arg(v) + " AND CAST(CONVERT(" + expr + " USING utf8mb4) AS BINARY) = CAST(" + arg(v) + " AS BINARY)"
}

// estimate is the query of the database's estimate of a table's rows (planner statistics,
// InnoDB's TABLE_ROWS), 0 when it has none, and its arguments.
func (d Dialect) estimate(table string) (string, []any) {
	if d.Postgres {
		return `SELECT coalesce(max(greatest(reltuples, 0)), 0)::float8 FROM pg_class WHERE oid = to_regclass($1)`, []any{d.Table(table)}
	}
	schema, name := any(nil), table
	if db, t, ok := strings.Cut(table, "."); ok {
		schema, name = db, t
	}
	return `SELECT coalesce(max(TABLE_ROWS), 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = coalesce(?, DATABASE()) AND TABLE_NAME = ?`,
		[]any{schema, name}
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
	o := outbox.NewRegistry(settings(cfg), f, s)
	s.staleAfter = o.StaleReadyAfter // a config reload changes it in place
	return o, nil
}

// Store is one registry-format table; it implements outbox.Registry.
type Store struct {
	name   string
	cfg    configs.Outbox
	d      Dialect
	conn   Conn
	format outbox.Format
	// staleAfter is the outbox's stale_ready_after now: how long a v1 Spring Modulith
	// publication may stay incomplete before it is STALE.
	staleAfter func() time.Duration
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
// the condition of each state. state is the expression of a row's state: the status column, or
// for Spring Modulith the state it reads a row as (modulithState); status is Spring Modulith's
// status column, "" in a v1 registry.
type shape struct {
	table                                                             string
	id, state, typ, key, agg, created, completed, retry, resubmit, at string
	errText, payload, status                                          string
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
		if has("status") {
			sh.status, sh.at, sh.resubmit = s.col("status"), s.col("completion_attempts"), s.col("last_resubmission_date")
		} else if len(types) > 0 {
			note = fmt.Sprintf("v1 layout (no status column): incomplete publications (no completion_date) are shown as PUBLISHED, "+
				"and as STALE once older than stale_ready_after (%s)", s.staleAfter())
		}
		sh.state = s.modulithState(sh)
		sh.stateWhere = s.modulithWhere(sh)
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

// modulithState is the state of a Spring Modulith publication as the SQL expression that reads
// it. In a v2 registry, its status whatever its completion_date says, as Spring Modulith reads
// it (JdbcEventPublicationRepositoryV2's JdbcEventPublication takes the status first, its
// findFailedPublications selects STATUS = 'FAILED' and its markResubmitted has no completion-date
// guard: a FAILED publication with a completion_date is run again); without a status, COMPLETED
// with a completion_date, else STRANDED (Spring Modulith's PROCESSING, which nothing resubmits:
// outbox.ModulithStranded). In a v1 registry: COMPLETED with a completion_date, else STALE once
// older than stale_ready_after, else PUBLISHED.
func (s *Store) modulithState(sh shape) string {
	if sh.status != "" {
		return "COALESCE(" + s.d.text(sh.status) + ", CASE WHEN " + sh.completed + " IS NULL THEN '" +
			string(outbox.ModulithStranded) + "' ELSE 'COMPLETED' END)"
	}
	return "CASE WHEN " + sh.completed + " IS NOT NULL THEN 'COMPLETED' WHEN " + s.d.olderThan(sh.created, s.staleAfter()) +
		" THEN '" + string(outbox.ModulithStale) + "' ELSE 'PUBLISHED' END"
}

// modulithWhere is the condition of each of modulithState's states, on the completion_date index
// where one side of it is an incomplete row.
func (s *Store) modulithWhere(sh shape) func(outbox.Status) string {
	return func(st outbox.Status) string {
		incomplete := sh.completed + " IS NULL"
		if sh.status == "" { // v1
			switch st {
			case "COMPLETED":
				return sh.completed + " IS NOT NULL"
			case outbox.ModulithStale:
				return incomplete + " AND " + s.d.olderThan(sh.created, s.staleAfter())
			case "PUBLISHED":
				return incomplete + " AND NOT (" + s.d.olderThan(sh.created, s.staleAfter()) + ")"
			}
			return "1 = 0"
		}
		switch st {
		case "COMPLETED":
			return "(" + sh.status + " = 'COMPLETED' OR (" + sh.status + " IS NULL AND " + sh.completed + " IS NOT NULL))"
		case outbox.ModulithStranded:
			return incomplete + " AND " + sh.status + " IS NULL"
		case outbox.ModulithStale:
			return "1 = 0"
		}
		return sh.status + " = '" + string(st) + "'"
	}
}

// stated finishes a Spring Modulith publication as read: COMPLETED when archived; no last
// resubmission when it was never resubmitted. Spring Modulith's create writes the publication
// date into LAST_RESUBMISSION_DATE with COMPLETION_ATTEMPTS 1, and only markResubmitted writes it
// after, adding an attempt; a registry upgraded to v2 on MariaDB holds the zero date there
// (ADD COLUMN … TIMESTAMP(6) without a default), which reads as year 1.
func (s *Store) stated(r outbox.Record, archived bool) outbox.Record {
	if s.format.Name != outbox.FormatSpringModulith.Name {
		return r
	}
	if archived {
		r.State = "COMPLETED"
	}
	if t := r.Resubmit; t != nil && (t.Year() <= 1 || t.Equal(r.Created) || r.Attempts == 1) {
		r.Resubmit = nil
	}
	return r
}

// Stats counts the rows per state: Spring Modulith's by the state it reads them as (modulithCounts;
// the completed ones in the archive table too in archive mode, none in delete mode, an estimate
// on a large table), namastack's by status (its status index), Debezium's in all; with the oldest
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
	var extraGroups []outbox.RecordGroup // Spring Modulith's completed publications that are not COMPLETED
	switch s.format.Name {
	case outbox.FormatSpringModulith.Name:
		var notes []string
		if note != "" {
			notes = append(notes, note)
		}
		incomplete, groupKey = sh.completed+" IS NULL", sh.state
		rs.CompletedIsEstimate, extraGroups, notes, err = s.modulithCounts(ctx, sh, add, notes)
		if err != nil {
			return rs, err
		}
		if rs.CompletedIsEstimate && sh.status != "" && s.cfg.CompletionMode == "update" {
			notes = append(notes, "on a registry this large, a publication whose status is not COMPLETED although it has a completion_date "+
				"(FAILED: resubmitted again by Spring Modulith) is not counted, as that needs a scan of the completed rows; "+
				"the list shows it under its status")
		}
		switch s.cfg.CompletionMode {
		case "delete":
			rs.CompletedGone = true
		case "archive":
			n, estimated, err := s.rows(ctx, s.cfg.ArchiveTable, "count the archived publications")
			if err != nil {
				return rs, err
			}
			rs.Counts["COMPLETED"] += n
			rs.Total += n
			rs.CompletedIsEstimate = rs.CompletedIsEstimate || estimated
		}
		notes = append(notes, s.modulithAdvice(rs.Counts)...)
		rs.Note = strings.Join(notes, "; ")
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
	if s.format.Name == outbox.FormatDebezium.Name { // no states: its rows per aggregate type and type
		key = s.d.text(sh.agg)
		selectState, groupBy = "''", key+", "+typ
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
	if len(extraGroups) > 0 {
		rs.Groups = mergeGroups(rs.Groups, extraGroups)
	}
	return rs, err
}

// modulithCounts counts a Spring Modulith registry's publications by modulithState through add:
// the incomplete ones (completion_date IS NULL, its index) exactly; the completed ones exactly on
// a table the database estimates below outbox.ExactSentBelow rows — those whose status is not
// COMPLETED (they are what their status says) by a scan, the rest on the index — else as the
// estimate minus the incomplete ones (no scan of millions: estimated). It returns the groups of
// the completed publications whose status is not COMPLETED, and notes what a person must know of
// them.
func (s *Store) modulithCounts(ctx context.Context, sh shape, add func(string, int64, sql.NullFloat64),
	notes []string) (estimated bool, groups []outbox.RecordGroup, _ []string, _ error) {
	est, err := s.conn.Estimate(ctx)
	if err != nil {
		return false, nil, notes, s.conn.Wrap("estimate the table's rows", err)
	}
	var counted int64
	err = s.conn.Wrap("count the incomplete publications", s.conn.Query(ctx, "SELECT "+sh.state+", count(*), max("+s.d.age(sh.created)+
		") FROM "+sh.table+" WHERE "+sh.completed+" IS NULL GROUP BY "+sh.state, nil, func(scan func(...any) error) error {
		var st string
		var n int64
		var age sql.NullFloat64
		if err := scan(&st, &n, &age); err != nil {
			return err
		}
		add(st, n, age)
		counted += n
		return nil
	}))
	if err != nil {
		return false, nil, notes, err
	}
	if est > outbox.ExactSentBelow {
		add("COMPLETED", max(0, int64(est)-counted), sql.NullFloat64{})
		return true, nil, notes, nil
	}
	var doneNot int64 // with a completion_date, not COMPLETED
	if sh.status != "" {
		st, key, typ := s.d.text(sh.status), s.d.text(sh.key), s.d.text(sh.typ)
		err = s.conn.Wrap("count the completed publications", s.conn.Query(ctx, "SELECT "+st+", "+key+", "+typ+", count(*), max("+
			s.d.age(sh.created)+"), max("+sh.at+") FROM "+sh.table+" WHERE "+sh.completed+" IS NOT NULL AND "+sh.status+
			" <> 'COMPLETED' GROUP BY "+st+", "+key+", "+typ, nil, func(scan func(...any) error) error {
			var g outbox.RecordGroup
			var state, k, t sql.NullString
			var age sql.NullFloat64
			var attempts sql.NullInt64
			if err := scan(&state, &k, &t, &g.Count, &age, &attempts); err != nil {
				return err
			}
			add(state.String, g.Count, age)
			doneNot += g.Count
			g.State, g.Key, g.Type = outbox.Status(state.String), k.String, t.String
			g.Oldest, g.MaxAttempts = time.Duration(age.Float64*float64(time.Second)), int(attempts.Int64)
			groups = append(groups, g)
			return nil
		}))
		if err != nil {
			return false, nil, notes, err
		}
	}
	var done int64
	if err := s.conn.Query(ctx, "SELECT count(*) FROM "+sh.table+" WHERE "+sh.completed+" IS NOT NULL", nil,
		func(scan func(...any) error) error { return scan(&done) }); err != nil {
		return false, nil, notes, s.conn.Wrap("count the completed publications", err)
	}
	add("COMPLETED", done-doneNot, sql.NullFloat64{})
	if doneNot > 0 {
		notes = append(notes, fmt.Sprintf("%s with a completion_date has a status other than COMPLETED (FAILED when Spring Modulith's "+
			"staleness monitor marked it after its listener completed; Spring Modulith 2.0.0 and 2.0.1's JPA registry left it so, "+
			"spring-modulith#1521): Spring Modulith goes by the status, so FailedEventPublications.resubmit runs its listener again. "+
			"If it is done: UPDATE %s SET %s = 'COMPLETED' WHERE %s IS NOT NULL AND %s <> 'COMPLETED'",
			ops.Plural(doneNot, "publication"), s.cfg.Table, s.cfg.Columns.Other["status"], s.cfg.Columns.Other["completion_date"],
			s.cfg.Columns.Other["status"]))
	}
	return false, groups, notes, nil
}

// mergeGroups adds extra to the overview's groups gs (one group per state, key and type), most
// rows first, at most outbox.MaxGroups.
func mergeGroups(gs, extra []outbox.RecordGroup) []outbox.RecordGroup {
	type id struct {
		state    outbox.Status
		key, typ string
	}
	at := map[id]int{}
	for i, g := range gs {
		at[id{g.State, g.Key, g.Type}] = i
	}
	for _, g := range extra {
		i, ok := at[id{g.State, g.Key, g.Type}]
		if !ok {
			gs = append(gs, g)
			continue
		}
		gs[i].Count += g.Count
		gs[i].Oldest, gs[i].MaxAttempts = max(gs[i].Oldest, g.Oldest), max(gs[i].MaxAttempts, g.MaxAttempts)
	}
	slices.SortStableFunc(gs, func(a, b outbox.RecordGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Key, b.Key), strings.Compare(a.Type, b.Type))
	})
	return gs[:min(len(gs), outbox.MaxGroups)]
}

// modulithAdvice says why the publications in the console's own attention states (STRANDED,
// STALE) wait for a person, and what to do.
func (s *Store) modulithAdvice(counts map[outbox.Status]int64) []string {
	var out []string
	col := s.cfg.Columns.Other
	if n := counts[outbox.ModulithStranded]; n > 0 {
		out = append(out, fmt.Sprintf("%s STRANDED: no status (written before the v2 columns were added). Spring Modulith reads it as "+
			"PROCESSING and selects it for resubmission, but its markResubmitted (… AND STATUS != 'RESUBMITTED') never matches a "+
			"NULL status, so no resubmission or restart runs its listener again. To have it resubmitted: "+
			"UPDATE %s SET %s = 'FAILED' WHERE %s IS NULL AND %s IS NULL, then FailedEventPublications.resubmit(…)",
			ops.Plural(n, "publication"), s.cfg.Table, col["status"], col["status"], col["completion_date"]))
	}
	if n := counts[outbox.ModulithStale]; n > 0 {
		out = append(out, fmt.Sprintf("%s STALE: incomplete for longer than stale_ready_after (%s). A v1 registry has no status: "+
			"its listener failed or its run was lost, and it runs again only when the application calls "+
			"IncompleteEventPublications.resubmitIncompletePublications(…) or restarts with "+
			"spring.modulith.events.republish-outstanding-events-on-restart", ops.Plural(n, "publication"), s.staleAfter()))
	}
	return out
}

// rows counts table's rows exactly below outbox.ExactSentBelow rows by the database's estimate;
// above, the estimate is the count (estimated true): no scan of a large table.
func (s *Store) rows(ctx context.Context, table, op string) (n int64, estimated bool, _ error) {
	query, args := s.d.estimate(table)
	var est float64
	if err := s.conn.Query(ctx, query, args, func(scan func(...any) error) error { return scan(&est) }); err != nil {
		return 0, false, s.conn.Wrap(op, err)
	}
	if est > outbox.ExactSentBelow {
		return int64(est), true, nil
	}
	err := s.conn.Query(ctx, "SELECT count(*) FROM "+s.d.Table(table), nil, func(scan func(...any) error) error { return scan(&n) })
	return n, false, s.conn.Wrap(op, err)
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
		where = append(where, s.d.equal(sh.typ, f.Type, arg))
	}
	if f.Key != "" && sh.key != "" {
		where = append(where, s.d.equal(sh.key, f.Key, arg))
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
		out = append(out, s.stated(r, table == s.cfg.ArchiveTable))
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
			return s.stated(r, table == s.cfg.ArchiveTable), nil
		}
	}
	return outbox.Record{}, ops.NotFound("record %q not found in outbox %q", ops.Echo(id), s.name)
}
