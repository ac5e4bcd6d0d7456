// Package pglock is PostgreSQL's session-level advisory locks, as the console's replicas use them
// to take turns on a shared resource (a RabbitMQ queue being browsed). Its only dependency is pgx.
package pglock

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/redrive/redrive/ops"
)

// Wait bounds how long Lock waits for a lock that another session holds, when ctx allows
// longer (or has no deadline).
const Wait = 10 * time.Second

// lockNotAvailable is PostgreSQL's SQLSTATE for a lock wait ended by lock_timeout.
const lockNotAvailable = "55P03"

// Lock takes the session-level advisory lock named key, on the database cfg names, shared by every
// replica of the console that uses it, and returns the function that releases it. key is hashed to the lock's
// 64-bit id (FNV-1a); two keys that collide only make their holders take turns.
//
// The lock is held on a connection of its own, opened for it and closed by unlock, not on one of
// the pool's: callers take it while holding a pooled connection (a replay plan keeps its
// transaction open while it reads the queue), and waiting for a second connection from the same
// small pool while holding one deadlocks the pool as soon as as many callers run as it has
// connections. The connection exists only while the lock is wanted or held; if it dies, PostgreSQL
// drops the lock with it. Callers that serialize among themselves first (rabbit.Broker does, per
// queue) open at most one such connection per key and process.
//
// Lock waits until ctx ends or Wait passes, whichever is first. unlock may be called more than
// once, and from any goroutine.
//
// Errors: the lock still held by another session when the wait ends → ops.ErrConflict; the
// database unreachable → ops.ErrUnavailable; ctx cancelled → an error wrapping ctx.Err().
func Lock(ctx context.Context, cfg *pgx.ConnConfig, key string) (unlock func(), err error) {
	id := lockID(key)
	wait := Wait
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		wait = time.Until(dl)
	}
	if wait <= 0 {
		return nil, lockCtxErr(ctx, key, 0)
	}
	deadline := time.Now().Add(wait)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	cc := cfg.Copy()
	cc.Tracer = nil // the pool's tracer accounts for pooled connections; this one is not
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("lock %q: %w", key, err)
		}
		return nil, unavailable(err, "lock %q: connect", key)
	}
	// lock_timeout ends the wait on the server a little before ctx would (SQLSTATE 55P03, the
	// session stays usable); a cancelled ctx interrupts the statement instead. The connection is
	// closed on every failure, so a lock granted as the statement was interrupted is dropped too.
	ms := max((time.Until(deadline) - 20*time.Millisecond).Milliseconds(), 1)
	_, err = conn.Exec(ctx, `SELECT set_config('lock_timeout', $1, false)`, strconv.FormatInt(ms, 10)+"ms")
	if err == nil {
		_, err = conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, id)
	}
	if err != nil {
		closeConn(conn)
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == lockNotAvailable:
			return nil, ops.Conflict("lock %q: held by another session for longer than %s", key, wait.Round(time.Millisecond))
		case ctx.Err() != nil:
			return nil, lockCtxErr(ctx, key, wait)
		default:
			return nil, unavailable(err, "lock %q", key)
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			// Unlocking explicitly before closing is not needed for correctness (closing the session
			// drops its locks) but makes the hand-over to the next waiter immediate.
			uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _ = conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, id)
			_ = conn.Close(uctx)
		})
	}, nil
}

// lockCtxErr reports a wait for the lock ended by ctx: a deadline means the lock was still taken
// when the bound passed, a cancellation is the caller's.
func lockCtxErr(ctx context.Context, key string, wait time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &ops.Error{Kind: ops.ErrConflict, Message: fmt.Sprintf("lock %q: not taken within %s", key, wait.Round(time.Millisecond)), Err: ctx.Err()}
	}
	return fmt.Errorf("lock %q: %w", key, ctx.Err())
}

func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Close(ctx)
}

// lockID hashes a lock name to PostgreSQL's bigint advisory lock id.
func lockID(key string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int64(h.Sum64()) //nolint:gosec // a hash: wrapping to negative ids is fine
}

// unavailable is the database not answering, said as a person would.
func unavailable(err error, format string, a ...any) error {
	return ops.Unavailable(err, "Redrive's database did not answer (%s); try again, or see whether it is up", fmt.Sprintf(format, a...))
}

// Locker takes the locks on the database Config names (rabbit.QueueLocker).
type Locker struct{ Config *pgx.ConnConfig }

// Lock is Lock on l's database.
func (l Locker) Lock(ctx context.Context, key string) (unlock func(), err error) {
	return Lock(ctx, l.Config, key)
}
