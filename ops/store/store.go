// Package store is the console's own PostgreSQL schema ("redrive"): the audit log, and later the
// replay ledger and the lag/queue history. Migrations are embedded, ordered and idempotent, and run
// under an advisory lock so several replicas starting together apply each one once.
package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/pgpool"
)

// Schema is the PostgreSQL schema that holds every table of the console.
const Schema = "redrive"

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLockKey is an arbitrary constant shared by all replicas ("redrive" in ASCII).
const migrationLockKey = 0x72656472697665

// Store is the console's own database: one adapter per aggregate, all on one pool. Each part is
// a type of its own with the methods of its tables (and its own tests); Store embeds them, so that
// one value serves every interface the domain packages declare (replay.Store, sampler.Store,
// triage.Store, web.Store…), while a consumer that needs one aggregate can be handed just that
// part (&st.AuditLog). A part's methods are in the file of its name (audit.go, plans.go, jobs.go,
// ledger.go, archive.go, triage.go, samples.go, lease.go, alerts.go, sessions.go, offsets.go).
type Store struct {
	db
	AuditLog     // audit_log: entries, intents, rows written inside another change's transaction
	ReplayPlans  // replay_plan, replay_plan_item
	ReplayJobs   // replay_job
	ReplayLedger // replay_ledger (and the jobs' counts its transactions keep)
	Archive      // archived_message: what discard jobs took from dead-letter queues
	Triage       // dead_letter_resolution, outbox_resolution, dead_letter_note
	Samples      // sampler_snapshot, the lag and queue history, error_group
	Leases       // sampler_lease, sampler_replica
	Alerts       // notify_alert, notification, notify_silence
	Sessions     // session
	OffsetPlans  // offset_move_plan
}

// db is what every part shares: the pool.
type db struct{ pool *pgpool.Pool }

// The parts. Each is usable alone on the store's pool.
type (
	AuditLog     struct{ db }
	ReplayPlans  struct{ db }
	ReplayJobs   struct{ db }
	ReplayLedger struct{ db }
	Archive      struct{ db }
	Triage       struct{ db }
	Samples      struct{ db }
	Leases       struct{ db }
	Alerts       struct{ db }
	Sessions     struct{ db }
	OffsetPlans  struct{ db }
)

func newStore(pool *pgpool.Pool) *Store {
	d := db{pool}
	return &Store{db: d, AuditLog: AuditLog{d}, ReplayPlans: ReplayPlans{d}, ReplayJobs: ReplayJobs{d}, ReplayLedger: ReplayLedger{d}, Archive: Archive{d}, Triage: Triage{d},
		Samples: Samples{d}, Leases: Leases{d}, Alerts: Alerts{d}, Sessions: Sessions{d}, OffsetPlans: OffsetPlans{d}}
}

// Options bound the store's connection pool (store.max_conns, store.acquire_timeout).
type Options struct {
	// MaxConns is the pool size; zero means configs.DefaultStoreMaxConns.
	MaxConns int
	// AcquireTimeout is how long a call waits for a free connection before it fails with a
	// *pgpool.BusyError (ops.ErrUnavailable); zero means configs.DefaultAcquireTimeout.
	AcquireTimeout time.Duration
}

// Open is OpenWith with the default pool options.
func Open(ctx context.Context, dsn string) (*Store, error) { return OpenWith(ctx, dsn, Options{}) }

// OpenWith connects to dsn and applies pending migrations. The pool reconnects on its own after a
// database restart, so a Store stays usable for the life of the process.
func OpenWith(ctx context.Context, dsn string, o Options) (*Store, error) {
	if o.MaxConns == 0 {
		o.MaxConns = configs.DefaultStoreMaxConns
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: parse dsn: %w", ops.ErrInvalid)
	}
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	cfg.ConnConfig.RuntimeParams["search_path"] = Schema
	cfg.ConnConfig.RuntimeParams["application_name"] = "redrive-console"
	pool, err := pgpool.New(ctx, cfg, pgpool.Options{Name: "the console's store", Key: "store.max_conns",
		MaxConns: o.MaxConns, AcquireTimeout: o.AcquireTimeout})
	if err != nil {
		return nil, unavailable(err, "store")
	}
	s := newStore(pool)
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the connections.
func (s *Store) Close() { s.pool.Close() }

// Ping checks the database answers (for /readyz).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return unavailable(err, "store")
	}
	return nil
}

// Pool exposes the connection pool to sibling packages' tests and the sampler.
func (s *Store) Pool() *pgxpool.Pool { return s.pool.Pool }

func (s *Store) migrate(ctx context.Context) error {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(files) // 001_, 002_, … : the numeric prefix is the version
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return unavailable(err, "store: migrate")
	}
	defer tx.Rollback(ctx) //nolint:errcheck // no-op after commit
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockKey)); err != nil {
		return fmt.Errorf("store: migrate lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+Schema+`;
		CREATE TABLE IF NOT EXISTS `+Schema+`.schema_migrations (
			version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("store: migrate: create versions table: %w", err)
	}
	applied := map[int]bool{}
	rows, err := tx.Query(ctx, `SELECT version FROM `+Schema+`.schema_migrations`)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	for _, v := range versions {
		applied[v] = true
	}
	for _, f := range files {
		name := strings.TrimPrefix(f, "migrations/")
		version, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("store: migration %s: name must start with a number", name)
		}
		if applied[version] {
			continue
		}
		sql, err := migrations.ReadFile(f)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+Schema+`;`+string(sql)); err != nil {
			return fmt.Errorf("store: migration %s: %w", name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+Schema+`.schema_migrations (version, name) VALUES ($1, $2)`, version, name); err != nil {
			return fmt.Errorf("store: migration %s: %w", name, err)
		}
	}
	return tx.Commit(ctx)
}

// isNoRows maps pgx's sentinel to the domain's.
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// unavailable is a call to Redrive's own database that failed: an ops.ErrUnavailable whose
// message says so and what for; pgx's error, which names the database's user, host and port, is
// its cause, for the log. A pool's busy error already says what was busy and what to raise: it
// is kept as the message.
func unavailable(err error, format string, a ...any) error {
	what := fmt.Sprintf(format, a...)
	if errors.Is(err, ops.ErrUnavailable) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return ops.Unavailable(err, "Redrive's database did not answer (%s); try again, or see whether it is up", what)
}

// querier is the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// collect runs a query and reads every row with scan. A query or a read that fails is the
// database not answering (ops.ErrUnavailable, with what in the message).
func collect[T any](ctx context.Context, q querier, scan pgx.RowToFunc[T], what, sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, unavailable(err, "%s", what)
	}
	out, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, unavailable(err, "%s", what)
	}
	return out, nil
}
