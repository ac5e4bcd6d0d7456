// Package mysqloutbox is the MySQL and MariaDB adapter of an outbox table (outbox.Store), over
// database/sql with github.com/go-sql-driver/mysql and a bounded pool (ops/mysqlpool). MySQL 8
// and MariaDB 10.6+ have FOR UPDATE SKIP LOCKED, which every repair uses as the PostgreSQL
// adapter does: rows are selected and locked skipping those a relay holds, then updated under the
// same condition, in one READ COMMITTED transaction. Times are compared with NOW(6) in the
// session's UTC, the seed's DATETIME columns being written in UTC.
package mysqloutbox

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/catalog"
	"github.com/redrive/redrive/ops/mysqlpool"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/sqlregistry"
)

// Store is one outbox table in MySQL or MariaDB; it implements outbox.Store.
type Store struct {
	name string
	cfg  configs.Outbox
	pool *mysqlpool.Pool
	q    queries
}

var _ outbox.Store = (*Store)(nil)

// Open is the outbox of cfg (a mysql:// DSN) as the console uses it: New's Store under the
// domain's rules.
func Open(ctx context.Context, cfg configs.Outbox) (*outbox.Outbox, error) {
	return sqlregistry.OpenSeed(ctx, cfg, New)
}

// New prepares the outbox's pool and SQL. It does not connect: a service whose database is down
// shows an error on its panel and recovers when it returns.
func New(_ context.Context, cfg configs.Outbox) (*Store, error) {
	dcfg, err := mysqlpool.ParseURL(string(cfg.DSN))
	if err != nil {
		return nil, fmt.Errorf("outbox %s: dsn: %w", cfg.Name, ops.ErrInvalid)
	}
	if err := mysqlpool.InZone(dcfg, cfg.Location()); err != nil {
		return nil, fmt.Errorf("outbox %s: time_zone: %w", cfg.Name, ops.ErrInvalid)
	}
	name, key, size := sqlregistry.Pool(cfg)
	pool, err := mysqlpool.New(dcfg, mysqlpool.Options{Name: name, Key: key, MaxConns: size, AcquireTimeout: cfg.Wait()})
	if err != nil {
		return nil, fmt.Errorf("outbox %s: %w: %w", cfg.Name, ops.ErrUnavailable, err)
	}
	return &Store{name: cfg.Name, cfg: cfg, pool: pool, q: buildQueries(cfg.Table, cfg.Columns)}, nil
}

// Close releases the pool.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that the table is reachable and readable.
func (s *Store) Ping(ctx context.Context) error {
	return s.wrap("ping", s.pool.Do(ctx, func(c *sql.Conn) error {
		_, err := c.ExecContext(ctx, s.q.ping)
		return err
	}))
}

// Inspect reads the table's facts from information_schema (mysqlpool.InspectTable).
func (s *Store) Inspect(ctx context.Context) (catalog.TableFacts, error) {
	sel, upd := outbox.Rights(outbox.ColumnNames(s.cfg.Columns))
	return s.pool.InspectTable(ctx, s.cfg.Table, sel, upd)
}

// row runs a one-row read on a connection of the pool.
func (s *Store) row(ctx context.Context, query string, args []any, dest ...any) error {
	return s.pool.Do(ctx, func(c *sql.Conn) error { return c.QueryRowContext(ctx, query, args...).Scan(dest...) })
}

// countRow is row for the overview's counts, read uncommitted: InnoDB then checks no record's
// visibility — which, on the index pages relays keep changing, costs a lookup of the row for every
// entry — and a count may include a relay's change not yet committed, as a count taken a moment
// later would. SET TRANSACTION applies to the next transaction only (the autocommit SELECT), in
// MySQL and MariaDB alike; the connection's other statements keep their isolation. A count that
// fails after the SET (refused, or its request gone) may leave it standing for the connection's
// next transaction, a dirty read of whatever runs there next: that connection is discarded.
func (s *Store) countRow(ctx context.Context, query string, args []any, dest ...any) error {
	return s.pool.Do(ctx, func(c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED`)
		if err == nil {
			err = c.QueryRowContext(ctx, query, args...).Scan(dest...)
		}
		if err != nil {
			_ = c.Raw(func(any) error { return driver.ErrBadConn }) // closed, not pooled again
		}
		return err
	})
}

// Stats counts the non-SENT states exactly, each with its own range of the (status, available_at)
// index ("Using index"; PROCESSING with its rows, to tell the stuck leases), side by side on the
// pool's connections and read uncommitted (countRow);
// SENT, the bulk of a healthy outbox, comes from InnoDB's row estimate
// (information_schema.TABLES.TABLE_ROWS, kept by its persistent statistics) on large tables.
func (s *Store) Stats(ctx context.Context) (outbox.Stats, error) {
	st := outbox.Stats{Counts: map[outbox.Status]int64{}, CheckedAt: time.Now()}
	var ready, failed, dead, processing int64
	var oldestMicros, stuckMicros sql.NullInt64
	var estimate int64
	g, gctx := errgroup.WithContext(ctx)
	// The longest first: READY's range and the PROCESSING rows' look-ups.
	g.Go(func() error { return s.countRow(gctx, s.q.count[outbox.Ready], nil, &ready) })
	g.Go(func() error { return s.countRow(gctx, s.q.processing, nil, &processing, &st.StuckLeases, &stuckMicros) })
	g.Go(func() error { return s.countRow(gctx, s.q.count[outbox.Dead], nil, &dead) })
	g.Go(func() error { return s.countRow(gctx, s.q.count[outbox.Failed], nil, &failed) })
	g.Go(func() error { return s.countRow(gctx, s.q.readyAge, nil, &oldestMicros) })
	g.Go(func() error { return s.row(gctx, s.q.estimate, s.q.estimateArgs, &estimate) })
	if err := g.Wait(); err != nil {
		return outbox.Stats{}, s.wrap("stats", err)
	}
	st.Counts[outbox.Ready], st.Counts[outbox.Processing], st.Counts[outbox.Failed], st.Counts[outbox.Dead] = ready, processing, failed, dead
	unsent := ready + processing + failed + dead
	st.OldestReadyAge, st.OldestStuckAge = micros(oldestMicros), micros(stuckMicros)
	if estimate >= outbox.ExactSentBelow {
		st.SentIsEstimate = true
		st.Counts[outbox.Sent] = max(0, estimate-unsent)
		return st, nil
	}
	var sent int64
	if err := s.countRow(ctx, s.q.count[outbox.Sent], nil, &sent); err != nil {
		return outbox.Stats{}, s.wrap("stats", err)
	}
	st.Counts[outbox.Sent] = sent
	return st, nil
}

// micros is an age the database computed in microseconds (NULL: none).
func micros(v sql.NullInt64) *time.Duration {
	if !v.Valid {
		return nil
	}
	d := time.Duration(v.Int64) * time.Microsecond
	return &d
}

// placeholders is "?, ?, …" for n values, and the values.
func placeholders[T any](vs []T) (string, []any) {
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = v
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(vs)), ", "), args
}

// List builds the filter's WHERE on the table's columns.
func (s *Store) List(ctx context.Context, f outbox.Filter) ([]outbox.Event, error) {
	var where []string
	var args []any
	if f.StuckOnly { // Check: Status is PROCESSING or none
		where = append(where, fmt.Sprintf("%s = 'PROCESSING' AND %s < NOW(6)", s.q.status, s.q.lockedUntil))
	} else if f.Status != "" {
		where = append(where, s.q.status+" = ?")
		args = append(args, string(f.Status))
	}
	// The table's collation may ignore case, accents and trailing spaces: = keeps the column's
	// index usable, and a comparison of the bytes makes the filter (a requeue's, a replay plan's,
	// a resolution's selection) match the very value it was given.
	if f.EventType != "" {
		where = append(where, exactly(s.q.eventType))
		args = append(args, f.EventType, f.EventType)
	}
	if f.AggregateID != "" {
		where = append(where, exactly(s.q.aggregateID))
		args = append(args, f.AggregateID, f.AggregateID)
	}
	if !f.CreatedFrom.IsZero() {
		where = append(where, s.q.createdAt+" >= ?")
		args = append(args, f.CreatedFrom.UTC())
	}
	if !f.CreatedTo.IsZero() {
		where = append(where, s.q.createdAt+" < ?")
		args = append(args, f.CreatedTo.UTC())
	}
	if f.Before > 0 {
		where = append(where, s.q.id+" < ?")
		args = append(args, f.Before)
	}
	query := s.q.selectEvent
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += fmt.Sprintf(" ORDER BY %s DESC LIMIT ?", s.q.id)
	return s.queryEvents(ctx, "list events", query, append(args, f.Limit)...)
}

// exactly is "col = ?" under the column's collation and byte for byte (in utf8mb4, the
// connection's character set): two parameters, the same value.
func exactly(col string) string {
	return col + " = ? AND CAST(CONVERT(" + col + " USING utf8mb4) AS BINARY) = CAST(? AS BINARY)"
}

// stuckSQL is the first page of the stuck-only list, for EXPLAIN in tests and benchmarks.
func (s *Store) stuckSQL() string {
	return fmt.Sprintf("%s WHERE %s = 'PROCESSING' AND %s < NOW(6) ORDER BY %s DESC LIMIT 51",
		s.q.selectEvent, s.q.status, s.q.lockedUntil, s.q.id)
}

// Events reads the events with these ids in id order.
func (s *Store) Events(ctx context.Context, ids []int64) ([]outbox.Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in, args := placeholders(ids)
	return s.queryEvents(ctx, "read events", fmt.Sprintf("%s WHERE %s IN (%s) ORDER BY %s", s.q.selectEvent, s.q.id, in, s.q.id), args...)
}

// Find reads a trace's rows by event_id and aggregate_id.
func (s *Store) Find(ctx context.Context, eventIDs []string, aggregateID string, limit int) ([]outbox.Event, error) {
	var or []string
	var args []any
	if len(eventIDs) > 0 {
		in, a := placeholders(eventIDs)
		or = append(or, fmt.Sprintf("%s IN (%s)", s.q.eventID, in))
		args = a
	}
	if aggregateID != "" {
		or = append(or, s.q.aggregateID+" = ?")
		args = append(args, aggregateID)
	}
	if len(or) == 0 {
		return nil, nil
	}
	query := fmt.Sprintf("%s WHERE %s ORDER BY %s LIMIT ?", s.q.selectEvent, strings.Join(or, " OR "), s.q.id)
	events, err := s.queryEvents(ctx, "find events", query, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	// The table's collation may match case-insensitively or ignore trailing spaces: a trace
	// follows the very ids it was given.
	want := make(map[string]bool, len(eventIDs))
	for _, id := range eventIDs {
		want[id] = true
	}
	out := events[:0]
	for _, e := range events {
		if want[e.EventID] || (aggregateID != "" && e.AggregateID == aggregateID) {
			out = append(out, e)
		}
	}
	return out, nil
}

// queryEvents runs query (the table's selectEvent and what follows) and reads the events it
// selects, what naming the read in an error.
func (s *Store) queryEvents(ctx context.Context, what, query string, args ...any) ([]outbox.Event, error) {
	var events []outbox.Event
	err := s.pool.Do(ctx, func(c *sql.Conn) error {
		events = events[:0]
		rows, err := c.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e outbox.Event
			if err := rows.Scan(eventDest(&e)...); err != nil {
				return err
			}
			events = append(events, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap(what, err)
	}
	return events, nil
}

// Event returns one event with its payload.
func (s *Store) Event(ctx context.Context, id int64) (outbox.Event, error) {
	query := strings.Replace(s.q.selectEvent, " FROM ", ", "+s.q.payload+" FROM ", 1) + " WHERE " + s.q.id + " = ?"
	var e outbox.Event
	if err := s.row(ctx, query, []any{id}, append(eventDest(&e), &e.Payload)...); err != nil {
		return outbox.Event{}, s.wrap(fmt.Sprintf("event %d", id), err)
	}
	return e, nil
}

func eventDest(e *outbox.Event) []any {
	return []any{&e.ID, &e.EventID, &e.AggregateType, &e.AggregateID, &e.EventType, (*string)(&e.Status),
		&e.Attempts, &e.AvailableAt, &e.LockedUntil, &e.LastError, &e.CreatedAt, &e.SentAt, &e.SchemaVersion}
}

// Deaths names those of ids that are DEAD now.
func (s *Store) Deaths(ctx context.Context, ids []int64) (map[int64]string, error) {
	in, args := placeholders(ids)
	out := map[int64]string{}
	err := s.pool.Do(ctx, func(c *sql.Conn) error {
		rows, err := c.QueryContext(ctx, fmt.Sprintf(`SELECT %s, %s, %s FROM %s WHERE %s IN (%s) AND %s = 'DEAD'`,
			s.q.id, s.q.eventID, s.q.availableAt, s.q.table, s.q.id, in, s.q.status), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e outbox.Event
			if err := rows.Scan(&e.ID, &e.EventID, &e.AvailableAt); err != nil {
				return err
			}
			out[e.ID] = e.Death()
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap("dead events", err)
	}
	return out, nil
}

// releaseBatch bounds one locking read so that releasing many stuck rows never asks for a huge
// lock set in one statement.
const releaseBatch = 5000

// lockIDs runs a locking read of ids (… FOR UPDATE SKIP LOCKED) in tx.
func lockIDs(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// lockEvents is lockIDs of a read that selects each row's id and event_id.
func lockEvents(ctx context.Context, tx *sql.Tx, query string, args ...any) (ids []int64, events []string, err error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var event string
		if err := rows.Scan(&id, &event); err != nil {
			return nil, nil, err
		}
		ids, events = append(ids, id), append(events, event)
	}
	return ids, events, rows.Err()
}

// ReleaseStuck locks the stuck rows (of ids, or all) in batches of releaseBatch, skipping those a
// relay holds, and sets each batch READY under the same condition, in one transaction.
func (s *Store) ReleaseStuck(ctx context.Context, ids []int64, audit outbox.AuditFunc) (int64, error) {
	const op = "release stuck leases"
	cond, condArgs := s.q.claimed, []any(nil)
	if ids != nil {
		in, a := placeholders(ids)
		cond += fmt.Sprintf(" AND %s IN (%s)", s.q.id, in)
		condArgs = a
	}
	// No ORDER BY: with one, MySQL may walk the primary key in order, over every row of a large
	// table, rather than the PROCESSING range of the status index.
	pick := fmt.Sprintf(`SELECT %[2]s FROM %[1]s WHERE %[3]s LIMIT %[4]d FOR UPDATE SKIP LOCKED`,
		s.q.table, s.q.id, cond, releaseBatch)
	var total int64
	var auditErr error
	err := s.pool.Tx(ctx, func(tx *sql.Tx) error {
		for {
			locked, err := lockIDs(ctx, tx, pick, condArgs...)
			if err != nil {
				return err
			}
			if len(locked) > 0 {
				in, args := placeholders(locked)
				res, err := tx.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET %s = 'READY', %s = NULL WHERE %s IN (%s) AND %s`,
					s.q.table, s.q.status, s.q.lockedUntil, s.q.id, in, s.q.claimed), args...)
				if err != nil {
					return err
				}
				n, _ := res.RowsAffected()
				total += n
			}
			if len(locked) < releaseBatch {
				break
			}
		}
		auditErr = audit(ctx, tx, total)
		return auditErr
	})
	switch {
	case auditErr != nil:
		return 0, auditErr
	case err != nil:
		return 0, s.wrap(op, err)
	}
	return total, nil
}

// Requeue locks the DEAD or FAILED rows of ids, skipping those a relay holds, and sets them READY
// under the same condition, in one transaction. With eventIDs, a locked row whose event_id is not
// exactly the one given (compared here: the column's collation may ignore case or trailing
// spaces) is left alone.
func (s *Store) Requeue(ctx context.Context, ids []int64, eventIDs []string, resetAttempts bool, audit outbox.AuditFunc) ([]int64, error) {
	const op = "requeue"
	in, args := placeholders(ids)
	set := fmt.Sprintf("%s = 'READY', %s = NOW(6), %s = NULL", s.q.status, s.q.availableAt, s.q.lockedUntil)
	if resetAttempts {
		set += ", " + s.q.attempts + " = 0"
	}
	var moved []int64
	var auditErr error
	err := s.pool.Tx(ctx, func(tx *sql.Tx) error {
		locked, held, err := lockEvents(ctx, tx, fmt.Sprintf(`SELECT %[2]s, %[5]s FROM %[1]s WHERE %[2]s IN (%[3]s) AND %[4]s IN ('DEAD','FAILED')
			ORDER BY %[2]s FOR UPDATE SKIP LOCKED`, s.q.table, s.q.id, in, s.q.status, s.q.eventID), args...)
		if err != nil {
			return err
		}
		if eventIDs != nil {
			want := make(map[int64]string, len(ids))
			for i, id := range ids {
				want[id] = eventIDs[i]
			}
			kept := locked[:0]
			for i, id := range locked {
				if held[i] == want[id] {
					kept = append(kept, id)
				}
			}
			locked = kept
		}
		if len(locked) > 0 {
			lin, largs := placeholders(locked)
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET %s WHERE %s IN (%s) AND %s IN ('DEAD','FAILED')`,
				s.q.table, set, s.q.id, lin, s.q.status), largs...); err != nil {
				return err
			}
		}
		moved = locked
		auditErr = audit(ctx, tx, int64(len(moved)))
		return auditErr
	})
	switch {
	case auditErr != nil:
		return nil, auditErr
	case err != nil:
		return nil, s.wrap(op, err)
	}
	return moved, nil
}

// wrap turns driver errors into the domain's kinds with the outbox named.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if mysqlpool.IsNoRows(err) {
		return ops.NotFound("%s not found in outbox %q", op, s.name)
	}
	if me := mysqlpool.ServerError(err); me != nil {
		// A server-side error (missing table, wrong column, no right) is a configuration problem,
		// not a transient outage: the error number says which, the server's message (in the log)
		// says more.
		return ops.Unavailable(fmt.Errorf("outbox %s: %s: %s (error %d)", s.name, op, me.Message, me.Number),
			"outbox %q: %s: its database refused the query (MySQL error %d); check the outbox's table and the account's rights (console doctor)",
			s.name, op, me.Number)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ops.ErrUnavailable) {
		return fmt.Errorf("outbox %s: %s: %w", s.name, op, err) // a busy pool says so itself
	}
	// The driver's error names the database's address: it is for the log.
	return ops.Unavailable(fmt.Errorf("outbox %s: %s: %w", s.name, op, err),
		"the database of outbox %q did not answer (%s); try again, or see whether it is up", s.name, op)
}
