// Package sqlinbox is what the SQL adapters of a consumer's inbox (ops/inbox/pginbox for
// PostgreSQL, ops/inbox/mysqlinbox for MySQL and MariaDB) share for every format: the queries a
// format reads, the check that a configuration is of the adapter's format, the pool's names, and
// Open. It imports no driver: each adapter writes its queries in its database's SQL and keeps its
// own pool.
package sqlinbox

import (
	"cmp"
	"context"
	"fmt"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/inbox"
)

// Queries are what a format reads, in the adapter's SQL. Each takes the consumer first, then the
// ids (PostgreSQL: an array; MySQL: %s, left for the ids' placeholders), then, for Rows and
// Others, the limit.
type Queries struct {
	Lookup  string   // each id found and whether it is processed
	Rows    string   // a message's row: its id, times and whether it is processed, for a trace
	Others  string   // other consumers' rows of a message in the same table, with the consumer
	Columns []string // the mapped columns, for Inspect
}

// Open is consumer's inbox of cfg as the console uses it, over the Store that the adapter's
// newStore (a format's New) prepares. It is each adapter's Open of each format.
func Open[S inbox.Store](ctx context.Context, consumer string, cfg configs.Inbox,
	newStore func(context.Context, string, configs.Inbox) (S, error)) (*inbox.Inbox, error) {
	s, err := newStore(ctx, consumer, cfg)
	if err != nil {
		return nil, err
	}
	return inbox.New(consumer, s), nil
}

// Format refuses a configuration of another format than want, the adapter's: cmd picks the
// adapter by consumers[].inbox.format. No format (a configs.Inbox not read from a file) is the
// seed's.
func Format(consumer string, cfg configs.Inbox, want configs.InboxFormat) error {
	if cmp.Or(cfg.Format, configs.InboxSeed) != want {
		return fmt.Errorf("inbox %s: the %s adapter was given an inbox of format %q: %w", consumer, want, cfg.Format, ops.ErrInvalid)
	}
	return nil
}

// Pool names and sizes the pool (pgpool, mysqlpool) of consumer's inbox of cfg: what it serves and
// the key that raises its size, both named in its errors, and that size.
func Pool(consumer string, cfg configs.Inbox) (name, key string, size int) {
	return fmt.Sprintf("the inbox of consumer %q", consumer),
		fmt.Sprintf("inbox.max_conns of consumer %q (consumers[].inbox.max_conns)", consumer),
		cfg.Size(configs.DefaultInboxMaxConns)
}
