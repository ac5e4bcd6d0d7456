// Package outbox inspects and repairs the transactional outbox tables of the services Redrive
// watches (PostgreSQL, the seed's outbox_event layout by default; table and columns configurable).
//
// Every repair is a conditional UPDATE over rows locked with FOR UPDATE SKIP LOCKED, so a relay
// that currently holds a row (it is mid-publish) keeps it: the console never steals a live lease.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/pgpool"
)

// Status is an outbox row's state as the relay writes it.
type Status string

// The states of the seed's relay (section 六.5).
const (
	Ready      Status = "READY"
	Processing Status = "PROCESSING"
	Sent       Status = "SENT"
	Failed     Status = "FAILED"
	Dead       Status = "DEAD"
)

// Statuses lists every state in lifecycle order.
var Statuses = []Status{Ready, Processing, Sent, Failed, Dead}

// ParseStatus accepts a state name in any case. The error quotes what it was given, cut to
// EchoLimit bytes: a query may be any length.
func ParseStatus(s string) (Status, error) {
	for _, st := range Statuses {
		if strings.EqualFold(s, string(st)) {
			return st, nil
		}
	}
	return "", ops.Invalid("status", fmt.Sprintf("%q is not one of READY, PROCESSING, SENT, FAILED, DEAD", payload.Clip(s, EchoLimit)))
}

// EchoLimit bounds the bytes of a caller's value that an error quotes back; "…" marks a cut.
const EchoLimit = 64

// Outbox is one configured outbox table.
type Outbox struct {
	name        string
	maxAttempts int
	staleAfter  atomic.Int64 // a time.Duration; config reload may change it
	pool        *pgpool.Pool
	q           queries
	statsFlight singleflight.Group

	cacheMu  sync.Mutex
	cached   Stats
	cachedAt time.Time
}

// StatsMaxAge is how old an overview CachedStats may serve is: every open panel refreshes every
// few seconds, and a 5,000,000-row outbox costs tens of milliseconds to count.
const StatsMaxAge = 2 * time.Second

// CachedStats returns Stats computed at most maxAge ago. The console's own repairs (release,
// requeue) invalidate it, so an operator sees their action at once.
func (o *Outbox) CachedStats(ctx context.Context, maxAge time.Duration) (Stats, error) {
	o.cacheMu.Lock()
	if !o.cachedAt.IsZero() && time.Since(o.cachedAt) < maxAge {
		st := o.cached
		o.cacheMu.Unlock()
		return st, nil
	}
	o.cacheMu.Unlock()
	st, err := o.Stats(ctx)
	if err == nil {
		o.cacheMu.Lock()
		o.cached, o.cachedAt = st, time.Now()
		o.cacheMu.Unlock()
	}
	return st, err
}

func (o *Outbox) invalidate() {
	o.cacheMu.Lock()
	o.cachedAt = time.Time{}
	o.cacheMu.Unlock()
}

// Open prepares the outbox's pool and SQL. It does not wait for the database: a service whose
// database is down shows an error on its panel and recovers when it returns.
func Open(ctx context.Context, cfg configs.Outbox) (*Outbox, error) {
	pcfg, err := pgxpool.ParseConfig(string(cfg.DSN))
	if err != nil {
		return nil, fmt.Errorf("outbox %s: dsn: %w", cfg.Name, ops.ErrInvalid)
	}
	// The seed's columns are TIMESTAMP without zone, written by relays in UTC.
	pcfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	pcfg.ConnConfig.RuntimeParams["application_name"] = "redrive-console"
	pool, err := pgpool.New(ctx, pcfg, pgpool.Options{Name: fmt.Sprintf("outbox %q", cfg.Name),
		Key:      fmt.Sprintf("max_conns of outbox %q (outboxes[].max_conns)", cfg.Name),
		MaxConns: cfg.Size(configs.DefaultOutboxMaxConns), AcquireTimeout: cfg.Wait()})
	if err != nil {
		return nil, fmt.Errorf("outbox %s: %w: %w", cfg.Name, ops.ErrUnavailable, err)
	}
	o := &Outbox{name: cfg.Name, maxAttempts: cfg.MaxAttempts, pool: pool, q: buildQueries(cfg.Table, cfg.Columns)}
	o.staleAfter.Store(int64(cfg.StaleReadyAfter.D()))
	return o, nil
}

// Name is the configured name.
func (o *Outbox) Name() string { return o.name }

// MaxAttempts is the relay's configured attempt limit (for context on the page).
func (o *Outbox) MaxAttempts() int { return o.maxAttempts }

// StaleReadyAfter is how long a due READY row may wait before the backlog counts as a problem.
func (o *Outbox) StaleReadyAfter() time.Duration { return time.Duration(o.staleAfter.Load()) }

// SetStaleReadyAfter changes the threshold at run time (a config reload).
func (o *Outbox) SetStaleReadyAfter(d time.Duration) { o.staleAfter.Store(int64(d)) }

// Close releases the pool.
func (o *Outbox) Close() { o.pool.Close() }

// Ping checks that the table is reachable and readable.
func (o *Outbox) Ping(ctx context.Context) error {
	_, err := o.pool.Exec(ctx, o.q.ping)
	return o.wrap("ping", err)
}

// Stats is the outbox overview.
type Stats struct {
	Counts map[Status]int64
	// SentIsEstimate: on large tables SENT comes from the planner's row estimate minus the exact
	// counts of the other states, so the overview never scans millions of SENT rows.
	SentIsEstimate bool
	StuckLeases    int64
	// OldestReadyAge is how long the oldest READY row that is due has waited (the relay's delay);
	// nil when nothing is due.
	OldestReadyAge *time.Duration
	CheckedAt      time.Time
}

// Backlog is the number of rows not yet SENT.
func (s Stats) Backlog() int64 {
	return s.Counts[Ready] + s.Counts[Processing] + s.Counts[Failed]
}

// exactSentBelow: under this many estimated rows the SENT count is exact (the scan is cheap).
const exactSentBelow = 200_000

// Stats returns the overview. Concurrent callers (every open browser tab refreshing the panel)
// share one in-flight query.
func (o *Outbox) Stats(ctx context.Context) (Stats, error) {
	v, err, _ := o.statsFlight.Do("stats", func() (any, error) {
		// Detached from the first caller's cancellation: the others are waiting on it too.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return o.stats(ctx)
	})
	if err != nil {
		return Stats{}, err
	}
	return v.(Stats), nil
}

// stats counts the non-SENT states exactly, each with its own index-only scan on the
// (status, available_at) index, run side by side on the pool's connections; SENT, the bulk of a
// healthy outbox, comes from the planner's estimate on large tables.
func (o *Outbox) stats(ctx context.Context) (Stats, error) {
	st := Stats{Counts: map[Status]int64{}, CheckedAt: time.Now()}
	counts := make([]int64, len(unsentStatuses))
	var oldestSeconds *float64
	var estimate float64
	g, gctx := errgroup.WithContext(ctx)
	for i, s := range unsentStatuses {
		g.Go(func() error { return o.pool.QueryRow(gctx, o.q.count[s]).Scan(&counts[i]) })
	}
	g.Go(func() error {
		return o.pool.QueryRow(gctx, o.q.readyAgeAndStuck).Scan(&oldestSeconds, &st.StuckLeases)
	})
	g.Go(func() error { return o.pool.QueryRow(gctx, o.q.estimate).Scan(&estimate) })
	if err := g.Wait(); err != nil {
		return Stats{}, o.wrap("stats", err)
	}
	var unsent int64
	for i, s := range unsentStatuses {
		st.Counts[s] = counts[i]
		unsent += counts[i]
	}
	if oldestSeconds != nil {
		d := time.Duration(*oldestSeconds * float64(time.Second))
		st.OldestReadyAge = &d
	}
	if estimate >= exactSentBelow {
		st.SentIsEstimate = true
		st.Counts[Sent] = max(0, int64(estimate)-unsent)
		return st, nil
	}
	var sent int64
	if err := o.pool.QueryRow(ctx, o.q.count[Sent]).Scan(&sent); err != nil {
		return Stats{}, o.wrap("stats", err)
	}
	st.Counts[Sent] = sent
	return st, nil
}

var unsentStatuses = []Status{Ready, Processing, Failed, Dead}

// wrap turns driver errors into the domain's kinds with the outbox named.
func (o *Outbox) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ops.NotFound("%s not found in outbox %q", op, o.name)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// A server-side error (missing table, wrong column) is a configuration problem, not a
		// transient outage: the SQLSTATE says which, the server's message (in the log) says more.
		return ops.Unavailable(fmt.Errorf("outbox %s: %s: %s (%s)", o.name, op, pgErr.Message, pgErr.Code),
			"outbox %q: %s: its database refused the query (SQLSTATE %s); check the outbox's table and the role's rights (console doctor)",
			o.name, op, pgErr.Code)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ops.ErrUnavailable) {
		return fmt.Errorf("outbox %s: %s: %w", o.name, op, err) // a busy pool says so itself
	}
	// pgx's error names the database's user, host and port: it is for the log.
	return ops.Unavailable(fmt.Errorf("outbox %s: %s: %w", o.name, op, err),
		"the database of outbox %q did not answer (%s); try again, or see whether it is up", o.name, op)
}
