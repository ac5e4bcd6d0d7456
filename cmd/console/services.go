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
// MariaDB; its format (outboxes[].format) picks the seed's Store or the registry reader.
func openOutbox(ctx context.Context, cfg configs.Outbox) (*outbox.Outbox, error) {
	db, err := configs.DatabaseOf(string(cfg.DSN))
	if err != nil {
		return nil, err
	}
	registry := cfg.Format != "" && cfg.Format != configs.OutboxFormatSeed // spring-modulith, namastack, debezium
	switch {
	case db == configs.MySQL && registry:
		return mysqloutbox.OpenRegistry(ctx, cfg)
	case db == configs.MySQL:
		return mysqloutbox.Open(ctx, cfg)
	case registry:
		return pgoutbox.OpenRegistry(ctx, cfg)
	default:
		return pgoutbox.Open(ctx, cfg)
	}
}

// openInbox opens consumer's inbox of cfg with the adapter of its format × database: the format
// is consumers[].inbox.format, the database the DSN's scheme, as openOutbox.
func openInbox(ctx context.Context, consumer string, cfg configs.Inbox) (*inbox.Inbox, error) {
	db, err := configs.DatabaseOf(string(cfg.DSN))
	if err != nil {
		return nil, err
	}
	switch {
	case db == configs.MySQL && cfg.Format == configs.InboxEventuate:
		return mysqlinbox.OpenEventuate(ctx, consumer, cfg)
	case db == configs.MySQL:
		return mysqlinbox.Open(ctx, consumer, cfg)
	case cfg.Format == configs.InboxEventuate:
		return pginbox.OpenEventuate(ctx, consumer, cfg)
	default:
		return pginbox.Open(ctx, consumer, cfg)
	}
}
