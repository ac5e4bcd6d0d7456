package pgpool_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/pgpool"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

func newPool(t *testing.T, maxConns int, wait time.Duration) *pgpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.AdminDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pgpool.New(context.Background(), cfg, pgpool.Options{Name: "the test database", Key: "test.max_conns",
		MaxConns: maxConns, AcquireTimeout: wait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// hold checks out every connection of p until the test ends (or release is called).
func hold(t *testing.T, p *pgpool.Pool) (release func()) {
	t.Helper()
	var conns []*pgxpool.Conn
	for range p.Options().MaxConns {
		// The bound counts connecting, which took over 100 ms on a loaded machine under -race:
		// a connection that is not there in time is still made, and taken on the next try.
		waittest.Until(t, 10*time.Second, "a connection of the pool", func() bool {
			c, err := p.Acquire(context.Background())
			if err == nil {
				conns = append(conns, c)
			}
			return err == nil
		})
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			for _, c := range conns {
				c.Release()
			}
		})
	}
	t.Cleanup(release)
	return release
}

// Twenty callers on a pool of two, each holding one connection for 50ms, all finish: they queue,
// none waits while holding one, and the queue drains well within the bound.
func TestTwentyCallersOnTwoConnections(t *testing.T) {
	p := newPool(t, 2, 5*time.Second)
	start := time.Now()
	var g errgroup.Group
	for range 20 {
		g.Go(func() error {
			_, err := p.Exec(context.Background(), `SELECT pg_sleep(0.05)`)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("20 callers × 50ms on 2 connections: %s", took)
	if took > 5*time.Second {
		t.Errorf("took %s", took)
	}
	if s := p.Stat(); s.MaxConns() != 2 || s.TotalConns() > 2 {
		t.Errorf("pool grew past max_conns: %d of %d", s.TotalConns(), s.MaxConns())
	}
}

// With every connection held longer than the bound, each way into the pool fails within the bound
// with the busy message and ops.ErrUnavailable — and works again once a connection is free.
func TestBusyWithinTheBound(t *testing.T) {
	const wait = 300 * time.Millisecond
	p := newPool(t, 2, wait)
	release := hold(t, p)
	ctx := context.Background()
	calls := map[string]func() error{
		"Exec": func() error { _, err := p.Exec(ctx, `SELECT 1`); return err },
		"Query": func() error {
			rows, err := p.Query(ctx, `SELECT 1`)
			if err != nil {
				if rows.Err() != err {
					t.Errorf("Query: rows.Err() %v differs from %v", rows.Err(), err)
				}
				return err
			}
			rows.Close()
			return rows.Err()
		},
		"QueryIgnoringError": func() error { // the style `rows, _ := Query(); pgx.CollectRows(rows, …)`
			rows, _ := p.Query(ctx, `SELECT 1`)
			_, err := pgx.CollectRows(rows, pgx.RowTo[int])
			return err
		},
		"QueryRow": func() error { var n int; return p.QueryRow(ctx, `SELECT 1`).Scan(&n) },
		"Begin": func() error {
			tx, err := p.Begin(ctx)
			if err == nil {
				_ = tx.Rollback(ctx)
			}
			return err
		},
		"BeginFunc": func() error {
			return pgx.BeginFunc(ctx, p, func(pgx.Tx) error { return nil })
		},
		"SendBatch": func() error {
			b := &pgx.Batch{}
			b.Queue(`SELECT 1`)
			return p.SendBatch(ctx, b).Close()
		},
		"CopyFrom": func() error {
			_, err := p.CopyFrom(ctx, pgx.Identifier{"nowhere"}, []string{"a"}, pgx.CopyFromRows(nil))
			return err
		},
		"Ping":    func() error { return p.Ping(ctx) },
		"Acquire": func() error { return p.AcquireFunc(ctx, func(*pgxpool.Conn) error { return nil }) },
	}
	want := "the test database is busy: all 2 connections are in use for 300ms; try again or raise test.max_conns"
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			err := call()
			took := time.Since(start)
			if err == nil {
				t.Fatal("succeeded with every connection held")
			}
			if !errors.Is(err, ops.ErrUnavailable) {
				t.Errorf("not ErrUnavailable: %v", err)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the pool's own bound reads as the caller's deadline: %v", err)
			}
			var busy *pgpool.BusyError
			if !errors.As(err, &busy) || !busy.Full || busy.InUse != 2 {
				t.Errorf("not a full-pool BusyError: %#v", err)
			}
			if err.Error() != want {
				t.Errorf("message %q, want %q", err, want)
			}
			if took < wait-20*time.Millisecond || took > wait+time.Second {
				t.Errorf("failed after %s, bound %s", took, wait)
			}
		})
	}
	release()
	for name, call := range calls {
		if name == "CopyFrom" {
			continue // the table does not exist; it got as far as the server
		}
		if err := call(); err != nil {
			t.Errorf("%s after release: %v", name, err)
		}
	}
}

// A caller whose own deadline is shorter than the bound gets the busy message when it ends, and
// the error also reads as its deadline.
func TestBusyAtTheCallersDeadline(t *testing.T) {
	p := newPool(t, 1, 5*time.Second)
	hold(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Exec(ctx, `SELECT 1`)
	if took := time.Since(start); took > time.Second {
		t.Errorf("waited %s past a 200ms deadline", took)
	}
	if !errors.Is(err, ops.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v: want ErrUnavailable and DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "the test database is busy: its only connection is in use for 200ms") {
		t.Errorf("message %q", err)
	}
}

// A caller that gives up is told it gave up, not that the pool was busy.
func TestCancelledWhileWaitingIsNotBusy(t *testing.T) {
	p := newPool(t, 1, 5*time.Second)
	hold(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := p.Exec(ctx, `SELECT 1`)
	var busy *pgpool.BusyError
	if !errors.Is(err, context.Canceled) || errors.As(err, &busy) {
		t.Errorf("err %v: want context.Canceled only", err)
	}
}

// The bound is on the wait for a connection, not on the query: a statement that runs longer than
// acquire_timeout completes.
func TestBoundDoesNotCutLongQueries(t *testing.T) {
	p := newPool(t, 1, 100*time.Millisecond)
	ctx := context.Background()
	// The pool's connection made first: the bound counts connecting, which took over 100 ms on a
	// loaded machine under -race (CI: "did not give a connection within 100ms … still
	// connecting"); what is timed below is the statements on it.
	hold(t, p)()
	if _, err := p.Exec(ctx, `SELECT pg_sleep(0.4)`); err != nil {
		t.Fatalf("Exec: %v", err)
	}
	rows, err := p.Query(ctx, `SELECT g, pg_sleep(0.1) FROM generate_series(1, 4) g`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if rows.Err() != nil || n != 4 {
		t.Fatalf("Query: %d rows, %v", n, rows.Err())
	}
	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_sleep(0.3)`); err != nil {
		t.Fatalf("in a transaction: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestOptionsAreChecked(t *testing.T) {
	cfg, err := pgxpool.ParseConfig("postgres://u@127.0.0.1:1/d")
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]pgpool.Options{
		"NoName":       {Key: "k"},
		"NoKey":        {Name: "n"},
		"NegativeMax":  {Name: "n", Key: "k", MaxConns: -1},
		"NegativeWait": {Name: "n", Key: "k", AcquireTimeout: -time.Second},
	} {
		if _, err := pgpool.New(context.Background(), cfg.Copy(), o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	p, err := pgpool.New(context.Background(), cfg.Copy(), pgpool.Options{Name: "n", Key: "k", MaxConns: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if o := p.Options(); o.MaxConns != 3 || o.AcquireTimeout != pgpool.DefaultAcquireTimeout {
		t.Errorf("effective options %+v", o)
	}
}
