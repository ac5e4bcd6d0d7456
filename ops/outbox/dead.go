package outbox

import (
	"context"
	"strconv"
)

// Deaths names, for those of ids that are DEAD now, the death they are in (Event.Death): the
// events Redrive marked resolved or ignored, which the overview stops counting while they are in
// the death the mark was about (one requeued and dead again is in another).
func (o *Outbox) Deaths(ctx context.Context, ids []int64) (map[int64]string, error) {
	if len(ids) == 0 {
		return map[int64]string{}, nil
	}
	return o.store.Deaths(ctx, ids)
}

// Death names one death of an event: its event id and the available_at its relay left when it
// went DEAD. A row that is requeued (by anyone, the service's own tooling included) and dies
// again has another.
func (e Event) Death() string {
	return e.EventID + "@" + strconv.FormatInt(e.AvailableAt.UnixMicro(), 10)
}
