package demo

import (
	"context"
	"testing"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
)

// TestSeedModulith: the demo's Spring Modulith registry, read as the console reads it, holds
// completed, incomplete and FAILED publications of several listeners; seeding twice adds nothing.
func TestSeedModulith(t *testing.T) {
	dsn := mysqltest.NewDatabase(t)
	ctx := context.Background()
	for range 2 {
		if err := SeedModulith(ctx, dsn); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := configs.Parse([]byte("auth: {mode: none}\nstore: {dsn: 'postgres://x@127.0.0.1/y'}\n"+
		"outboxes: [{name: refunds-publications, dsn: '"+dsn+"', format: spring-modulith}]\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	o, err := mysqloutbox.OpenRegistry(ctx, cfg.Outboxes[0])
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	st, err := o.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"COMPLETED": 48, "FAILED": 5, "PUBLISHED": 2, "PROCESSING": 1, "RESUBMITTED": 1}
	for s, n := range want {
		if st.Counts[statusOf(s)] != n {
			t.Errorf("%s = %d, want %d", s, st.Counts[statusOf(s)], n)
		}
	}
	listeners := map[string]bool{}
	for _, g := range st.Records.Groups {
		if g.State == "FAILED" {
			listeners[g.Key] = true
		}
	}
	if len(listeners) != 2 || st.Attention != 5 {
		t.Errorf("FAILED publications of %d listeners (%d in all), want 2 (5)", len(listeners), st.Attention)
	}
}

func statusOf(s string) outbox.Status { return outbox.Status(s) }
