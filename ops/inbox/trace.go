package inbox

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Row is one consumer's inbox row for a message, with its times: ProcessedAt nil means received
// but not (yet) committed — ambiguous, maybe mid-transaction (seed section 七).
type Row struct {
	MessageID   string
	ReceivedAt  *time.Time
	ProcessedAt *time.Time
}

// Rows reads this consumer's rows for the ids (at most limit, by message id), for a trace: a
// message with no row is one the consumer has not taken. Errors wrap ops.ErrUnavailable.
func (i *Inbox) Rows(ctx context.Context, ids []string, limit int) ([]Row, error) {
	rows, err := i.pool.Query(ctx, i.rows, i.consumer, ids, limit)
	if err != nil {
		return nil, i.wrap(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Row, error) {
		var row Row
		err := r.Scan(&row.MessageID, &row.ReceivedAt, &row.ProcessedAt)
		return row, err
	})
	if err != nil {
		return nil, i.wrap(err)
	}
	return out, nil
}
