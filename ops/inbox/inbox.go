// Package inbox reads the consumers' idempotency records (the seed's inbox_message table) to tell,
// before a replay, whether a consumer has already applied a message's effect.
//
// This package is the domain: the verdicts and the Store it needs from each database. The adapters
// provide it — ops/inbox/pginbox (PostgreSQL) and ops/inbox/mysqlinbox (MySQL and MariaDB) — and
// every one of them passes the same behavioural suite, ops/inbox/inboxtest.
package inbox

import (
	"context"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/catalog"
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

// Row is one consumer's inbox row for a message, with its times. Processed is the row's verdict:
// in the seed's format, processed_at set (ProcessedAt nil means received but not (yet) committed —
// ambiguous, maybe mid-transaction, seed section 七); in Eventuate's, always (its row is written in
// the handler's transaction), with ReceivedAt and ProcessedAt both its creation_time, or nil when
// the row has none (versions before creation_time): processed at an unknown time.
type Row struct {
	MessageID   string
	ReceivedAt  *time.Time
	ProcessedAt *time.Time
	Processed   bool
	// Consumer is whose row it is: set by OtherRows (another consumer of the same table); ""
	// for the inbox's own consumer's.
	Consumer string
}

// Store is one consumer's inbox table as an adapter of its database reads it: the PostgreSQL one
// (ops/inbox/pginbox), the MySQL/MariaDB one (ops/inbox/mysqlinbox). The table, its columns and the
// consumer whose rows it reads are the adapter's (configured, validated); it only ever reads.
//
// Errors wrap ops.ErrUnavailable and name the consumer, never a host or user: the database cannot
// be reached, refuses the query (a missing table or right: the message says to run console
// doctor), or its pool is busy.
//
// Every adapter passes ops/inbox/inboxtest.Exercise.
type Store interface {
	// Lookup reads the consumer's rows of ids (at most Batch of them, each valid UTF-8 without
	// NUL): for each id that has a row, whether its processed_at is set. An id without a row is
	// absent. A read is safe to repeat: when the database ended the session under it (a restart,
	// a failover), the adapter tries once more on a fresh connection.
	Lookup(ctx context.Context, ids []string) (map[string]bool, error)
	// Rows reads the consumer's rows of ids (valid UTF-8 without NUL), by message id, at most
	// limit, for a trace.
	Rows(ctx context.Context, ids []string, limit int) ([]Row, error)
	// OtherRows reads the rows of ids (valid UTF-8 without NUL) that other consumers wrote in the
	// same table — the seed's inbox is shared, keyed by message and consumer —, by message id and
	// consumer, at most limit, each with its Consumer, for a trace: a message processed by
	// someone else and not by this consumer is what the person tracing needs to see.
	OtherRows(ctx context.Context, ids []string, limit int) ([]Row, error)
	// Inspect reads from the catalog only, for console doctor, the table's columns, its indexes
	// (the primary key among them) and the account's SELECT on the mapped columns.
	Inspect(ctx context.Context) (catalog.TableFacts, error)
	// Close releases the connections.
	Close()
}

// Inbox is one consumer's inbox table.
type Inbox struct {
	consumer string
	store    Store
}

// New is consumer's inbox over store, which it closes on Close.
func New(consumer string, store Store) *Inbox {
	return &Inbox{consumer: consumer, store: store}
}

// Consumer is the consumer name the inbox rows are keyed by.
func (i *Inbox) Consumer() string { return i.consumer }

// Close releases the store's connections.
func (i *Inbox) Close() { i.store.Close() }

// Ping checks the table is readable.
func (i *Inbox) Ping(ctx context.Context) error {
	_, err := i.Verdicts(ctx, []string{"redrive-ping"})
	return err
}

// Batch bounds the ids of one Lookup.
const Batch = 1000

// storable reports whether id can be a message id in an inbox table's text column (valid UTF-8
// without NUL, ops.TextProblem). An id that cannot is in no row — it is not processed — and is
// never sent to the database, whose text type would refuse the whole batch for it.
func storable(id string) bool { return ops.TextProblem(id) == "" }

// Verdicts looks up many message ids at once (in batches of Batch) and returns a verdict for every
// id asked. A row counts only for the very id asked, byte for byte (a table whose collation
// ignores case does not make m-1 answer for M-1). Errors wrap ops.ErrUnavailable; callers then
// treat the verdicts as Unknown.
func (i *Inbox) Verdicts(ctx context.Context, ids []string) (map[string]Verdict, error) {
	out := make(map[string]Verdict, len(ids))
	ask := make([]string, 0, len(ids))
	for _, id := range ids {
		if _, seen := out[id]; seen {
			continue
		}
		out[id] = NotProcessed
		if storable(id) {
			ask = append(ask, id)
		}
	}
	for start := 0; start < len(ask); start += Batch {
		found, err := i.store.Lookup(ctx, ask[start:min(start+Batch, len(ask))])
		if err != nil {
			return nil, err
		}
		for id, processed := range found {
			if _, asked := out[id]; !asked {
				continue
			}
			if processed {
				out[id] = Processed
			} else {
				out[id] = InProgress
			}
		}
	}
	return out, nil
}

// Rows reads this consumer's rows for the ids (at most limit, by message id), for a trace: a
// message with no row is one the consumer has not taken. Errors wrap ops.ErrUnavailable.
func (i *Inbox) Rows(ctx context.Context, ids []string, limit int) ([]Row, error) {
	return i.rows(ctx, ids, limit, i.store.Rows)
}

// OtherRows reads the rows other consumers of the same table wrote for these message ids, each
// naming its consumer, at most limit (Store.OtherRows). Errors wrap ops.ErrUnavailable.
func (i *Inbox) OtherRows(ctx context.Context, ids []string, limit int) ([]Row, error) {
	return i.rows(ctx, ids, limit, i.store.OtherRows)
}

// rows asks read for the ids a database can hold, and keeps the rows of ids asked.
func (i *Inbox) rows(ctx context.Context, ids []string, limit int, read func(context.Context, []string, int) ([]Row, error)) ([]Row, error) {
	ask := make([]string, 0, len(ids))
	asked := make(map[string]bool, len(ids))
	for _, id := range ids {
		if storable(id) {
			ask = append(ask, id)
			asked[id] = true
		}
	}
	if len(ask) == 0 {
		return nil, nil
	}
	rows, err := read(ctx, ask, limit)
	if err != nil {
		return nil, err
	}
	out := rows[:0]
	for _, r := range rows {
		if asked[r.MessageID] {
			out = append(out, r)
		}
	}
	return out, nil
}

// Inspect reads, from the catalog only, what the doctor checks about this consumer's inbox table:
// its columns, its indexes (the primary key among them) and the account's SELECT on the mapped
// columns. Nothing is tried or written.
func (i *Inbox) Inspect(ctx context.Context) (catalog.TableFacts, error) {
	return i.store.Inspect(ctx)
}
