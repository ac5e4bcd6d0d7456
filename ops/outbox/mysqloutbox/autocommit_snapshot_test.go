package mysqloutbox_test

import (
	"context"
	"testing"

	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
)

// A session that would start with autocommit off (here the URL's session variable; a server's
// autocommit=0 or init_connect = 'SET autocommit=0' alike, ops/mysqlpool's
// TestAutocommitOffByServer): the list shows a DEAD event committed after the console's first
// read, and the overview keeps working. With autocommit off, the first read opened a REPEATABLE
// READ transaction that nothing ended: the list showed that first snapshot for the connection's
// hour, and the overview's SET TRANSACTION failed inside it (1568).
func TestAutocommitOffSnapshot(t *testing.T) {
	dsn := mysqltest.NewDatabase(t)
	mysqltest.Exec(t, dsn, mysqloutbox.SeedDDL)
	o := openConfigured(t, "orders", dsn+"?autocommit=0", "max_conns: 1")
	ctx := context.Background()
	if p, err := o.List(ctx, outbox.Filter{Status: outbox.Dead}); err != nil || len(p.Events) != 0 {
		t.Fatalf("first list: %d events, %v", len(p.Events), err)
	}
	mysqltest.Exec(t, dsn, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload, status, attempts, available_at, created_at)
		VALUES ('e-dead', 'Order', 'o-1', 'OrderCreated', 1, '{}', 'DEAD', 10, NOW(6), NOW(6))`)
	p, err := o.List(ctx, outbox.Filter{Status: outbox.Dead})
	if err != nil || len(p.Events) != 1 {
		t.Errorf("list after a DEAD event was committed: %d events, %v; want 1", len(p.Events), err)
	}
	for range 2 {
		st, err := o.Stats(ctx)
		if err != nil || st.Counts[outbox.Dead] != 1 {
			t.Errorf("overview: %v DEAD, %v; want 1", st.Counts[outbox.Dead], err)
		}
	}
}
