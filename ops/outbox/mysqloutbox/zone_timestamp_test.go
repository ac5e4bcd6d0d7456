package mysqloutbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
)

// Spring Modulith's MySQL registry keeps its dates in TIMESTAMP(6) columns (instants); with
// time_zone: Europe/Berlin, a publication of January and one of July are read as the instants
// they hold — one of them is in the other half of the year than today. A session at the zone's
// offset of today converted the other half's TIMESTAMP an hour off Berlin's wall clock, which the
// console then read as Berlin's.
func TestRegistryTimestampInEitherDaylightSavingHalf(t *testing.T) {
	dsn := mysqltest.NewDatabase(t)
	mysqltest.Exec(t, dsn, `CREATE TABLE EVENT_PUBLICATION (ID VARCHAR(36) NOT NULL, LISTENER_ID VARCHAR(512) NOT NULL,
		EVENT_TYPE VARCHAR(512) NOT NULL, SERIALIZED_EVENT VARCHAR(4000) NOT NULL, PUBLICATION_DATE TIMESTAMP(6) NOT NULL,
		COMPLETION_DATE TIMESTAMP(6) DEFAULT NULL NULL, STATUS VARCHAR(20), COMPLETION_ATTEMPTS INT,
		LAST_RESUBMISSION_DATE TIMESTAMP(6) DEFAULT NULL NULL, PRIMARY KEY (ID))`)
	published := map[string]time.Time{
		"00000000-0000-4000-8000-000000000001": time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC),
		"00000000-0000-4000-8000-000000000007": time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC),
	}
	for id, at := range published {
		// Written from a UTC session (mysqltest's): the instant at.
		mysqltest.Exec(t, dsn, `INSERT INTO EVENT_PUBLICATION (ID, EVENT_TYPE, LISTENER_ID, PUBLICATION_DATE, SERIALIZED_EVENT, STATUS, COMPLETION_ATTEMPTS)
			VALUES (?, 'T', 'L', ?, '{}', 'PUBLISHED', 1)`, id, at.Format("2006-01-02 15:04:05"))
	}
	cfg, err := configs.Parse([]byte(`
auth: {mode: none}
store: {dsn: "postgres://x@127.0.0.1/y"}
outboxes: [{name: pubs, dsn: "`+dsn+`", format: spring-modulith, time_zone: Europe/Berlin}]
`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	o, err := mysqloutbox.OpenRegistry(context.Background(), cfg.Outboxes[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	for id, at := range published {
		r, err := o.Record(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Created.Equal(at) {
			t.Errorf("published %v read as %v (UTC %v)", at, r.Created, r.Created.UTC())
		}
	}
}
