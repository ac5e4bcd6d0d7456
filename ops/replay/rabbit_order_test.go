package replay_test

import (
	"fmt"
	"testing"

	"github.com/redrive/redrive/ops/replay"
)

// A RabbitMQ replay puts the messages back in the order the DLQ holds them: a consumer that
// relies on a queue's order (a single active consumer; "created" before "updated" of one order)
// sees them as it would have the first time. The replay once shared each batch between two
// publishing channels, which the broker confirms and enqueues independently, so neighbours
// arrived swapped.
func TestRabbitReplayKeepsTheDLQsOrder(t *testing.T) {
	const n = 3000
	w, e := newFilledRabbitWorld(t, n)
	work(t, e)
	if job := w.run(t, e, w.planQueue(t, e, n, replay.Filter{}).ID); job.Status != replay.JobDone || job.Published != n {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.work", n)
	got := w.drain(t, "orders.work")
	if len(got) != n {
		t.Fatalf("%d on orders.work; want %d", len(got), n)
	}
	swapped := 0
	for i, d := range got {
		if d.MessageId != fmt.Sprintf("m-%d", i) {
			if swapped == 0 {
				t.Errorf("position %d holds %s; want m-%d", i, d.MessageId, i)
			}
			swapped++
		}
	}
	if swapped > 0 {
		t.Errorf("%d of %d messages out of the DLQ's order", swapped, n)
	}
}
