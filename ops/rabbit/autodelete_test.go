package rabbit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
)

// A read of an auto-delete queue is refused, in words, and the queue and its messages stay: a
// browse consumes and cancels, and RabbitMQ deletes an auto-delete queue, with every message —
// those the browse held to give back too — when its last consumer goes. A browse of one that
// had never had a consumer used to delete it.
func TestAReadOfAnAutoDeleteQueueIsRefused(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ch.QueueDeclare("parked", true, true, false, false, nil); err != nil { // durable, auto-delete
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		e.publish("", "parked", amqp.Publishing{MessageId: id, Body: []byte(id)})
	}
	e.waitDepth("parked", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := e.b.Browse(ctx, e.vhost, "parked", 3)
	if !errors.Is(err, ops.ErrConflict) || !strings.Contains(ops.Message(err), "auto-delete") {
		t.Fatalf("browse of an auto-delete queue: %v; want a conflict saying why", err)
	}
	if _, err := e.b.OpenCursor(ctx, e.vhost, "parked", 3); !errors.Is(err, ops.ErrConflict) {
		t.Fatalf("a job's cursor on it: %v; want a conflict", err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := e.depth("parked"); n != 3 {
		t.Fatalf("the queue holds %d after the refused reads; want 3", n)
	}
}
