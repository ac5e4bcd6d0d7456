package main

import (
	"context"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/inbox/mysqlinbox"
	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
)

// openOutbox opens the outbox of cfg with the adapter of its database, which the DSN's scheme
// names (configs validated it): postgres:// or postgresql:// → PostgreSQL, mysql:// → MySQL or
// MariaDB.
func openOutbox(ctx context.Context, cfg configs.Outbox) (*outbox.Outbox, error) {
	db, err := configs.DatabaseOf(string(cfg.DSN))
	if err != nil {
		return nil, err
	}
	switch db {
	case configs.MySQL:
		return mysqloutbox.Open(ctx, cfg)
	default:
		return pgoutbox.Open(ctx, cfg)
	}
}

// openInbox opens consumer's inbox of cfg with the adapter of its database, as openOutbox.
func openInbox(ctx context.Context, consumer string, cfg configs.Inbox) (*inbox.Inbox, error) {
	db, err := configs.DatabaseOf(string(cfg.DSN))
	if err != nil {
		return nil, err
	}
	switch db {
	case configs.MySQL:
		return mysqlinbox.Open(ctx, consumer, cfg)
	default:
		return pginbox.Open(ctx, consumer, cfg)
	}
}
