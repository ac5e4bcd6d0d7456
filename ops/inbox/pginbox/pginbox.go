// Package pginbox is the PostgreSQL adapter of a consumer's inbox table (inbox.Store), over pgx
// and a bounded pool (ops/pgpool).
package pginbox

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/catalog"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/inbox/sqlinbox"
	"github.com/redrive/redrive/ops/pgpool"
)

// Store is one consumer's inbox table in PostgreSQL, of the seed's format (New) or Eventuate
// Tram's (NewEventuate); it implements inbox.Store.
type Store struct {
	consumer string
	cfg      configs.Inbox
	pool     *pgpool.Pool
	q        sqlinbox.Queries
}

var _ inbox.Store = (*Store)(nil)

// Open is consumer's inbox of cfg (a postgres:// DSN, the seed's format) as the console uses it.
func Open(ctx context.Context, consumer string, cfg configs.Inbox) (*inbox.Inbox, error) {
	return sqlinbox.Open(ctx, consumer, cfg, New)
}

// New prepares the pool and the seed format's queries; it does not wait for the database.
func New(ctx context.Context, consumer string, cfg configs.Inbox) (*Store, error) {
	if err := sqlinbox.Format(consumer, cfg, configs.InboxSeed); err != nil {
		return nil, err
	}
	t := pgx.Identifier(strings.Split(cfg.Table, ".")).Sanitize()
	q := func(s string) string { return pgx.Identifier{s}.Sanitize() }
	c := cfg.Columns
	return open(ctx, consumer, cfg, sqlinbox.Queries{Lookup: fmt.Sprintf(
		`SELECT %[2]s::text, %[3]s IS NOT NULL FROM %[1]s WHERE %[4]s = $1 AND %[2]s = ANY($2)`,
		t, q(c.MessageID), q(c.ProcessedAt), q(c.Consumer)),
		Rows: fmt.Sprintf(`SELECT %[2]s::text, %[5]s::timestamptz, %[3]s::timestamptz, %[3]s IS NOT NULL FROM %[1]s
			WHERE %[4]s = $1 AND %[2]s = ANY($2) ORDER BY %[2]s LIMIT $3`,
			t, q(c.MessageID), q(c.ProcessedAt), q(c.Consumer), q(c.ReceivedAt)),
		Others: fmt.Sprintf(`SELECT %[2]s::text, %[5]s::timestamptz, %[3]s::timestamptz, %[3]s IS NOT NULL, %[4]s::text FROM %[1]s
			WHERE %[4]s <> $1 AND %[2]s = ANY($2) ORDER BY %[2]s, %[4]s LIMIT $3`,
			t, q(c.MessageID), q(c.ProcessedAt), q(c.Consumer), q(c.ReceivedAt)),
		Columns: []string{c.MessageID, c.Consumer, c.ReceivedAt, c.ProcessedAt}})
}

// open makes the bounded pool of cfg's DSN for a format's queries.
func open(ctx context.Context, consumer string, cfg configs.Inbox, q sqlinbox.Queries) (*Store, error) {
	pcfg, err := pgxpool.ParseConfig(string(cfg.DSN))
	if err != nil {
		return nil, fmt.Errorf("inbox %s: dsn: %w", consumer, ops.ErrInvalid)
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = "redrive-console"
	// The seed's received_at/processed_at are TIMESTAMP without zone, written in UTC (as the outbox's).
	pcfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	name, key, size := sqlinbox.Pool(consumer, cfg)
	pool, err := pgpool.New(ctx, pcfg, pgpool.Options{Name: name, Key: key, MaxConns: size, AcquireTimeout: cfg.Wait()})
	if err != nil {
		return nil, fmt.Errorf("inbox %s: %w: %w", consumer, ops.ErrUnavailable, err)
	}
	return &Store{consumer: consumer, cfg: cfg, pool: pool, q: q}, nil
}

// Close releases the pool.
func (s *Store) Close() { s.pool.Close() }

// Lookup reads the rows of ids with one = ANY($2), once more on a fresh connection when the
// database ended the session under it.
func (s *Store) Lookup(ctx context.Context, ids []string) (map[string]bool, error) {
	found := make(map[string]bool, len(ids))
	err := s.lookupChunk(ctx, ids, found)
	if lostSession(err) && ctx.Err() == nil {
		// The database ended the pooled session (a restart, a failover): a read is safe to
		// try once more, on a fresh connection, before every verdict becomes "unknown".
		err = s.lookupChunk(ctx, ids, found)
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	return found, nil
}

func (s *Store) lookupChunk(ctx context.Context, chunk []string, found map[string]bool) error {
	rows, err := s.pool.Query(ctx, s.q.Lookup, s.consumer, chunk)
	if err != nil {
		return err
	}
	var id string
	var processed bool
	_, err = pgx.ForEachRow(rows, []any{&id, &processed}, func() error {
		found[id] = processed
		return nil
	})
	return err
}

// Rows reads this consumer's rows for the ids, at most limit, by message id.
func (s *Store) Rows(ctx context.Context, ids []string, limit int) ([]inbox.Row, error) {
	rows, err := s.pool.Query(ctx, s.q.Rows, s.consumer, ids, limit)
	if err != nil {
		return nil, s.wrap(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (inbox.Row, error) {
		var row inbox.Row
		err := r.Scan(&row.MessageID, &row.ReceivedAt, &row.ProcessedAt, &row.Processed)
		return row, err
	})
	if err != nil {
		return nil, s.wrap(err)
	}
	return out, nil
}

// OtherRows reads other consumers' rows for the ids in the same table, at most limit, by message
// id and consumer.
func (s *Store) OtherRows(ctx context.Context, ids []string, limit int) ([]inbox.Row, error) {
	rows, err := s.pool.Query(ctx, s.q.Others, s.consumer, ids, limit)
	if err != nil {
		return nil, s.wrap(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (inbox.Row, error) {
		var row inbox.Row
		err := r.Scan(&row.MessageID, &row.ReceivedAt, &row.ProcessedAt, &row.Processed, &row.Consumer)
		return row, err
	})
	if err != nil {
		return nil, s.wrap(err)
	}
	return out, nil
}

// Inspect reads the table's facts from pg_catalog (pgpool.InspectTable): its columns, its indexes
// and the role's SELECT on the mapped columns.
func (s *Store) Inspect(ctx context.Context) (catalog.TableFacts, error) {
	return s.pool.InspectTable(ctx, s.cfg.Table, s.q.Columns, nil)
}

// lostSession reports whether err is the session going away rather than the query failing: the
// server ended it (SQLSTATE 57P01–03: shut down, crashed, starting; class 08: the connection) or the
// connection broke under it. A pool that is full (pgpool.BusyError) is not.
func lostSession(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if busy := (*pgpool.BusyError)(nil); errors.As(err, &busy) {
		return false
	}
	if connect := (*pgconn.ConnectError)(nil); errors.As(err, &connect) {
		return false // no session to lose: the database cannot be reached, a second try waits as long
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "57P") || strings.HasPrefix(pgErr.Code, "08") // not 57014, a statement timeout
	}
	return true
}

func (s *Store) wrap(err error) error {
	if busy := (*pgpool.BusyError)(nil); errors.As(err, &busy) {
		return fmt.Errorf("inbox look-up: %w", err) // it names the consumer and wraps ErrUnavailable
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !lostSession(err) {
		return ops.Unavailable(fmt.Errorf("inbox %s: %s (%s)", s.consumer, pgErr.Message, pgErr.Code),
			"the inbox of consumer %q refused the query (SQLSTATE %s); check its table and the role's rights (console doctor)",
			s.consumer, pgErr.Code)
	}
	// pgx's error names the database's user, host and port: it is for the log.
	return ops.Unavailable(fmt.Errorf("inbox %s: %w", s.consumer, err),
		"the inbox database of consumer %q did not answer; try again, or see whether it is up", s.consumer)
}
