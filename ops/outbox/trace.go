package outbox

import (
	"context"

	"github.com/redrive/redrive/ops"
)

// Find reads the rows a trace asks for: those whose event_id is one of eventIDs, and those of
// aggregateID ("" for none), oldest first, at most limit (1..MaxLimit). The event_id is unique in
// the seed's schema (an index answers it); an aggregate's rows are read by the aggregate_id
// column, which the relay's schema may not index — limit bounds what is read either way.
func (o *Outbox) Find(ctx context.Context, eventIDs []string, aggregateID string, limit int) ([]Event, error) {
	if limit < 1 || limit > MaxLimit {
		limit = MaxLimit
	}
	// Text a column cannot hold (NUL, invalid UTF-8: ops.TextProblem) names no row, and would make
	// the database refuse the whole look-up.
	ids := make([]string, 0, len(eventIDs))
	for _, id := range eventIDs {
		if ops.TextProblem(id) == "" {
			ids = append(ids, id)
		}
	}
	if ops.TextProblem(aggregateID) != "" {
		aggregateID = ""
	}
	if len(ids) == 0 && aggregateID == "" {
		return nil, nil
	}
	return o.store.Find(ctx, ids, aggregateID, limit)
}
