package rabbit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbittest"
)

// A broker too slow to deliver within the cursor's wait (here: a wait of a nanosecond) makes Take
// fail with ops.ErrUnavailable — the job pauses and reads again — and never end the span early,
// which a job would report as "not found in the queue" for messages still in it. Nothing is lost:
// a cursor with the usual waits then reads every message.
func TestCursorSlowBrokerIsNotAnEmptyQueue(t *testing.T) {
	e := newEnv(t)
	e.Queue("orders.dlq", nil)
	const n = 5000
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, pub := rabbittest.Channel(t, e.url) // no confirms: the depth below is the check
	for i := range n {
		if err := pub.PublishWithContext(ctx, "", "orders.dlq", false, false, amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), Body: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitDepth("orders.dlq", n)
	impatient, err := New(rabbittest.Config(t, e.vhost), testIDs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(impatient.Close)
	warm, err := impatient.OpenCursor(ctx, e.vhost, "orders.dlq", n) // dials with the usual timeout
	if err != nil {
		t.Fatal(err)
	}
	warm.Close()
	impatient.timeout, impatient.firstWait, impatient.idleWait = time.Nanosecond, time.Nanosecond, time.Nanosecond
	unavailable := 0
	for range 20 {
		c, err := impatient.OpenCursor(ctx, e.vhost, "orders.dlq", n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Take(ctx, n)
		switch {
		case errors.Is(err, ops.ErrUnavailable):
			unavailable++
		case err != nil:
			t.Fatal(err)
		case len(got) < n || c.Ended() && c.Read() < n:
			t.Fatalf("the cursor ended after %d of %d messages with no one else consuming", c.Read(), n)
		}
		c.Close()
	}
	if unavailable == 0 {
		t.Log("every impatient read got all messages: the broker was faster than a nanosecond each time")
	}
	c, err := e.b.OpenCursor(ctx, e.vhost, "orders.dlq", n)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.Take(ctx, n); err != nil || len(got) != n {
		t.Fatalf("after the impatient reads: %d messages, %v", len(got), err)
	}
}
