// Package inbox reads the consumers' idempotency records (the seed's inbox_message table) to tell,
// before a replay, whether a consumer has already applied a message's effect.
package inbox

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
	"github.com/redrive/redrive/ops/pgpool"
)

// Verdict is what a consumer's inbox says about one message.
type Verdict string

// Verdicts, from the seed's inbox semantics (section 七).
const (
	// Processed: a row with processed_at set — the consumer committed the message's effect.
	Processed Verdict = "processed"
	// InProgress: a row without processed_at — received, maybe mid-transaction; ambiguous.
	InProgress Verdict = "in_progress"
	// NotProcessed: no row — the consumer has not applied it.
	NotProcessed Verdict = "not_processed"
	// Unknown: no inbox is configured for the consumer, or it could not be read.
	Unknown Verdict = "unknown"
)

// Inbox is one consumer's inbox table.
type Inbox struct {
	consumer string
	pool     *pgpool.Pool
	lookup   string
	rows     string // a message's row with its times, for a trace (trace.go)
}

// Open prepares the pool and query; it does not wait for the database.
func Open(ctx context.Context, consumer string, cfg configs.Inbox) (*Inbox, error) {
	pcfg, err := pgxpool.ParseConfig(string(cfg.DSN))
	if err != nil {
		return nil, fmt.Errorf("inbox %s: dsn: %w", consumer, ops.ErrInvalid)
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = "redrive-console"
	// The seed's received_at/processed_at are TIMESTAMP without zone, written in UTC (as the outbox's).
	pcfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	pool, err := pgpool.New(ctx, pcfg, pgpool.Options{Name: fmt.Sprintf("the inbox of consumer %q", consumer),
		Key:      fmt.Sprintf("inbox.max_conns of consumer %q (consumers[].inbox.max_conns)", consumer),
		MaxConns: cfg.Size(configs.DefaultInboxMaxConns), AcquireTimeout: cfg.Wait()})
	if err != nil {
		return nil, fmt.Errorf("inbox %s: %w: %w", consumer, ops.ErrUnavailable, err)
	}
	t := pgx.Identifier(strings.Split(cfg.Table, ".")).Sanitize()
	q := func(s string) string { return pgx.Identifier{s}.Sanitize() }
	c := cfg.Columns
	return &Inbox{consumer: consumer, pool: pool, lookup: fmt.Sprintf(
		`SELECT %[2]s::text, %[3]s IS NOT NULL FROM %[1]s WHERE %[4]s = $1 AND %[2]s = ANY($2)`,
		t, q(c.MessageID), q(c.ProcessedAt), q(c.Consumer)),
		rows: fmt.Sprintf(`SELECT %[2]s::text, %[5]s::timestamptz, %[3]s::timestamptz FROM %[1]s
			WHERE %[4]s = $1 AND %[2]s = ANY($2) ORDER BY %[2]s LIMIT $3`,
			t, q(c.MessageID), q(c.ProcessedAt), q(c.Consumer), q(c.ReceivedAt))}, nil
}

// Consumer is the consumer name the inbox rows are keyed by.
func (i *Inbox) Consumer() string { return i.consumer }

// Close releases the pool.
func (i *Inbox) Close() { i.pool.Close() }

// Ping checks the table is readable.
func (i *Inbox) Ping(ctx context.Context) error {
	_, err := i.Verdicts(ctx, []string{"redrive-ping"})
	return err
}

// batch bounds one lookup's array parameter.
const batch = 1000

// Verdicts looks up many message ids at once (= ANY($1), in batches) and returns a verdict for
// every id asked. Errors wrap ops.ErrUnavailable; callers then treat the verdicts as Unknown.
func (i *Inbox) Verdicts(ctx context.Context, ids []string) (map[string]Verdict, error) {
	out := make(map[string]Verdict, len(ids))
	for _, id := range ids {
		out[id] = NotProcessed
	}
	for start := 0; start < len(ids); start += batch {
		chunk := ids[start:min(start+batch, len(ids))]
		err := i.lookupChunk(ctx, chunk, out)
		if lostSession(err) && ctx.Err() == nil {
			// The database ended the pooled session (a restart, a failover): a read is safe to
			// try once more, on a fresh connection, before every verdict becomes "unknown".
			err = i.lookupChunk(ctx, chunk, out)
		}
		if err != nil {
			return nil, i.wrap(err)
		}
	}
	return out, nil
}

func (i *Inbox) lookupChunk(ctx context.Context, chunk []string, out map[string]Verdict) error {
	rows, err := i.pool.Query(ctx, i.lookup, i.consumer, chunk)
	if err != nil {
		return err
	}
	var id string
	var processed bool
	_, err = pgx.ForEachRow(rows, []any{&id, &processed}, func() error {
		if processed {
			out[id] = Processed
		} else {
			out[id] = InProgress
		}
		return nil
	})
	return err
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

func (i *Inbox) wrap(err error) error {
	if busy := (*pgpool.BusyError)(nil); errors.As(err, &busy) {
		return fmt.Errorf("inbox look-up: %w", err) // it names the consumer and wraps ErrUnavailable
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !lostSession(err) {
		return ops.Unavailable(fmt.Errorf("inbox %s: %s (%s)", i.consumer, pgErr.Message, pgErr.Code),
			"the inbox of consumer %q refused the query (SQLSTATE %s); check its table and the role's rights (console doctor)",
			i.consumer, pgErr.Code)
	}
	// pgx's error names the database's user, host and port: it is for the log.
	return ops.Unavailable(fmt.Errorf("inbox %s: %w", i.consumer, err),
		"the inbox database of consumer %q did not answer; try again, or see whether it is up", i.consumer)
}
