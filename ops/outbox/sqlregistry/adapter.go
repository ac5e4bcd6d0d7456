package sqlregistry

import (
	"context"
	"fmt"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/outbox"
)

// settings are the domain's settings of the outbox cfg, for the seed's Store and a registry alike.
func settings(cfg configs.Outbox) outbox.Settings {
	return outbox.Settings{Name: cfg.Name, MaxAttempts: cfg.MaxAttempts, StaleReadyAfter: cfg.StaleReadyAfter.D()}
}

// OpenSeed is the seed-format outbox of cfg as the console uses it: the Store that the adapter's
// newStore prepares, under the domain's rules. It is each adapter's Open.
func OpenSeed[S outbox.Store](ctx context.Context, cfg configs.Outbox,
	newStore func(context.Context, configs.Outbox) (S, error)) (*outbox.Outbox, error) {
	s, err := newStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return outbox.New(settings(cfg), s), nil
}

// Pool names and sizes the outbox's pool (pgpool, mysqlpool): what it serves and the key that
// raises its size, both named in its errors, and that size.
func Pool(cfg configs.Outbox) (name, key string, size int) {
	return fmt.Sprintf("outbox %q", cfg.Name), fmt.Sprintf("max_conns of outbox %q (outboxes[].max_conns)", cfg.Name),
		cfg.Size(configs.DefaultOutboxMaxConns)
}

// Rows are a query's rows as database/sql and pgx both give them.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// EachRow calls row for each of rows, the way Conn.Query does, and returns the first error (the
// rows' own last); the caller closes rows.
func EachRow(rows Rows, row func(scan func(dest ...any) error) error) error {
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}
