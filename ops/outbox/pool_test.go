package outbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/pgtest"
)

// openPool opens the outbox orders over a fresh seeded database with the pool settings pool
// (YAML: "max_conns: 1, acquire_timeout: 200ms"; "" for the defaults).
func openPool(t *testing.T, pool string) (*outbox.Outbox, string) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	pgtest.Exec(t, dsn, outbox.SeedDDL)
	return openConfigured(t, "orders", dsn, pool), dsn
}

// openConfigured opens the outbox name at dsn as the console does, from a config file's outboxes
// entry with the pool settings pool ("" for the defaults); it is closed when tb ends.
func openConfigured(tb testing.TB, name, dsn, pool string) *outbox.Outbox {
	tb.Helper()
	if pool != "" {
		pool = ", " + pool
	}
	cfg, err := configs.Parse([]byte(`
auth: {mode: none}
store: {dsn: "`+dsn+`"}
outboxes: [{name: `+name+`, dsn: "`+dsn+`"`+pool+`}]
`), func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	o, err := outbox.Open(context.Background(), cfg.Outboxes[0])
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(o.Close)
	return o
}

// Twenty concurrent overview and list reads on an outbox pool of 2 all complete (Stats alone runs
// six counts side by side on the pool).
func TestOutboxTwentyReadersOnTwoConnections(t *testing.T) {
	o, dsn := openPool(t, "max_conns: 2, acquire_timeout: 5s")
	insert(t, dsn, "DEAD", -60, 0, "boom")
	insert(t, dsn, "READY", -60, 0, "")
	var g errgroup.Group
	for range 20 {
		g.Go(func() error {
			if _, err := o.Stats(context.Background()); err != nil {
				return err
			}
			_, err := o.List(context.Background(), outbox.Filter{Status: outbox.Dead})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// With every connection held past outboxes[].acquire_timeout, a read fails within the bound, as
// unavailable, naming the outbox and the key to raise.
func TestOutboxBusy(t *testing.T) {
	pooled, dsn := openPool(t, "max_conns: 1, acquire_timeout: 200ms")
	ctx := context.Background()
	// Another session locks the table; a List through the outbox then waits on the lock while
	// holding the pool's only connection, as a slow statement would.
	other, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE outbox_event IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() { _, err := pooled.List(ctx, outbox.Filter{}); blocked <- err }()
	pgtest.WaitLockWaiters(t, dsn, 1)

	start := time.Now()
	err = pooled.Ping(ctx)
	took := time.Since(start)
	_ = tx.Rollback(ctx)
	if err := <-blocked; err != nil {
		t.Errorf("the blocked list: %v", err)
	}
	const want = `outbox "orders" is busy: its only connection is in use for 200ms; try again or raise max_conns of outbox "orders" (outboxes[].max_conns)`
	if !errors.Is(err, ops.ErrUnavailable) || err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v; want ErrUnavailable saying %q", err, want)
	}
	if took > 1200*time.Millisecond {
		t.Errorf("failed after %s, bound 200ms", took)
	}
	t.Logf("after %s: %v", took.Round(time.Millisecond), err)
}
