package mysqloutbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
)

// time_zone names a zone with daylight saving; the console's session opened before a change and
// lives on after it (max_conns 1; a session lives up to an hour). A relay, its session in the
// zone, takes a lease after the change. In autumn a lease with 10 minutes to run is not stuck and
// no release takes it (with the session's offset fixed when it opened, the console's NOW() ran an
// hour ahead: every lease looked expired, and "release all stuck" handed live ones to a second
// relay); in spring a lease that ended 10 minutes ago is stuck and released (it hid for another
// 50 minutes). Both with the server's time zone tables (the session in the zone's name) and
// without (at its offset, set again after the change).
func TestDaylightSavingChangeAndLeases(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after time.Duration
		lease         time.Duration // from the relay's NOW()
		stuck         int64
	}{
		{"AutumnLiveLease", 2 * time.Hour, time.Hour, 10 * time.Minute, 0},
		{"SpringExpiredLease", time.Hour, 2 * time.Hour, -10 * time.Minute, 1},
	} {
		for _, named := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/Offset", true: "/Named"}[named], func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				flip := time.Now().Add(3 * time.Second)
				loc := mysqltest.FlipZone(t, flip, tc.before, tc.after, named)
				dsn := mysqltest.NewDatabase(t)
				mysqltest.Exec(t, dsn, mysqloutbox.SeedDDL)
				cfg, err := configs.Parse([]byte(`
auth: {mode: none}
store: {dsn: "postgres://x@127.0.0.1/y"}
outboxes: [{name: orders, dsn: "`+dsn+`", max_conns: 1}]
`), func(string) string { return "" })
				if err != nil {
					t.Fatal(err)
				}
				o, err := mysqloutbox.OpenInZone(ctx, cfg.Outboxes[0], loc)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(o.Close)
				if _, err := o.Stats(ctx); err != nil { // the session opens before the change
					t.Fatal(err)
				}
				time.Sleep(time.Until(flip) + time.Second)
				relayZone := loc.String()
				if !named {
					relayZone = time.Now().In(loc).Format("-07:00")
				}
				mysqltest.Exec(t, dsn, `SET time_zone = ?; INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type,
					schema_version, payload, status, attempts, available_at, locked_until, created_at)
					VALUES ('e-1', 'Order', 'o-1', 'OrderCreated', 1, '{}', 'PROCESSING', 1, NOW(6), NOW(6) + INTERVAL ? SECOND, NOW(6))`,
					relayZone, int(tc.lease/time.Second))
				st, err := o.Stats(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if st.StuckLeases != tc.stuck {
					t.Errorf("a lease ending %v from the relay's clock: %d stuck leases (oldest expired %v ago), want %d",
						tc.lease, st.StuckLeases, st.OldestStuckAge, tc.stuck)
				}
				n, err := o.ReleaseStuck(ctx, nil)
				if err != nil || n != tc.stuck {
					t.Errorf("a lease ending %v from the relay's clock: release all stuck released %d (%v), want %d", tc.lease, n, err, tc.stuck)
				}
			})
		}
	}
}
