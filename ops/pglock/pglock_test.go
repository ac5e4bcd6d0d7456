package pglock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/pglock"
	"github.com/redrive/redrive/ops/pgtest"
)

func TestLock(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	pool := open(t, dsn)
	st := pglock.Locker{Config: pool.Config().ConnConfig}
	const key = "rabbitmq-browse:test/v/orders.dlq"

	lockWithin := func(t *testing.T, key string, d time.Duration) (func(), error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return st.Lock(ctx, key)
	}
	// locked is the lock of key taken within d; the test fails, saying what the lock was, when it
	// is not.
	locked := func(t *testing.T, key string, d time.Duration, what string) func() {
		t.Helper()
		unlock, err := lockWithin(t, key, d)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return unlock
	}

	t.Run("HeldElsewhereTimesOut", func(t *testing.T) {
		defer locked(t, key, 10*time.Second, "a free lock")() // generous for a loaded machine
		start := time.Now()
		_, err := lockWithin(t, key, 300*time.Millisecond)
		waited := time.Since(start)
		if !errors.Is(err, ops.ErrConflict) {
			t.Fatalf("second lock: %v, want ops.ErrConflict", err)
		}
		if waited < 200*time.Millisecond || waited > 2*time.Second {
			t.Errorf("second lock gave up after %v, want about 300ms", waited)
		}
		// Another key is independent.
		locked(t, key+"-other", 10*time.Second, "other key")()
	})

	t.Run("HandedOverOnUnlock", func(t *testing.T) {
		unlock := locked(t, key, 10*time.Second, "a free lock")
		got := make(chan error, 1)
		go func() {
			u, err := lockWithin(t, key, 5*time.Second)
			if err == nil {
				u()
			}
			got <- err
		}()
		pgtest.WaitLockWaiters(t, dsn, 1) // the waiter is queued on the lock
		unlock()
		unlocked := time.Now()
		unlock() // idempotent
		if err := <-got; err != nil {
			t.Fatalf("waiter: %v", err)
		}
		if d := time.Since(unlocked); d > 2*time.Second {
			t.Errorf("waiter took %v after the holder unlocked", d)
		}
	})

	t.Run("NeedsNoPooledConnection", func(t *testing.T) {
		// Every pooled connection is taken, as when plans hold their transactions: the lock must
		// still be granted, and must not wait for the pool.
		var held []*pgxpool.Conn
		for range pool.Config().MaxConns {
			c, err := pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		defer func() {
			for _, c := range held {
				c.Release()
			}
		}()
		locked(t, key, 2*time.Second, "lock with the pool exhausted")()
	})

	t.Run("HolderConnectionDies", func(t *testing.T) {
		defer locked(t, key, 10*time.Second, "a free lock")() // its connection is gone: must not hang or panic
		if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
			WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`); err != nil {
			t.Fatal(err)
		}
		locked(t, key, 10*time.Second, "lock after the holder's session ended")()
	})

	t.Run("Cancelled", func(t *testing.T) {
		defer locked(t, key, 10*time.Second, "a free lock")()
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := st.Lock(cctx, key)
		if !errors.Is(err, context.Canceled) || errors.Is(err, ops.ErrConflict) {
			t.Fatalf("cancelled wait: %v, want context.Canceled only", err)
		}
	})

	t.Run("Unavailable", func(t *testing.T) {
		// A database that refuses connections (here: one that does not exist).
		bad := open(t, pgtest.NewDatabase(t)).Config().ConnConfig
		pgtest.Exec(t, pgtest.AdminDSN(t), `DROP DATABASE `+bad.Database+` WITH (FORCE)`)
		_, err := pglock.Lock(ctx, bad, key)
		if !errors.Is(err, ops.ErrUnavailable) || errors.Is(err, ops.ErrConflict) {
			t.Fatalf("lock on a dropped database: %v, want ops.ErrUnavailable", err)
		}
	})
}

// open is a pool on dsn, closed when the test ends.
func open(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
