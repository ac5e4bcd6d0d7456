package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/cmd/internal/demo"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// Stopping a service's PostgreSQL under a running console degrades that outbox's panel and
// /readyz only; starting it again recovers without restarting the console.
func TestOutboxDatabaseDownAndBack(t *testing.T) {
	ctx := context.Background()
	pg := privatePostgres(t)
	if err := demo.SeedOutbox(ctx, pg.DSN("postgres")); err != nil {
		t.Fatal(err)
	}
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q}]
`, pgtest.NewDatabase(t), pg.DSN("postgres")+"&connect_timeout=2"))

	if r := do(t, nil, "GET", base+"/readyz", "", ""); r.status != 200 {
		t.Fatalf("readyz before: %d %s", r.status, r.body)
	}
	if err := pg.Kill(ctx); err != nil {
		t.Fatal(err)
	}

	r := do(t, nil, "GET", base+"/readyz", "", "")
	if r.status != 503 || !strings.Contains(r.body, `"name":"outbox/orders","ok":false`) || !strings.Contains(r.body, `"name":"store","ok":true`) {
		t.Fatalf("readyz with the outbox down: %d %s", r.status, r.body)
	}
	r = do(t, nil, "GET", base+"/outboxes/orders", "", "")
	if r.status != 200 || !strings.Contains(r.body, `data-testid="error-panel"`) {
		t.Fatalf("outbox page with its database down: %d", r.status)
	}
	r = do(t, nil, "GET", base+"/api/v1/outboxes", "", "")
	if r.status != 200 || !strings.Contains(r.body, `"counts":null`) || !strings.Contains(r.body, `"error":`) {
		t.Fatalf("outbox API with its database down: %d %s", r.status, r.body)
	}
	if r := do(t, nil, "GET", base+"/audit", "", ""); r.status != 200 {
		t.Fatalf("the rest of the console must keep working: /audit = %d", r.status)
	}
	r = do(t, nil, "GET", base+"/", "", "")
	if !strings.Contains(r.body, "cannot be read") {
		t.Error("the overview does not report the unreadable outbox")
	}

	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waittest.For(t, 20*time.Second, "the console ready again", func() (string, bool) {
		r := do(t, nil, "GET", base+"/readyz", "", "")
		return r.body, r.status == 200
	})
	r = do(t, nil, "GET", base+"/api/v1/outboxes", "", "")
	if !strings.Contains(r.body, `"DEAD":25`) {
		t.Fatalf("after recovery: %s", r.body)
	}
}
