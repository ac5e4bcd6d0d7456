package rabbit

import (
	"fmt"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Queues named "." and ".." are browsed and planned like any other: their management paths once
// kept the dots (url.PathEscape leaves them), which RabbitMQ's HTTP server resolves away (as it
// does %2E), so the browse asked for the vhost's queue list and failed. Read back with the test's
// own client.
func TestDotNamedQueues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	for _, name := range []string{".", ".."} {
		e.Queue(name, nil)
		for i := range 3 {
			e.publish("", name, amqp.Publishing{MessageId: fmt.Sprintf("%s-%d", name, i), Body: []byte("{}")})
		}
		e.waitDepth(name, 3)
	}
	e.Exchange("x", "direct")
	e.Bind("..", "k", "x")
	bs, err := e.b.queueBindings(ctx, e.vhost, "..")
	if err != nil || len(bs) != 2 || bs[0].Source != "" || bs[1].Source != "x" { // the default exchange's, then x's
		t.Fatalf("bindings of ..: %+v %v", bs, err)
	}
	for _, name := range []string{".", ".."} {
		q, err := e.b.queueInfo(ctx, e.vhost, name)
		if err != nil || q.Name != name || q.Vhost != e.vhost {
			t.Fatalf("queue %q: %+v %v", name, q, err)
		}
		res, err := e.b.Browse(ctx, e.vhost, name, 10)
		if err != nil || len(res.Messages) != 3 || res.Messages[0].MessageID != name+"-0" {
			t.Fatalf("browse %q: %d messages, %v", name, len(res.Messages), err)
		}
		n := 0
		if _, err := e.b.Peek(ctx, e.vhost, name, 10, func(Message) { n++ }); err != nil || n != 3 {
			t.Fatalf("peek %q: %d, %v", name, n, err)
		}
		cur, err := e.b.OpenCursor(ctx, e.vhost, name, 3)
		if err != nil {
			t.Fatalf("cursor %q: %v", name, err)
		}
		cur.Close()
		if got := len(e.drain(name)); got != 3 {
			t.Fatalf("queue %q holds %d, want 3", name, got)
		}
	}
}
