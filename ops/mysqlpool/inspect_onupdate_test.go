package mysqlpool_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops/catalog"
	"github.com/redrive/redrive/ops/mysqlpool"
	"github.com/redrive/redrive/ops/mysqltest"
)

// Spring Modulith's own v2 MariaDB schema, created where explicit_defaults_for_timestamp is OFF
// (MariaDB's default before 10.10): PUBLICATION_DATE, its first TIMESTAMP NOT NULL, is given
// DEFAULT and ON UPDATE current_timestamp, so every status update resets a publication's age. The
// doctor's column check warns about it, saying what it breaks and the ALTER TABLE that fixes it;
// run, that statement leaves the column without ON UPDATE.
func TestInspectOnUpdateTimestamp(t *testing.T) {
	dsn := mysqltest.NewDatabase(t)
	const ddl = `SET SESSION explicit_defaults_for_timestamp = 0;
CREATE TABLE EVENT_PUBLICATION (
  ID VARCHAR(36) NOT NULL, LISTENER_ID VARCHAR(512) NOT NULL, EVENT_TYPE VARCHAR(512) NOT NULL,
  SERIALIZED_EVENT VARCHAR(4000) NOT NULL, PUBLICATION_DATE TIMESTAMP(6) NOT NULL,
  COMPLETION_DATE TIMESTAMP(6) DEFAULT NULL NULL, STATUS VARCHAR(20), COMPLETION_ATTEMPTS INT,
  LAST_RESUBMISSION_DATE TIMESTAMP(6), UPDATED_AT DATETIME ON UPDATE CURRENT_TIMESTAMP,
  SENT_AT DATETIME(3) NOT NULL ON UPDATE CURRENT_TIMESTAMP(3), PRIMARY KEY (ID))`
	mysqltest.Exec(t, dsn, ddl)
	cfg, err := mysqlpool.ParseURL(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := mysqlpool.New(cfg, mysqlpool.Options{Name: "test", Key: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	mapped := []string{"ID", "PUBLICATION_DATE", "COMPLETION_DATE", "LAST_RESUBMISSION_DATE", "SENT_AT"}
	f, err := p.InspectTable(context.Background(), "EVENT_PUBLICATION", mapped, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := mysqlpool.Dialect{}
	pub := f.Columns["PUBLICATION_DATE"]
	t.Logf("PUBLICATION_DATE: %s", pub)
	if !strings.Contains(strings.ToLower(pub), "on update current_timestamp(6)") || !strings.Contains(pub, "restarts at each status change") ||
		!strings.Contains(pub, "ALTER TABLE ") || d.Class(pub) == catalog.Timestamp {
		t.Fatalf("PUBLICATION_DATE: %q (%s), want its ON UPDATE, what it breaks and the fix, in a class the doctor warns about", pub, d.Class(pub))
	}
	for col, want := range map[string]string{"COMPLETION_DATE": "timestamp(6)", "LAST_RESUBMISSION_DATE": "timestamp(6)",
		"UPDATED_AT": "datetime", "ID": "varchar(36)"} { // no ON UPDATE, or not mapped
		if got := f.Columns[col]; got != want {
			t.Errorf("%s: %q, want %q", col, got, want)
		}
	}
	sent := f.Columns["SENT_AT"] // MariaDB gave it the zero date as its default: kept
	t.Logf("SENT_AT: %s", sent)
	if !strings.Contains(sent, "MODIFY SENT_AT datetime(3) NOT NULL DEFAULT '0000-00-00 00:00:00.000';") {
		t.Fatalf("SENT_AT: %q", sent)
	}
	// The fixes, run as the service's DBA would (explicit_defaults_for_timestamp still OFF).
	for _, typ := range []string{pub, sent} {
		mysqltest.Exec(t, dsn, "SET SESSION explicit_defaults_for_timestamp = 0; "+typ[strings.Index(typ, "ALTER TABLE "):])
	}
	f, err = p.InspectTable(context.Background(), "EVENT_PUBLICATION", mapped, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Columns["PUBLICATION_DATE"] != "timestamp(6)" || f.Columns["SENT_AT"] != "datetime(3)" {
		t.Errorf("after the fixes: %q, %q; want plain types", f.Columns["PUBLICATION_DATE"], f.Columns["SENT_AT"])
	}
	def := mysqltest.Value[string](t, dsn, `SELECT COLUMN_DEFAULT FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'EVENT_PUBLICATION' AND COLUMN_NAME = 'PUBLICATION_DATE'`)
	if !strings.EqualFold(def, "current_timestamp(6)") {
		t.Errorf("PUBLICATION_DATE's default after the fix: %q, want current_timestamp(6) kept", def)
	}
}
