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

// A cursor's batch with a message bound for an exchange that does not exist fails that message
// alone, before publishing, with the reason; the others are published once and the channels stay
// open. A restore from the archive to a missing exchange says so as a not-found error, never
// "unavailable", and publishes nothing. Counted with the test's own client.
func TestPublishToAMissingExchange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.Exchange("orders", "topic")
	e.Queue("orders.work", nil)
	e.Bind("orders.work", "#", "orders")
	e.Queue("orders.dlq", nil)
	for i := range 4 {
		e.publish("", "orders.dlq", amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), Body: []byte("{}")})
	}
	cur, err := e.b.OpenCursor(ctx, e.vhost, "orders.dlq", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	ds, err := cur.Take(ctx, 4)
	if err != nil || len(ds) != 4 {
		t.Fatalf("take: %d %v", len(ds), err)
	}
	to := []Republish{{Exchange: "orders", RoutingKey: "a"}, {Exchange: "gone", RoutingKey: "a"},
		{Exchange: "", RoutingKey: "orders.work"}, {Exchange: "orders", RoutingKey: "b"}}
	errs, err := cur.Publish(ctx, ds, to)
	if err != nil {
		t.Fatalf("publish: %v; want only the message for the missing exchange failed", err)
	}
	want := fmt.Sprintf(`exchange "gone" does not exist in vhost %q`, e.vhost)
	for i, err := range errs {
		switch {
		case i == 1 && (err == nil || err.Error() != want || !errors.Is(err, ops.ErrNotFound)):
			t.Errorf("message 1: %v; want %s", err, want)
		case i != 1 && err != nil:
			t.Errorf("message %d: %v", i, err)
		}
	}
	// The exchanges seen to exist are not asked again; the next batch still publishes.
	if errs, err := cur.Publish(ctx, ds[:1], to[:1]); err != nil || errs[0] != nil {
		t.Fatalf("second batch: %v %v", errs, err)
	}
	e.waitDepth("orders.work", 4)

	w, err := ds[0].Whole()
	if err != nil {
		t.Fatal(err)
	}
	err = e.b.PublishWholeWith(ctx, e.vhost, "gone", "a", w, amqp.Table{})
	if !errors.Is(err, ops.ErrNotFound) || errors.Is(err, ops.ErrUnavailable) || ops.Message(err) != want {
		t.Fatalf("restore to a missing exchange: %v (%q); want not found: %s", err, ops.Message(err), want)
	}
	if err := e.b.PublishWholeWith(ctx, e.vhost, "orders", "a", w, amqp.Table{}); err != nil {
		t.Fatalf("restore to orders: %v", err)
	}
	e.waitDepth("orders.work", 5)
}
