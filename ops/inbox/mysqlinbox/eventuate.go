package mysqlinbox

import (
	"context"
	"fmt"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/inbox/sqlinbox"
	"github.com/redrive/redrive/ops/mysqlpool"
)

// OpenEventuate is consumer's inbox of cfg (a mysql:// DSN) in Eventuate Tram's format, as the
// console uses it.
func OpenEventuate(ctx context.Context, consumer string, cfg configs.Inbox) (*inbox.Inbox, error) {
	return sqlinbox.Open(ctx, consumer, cfg, NewEventuate)
}

// NewEventuate prepares the pool and the queries of Eventuate Tram's received_messages
// (consumer_id, message_id, creation_time): its SqlTableBasedDuplicateMessageDetector inserts the
// row in the message handler's own transaction, so a row another session sees (READ COMMITTED)
// is a committed effect — processed, never in progress. creation_time is epoch milliseconds (it
// may be NULL: older versions did not write it), read in UTC (the pool's time_zone) as the time
// the message was received and processed. It does not connect.
func NewEventuate(_ context.Context, consumer string, cfg configs.Inbox) (*Store, error) {
	if err := sqlinbox.Format(consumer, cfg, configs.InboxEventuate); err != nil {
		return nil, err
	}
	t := mysqlpool.QuotedTable(cfg.Table)
	q := mysqlpool.Quote
	c := cfg.Columns
	at := fmt.Sprintf(`FROM_UNIXTIME(%s / 1000)`, q(c.CreationTime))
	return open(consumer, cfg, sqlinbox.Queries{
		Lookup: fmt.Sprintf(`SELECT %[2]s, TRUE FROM %[1]s WHERE %[3]s = ? AND %[2]s IN (%%s)`, t, q(c.MessageID), q(c.ConsumerID)),
		Rows: fmt.Sprintf(`SELECT %[2]s, %[4]s, %[4]s, TRUE FROM %[1]s WHERE %[3]s = ? AND %[2]s IN (%%s) ORDER BY %[2]s LIMIT ?`,
			t, q(c.MessageID), q(c.ConsumerID), at),
		Others: fmt.Sprintf(`SELECT %[2]s, %[4]s, %[4]s, TRUE, %[3]s FROM %[1]s WHERE %[3]s <> ? AND %[2]s IN (%%s) ORDER BY %[2]s, %[3]s LIMIT ?`,
			t, q(c.MessageID), q(c.ConsumerID), at),
		Columns: []string{c.MessageID, c.ConsumerID, c.CreationTime}})
}
