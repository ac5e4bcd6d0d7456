// Package pgoutbox is the PostgreSQL adapter of an outbox table (outbox.Store), over pgx and a
// bounded pool (ops/pgpool). Table and column names are the configured ones; every statement is
// built once, from validated identifiers, in queries.go.
package pgoutbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/catalog"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/sqlregistry"
	"github.com/redrive/redrive/ops/pgpool"
)

// Store is one outbox table in PostgreSQL; it implements outbox.Store.
type Store struct {
	name string
	cfg  configs.Outbox
	pool *pgpool.Pool
	q    queries
}

var _ outbox.Store = (*Store)(nil)

// Open is the outbox of cfg (a postgres:// DSN) as the console uses it: New's Store under the
// domain's rules.
func Open(ctx context.Context, cfg configs.Outbox) (*outbox.Outbox, error) {
	return sqlregistry.OpenSeed(ctx, cfg, New)
}

// New prepares the outbox's pool and SQL. It does not wait for the database: a service whose
// database is down shows an error on its panel and recovers when it returns.
func New(ctx context.Context, cfg configs.Outbox) (*Store, error) {
	pcfg, err := pgxpool.ParseConfig(string(cfg.DSN))
	if err != nil {
		return nil, fmt.Errorf("outbox %s: dsn: %w", cfg.Name, ops.ErrInvalid)
	}
	// The seed's columns are TIMESTAMP without zone, written by relays in the outbox's time_zone.
	pgpool.InZone(pcfg, cfg.Location())
	pcfg.ConnConfig.RuntimeParams["application_name"] = "redrive-console"
	name, key, size := sqlregistry.Pool(cfg)
	pool, err := pgpool.New(ctx, pcfg, pgpool.Options{Name: name, Key: key, MaxConns: size, AcquireTimeout: cfg.Wait()})
	if err != nil {
		return nil, fmt.Errorf("outbox %s: %w: %w", cfg.Name, ops.ErrUnavailable, err)
	}
	return &Store{name: cfg.Name, cfg: cfg, pool: pool, q: buildQueries(cfg.Table, cfg.Columns)}, nil
}

// Close releases the pool.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that the table is reachable and readable.
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, s.q.ping)
	return s.wrap("ping", err)
}

// Inspect reads the table's facts from pg_catalog (pgpool.InspectTable).
func (s *Store) Inspect(ctx context.Context) (catalog.TableFacts, error) {
	sel, upd := outbox.Rights(outbox.ColumnNames(s.cfg.Columns))
	return s.pool.InspectTable(ctx, s.cfg.Table, sel, upd)
}

// Stats counts the non-SENT states exactly, each with its own index-only scan on the
// (status, available_at) index, run side by side on the pool's connections; SENT, the bulk of a
// healthy outbox, comes from the planner's estimate (pg_class.reltuples) on large tables.
func (s *Store) Stats(ctx context.Context) (outbox.Stats, error) {
	st := outbox.Stats{Counts: map[outbox.Status]int64{}, CheckedAt: time.Now()}
	counts := make([]int64, len(outbox.Unsent))
	var oldestSeconds, stuckSeconds *float64
	var estimate float64
	g, gctx := errgroup.WithContext(ctx)
	for i, state := range outbox.Unsent {
		g.Go(func() error { return s.pool.QueryRow(gctx, s.q.count[state]).Scan(&counts[i]) })
	}
	g.Go(func() error {
		return s.pool.QueryRow(gctx, s.q.readyAgeAndStuck).Scan(&oldestSeconds, &st.StuckLeases, &stuckSeconds)
	})
	g.Go(func() error { return s.pool.QueryRow(gctx, s.q.estimate).Scan(&estimate) })
	if err := g.Wait(); err != nil {
		return outbox.Stats{}, s.wrap("stats", err)
	}
	var unsent int64
	for i, state := range outbox.Unsent {
		st.Counts[state] = counts[i]
		unsent += counts[i]
	}
	st.OldestReadyAge, st.OldestStuckAge = seconds(oldestSeconds), seconds(stuckSeconds)
	if estimate >= outbox.ExactSentBelow {
		st.SentIsEstimate = true
		st.Counts[outbox.Sent] = max(0, int64(estimate)-unsent)
		return st, nil
	}
	var sent int64
	if err := s.pool.QueryRow(ctx, s.q.count[outbox.Sent]).Scan(&sent); err != nil {
		return outbox.Stats{}, s.wrap("stats", err)
	}
	st.Counts[outbox.Sent] = sent
	return st, nil
}

// seconds is an age the database computed in seconds (nil: none).
func seconds(v *float64) *time.Duration {
	if v == nil {
		return nil
	}
	d := time.Duration(*v * float64(time.Second))
	return &d
}

// wrap turns driver errors into the domain's kinds with the outbox named.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ops.NotFound("%s not found in outbox %q", op, s.name)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// A server-side error (missing table, wrong column) is a configuration problem, not a
		// transient outage: the SQLSTATE says which, the server's message (in the log) says more.
		return ops.Unavailable(fmt.Errorf("outbox %s: %s: %s (%s)", s.name, op, pgErr.Message, pgErr.Code),
			"outbox %q: %s: its database refused the query (SQLSTATE %s); check the outbox's table and the role's rights (console doctor)",
			s.name, op, pgErr.Code)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ops.ErrUnavailable) {
		return fmt.Errorf("outbox %s: %s: %w", s.name, op, err) // a busy pool says so itself
	}
	// pgx's error names the database's user, host and port: it is for the log.
	return ops.Unavailable(fmt.Errorf("outbox %s: %s: %w", s.name, op, err),
		"the database of outbox %q did not answer (%s); try again, or see whether it is up", s.name, op)
}
