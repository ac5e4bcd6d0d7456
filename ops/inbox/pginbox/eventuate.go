package pginbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/inbox/sqlinbox"
)

// OpenEventuate is consumer's inbox of cfg (a postgres:// DSN) in Eventuate Tram's format, as the
// console uses it.
func OpenEventuate(ctx context.Context, consumer string, cfg configs.Inbox) (*inbox.Inbox, error) {
	return sqlinbox.Open(ctx, consumer, cfg, NewEventuate)
}

// NewEventuate prepares the pool and the queries of Eventuate Tram's received_messages
// (consumer_id, message_id, creation_time): its SqlTableBasedDuplicateMessageDetector inserts the
// row in the message handler's own transaction, so a row another session sees is a committed
// effect — processed, never in progress. creation_time is epoch milliseconds (it may be NULL:
// older versions did not write it), read as the time the message was received and processed.
func NewEventuate(ctx context.Context, consumer string, cfg configs.Inbox) (*Store, error) {
	if err := sqlinbox.Format(consumer, cfg, configs.InboxEventuate); err != nil {
		return nil, err
	}
	t := pgx.Identifier(strings.Split(cfg.Table, ".")).Sanitize()
	q := func(s string) string { return pgx.Identifier{s}.Sanitize() }
	c := cfg.Columns
	at := fmt.Sprintf(`to_timestamp(%s / 1000.0)`, q(c.CreationTime))
	return open(ctx, consumer, cfg, sqlinbox.Queries{
		Lookup: fmt.Sprintf(`SELECT %[2]s::text, TRUE FROM %[1]s WHERE %[3]s = $1 AND %[2]s = ANY($2)`,
			t, q(c.MessageID), q(c.ConsumerID)),
		Rows: fmt.Sprintf(`SELECT %[2]s::text, %[4]s, %[4]s, TRUE FROM %[1]s
			WHERE %[3]s = $1 AND %[2]s = ANY($2) ORDER BY %[2]s LIMIT $3`, t, q(c.MessageID), q(c.ConsumerID), at),
		Others: fmt.Sprintf(`SELECT %[2]s::text, %[4]s, %[4]s, TRUE, %[3]s::text FROM %[1]s
			WHERE %[3]s <> $1 AND %[2]s = ANY($2) ORDER BY %[2]s, %[3]s LIMIT $3`, t, q(c.MessageID), q(c.ConsumerID), at),
		Columns: []string{c.MessageID, c.ConsumerID, c.CreationTime}})
}
