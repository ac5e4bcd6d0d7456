package outbox

import "context"

// CountDead counts how many of ids are DEAD now: the events Redrive marked resolved or ignored
// that the overview stops counting (one marked and then requeued by the relay's own tools is no
// longer DEAD and so no longer subtracted).
func (o *Outbox) CountDead(ctx context.Context, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	return o.store.CountDead(ctx, ids)
}
