package mysqloutbox_test

import (
	"context"
	"testing"

	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox"
)

// A v1 Spring Modulith registry on MariaDB upgraded to v2 with the v2 DDL's own column
// (ADD LAST_RESUBMISSION_DATE TIMESTAMP(6), explicit_defaults_for_timestamp OFF): its old rows
// hold the zero date there, which the driver reads as year 1. They were never resubmitted, and
// the console says so rather than "last resubmission 0001-01-01".
func TestRegistryZeroResubmissionDate(t *testing.T) {
	db := newRegistryDB(t).(registryDB)
	mysqltest.Exec(t, db.dsn, `SET SESSION explicit_defaults_for_timestamp = 0;
CREATE TABLE EVENT_PUBLICATION (ID VARCHAR(36) NOT NULL, LISTENER_ID VARCHAR(512) NOT NULL, EVENT_TYPE VARCHAR(512) NOT NULL,
  SERIALIZED_EVENT VARCHAR(4000) NOT NULL, PUBLICATION_DATE TIMESTAMP(6) NOT NULL, COMPLETION_DATE TIMESTAMP(6) DEFAULT NULL NULL,
  PRIMARY KEY (ID), INDEX EVENT_PUBLICATION_BY_COMPLETION_DATE_IDX (COMPLETION_DATE));
INSERT INTO EVENT_PUBLICATION (ID, EVENT_TYPE, LISTENER_ID, PUBLICATION_DATE, SERIALIZED_EVENT) VALUES
  ('00000000-0000-4000-8000-000000000001', 'T', 'L', NOW(6) - INTERVAL 1 HOUR, '{}'),
  ('00000000-0000-4000-8000-000000000002', 'T', 'L', NOW(6) - INTERVAL 2 HOUR, '{}');
ALTER TABLE EVENT_PUBLICATION ADD STATUS VARCHAR(20), ADD COMPLETION_ATTEMPTS INT, ADD LAST_RESUBMISSION_DATE TIMESTAMP(6);
UPDATE EVENT_PUBLICATION SET STATUS = 'FAILED' WHERE ID = '00000000-0000-4000-8000-000000000002'`)
	if z := mysqltest.Value[string](t, db.dsn, `SELECT CAST(LAST_RESUBMISSION_DATE AS CHAR) FROM EVENT_PUBLICATION LIMIT 1`); z[:4] != "0000" {
		t.Fatalf("last_resubmission_date %q, want the zero date", z)
	}
	o := db.Open(t, "upgraded", "format: spring-modulith", false)
	ctx := context.Background()
	for id, state := range map[string]outbox.Status{"00000000-0000-4000-8000-000000000001": outbox.ModulithStranded,
		"00000000-0000-4000-8000-000000000002": "FAILED"} {
		r, err := o.Record(ctx, id)
		if err != nil || r.State != state || r.Resubmit != nil {
			t.Errorf("%s: %+v, %v; want %s, never resubmitted", id, r, err, state)
		}
	}
	rs, err := o.Records(ctx, outbox.RecordFilter{})
	if err != nil || len(rs) != 2 {
		t.Fatalf("records: %+v, %v", rs, err)
	}
	for _, r := range rs {
		if r.Resubmit != nil {
			t.Errorf("%s listed as last resubmitted at %v", r.ID, r.Resubmit)
		}
	}
}
