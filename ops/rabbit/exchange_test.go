package rabbit

import (
	"errors"
	"fmt"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
)

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
