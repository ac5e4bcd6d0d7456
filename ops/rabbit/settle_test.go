package rabbit

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Every RabbitMQ job ended with "PRECONDITION_FAILED - unknown delivery tag N" in the broker's log
// (issue 38): Close returned what the cursor held with basic.nack(multiple) up to the highest tag it
// had seen, although a job that moved everything had acked that tag, so the broker closed the
// channel with a 406. A cursor now nacks up to the highest tag not acked, and nothing when every
// delivery was: the window's channels close cleanly whether the job moved all, part (the acked
// ones at the end of the window) or none of what it read, and what was not acked is back in the
// queue. Checked on the channels themselves (NotifyClose: a server close is a 406 error there) and
// the depths with the test's own client. Run on RabbitMQ 3.10 and 4.0 (REDRIVE_TEST_AMQP_URL set to
// the *_RABBITMQ4 values).
func TestCursorSettlesEachDeliveryOnce(t *testing.T) {
	const n = 200
	for _, tc := range []struct {
		name  string
		acked func(i int) bool // which of the n messages the job moved
		back  int              // how many go back to the DLQ
	}{
		{"AllMoved", func(int) bool { return true }, 0},
		{"LastHalfMoved", func(i int) bool { return i >= n/2 }, n / 2},
		{"EveryOtherMoved", func(i int) bool { return i%2 == 1 }, n / 2},
		{"NoneMoved", func(int) bool { return false }, n},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.Queue("orders.dlq", nil)
			e.Queue("orders", nil)
			for i := range n {
				e.publish("", "orders.dlq", amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), Body: []byte("{}")})
			}
			e.waitDepth("orders.dlq", n)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := e.b.OpenCursor(ctx, e.vhost, "orders.dlq", n)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Take(ctx, n)
			if err != nil || len(got) != n {
				t.Fatalf("took %d of %d: %v", len(got), n, err)
			}
			var closes []chan *amqp.Error
			c.mu.Lock()
			for _, w := range c.windows {
				closes = append(closes, w.ch.NotifyClose(make(chan *amqp.Error, 1)))
			}
			c.mu.Unlock()
			var move []Delivery
			var to []Republish
			for i, d := range got {
				if tc.acked(i) {
					move = append(move, d)
					to = append(to, Republish{RoutingKey: "orders"})
				}
			}
			if len(move) > 0 {
				errs, err := c.Publish(ctx, move, to)
				if err != nil {
					t.Fatal(err)
				}
				for i, err := range errs {
					if err != nil {
						t.Fatalf("publish %d: %v", i, err)
					}
				}
				if err := c.Ack(move); err != nil {
					t.Fatal(err)
				}
			}
			c.Close()
			for i, ch := range closes {
				select {
				case err, ok := <-ch:
					if ok && err != nil {
						t.Errorf("window %d's channel was closed by the broker: %v (code %d, server %v)", i, err, err.Code, err.Server)
					}
				case <-time.After(5 * time.Second):
					t.Errorf("window %d's channel is still open after Close", i)
				}
			}
			e.waitDepth("orders.dlq", tc.back)
			e.waitDepth("orders", len(move))
		})
	}
}
