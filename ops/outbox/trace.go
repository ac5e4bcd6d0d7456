package outbox

import (
	"context"
	"fmt"
)

// Find reads the rows a trace asks for: those whose event_id is one of eventIDs, and those of
// aggregateID ("" for none), oldest first, at most limit (1..MaxLimit). The event_id is unique in
// the seed's schema (an index answers it); an aggregate's rows are read by the aggregate_id
// column, which the relay's schema may not index — limit bounds what is read either way.
func (o *Outbox) Find(ctx context.Context, eventIDs []string, aggregateID string, limit int) ([]Event, error) {
	if limit < 1 || limit > MaxLimit {
		limit = MaxLimit
	}
	if eventIDs == nil {
		eventIDs = []string{}
	}
	sql := fmt.Sprintf("%s WHERE %s::text = ANY($1) OR ($2 <> '' AND %s::text = $2) ORDER BY %s LIMIT $3",
		o.q.selectEvent, o.q.eventID, o.q.aggregateID, o.q.id)
	return o.queryEvents(ctx, "find events", sql, eventIDs, aggregateID, limit)
}
