package outboxtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/outbox"
)

// RegistryDB is one fresh, empty database of an adapter's kind, as its tests give it to
// ExerciseRegistry: the suite creates each format's table (its real DDL) and writes rows as the
// format's library would. Its methods fail tb on error.
type RegistryDB interface {
	// Postgres tells which DDL the suite creates: PostgreSQL's, or MySQL's and MariaDB's.
	Postgres() bool
	// Exec runs one statement.
	Exec(tb testing.TB, statement string)
	// Insert writes one row of table: column → value (string, int, time.Time or nil), with
	// parameters.
	Insert(tb testing.TB, table string, row map[string]any)
	// Now is the database's clock.
	Now(tb testing.TB) time.Time
	// Open opens the table as outbox name the way the console does, from an outboxes[] entry of
	// a config file with these settings (YAML: "format: namastack, completion_mode: archive");
	// it is closed when tb ends. Unreachable: at a DSN of the database's kind where nothing
	// listens.
	Open(tb testing.TB, name, settings string, unreachable bool) *outbox.Outbox
}

// NewRegistryDB gives each test a fresh RegistryDB.
type NewRegistryDB func(t *testing.T) RegistryDB

// rec is one row in the console's words; each format writes it in its own columns.
type rec struct {
	id, state, typ, key, agg, payload, err string
	age                                    time.Duration // created this long before the database's now
	attempts                               int
}

// registryFormat is one format as the suite drives it: its DDL, how a rec is written, and the
// states a row may be in.
type registryFormat struct {
	name      string
	ddl       func(pg bool) []string
	table     func(pg bool) string
	insert    func(tb testing.TB, db RegistryDB, table string, r rec)
	settings  string
	stateless bool
	failed    string // the attention state; "" for none
	open      string // an incomplete, not failed state
	done      string // the completed state
}

func uuid(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

var registryFormats = map[string]registryFormat{
	"spring-modulith": {
		name: "spring-modulith", settings: "format: spring-modulith", failed: "FAILED", open: "PUBLISHED", done: "COMPLETED",
		// Spring Modulith's v2 schemas (spring-modulith-events-jdbc, schemas/v2/schema-postgresql.sql
		// and schema-mysql.sql).
		ddl: func(pg bool) []string {
			if pg {
				return []string{`CREATE TABLE event_publication (id UUID NOT NULL, listener_id TEXT NOT NULL, event_type TEXT NOT NULL,
  serialized_event TEXT NOT NULL, publication_date TIMESTAMP WITH TIME ZONE NOT NULL, completion_date TIMESTAMP WITH TIME ZONE,
  status TEXT, completion_attempts INT, last_resubmission_date TIMESTAMP WITH TIME ZONE, PRIMARY KEY (id))`,
					`CREATE INDEX event_publication_by_completion_date_idx ON event_publication (completion_date)`}
			}
			return []string{`CREATE TABLE EVENT_PUBLICATION (ID VARCHAR(36) NOT NULL, LISTENER_ID VARCHAR(512) NOT NULL,
  EVENT_TYPE VARCHAR(512) NOT NULL, SERIALIZED_EVENT VARCHAR(4000) NOT NULL, PUBLICATION_DATE TIMESTAMP(6) NOT NULL,
  COMPLETION_DATE TIMESTAMP(6) DEFAULT NULL NULL, STATUS VARCHAR(20), COMPLETION_ATTEMPTS INT,
  LAST_RESUBMISSION_DATE TIMESTAMP(6) DEFAULT NULL NULL, PRIMARY KEY (ID),
  INDEX EVENT_PUBLICATION_BY_COMPLETION_DATE_IDX (COMPLETION_DATE))`}
		},
		table: func(pg bool) string {
			if pg {
				return "event_publication"
			}
			return "EVENT_PUBLICATION"
		},
		insert: func(tb testing.TB, db RegistryDB, table string, r rec) {
			now := db.Now(tb)
			row := map[string]any{"id": r.id, "listener_id": r.key, "event_type": r.typ, "serialized_event": r.payload,
				"publication_date": now.Add(-r.age), "status": r.state, "completion_attempts": r.attempts,
				"completion_date": nil, "last_resubmission_date": nil}
			if r.state == "COMPLETED" {
				row["completion_date"] = now
			}
			// Spring Modulith's create writes the publication date there with one attempt;
			// markResubmitted writes its own time and adds an attempt.
			row["last_resubmission_date"] = now.Add(-r.age)
			if r.attempts > 1 {
				row["last_resubmission_date"] = now.Add(-time.Minute)
			}
			db.Insert(tb, table, row)
		},
	},
	"namastack": {
		name: "namastack", settings: "format: namastack", failed: "FAILED", open: "NEW", done: "COMPLETED",
		// namastack-outbox's outbox_record (namastack-outbox-jdbc, schema/<db>/outbox-tables.sql).
		ddl: func(pg bool) []string {
			payload := "TEXT"
			if !pg {
				payload = "LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
			}
			return []string{`CREATE TABLE outbox_record (id VARCHAR(255) NOT NULL, status VARCHAR(20) NOT NULL,
  record_key VARCHAR(255) NOT NULL, record_type VARCHAR(255) NOT NULL, payload ` + payload + ` NOT NULL, context ` + payload + `,
  created_at TIMESTAMP NOT NULL, completed_at TIMESTAMP NULL, failure_count INT NOT NULL, failure_reason VARCHAR(1000) NULL,
  next_retry_at TIMESTAMP NOT NULL, partition_no INT NOT NULL, handler_id VARCHAR(1000) NOT NULL, PRIMARY KEY (id))`,
				`CREATE INDEX idx_outbox_record_status ON outbox_record (status)`}
		},
		table: func(bool) string { return "outbox_record" },
		insert: func(tb testing.TB, db RegistryDB, table string, r rec) {
			now := db.Now(tb)
			row := map[string]any{"id": r.id, "status": r.state, "record_key": r.agg, "record_type": r.typ, "payload": r.payload,
				"created_at": now.Add(-r.age), "completed_at": nil, "failure_count": r.attempts, "failure_reason": nil,
				"next_retry_at": now.Add(time.Minute), "partition_no": 0, "handler_id": r.key}
			if r.state == "COMPLETED" {
				row["completed_at"] = now
			}
			if r.err != "" {
				row["failure_reason"] = r.err
			}
			db.Insert(tb, table, row)
		},
	},
	"debezium": {
		name: "debezium", settings: "format: debezium, columns: {created_at: created_at}", stateless: true,
		// Debezium's outbox event router table (id, aggregatetype, aggregateid, type, payload), with
		// the insert time a service adds for table.field.event.timestamp.
		ddl: func(pg bool) []string {
			if pg {
				return []string{`CREATE TABLE outbox (id UUID PRIMARY KEY, aggregatetype VARCHAR(255) NOT NULL,
  aggregateid VARCHAR(255) NOT NULL, type VARCHAR(255) NOT NULL, payload JSONB, created_at TIMESTAMPTZ NOT NULL DEFAULT now())`}
			}
			return []string{`CREATE TABLE outbox (id VARCHAR(36) PRIMARY KEY, aggregatetype VARCHAR(255) NOT NULL,
  aggregateid VARCHAR(255) NOT NULL, type VARCHAR(255) NOT NULL, payload JSON, created_at TIMESTAMP(6) NOT NULL)`}
		},
		table: func(bool) string { return "outbox" },
		insert: func(tb testing.TB, db RegistryDB, table string, r rec) {
			db.Insert(tb, table, map[string]any{"id": r.id, "aggregatetype": r.agg, "aggregateid": r.key, "type": r.typ,
				"payload": r.payload, "created_at": db.Now(tb).Add(-r.age)})
		},
	},
}

// RegistryFormats are the formats ExerciseRegistry knows, in the order an adapter runs them.
var RegistryFormats = []string{"spring-modulith", "namastack", "debezium"}

// ExerciseRegistry runs the registry suite for format against the adapter whose databases newDB
// makes: counts by the format's own states, the oldest incomplete row and the rate, the
// per-key-and-type groups, the list and its paging, the record and its payload, hostile bytes,
// refused repairs, unknown ids and a database that is down.
func ExerciseRegistry(t *testing.T, format string, newDB NewRegistryDB) {
	f, ok := registryFormats[format]
	if !ok {
		t.Fatalf("outboxtest: no registry format %q", format)
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, db RegistryDB, f registryFormat)
	}{
		{"CountsAndGroups", testRegistryCounts},
		{"ListAndPaging", testRegistryList},
		{"RecordAndHostileBytes", testRegistryRecord},
		{"RepairsRefused", testRegistryRefused},
		{"DatabaseDownIsUnavailable", testRegistryDown},
		{"TwentyReadersOnTwoConnections", testRegistryReaders},
		{"FiltersMatchExactly", testRegistryFiltersExact},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			for _, s := range f.ddl(db.Postgres()) {
				db.Exec(t, s)
			}
			tc.run(t, db, f)
		})
	}
	if format == "debezium" {
		t.Run("DebeziumWithoutInsertTime", func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			for _, s := range f.ddl(db.Postgres()) {
				db.Exec(t, s)
			}
			testDebeziumWithoutTime(t, db, f)
		})
	}
	if format == "spring-modulith" {
		t.Run("ModulithNullStatus", func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			for _, s := range f.ddl(db.Postgres()) {
				db.Exec(t, s)
			}
			testModulithNullStatus(t, db, f)
		})
		t.Run("ModulithStatusFirst", func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			for _, s := range f.ddl(db.Postgres()) {
				db.Exec(t, s)
			}
			testModulithStatusFirst(t, db, f)
		})
		t.Run("ModulithV1AndArchive", func(t *testing.T) { t.Parallel(); testModulithV1AndArchive(t, newDB(t)) })
		t.Run("ModulithV1Stale", func(t *testing.T) { t.Parallel(); testModulithV1Stale(t, newDB(t)) })
		t.Run("ModulithLargeArchiveEstimated", func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			for _, s := range f.ddl(db.Postgres()) {
				db.Exec(t, s)
			}
			testModulithLargeArchive(t, db, f)
		})
		t.Run("ModulithLargeRegistryEstimatesCompleted", func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			for _, s := range f.ddl(db.Postgres()) {
				db.Exec(t, s)
			}
			testModulithLarge(t, db, f)
		})
	}
}

// fixture writes n rows of each of the format's states (one, for a stateless format: all rows).
func fixture(tb testing.TB, db RegistryDB, f registryFormat) (failed, open, done []rec) {
	table := f.table(db.Postgres())
	n := 0
	mk := func(state, key string, age time.Duration, attempts int, errText string) rec {
		n++
		r := rec{id: uuid(n), state: state, typ: "com.acme.OrderPlaced", key: key, agg: "Order",
			payload: fmt.Sprintf(`{"orderId":"o-%d","card":{"number":"4111111111111111"}}`, n), age: age, attempts: attempts, err: errText}
		f.insert(tb, db, table, r)
		return r
	}
	if f.stateless {
		for i := range 4 {
			open = append(open, mk("", fmt.Sprintf("o-%d", i), time.Duration(i+1)*time.Hour, 0, ""))
		}
		return nil, open, nil
	}
	failed = append(failed, mk(f.failed, "com.acme.billing.Invoicing.on(OrderPlaced)", 3*time.Hour, 3, "timeout calling billing"),
		mk(f.failed, "com.acme.billing.Invoicing.on(OrderPlaced)", 2*time.Hour, 2, "timeout calling billing"))
	open = append(open, mk(f.open, "com.acme.mail.Mailer.on(OrderPlaced)", 90*time.Minute, 1, ""))
	done = append(done, mk(f.done, "com.acme.mail.Mailer.on(OrderPlaced)", 4*time.Hour, 1, ""),
		mk(f.done, "com.acme.mail.Mailer.on(OrderPlaced)", time.Minute, 1, ""),
		mk(f.done, "com.acme.billing.Invoicing.on(OrderPlaced)", 2*time.Minute, 1, ""))
	return failed, open, done
}

func testRegistryCounts(t *testing.T, db RegistryDB, f registryFormat) {
	o := db.Open(t, "registry", f.settings, false)
	ctx := context.Background()
	if o.Format().Name != f.name || o.Format().Repairs {
		t.Fatalf("format %+v", o.Format())
	}
	st, err := o.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records == nil || st.Records.Total != 0 || st.Records.OldestAge != nil || st.Attention != 0 {
		t.Fatalf("empty: %+v %+v", st, st.Records)
	}
	failed, open, done := fixture(t, db, f)
	st, err = o.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rs := st.Records
	if rs.Total != int64(len(failed)+len(open)+len(done)) {
		t.Errorf("total %d, want %d", rs.Total, len(failed)+len(open)+len(done))
	}
	if f.stateless {
		if len(st.Counts) != 0 || st.Attention != 0 {
			t.Errorf("a stateless format counted states: %v", st.Counts)
		}
		// The oldest row (4h) and the rows of the rate window (none: the youngest is an hour old).
		if rs.OldestAge == nil || *rs.OldestAge < 4*time.Hour-time.Minute || *rs.OldestAge > 4*time.Hour+time.Minute {
			t.Errorf("oldest %v, want about 4h", rs.OldestAge)
		}
		if rs.RecentRows == nil || *rs.RecentRows != 0 {
			t.Errorf("recent rows %v, want 0", rs.RecentRows)
		}
		if len(rs.Groups) != 1 || rs.Groups[0].Key != "Order" || rs.Groups[0].Count != 4 {
			t.Errorf("groups %+v, want Order ×4", rs.Groups)
		}
		return
	}
	want := map[outbox.Status]int64{outbox.Status(f.failed): 2, outbox.Status(f.open): 1, outbox.Status(f.done): 3}
	for _, s := range o.Format().States {
		if st.Counts[s] != want[s] {
			t.Errorf("%s = %d, want %d", s, st.Counts[s], want[s])
		}
	}
	if len(st.Counts) != len(o.Format().States) {
		t.Errorf("counts keyed %v, want the format's states %v", st.Counts, o.Format().States)
	}
	if st.Attention != 2 {
		t.Errorf("attention %d, want 2 %s", st.Attention, f.failed)
	}
	// The oldest incomplete row is the 3h FAILED one, not the 4h completed one.
	if rs.OldestAge == nil || *rs.OldestAge < 3*time.Hour-time.Minute || *rs.OldestAge > 3*time.Hour+time.Minute {
		t.Errorf("oldest incomplete %v, want about 3h", rs.OldestAge)
	}
	if rs.RecentRows == nil || *rs.RecentRows != 2 {
		t.Errorf("recent rows %v, want 2 (created 1 and 2 minutes ago)", rs.RecentRows)
	}
	var g *outbox.RecordGroup
	for i := range rs.Groups {
		if rs.Groups[i].State == outbox.Status(f.failed) {
			g = &rs.Groups[i]
		}
	}
	if len(rs.Groups) != 2 || g == nil || g.Count != 2 || g.Key != failed[0].key || g.Type != failed[0].typ || g.MaxAttempts != 3 ||
		g.Oldest < 3*time.Hour-time.Minute {
		t.Errorf("groups %+v, want the two failed publications of one listener and the open one", rs.Groups)
	}
}

func testRegistryList(t *testing.T, db RegistryDB, f registryFormat) {
	o := db.Open(t, "registry", f.settings, false)
	ctx := context.Background()
	failed, open, done := fixture(t, db, f)
	all := len(failed) + len(open) + len(done)
	seen := map[string]bool{}
	var cursor *outbox.RecordCursor
	var prev time.Time
	for page := 0; ; page++ {
		rs, err := o.Records(ctx, outbox.RecordFilter{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if seen[r.ID] {
				t.Fatalf("page %d repeats %s", page, r.ID)
			}
			seen[r.ID] = true
			if r.Payload != "" {
				t.Errorf("a list carries no payload: %q", r.Payload)
			}
			if !prev.IsZero() && r.Created.After(prev) {
				t.Errorf("not newest first: %v after %v", r.Created, prev)
			}
			prev = r.Created
		}
		if len(rs) < 2 {
			break
		}
		last := rs[len(rs)-1]
		cursor = &outbox.RecordCursor{Created: last.Created, ID: last.ID}
	}
	if len(seen) != all {
		t.Errorf("paged %d records, want %d", len(seen), all)
	}
	if f.stateless {
		if _, err := o.Records(ctx, outbox.RecordFilter{State: "FAILED"}); !errors.Is(err, ops.ErrInvalid) {
			t.Errorf("a state of a stateless format: %v, want invalid", err)
		}
		return
	}
	rs, err := o.Records(ctx, outbox.RecordFilter{State: outbox.Status(f.failed)})
	if err != nil || len(rs) != 2 || rs[0].State != outbox.Status(f.failed) || rs[0].Attempts != 2 || rs[1].Attempts != 3 {
		t.Errorf("failed: %+v, %v", rs, err)
	}
	rs, err = o.Records(ctx, outbox.RecordFilter{State: outbox.Status(f.done), Key: "com.acme.mail.Mailer.on(OrderPlaced)"})
	if err != nil || len(rs) != 2 || rs[0].Completed == nil {
		t.Errorf("completed of one key: %+v, %v", rs, err)
	}
	if _, err := o.Records(ctx, outbox.RecordFilter{State: "SENT"}); !errors.Is(err, ops.ErrInvalid) ||
		!strings.Contains(err.Error(), string(o.Format().States[0])) {
		t.Errorf("a seed state: %v, want invalid naming the format's states", err)
	}
	if rs, err := o.Records(ctx, outbox.RecordFilter{Key: "bad\x00key"}); err != nil || len(rs) != 0 {
		t.Errorf("a NUL in a key: %v, %v (it names no row)", rs, err)
	}
}

func testRegistryRecord(t *testing.T, db RegistryDB, f registryFormat) {
	o := db.Open(t, "registry", f.settings, false)
	ctx := context.Background()
	failed, open, _ := fixture(t, db, f)
	r, err := o.Record(ctx, open[0].id)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != open[0].id || !strings.Contains(r.Payload, "4111111111111111") || r.Type != open[0].typ {
		t.Errorf("record %+v", r)
	}
	if f.name == "spring-modulith" {
		// Never resubmitted: Spring Modulith wrote the publication date there with one attempt.
		if r.Resubmit != nil {
			t.Errorf("a publication never resubmitted shows a last resubmission at %v", r.Resubmit)
		}
		if r, err := o.Record(ctx, failed[0].id); err != nil || r.Resubmit == nil {
			t.Errorf("a resubmitted publication (3 attempts) shows no last resubmission: %+v, %v", r, err)
		}
	}
	// Bytes anyone can write come back as they are (the handlers mask and escape them).
	hostile := "\x1b[31m<script>alert(1)</script>\u202e" + `"'` + "`; DROP TABLE x; --"
	h := rec{id: uuid(99), state: f.open, typ: "<b>Type</b>", key: "k\u202e", agg: "Order", age: time.Minute,
		payload: `{"note":` + jsonString(hostile) + `}`, err: hostile}
	if !f.stateless {
		h.state = f.failed
	}
	f.insert(t, db, f.table(db.Postgres()), h)
	r, err = o.Record(ctx, h.id)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Payload, "<script>alert(1)</script>\u202e") || r.Type != h.typ || r.Key != h.key {
		t.Errorf("hostile record %+v", r)
	}
	if f.name == "namastack" && (r.Error == nil || *r.Error != hostile) {
		t.Errorf("failure_reason %v, want the hostile text as written", r.Error)
	}
	for _, id := range []string{uuid(12345), "nope", strings.Repeat("x", 3000), "a\x00b", "'; DROP TABLE x; --"} {
		if _, err := o.Record(ctx, id); !errors.Is(err, ops.ErrNotFound) {
			t.Errorf("record %.20q: %v, want not found", id, err)
		} else if len(err.Error()) > 200 {
			t.Errorf("the not-found error echoes %d bytes", len(err.Error()))
		}
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func testRegistryRefused(t *testing.T, db RegistryDB, f registryFormat) {
	o := db.Open(t, "registry", f.settings, false)
	ctx := context.Background()
	fixture(t, db, f)
	before, err := o.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]error{}
	_, checks["release"] = o.ReleaseStuck(ctx, nil)
	_, checks["requeue"] = o.Requeue(ctx, []int64{1}, true)
	_, checks["events"] = o.Events(ctx, []int64{1})
	_, checks["list"] = o.List(ctx, outbox.Filter{})
	for what, err := range checks {
		if !errors.Is(err, ops.ErrConflict) || !strings.Contains(err.Error(), "console does not") {
			t.Errorf("%s: %v, want a refusal saying the console does not", what, err)
		}
	}
	if f.name == "spring-modulith" && !strings.Contains(ops.Message(checks["requeue"]), "FailedEventPublications.resubmit") {
		t.Errorf("the refusal does not name the application-side call: %v", checks["requeue"])
	}
	// The trace and the overview's settled count find nothing here rather than failing.
	if evs, err := o.Find(ctx, []string{uuid(1)}, "Order", 10); err != nil || len(evs) != 0 {
		t.Errorf("find: %v, %v", evs, err)
	}
	after, err := o.Stats(ctx)
	if err != nil || after.Records.Total != before.Records.Total || after.Attention != before.Attention {
		t.Errorf("a refused repair changed something: %+v → %+v (%v)", before.Records, after.Records, err)
	}
}

func testRegistryDown(t *testing.T, db RegistryDB, f registryFormat) {
	o := db.Open(t, "down", f.settings, true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := o.Stats(ctx); !errors.Is(err, ops.ErrUnavailable) {
		t.Errorf("stats: %v, want unavailable", err)
	}
	if _, err := o.Records(ctx, outbox.RecordFilter{}); !errors.Is(err, ops.ErrUnavailable) {
		t.Errorf("records: %v, want unavailable", err)
	}
	if _, err := o.Record(ctx, uuid(1)); !errors.Is(err, ops.ErrUnavailable) {
		t.Errorf("record: %v, want unavailable", err)
	}
}

// testModulithV1AndArchive: a v1 registry (no status column) shows its incomplete publications as
// PUBLISHED; in archive mode the completed ones are counted and read from the archive table.
func testModulithV1AndArchive(t *testing.T, db RegistryDB) {
	ctx := context.Background()
	pg := db.Postgres()
	table, archive := "event_publication", "event_publication_archive"
	typ := "TIMESTAMP WITH TIME ZONE"
	idType, text := "UUID", "TEXT"
	if !pg {
		table, archive, typ, idType, text = "EVENT_PUBLICATION", "EVENT_PUBLICATION_ARCHIVE", "TIMESTAMP(6) NULL", "VARCHAR(36)", "VARCHAR(4000)"
	}
	for _, tb := range []string{table, archive} {
		db.Exec(t, fmt.Sprintf(`CREATE TABLE %s (id %s NOT NULL PRIMARY KEY, listener_id %s NOT NULL, event_type %s NOT NULL,
  serialized_event %s NOT NULL, publication_date %s NOT NULL, completion_date %s)`, tb, idType, text, text, text, typ, typ))
	}
	now := db.Now(t)
	for i, done := range []bool{false, false, true} {
		row := map[string]any{"id": uuid(i + 1), "listener_id": "l", "event_type": "E", "serialized_event": "{}",
			"publication_date": now.Add(-time.Hour), "completion_date": nil}
		if done {
			row["completion_date"] = now
		}
		db.Insert(t, table, row)
	}
	db.Insert(t, archive, map[string]any{"id": uuid(7), "listener_id": "l", "event_type": "E", "serialized_event": `{"archived":true}`,
		"publication_date": now.Add(-2 * time.Hour), "completion_date": now.Add(-time.Hour)})
	o := db.Open(t, "v1", "format: spring-modulith, completion_mode: archive, stale_ready_after: 2h", false)
	st, err := o.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counts["PUBLISHED"] != 2 || st.Counts["COMPLETED"] != 2 || st.Counts["FAILED"] != 0 || !strings.Contains(st.Records.Note, "v1") {
		t.Errorf("v1 counts %v, note %q", st.Counts, st.Records.Note)
	}
	rs, err := o.Records(ctx, outbox.RecordFilter{State: "PUBLISHED"})
	if err != nil || len(rs) != 2 || rs[0].State != "PUBLISHED" {
		t.Errorf("v1 incomplete: %+v, %v", rs, err)
	}
	if rs, err := o.Records(ctx, outbox.RecordFilter{State: "PROCESSING"}); err != nil || len(rs) != 0 {
		t.Errorf("v1 PROCESSING: %+v, %v", rs, err)
	}
	rs, err = o.Records(ctx, outbox.RecordFilter{State: "COMPLETED"})
	if err != nil || len(rs) != 1 || rs[0].ID != uuid(7) || rs[0].State != "COMPLETED" {
		t.Errorf("archived: %+v, %v", rs, err)
	}
	r, err := o.Record(ctx, uuid(7))
	if err != nil || r.Payload != `{"archived":true}` || r.State != "COMPLETED" {
		t.Errorf("archived record: %+v, %v", r, err)
	}
}

// testModulithLarge: a registry of 250,000 completed publications and a few incomplete ones
// counts the incomplete ones exactly and the completed ones from the database's estimate (no scan
// of the completed rows); the rate counts only what the window holds.
func testModulithLarge(t *testing.T, db RegistryDB, f registryFormat) {
	const n = 250_000
	if db.Postgres() {
		db.Exec(t, fmt.Sprintf(`INSERT INTO event_publication SELECT gen_random_uuid(), 'com.acme.L.on(E)', 'com.acme.E', '{}',
			now() - interval '1 day', now() - interval '23 hours', 'COMPLETED', 1, NULL FROM generate_series(1, %d)`, n))
		db.Exec(t, `ANALYZE event_publication`)
	} else {
		db.Exec(t, fmt.Sprintf(`INSERT INTO EVENT_PUBLICATION SELECT UUID(), 'com.acme.L.on(E)', 'com.acme.E', '{}',
			NOW(6) - INTERVAL 1 DAY, NOW(6) - INTERVAL 23 HOUR, 'COMPLETED', 1, NULL FROM seq_1_to_%d`, n))
		db.Exec(t, `ANALYZE TABLE EVENT_PUBLICATION`)
	}
	failed, open, _ := fixture(t, db, f)
	o := db.Open(t, "large", f.settings, false)
	start := time.Now()
	st, err := o.Stats(context.Background())
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats of a %d-row registry: %v (completed %d, estimate %v)", n, took, st.Counts["COMPLETED"], st.Records.CompletedIsEstimate)
	if st.Counts["FAILED"] != int64(len(failed)) || st.Counts["PUBLISHED"] != int64(len(open)) || !st.Records.CompletedIsEstimate {
		t.Errorf("counts %v, estimate %v", st.Counts, st.Records.CompletedIsEstimate)
	}
	if c := st.Counts["COMPLETED"]; c < n*8/10 || c > n*12/10 {
		t.Errorf("completed %d, want about %d", c, n)
	}
	if st.Records.RecentRows == nil || *st.Records.RecentRows != 2 {
		t.Errorf("recent rows %v, want 2", st.Records.RecentRows)
	}
}

// testModulithNullStatus: a v2 publication without a status and without a completion_date — a v1
// row the upgrade left — is STRANDED, in need of a person: Spring Modulith reads it as PROCESSING
// but its markResubmitted (… AND STATUS != 'RESUBMITTED') never matches a NULL status, so nothing
// ever runs it again. With a completion_date it is COMPLETED.
func testModulithNullStatus(t *testing.T, db RegistryDB, f registryFormat) {
	ctx := context.Background()
	table, now := f.table(db.Postgres()), db.Now(t)
	db.Insert(t, table, map[string]any{"id": uuid(1), "listener_id": "l", "event_type": "E", "serialized_event": "{}",
		"publication_date": now.Add(-time.Hour), "completion_date": nil, "status": nil, "completion_attempts": nil})
	db.Insert(t, table, map[string]any{"id": uuid(2), "listener_id": "l", "event_type": "E", "serialized_event": "{}",
		"publication_date": now.Add(-time.Hour), "completion_date": now, "status": nil, "completion_attempts": nil})
	o := db.Open(t, "nulls", f.settings, false)
	st, err := o.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counts[outbox.ModulithStranded] != 1 || st.Counts["COMPLETED"] != 1 || st.Counts["PROCESSING"] != 0 || st.Attention != 1 {
		t.Errorf("counts %v, attention %d; want STRANDED 1 (in need of a person) and COMPLETED 1", st.Counts, st.Attention)
	}
	if n := st.Records.Note; !strings.Contains(n, "STRANDED") || !strings.Contains(n, "STATUS != 'RESUBMITTED'") ||
		!strings.Contains(n, "IS NULL") {
		t.Errorf("note %q: want why nothing re-runs it and the UPDATE that has it resubmitted", n)
	}
	if len(st.Records.Groups) != 1 || st.Records.Groups[0].State != outbox.ModulithStranded {
		t.Errorf("groups %+v", st.Records.Groups)
	}
	rs, err := o.Records(ctx, outbox.RecordFilter{State: outbox.ModulithStranded})
	if err != nil || len(rs) != 1 || rs[0].ID != uuid(1) || rs[0].State != outbox.ModulithStranded {
		t.Errorf("STRANDED: %+v, %v", rs, err)
	}
	if r, err := o.Record(ctx, uuid(2)); err != nil || r.State != "COMPLETED" {
		t.Errorf("a completed row without a status: %+v, %v", r, err)
	}
}

// testModulithStatusFirst: a v2 publication's state is its status, whatever its completion_date
// says, as Spring Modulith reads it: FAILED with a completion_date (the staleness monitor's
// markFailed after markCompleted; spring-modulith#1521) is FAILED — its findFailedPublications
// selects it and its markResubmitted runs it again — counted, listed and in need of a person.
func testModulithStatusFirst(t *testing.T, db RegistryDB, f registryFormat) {
	ctx := context.Background()
	table, now := f.table(db.Postgres()), db.Now(t)
	row := func(id int, status string, completed any) {
		db.Insert(t, table, map[string]any{"id": uuid(id), "listener_id": "l", "event_type": "E", "serialized_event": "{}",
			"publication_date": now.Add(-time.Hour), "completion_date": completed, "status": status, "completion_attempts": 1})
	}
	row(1, "FAILED", now.Add(-time.Minute))     // completed, then marked failed
	row(2, "PROCESSING", now.Add(-time.Minute)) // completed, then marked processing
	row(3, "COMPLETED", now.Add(-time.Minute))
	row(4, "FAILED", nil)
	o := db.Open(t, "first", f.settings, false)
	st, err := o.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counts["FAILED"] != 2 || st.Counts["PROCESSING"] != 1 || st.Counts["COMPLETED"] != 1 || st.Attention != 2 {
		t.Errorf("counts %v, attention %d; want FAILED 2, PROCESSING 1, COMPLETED 1, attention 2", st.Counts, st.Attention)
	}
	if n := st.Records.Note; !strings.Contains(n, "FailedEventPublications.resubmit runs its listener again") ||
		!strings.Contains(n, "= 'COMPLETED' WHERE") {
		t.Errorf("note %q: want why a completed FAILED publication runs again and the UPDATE that marks it done", n)
	}
	if st.Records.OldestAge == nil || *st.Records.OldestAge < time.Hour-time.Minute {
		t.Errorf("oldest incomplete %v, want about 1h (the FAILED and PROCESSING ones are not done)", st.Records.OldestAge)
	}
	var failedGroup bool
	for _, g := range st.Records.Groups {
		failedGroup = failedGroup || (g.State == "FAILED" && g.Count == 2)
	}
	if !failedGroup {
		t.Errorf("groups %+v, want the two FAILED publications", st.Records.Groups)
	}
	if r, err := o.Record(ctx, uuid(1)); err != nil || r.State != "FAILED" || r.Completed == nil {
		t.Errorf("FAILED with a completion_date: %+v, %v", r, err)
	}
	if r, err := o.Record(ctx, uuid(2)); err != nil || r.State != "PROCESSING" {
		t.Errorf("PROCESSING with a completion_date: %+v, %v", r, err)
	}
	rs, err := o.Records(ctx, outbox.RecordFilter{State: "FAILED"})
	if err != nil || len(rs) != 2 {
		t.Errorf("FAILED: %+v, %v; want both", rs, err)
	}
	rs, err = o.Records(ctx, outbox.RecordFilter{State: "COMPLETED"})
	if err != nil || len(rs) != 1 || rs[0].ID != uuid(3) {
		t.Errorf("COMPLETED: %+v, %v; want the one whose status says so", rs, err)
	}
}

// testModulithV1Stale: in a v1 registry (no status) an incomplete publication older than
// stale_ready_after is STALE, in need of a person; a younger one is PUBLISHED. A config reload's
// threshold applies at once.
func testModulithV1Stale(t *testing.T, db RegistryDB) {
	ctx := context.Background()
	table, typ, idType, text := "event_publication", "TIMESTAMP WITH TIME ZONE", "UUID", "TEXT"
	if !db.Postgres() {
		table, typ, idType, text = "EVENT_PUBLICATION", "TIMESTAMP(6) NULL", "VARCHAR(36)", "VARCHAR(4000)"
	}
	db.Exec(t, fmt.Sprintf(`CREATE TABLE %s (id %s NOT NULL PRIMARY KEY, listener_id %s NOT NULL, event_type %s NOT NULL,
  serialized_event %s NOT NULL, publication_date %s NOT NULL, completion_date %s)`, table, idType, text, text, text, typ, typ))
	now := db.Now(t)
	for i, p := range []struct {
		age  time.Duration
		done bool
	}{{10 * time.Minute, false}, {2 * time.Hour, false}, {3 * time.Hour, true}} {
		row := map[string]any{"id": uuid(i + 1), "listener_id": "l", "event_type": "E", "serialized_event": "{}",
			"publication_date": now.Add(-p.age), "completion_date": nil}
		if p.done {
			row["completion_date"] = now
		}
		db.Insert(t, table, row)
	}
	o := db.Open(t, "v1", "format: spring-modulith, stale_ready_after: 1h", false)
	st, err := o.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counts["PUBLISHED"] != 1 || st.Counts[outbox.ModulithStale] != 1 || st.Counts["COMPLETED"] != 1 || st.Attention != 1 {
		t.Errorf("counts %v, attention %d; want PUBLISHED 1, STALE 1, COMPLETED 1, attention 1", st.Counts, st.Attention)
	}
	if n := st.Records.Note; !strings.Contains(n, "STALE") || !strings.Contains(n, "resubmitIncompletePublications") {
		t.Errorf("note %q: want why it waits and what runs it again", n)
	}
	rs, err := o.Records(ctx, outbox.RecordFilter{State: outbox.ModulithStale})
	if err != nil || len(rs) != 1 || rs[0].ID != uuid(2) || rs[0].State != outbox.ModulithStale {
		t.Errorf("STALE: %+v, %v", rs, err)
	}
	rs, err = o.Records(ctx, outbox.RecordFilter{State: "PUBLISHED"})
	if err != nil || len(rs) != 1 || rs[0].ID != uuid(1) || rs[0].State != "PUBLISHED" {
		t.Errorf("PUBLISHED: %+v, %v", rs, err)
	}
	if r, err := o.Record(ctx, uuid(2)); err != nil || r.State != outbox.ModulithStale {
		t.Errorf("record: %+v, %v", r, err)
	}
	o.SetStaleReadyAfter(3 * time.Hour) // a config reload
	st, err = o.Stats(ctx)
	if err != nil || st.Counts["PUBLISHED"] != 2 || st.Counts[outbox.ModulithStale] != 0 || st.Attention != 0 {
		t.Errorf("after stale_ready_after 3h: %v, attention %d, %v", st.Counts, st.Attention, err)
	}
}

// testModulithLargeArchive: the archive table is counted from the database's estimate once it is
// large (no count(*) of it on every refresh), and the main table's completed publications are its
// estimate minus its own incomplete ones, not minus the archive's.
func testModulithLargeArchive(t *testing.T, db RegistryDB, f registryFormat) {
	const main, archived = 250_000, 250_000
	pg := db.Postgres()
	table, archive, small := f.table(pg), "event_publication_archive", "event_publication_small"
	if !pg {
		archive, small = "EVENT_PUBLICATION_ARCHIVE", "EVENT_PUBLICATION_SMALL"
	}
	for _, ddl := range f.ddl(pg) {
		for _, tb := range []string{archive, small} {
			db.Exec(t, strings.NewReplacer(table+" ", tb+" ", table+"_", tb+"_").Replace(ddl))
		}
	}
	fill := func(tb string, n int) {
		if pg {
			db.Exec(t, fmt.Sprintf(`INSERT INTO %s SELECT gen_random_uuid(), 'com.acme.L.on(E)', 'com.acme.E', '{}',
				now() - interval '1 day', now() - interval '23 hours', 'COMPLETED', 1, NULL FROM generate_series(1, %d)`, tb, n))
			db.Exec(t, `ANALYZE `+tb)
		} else {
			db.Exec(t, fmt.Sprintf(`INSERT INTO %s SELECT UUID(), 'com.acme.L.on(E)', 'com.acme.E', '{}',
				NOW(6) - INTERVAL 1 DAY, NOW(6) - INTERVAL 23 HOUR, 'COMPLETED', 1, NULL FROM seq_1_to_%d`, tb, n))
			db.Exec(t, `ANALYZE TABLE `+tb)
		}
	}
	fill(table, main)
	fill(archive, archived)
	now := db.Now(t)
	for _, tb := range []string{table, small} {
		db.Insert(t, tb, map[string]any{"id": uuid(1), "listener_id": "l", "event_type": "E", "serialized_event": "{}",
			"publication_date": now.Add(-time.Hour), "completion_date": nil, "status": "FAILED", "completion_attempts": 1})
	}
	ctx := context.Background()
	for _, c := range []struct {
		table string
		want  int
	}{{table, main + archived}, {small, archived}} {
		o := db.Open(t, "archived", "format: spring-modulith, completion_mode: archive, table: "+c.table+", archive_table: "+archive, false)
		st, err := o.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := st.Counts["COMPLETED"]
		t.Logf("%s: completed %d (estimate %v), want about %d", c.table, got, st.Records.CompletedIsEstimate, c.want)
		if got < int64(c.want)*8/10 || got > int64(c.want)*12/10 || !st.Records.CompletedIsEstimate || st.Counts["FAILED"] != 1 {
			t.Errorf("%s: counts %v, estimate %v; want about %d COMPLETED, from the estimates", c.table, st.Counts,
				st.Records.CompletedIsEstimate, c.want)
		}
	}
}

// testRegistryReaders: twenty people reading the overview and the records at once share a pool of
// two connections; every read answers.
func testRegistryReaders(t *testing.T, db RegistryDB, f registryFormat) {
	o := db.Open(t, "busy", f.settings+", max_conns: 2, acquire_timeout: 10s", false)
	fixture(t, db, f)
	ctx := context.Background()
	errs := make(chan error, 40)
	for i := range 20 {
		go func() {
			_, err := o.Stats(ctx)
			errs <- err
		}()
		go func() {
			rs, err := o.Records(ctx, outbox.RecordFilter{Limit: 2 + i%3})
			if err == nil && len(rs) == 0 {
				err = errors.New("no records")
			}
			errs <- err
		}()
	}
	for range 40 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// testDebeziumWithoutTime: a Debezium table with no insert time mapped (its default) counts its
// rows, tells no oldest row or rate rather than a wrong one, and pages by id.
func testDebeziumWithoutTime(t *testing.T, db RegistryDB, f registryFormat) {
	ctx := context.Background()
	fixture(t, db, f)
	o := db.Open(t, "plain", "format: debezium", false)
	st, err := o.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records.Total != 4 || st.Records.OldestAge != nil || st.Records.RecentRows != nil {
		t.Errorf("stats %+v", st.Records)
	}
	seen := map[string]bool{}
	var cursor *outbox.RecordCursor
	for range 5 {
		rs, err := o.Records(ctx, outbox.RecordFilter{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if seen[r.ID] {
				t.Fatalf("repeated %s", r.ID)
			}
			seen[r.ID] = true
		}
		if len(rs) < 3 {
			break
		}
		cursor = &outbox.RecordCursor{ID: rs[len(rs)-1].ID}
	}
	if len(seen) != 4 {
		t.Errorf("paged %d rows, want 4", len(seen))
	}
}

// testRegistryFiltersExact: a key or type filter selects the rows holding that very text, not its
// other case, accents or trailing spaces that a MySQL collation compares equal.
func testRegistryFiltersExact(t *testing.T, db RegistryDB, f registryFormat) {
	o := db.Open(t, "exact", f.settings, false)
	table := f.table(db.Postgres())
	types := []string{"T-abc", "t-ABC", "T-abc ", "T-äbc"}
	for i, key := range []string{"k-abc", "K-ABC", "k-abc ", "k-äbc"} {
		f.insert(t, db, table, rec{id: uuid(i + 1), state: f.open, typ: types[i], key: key, agg: "Order", payload: "{}",
			age: time.Duration(i+1) * time.Minute, attempts: 1})
	}
	ctx := context.Background()
	if rs, err := o.Records(ctx, outbox.RecordFilter{Key: "k-abc"}); err != nil || len(rs) != 1 || rs[0].ID != uuid(1) {
		t.Errorf("key k-abc: %+v, %v; want its one row", rs, err)
	}
	if rs, err := o.Records(ctx, outbox.RecordFilter{Type: "T-abc"}); err != nil || len(rs) != 1 || rs[0].ID != uuid(1) {
		t.Errorf("type T-abc: %+v, %v; want its one row", rs, err)
	}
}
