package rabbittest

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Fill declares queue (a durable classic queue, unless it exists) and publishes n messages
// (msg(i) is the i-th) to it through the default exchange, on a connection of its own, with
// publisher confirms awaited in batches: tens of thousands take seconds where a wait for each
// confirm would take minutes. It returns once the broker has confirmed every one and the queue
// holds at least n ready messages.
func Fill(tb testing.TB, amqpURL, queue string, n int, msg func(i int) amqp.Publishing) {
	tb.Helper()
	_, ch := Channel(tb, amqpURL)
	if _, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil); err != nil {
		_, ch = Channel(tb, amqpURL) // the failed passive declare closed the channel
		Topology{TB: tb, Ch: ch}.Queue(queue, nil)
	}
	if err := ch.Confirm(false); err != nil {
		tb.Fatalf("rabbittest: confirm.select: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const batch = 2000
	for from := 0; from < n; from += batch {
		dcs := make([]*amqp.DeferredConfirmation, 0, batch)
		for i := from; i < min(from+batch, n); i++ {
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, msg(i))
			if err != nil {
				tb.Fatalf("rabbittest: publish %d: %v", i, err)
			}
			dcs = append(dcs, dc)
		}
		for _, dc := range dcs {
			if ok, err := dc.WaitContext(ctx); err != nil || !ok {
				tb.Fatalf("rabbittest: publish not confirmed: ok=%v err=%v", ok, err)
			}
		}
	}
	WaitFor(tb, time.Minute, "messages in "+queue, func(context.Context) bool { return Depth(tb, ch, queue) >= n })
}

// ReadBack waits until the management API counts n ready messages in vhost's queue and none
// unacknowledged, then consumes the queue whole (emptying it) and fails unless its messages carry
// the message ids id(0), id(1), … id(n-1) in that order. It returns how many came redelivered:
// those some browse had taken and returned.
func ReadBack(tb testing.TB, amqpURL, vhost, queue string, n int, id func(i int) string) (redelivered int) {
	tb.Helper()
	mgmt := Admin(tb)
	WaitFor(tb, time.Minute, fmt.Sprintf("management API: %d ready, 0 unacked in %s", n, queue), func(context.Context) bool {
		q, err := mgmt.GetQueue(vhost, queue)
		return err == nil && q.MessagesReady == n && q.MessagesUnacknowledged == 0
	})
	ch, deliveries := Consume(tb, amqpURL, queue, "read-back", 2000)
	defer ch.Close()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for i := range n {
		select {
		case d := <-deliveries:
			if d.MessageId != id(i) {
				tb.Fatalf("rabbittest: message %d of %s is %q, want %q: order changed or a message is missing", i, queue, d.MessageId, id(i))
			}
			if d.Redelivered {
				redelivered++
			}
			if err := d.Ack(false); err != nil {
				tb.Fatalf("rabbittest: ack: %v", err)
			}
		case <-timeout.C:
			tb.Fatalf("rabbittest: read back %d of %d messages of %s", i, n, queue)
		}
	}
	return redelivered
}
