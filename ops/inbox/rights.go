package inbox

import (
	"context"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/pgpool"
)

// Inspect reads, from the catalog only, what the doctor checks about this consumer's inbox table
// (cfg is the consumer's inbox config): its columns, its indexes (the primary key among them) and
// the role's SELECT on the mapped columns. Nothing is tried or written.
func (i *Inbox) Inspect(ctx context.Context, cfg configs.Inbox) (pgpool.TableFacts, error) {
	c := cfg.Columns
	return i.pool.InspectTable(ctx, cfg.Table, []string{c.MessageID, c.Consumer, c.ReceivedAt, c.ProcessedAt}, nil)
}
