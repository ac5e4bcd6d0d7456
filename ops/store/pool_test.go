package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/store"
)

func openSmall(t *testing.T, maxConns int, wait time.Duration) *store.Store {
	t.Helper()
	st, err := store.OpenWith(context.Background(), pgtest.NewDatabase(t), store.Options{MaxConns: maxConns, AcquireTimeout: wait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// Twenty concurrent callers of a store whose pool has 2 connections all complete: each call holds
// one connection at a time, so they queue instead of deadlocking.
func TestStoreTwentyCallersOnTwoConnections(t *testing.T) {
	st := openSmall(t, 2, 5*time.Second)
	if got := st.Pool().Stat().MaxConns(); got != 2 {
		t.Fatalf("max_conns not applied: pool has %d", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	var g errgroup.Group
	for i := range 20 {
		g.Go(func() error {
			if err := st.RecordAudit(ctx, audit.Entry{Actor: "load", Action: "test.concurrent", Target: "store",
				Outcome: audit.OutcomeOK, Detail: map[string]any{"i": i}}); err != nil {
				return err
			}
			_, err := st.ListAudit(ctx, audit.Filter{Action: "test.concurrent"})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("20 callers × (record + list) on 2 connections: %s", time.Since(start))
	got, err := st.ListAudit(ctx, audit.Filter{Action: "test.concurrent"})
	if err != nil || len(got) != 20 {
		t.Fatalf("audit rows %d, %v", len(got), err)
	}
}

// With both connections held longer than store.acquire_timeout, a call fails within the bound with
// ops.ErrUnavailable and a message that says the store was busy and which key to raise.
func TestStoreBusy(t *testing.T) {
	const wait = 300 * time.Millisecond
	st := openSmall(t, 2, wait)
	ctx := context.Background()
	var held []*pgxpool.Conn
	for range 2 {
		c, err := st.Pool().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	const want = "the console's store is busy: all 2 connections are in use for 300ms; try again or raise store.max_conns"
	for name, call := range map[string]func() error{
		"ListAudit": func() error { _, err := st.ListAudit(ctx, audit.Filter{}); return err },
		"RecordAudit": func() error {
			return st.RecordAudit(ctx, audit.Entry{Actor: "a", Action: "x", Target: "y", Outcome: audit.OutcomeOK})
		},
		"Ping": func() error { return st.Ping(ctx) },
	} {
		start := time.Now()
		err := call()
		took := time.Since(start)
		if !errors.Is(err, ops.ErrUnavailable) || !strings.Contains(fmtErr(err), want) {
			t.Errorf("%s: %v; want ErrUnavailable saying %q", name, err, want)
		}
		if took > wait+time.Second {
			t.Errorf("%s: failed after %s, bound %s", name, took, wait)
		}
		t.Logf("%s after %s: %v", name, took.Round(time.Millisecond), err)
	}
	for _, c := range held {
		c.Release()
	}
	if _, err := st.ListAudit(ctx, audit.Filter{}); err != nil {
		t.Errorf("after release: %v", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Open without options uses store.max_conns' default.
func TestStoreDefaultPoolSize(t *testing.T) {
	st, err := store.Open(context.Background(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := st.Pool().Stat().MaxConns(); got != 16 {
		t.Errorf("default pool size %d, want 16", got)
	}
}
