// Package pgpool bounds how long a call waits for a pooled PostgreSQL connection. pgxpool has no
// acquire timeout of its own: a call on a pool whose connections are all in use waits for as long
// as its context allows, which for a request is the whole request timeout and for the replay
// worker forever. Pool waits at most AcquireTimeout (or less, if the caller's context ends first)
// and then fails with a *BusyError that says, in the operator's words, what was busy and which
// config key raises the limit.
//
// The bound is set through pgxpool's documented AcquireTracer hook: TraceAcquireStart's context
// is the one Acquire waits on, and only Acquire — the query that follows runs on the caller's
// context, so a long COPY or export is never cut short by the acquire bound. Pool's methods
// shadow pgxpool.Pool's so that the error they return is the BusyError, not a bare
// context.DeadlineExceeded.
package pgpool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/ops"
)

// DefaultAcquireTimeout is the wait bound when Options.AcquireTimeout is zero.
const DefaultAcquireTimeout = 5 * time.Second

// Options say how big a pool is, how long a call waits for one of its connections, and how to
// name it when it is busy.
type Options struct {
	// Name is what the pool serves, as the operator knows it: "the console's store",
	// `outbox "orders"`. Required.
	Name string
	// Key is the configuration key that raises MaxConns, named in the busy error:
	// "store.max_conns". Required.
	Key string
	// MaxConns is the pool size; zero keeps pgxpool's default (the DSN's pool_max_conns, else
	// max(4, NumCPU)).
	MaxConns int
	// AcquireTimeout bounds the wait for a free connection; zero means DefaultAcquireTimeout.
	AcquireTimeout time.Duration
}

// Pool is a pgxpool.Pool whose calls wait a bounded time for a connection. Every method of
// pgxpool.Pool is available; the ones below shadow it to return *BusyError when the wait ran out.
type Pool struct {
	*pgxpool.Pool
	opts Options
}

// New builds the pool from cfg (which it modifies: MaxConns and ConnConfig.Tracer). Like
// pgxpool.NewWithConfig it does not wait for the database. cfg.ConnConfig.Tracer must be unset.
func New(ctx context.Context, cfg *pgxpool.Config, o Options) (*Pool, error) {
	if o.Name == "" || o.Key == "" {
		return nil, errors.New("pgpool: Options.Name and Options.Key are required")
	}
	if o.MaxConns < 0 || o.MaxConns > 10_000 {
		return nil, fmt.Errorf("pgpool: %s: MaxConns %d out of range", o.Key, o.MaxConns)
	}
	if o.AcquireTimeout < 0 {
		return nil, fmt.Errorf("pgpool: %s: negative AcquireTimeout", o.Key)
	}
	if o.AcquireTimeout == 0 {
		o.AcquireTimeout = DefaultAcquireTimeout
	}
	if cfg.ConnConfig.Tracer != nil {
		return nil, errors.New("pgpool: ConnConfig.Tracer is already set")
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = int32(o.MaxConns)
	}
	o.MaxConns = int(cfg.MaxConns)
	cfg.ConnConfig.Tracer = &tracer{opts: o}
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Pool{Pool: p, opts: o}, nil
}

// Options returns the pool's effective options (MaxConns and AcquireTimeout filled in).
func (p *Pool) Options() Options { return p.opts }

// BusyError is the error of a call that could not get a connection within the bound
// (ops.BusyError, which every database's pool returns alike).
type BusyError = ops.BusyError

// tracer bounds Acquire (see the package doc). One per pool.
type tracer struct{ opts Options }

type (
	outcomeKey struct{}
	acquireKey struct{}
)

// outcome is where a shadowing method of Pool learns that its acquire timed out.
type outcome struct{ err *BusyError }

// acquire is the state of one Acquire between TraceAcquireStart and TraceAcquireEnd.
type acquire struct {
	start  time.Time
	cancel context.CancelFunc
	parent context.Context
}

var errWaitBound = errors.New("pgpool: acquire wait bound reached")

// TraceQueryStart is a no-op: pgx.ConnConfig.Tracer must be a QueryTracer for pgxpool to find
// the AcquireTracer in it.
func (t *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

// TraceQueryEnd is a no-op.
func (t *tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (t *tracer) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	bounded, cancel := context.WithTimeoutCause(ctx, t.opts.AcquireTimeout, errWaitBound)
	return context.WithValue(bounded, acquireKey{}, &acquire{start: time.Now(), cancel: cancel, parent: ctx})
}

func (t *tracer) TraceAcquireEnd(ctx context.Context, pool *pgxpool.Pool, data pgxpool.TraceAcquireEndData) {
	a, _ := ctx.Value(acquireKey{}).(*acquire)
	if a == nil {
		return
	}
	defer a.cancel()
	if data.Err == nil || !errors.Is(data.Err, context.DeadlineExceeded) || ctx.Err() == nil {
		return
	}
	ours := context.Cause(ctx) == errWaitBound
	if !ours && !errors.Is(a.parent.Err(), context.DeadlineExceeded) {
		return
	}
	s := pool.Stat()
	busy := &BusyError{Name: t.opts.Name, Key: t.opts.Key, MaxConns: int(s.MaxConns()), InUse: int(s.AcquiredConns()),
		Waited: time.Since(a.start), CallerDeadline: !ours}
	if ours {
		// The bound ended the wait: say the bound, not the clock, which on a loaded machine reads
		// a scheduling delay later ("in use for 400ms" of a 300ms bound).
		busy.Waited = t.opts.AcquireTimeout
	}
	busy.Full = busy.InUse >= busy.MaxConns
	if !ours && !busy.Full {
		return // the caller's deadline, not a crowded pool: its own error says it best
	}
	if o, _ := ctx.Value(outcomeKey{}).(*outcome); o != nil {
		o.err = busy
	}
}

// watch returns a context that carries an outcome for the tracer to fill in.
func watch(ctx context.Context) (context.Context, *outcome) {
	o := &outcome{}
	return context.WithValue(ctx, outcomeKey{}, o), o
}

// or returns the BusyError the tracer recorded, else err.
func (o *outcome) or(err error) error {
	if o.err != nil && err != nil {
		return o.err
	}
	return err
}

// Acquire returns a connection, waiting at most the bound.
func (p *Pool) Acquire(ctx context.Context) (*pgxpool.Conn, error) {
	ctx, o := watch(ctx)
	c, err := p.Pool.Acquire(ctx)
	return c, o.or(err)
}

// AcquireFunc acquires a connection (waiting at most the bound), calls f and releases it.
func (p *Pool) AcquireFunc(ctx context.Context, f func(*pgxpool.Conn) error) error {
	c, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return f(c)
}

// Exec is pgxpool.Pool.Exec with the bounded wait.
func (p *Pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, o := watch(ctx)
	tag, err := p.Pool.Exec(ctx, sql, args...)
	return tag, o.or(err)
}

// Query is pgxpool.Pool.Query with the bounded wait.
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ctx, o := watch(ctx)
	rows, err := p.Pool.Query(ctx, sql, args...)
	if o.err != nil && err != nil {
		return failedRows{Rows: rows, err: o.err}, o.err
	}
	return rows, err
}

// QueryRow is pgxpool.Pool.QueryRow with the bounded wait.
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	ctx, o := watch(ctx)
	row := p.Pool.QueryRow(ctx, sql, args...)
	if o.err != nil {
		return failedRow{err: o.err} // the acquire failed: no connection is held
	}
	return row
}

// SendBatch is pgxpool.Pool.SendBatch with the bounded wait.
func (p *Pool) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	ctx, o := watch(ctx)
	br := p.Pool.SendBatch(ctx, b)
	if o.err != nil {
		_ = br.Close() // a failed batch holds no connection
		return pgx.FailedBatchResults(b, o.err)
	}
	return br
}

// Begin is pgxpool.Pool.Begin with the bounded wait.
func (p *Pool) Begin(ctx context.Context) (pgx.Tx, error) {
	return p.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx is pgxpool.Pool.BeginTx with the bounded wait.
func (p *Pool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	ctx, o := watch(ctx)
	tx, err := p.Pool.BeginTx(ctx, opts)
	return tx, o.or(err)
}

// CopyFrom is pgxpool.Pool.CopyFrom with the bounded wait.
func (p *Pool) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	ctx, o := watch(ctx)
	n, err := p.Pool.CopyFrom(ctx, table, columns, src)
	return n, o.or(err)
}

// Ping is pgxpool.Pool.Ping with the bounded wait.
func (p *Pool) Ping(ctx context.Context) error {
	ctx, o := watch(ctx)
	return o.or(p.Pool.Ping(ctx))
}

// failedRows is the pgx.Rows of a Query whose acquire timed out.
type failedRows struct {
	pgx.Rows
	err error
}

func (r failedRows) Err() error             { return r.err }
func (r failedRows) Scan(...any) error      { return r.err }
func (r failedRows) Values() ([]any, error) { return nil, r.err }

type failedRow struct{ err error }

func (r failedRow) Scan(...any) error { return r.err }
