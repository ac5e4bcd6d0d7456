// Package mysqlinbox is the MySQL and MariaDB adapter of a consumer's inbox table (inbox.Store),
// over database/sql with github.com/go-sql-driver/mysql and a bounded pool (ops/mysqlpool).
package mysqlinbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/catalog"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/inbox/sqlinbox"
	"github.com/redrive/redrive/ops/mysqlpool"
)

// Store is one consumer's inbox table in MySQL or MariaDB, of the seed's format (New) or
// Eventuate Tram's (NewEventuate); it implements inbox.Store.
type Store struct {
	consumer string
	cfg      configs.Inbox
	pool     *mysqlpool.Pool
	q        sqlinbox.Queries
}

var _ inbox.Store = (*Store)(nil)

// Open is consumer's inbox of cfg (a mysql:// DSN, the seed's format) as the console uses it.
func Open(ctx context.Context, consumer string, cfg configs.Inbox) (*inbox.Inbox, error) {
	return sqlinbox.Open(ctx, consumer, cfg, New)
}

// New prepares the pool and the seed format's queries; it does not connect.
func New(_ context.Context, consumer string, cfg configs.Inbox) (*Store, error) {
	if err := sqlinbox.Format(consumer, cfg, configs.InboxSeed); err != nil {
		return nil, err
	}
	t := mysqlpool.QuotedTable(cfg.Table)
	q := mysqlpool.Quote
	c := cfg.Columns
	return open(consumer, cfg, sqlinbox.Queries{
		// %% leaves the ids' placeholders for each call.
		Lookup: fmt.Sprintf(`SELECT %[2]s, %[3]s IS NOT NULL FROM %[1]s WHERE %[4]s = ? AND %[2]s IN (%%s)`,
			t, q(c.MessageID), q(c.ProcessedAt), q(c.Consumer)),
		Rows: fmt.Sprintf(`SELECT %[2]s, %[5]s, %[3]s, %[3]s IS NOT NULL FROM %[1]s WHERE %[4]s = ? AND %[2]s IN (%%s) ORDER BY %[2]s LIMIT ?`,
			t, q(c.MessageID), q(c.ProcessedAt), q(c.Consumer), q(c.ReceivedAt)),
		Others: fmt.Sprintf(`SELECT %[2]s, %[5]s, %[3]s, %[3]s IS NOT NULL, %[4]s FROM %[1]s WHERE %[4]s <> ? AND %[2]s IN (%%s) ORDER BY %[2]s, %[4]s LIMIT ?`,
			t, q(c.MessageID), q(c.ProcessedAt), q(c.Consumer), q(c.ReceivedAt)),
		Columns: []string{c.MessageID, c.Consumer, c.ReceivedAt, c.ProcessedAt}})
}

// open makes the bounded pool of cfg's DSN for a format's queries; it does not connect.
func open(consumer string, cfg configs.Inbox, q sqlinbox.Queries) (*Store, error) {
	dcfg, err := mysqlpool.ParseURL(string(cfg.DSN))
	if err != nil {
		return nil, fmt.Errorf("inbox %s: dsn: %w", consumer, ops.ErrInvalid)
	}
	name, key, size := sqlinbox.Pool(consumer, cfg)
	pool, err := mysqlpool.New(dcfg, mysqlpool.Options{Name: name, Key: key, MaxConns: size, AcquireTimeout: cfg.Wait()})
	if err != nil {
		return nil, fmt.Errorf("inbox %s: %w: %w", consumer, ops.ErrUnavailable, err)
	}
	return &Store{consumer: consumer, cfg: cfg, pool: pool, q: q}, nil
}

// Close releases the pool.
func (s *Store) Close() { s.pool.Close() }

// args is the consumer, the ids and what follows, with the ids' placeholders.
func (s *Store) args(ids []string, more ...any) (string, []any) {
	a := make([]any, 0, len(ids)+1+len(more))
	a = append(a, s.consumer)
	for _, id := range ids {
		a = append(a, id)
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", "), append(a, more...)
}

// Lookup reads the rows of ids with one IN (…), once more on a fresh connection when the database
// ended the session under it.
func (s *Store) Lookup(ctx context.Context, ids []string) (map[string]bool, error) {
	if len(ids) == 0 {
		return map[string]bool{}, nil
	}
	in, args := s.args(ids)
	query := fmt.Sprintf(s.q.Lookup, in)
	var found map[string]bool
	read := func(c *sql.Conn) error {
		found = make(map[string]bool, len(ids))
		rows, err := c.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var processed bool
			if err := rows.Scan(&id, &processed); err != nil {
				return err
			}
			found[id] = processed
		}
		return rows.Err()
	}
	err := s.pool.Do(ctx, read)
	if mysqlpool.LostSession(err) && ctx.Err() == nil {
		// The database ended the pooled session (a restart, a failover): a read is safe to
		// try once more, on a fresh connection, before every verdict becomes "unknown".
		err = s.pool.Do(ctx, read)
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	return found, nil
}

// Rows reads this consumer's rows for the ids, at most limit, by message id.
func (s *Store) Rows(ctx context.Context, ids []string, limit int) ([]inbox.Row, error) {
	return s.read(ctx, s.q.Rows, ids, limit, false)
}

// OtherRows reads other consumers' rows for the ids in the same table, at most limit, by message
// id and consumer.
func (s *Store) OtherRows(ctx context.Context, ids []string, limit int) ([]inbox.Row, error) {
	return s.read(ctx, s.q.Others, ids, limit, true)
}

// read runs query (rows or others) for the ids; withConsumer scans the consumer column too.
func (s *Store) read(ctx context.Context, query string, ids []string, limit int, withConsumer bool) ([]inbox.Row, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in, args := s.args(ids, limit)
	var out []inbox.Row
	err := s.pool.Do(ctx, func(c *sql.Conn) error {
		out = out[:0]
		rows, err := c.QueryContext(ctx, fmt.Sprintf(query, in), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r inbox.Row
			dest := []any{&r.MessageID, &r.ReceivedAt, &r.ProcessedAt, &r.Processed}
			if withConsumer {
				dest = append(dest, &r.Consumer)
			}
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap(err)
	}
	return out, nil
}

// Inspect reads the table's facts from information_schema (mysqlpool.InspectTable): its columns,
// its indexes and the account's SELECT on the mapped columns.
func (s *Store) Inspect(ctx context.Context) (catalog.TableFacts, error) {
	return s.pool.InspectTable(ctx, s.cfg.Table, s.q.Columns, nil)
}

func (s *Store) wrap(err error) error {
	if busy := (*ops.BusyError)(nil); errors.As(err, &busy) {
		return fmt.Errorf("inbox look-up: %w", err) // it names the consumer and wraps ErrUnavailable
	}
	if me := mysqlpool.ServerError(err); me != nil {
		return ops.Unavailable(fmt.Errorf("inbox %s: %s (error %d)", s.consumer, me.Message, me.Number),
			"the inbox of consumer %q refused the query (MySQL error %d); check its table and the account's rights (console doctor)",
			s.consumer, me.Number)
	}
	// The driver's error names the database's address: it is for the log.
	return ops.Unavailable(fmt.Errorf("inbox %s: %w", s.consumer, err),
		"the inbox database of consumer %q did not answer; try again, or see whether it is up", s.consumer)
}
