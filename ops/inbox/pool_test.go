package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/pgtest"
)

func openPool(t *testing.T, dsn, pool string) *inbox.Inbox {
	t.Helper()
	return openConfigured(t, dsn, "billing", pool)
}

// Twenty concurrent look-ups on an inbox pool of 2 all complete.
func TestInboxTwentyLookupsOnTwoConnections(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	pgtest.Exec(t, dsn, inbox.SeedDDL)
	pgtest.Exec(t, dsn, `INSERT INTO inbox_message VALUES ('m-1', 'billing', now(), now())`)
	in := openPool(t, dsn, "max_conns: 2, acquire_timeout: 5s")
	var g errgroup.Group
	for range 20 {
		g.Go(func() error {
			v, err := in.Verdicts(context.Background(), []string{"m-1", "m-2"})
			if err == nil && (v["m-1"] != inbox.Processed || v["m-2"] != inbox.NotProcessed) {
				err = fmt.Errorf("verdicts %v", v)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// With the inbox's only connection held past consumers[].inbox.acquire_timeout, a look-up fails
// within the bound, as unavailable, naming the consumer and the key.
func TestInboxBusy(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	pgtest.Exec(t, dsn, inbox.SeedDDL)
	in := openPool(t, dsn, "max_conns: 1, acquire_timeout: 200ms")
	ctx := context.Background()
	// Hold the pool's one connection: a look-up running inside a transaction that does not end.
	started, done := make(chan struct{}), make(chan struct{})
	go func() {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			close(started)
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, `BEGIN; LOCK TABLE inbox_message IN ACCESS EXCLUSIVE MODE`)
		close(started)
		<-done
	}()
	<-started
	defer close(done)
	blocked := make(chan error, 1)
	go func() { _, err := in.Verdicts(ctx, []string{"m-1"}); blocked <- err }() // waits on the lock, holding the connection
	pgtest.WaitLockWaiters(t, dsn, 1)

	start := time.Now()
	_, err := in.Verdicts(ctx, []string{"m-2"})
	took := time.Since(start)
	const want = `the inbox of consumer "billing" is busy: its only connection is in use for 200ms; try again or raise inbox.max_conns of consumer "billing"`
	if !errors.Is(err, ops.ErrUnavailable) || err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v; want ErrUnavailable saying %q", err, want)
	}
	if took > 1200*time.Millisecond {
		t.Errorf("failed after %s, bound 200ms", took)
	}
	t.Logf("after %s: %v", took.Round(time.Millisecond), err)
}
