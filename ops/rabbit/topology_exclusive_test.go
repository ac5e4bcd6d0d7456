package rabbit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbittest"
)

// An exclusive queue belongs to the connection that declared it: RabbitMQ answers another
// connection's consume with RESOURCE_LOCKED (closing the channel), which a browse passed on as
// "exclusive to another connection". Its exclusive flag is read with the queue, and a read of it is
// refused before anything reaches the broker, saying what that means and what to do; the queue
// keeps its messages.
func TestTopologyAReadOfAnExclusiveQueueIsRefused(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ch.QueueDeclare("owned.dlq", false, false, true, false, nil); err != nil { // exclusive to e's connection
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		e.publish("", "owned.dlq", amqp.Publishing{MessageId: id, Body: []byte(id)})
	}
	e.waitDepth("owned.dlq", 3)
	rabbittest.WaitFor(t, 15*time.Second, "the queue listed as exclusive", func(ctx context.Context) bool {
		qs, err := e.b.Queues(ctx)
		for _, q := range qs {
			if q.Name == "owned.dlq" {
				return err == nil && q.Exclusive
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := e.b.Browse(ctx, e.vhost, "owned.dlq", 3)
	// Not RabbitMQ's RESOURCE_LOCKED after a consume, which said only "exclusive to another
	// connection": refused before, with what it means and what to do.
	if msg := ops.Message(err); !errors.Is(err, ops.ErrConflict) || !strings.Contains(msg, "deletes it, with its messages, when that connection closes") ||
		!strings.Contains(msg, "have its owner move its messages") || strings.Contains(err.Error(), "RESOURCE_LOCKED") {
		t.Fatalf("browse of an exclusive queue: %v; want a conflict saying why and what to do", err)
	}
	if _, err := e.b.OpenCursor(ctx, e.vhost, "owned.dlq", 3); !errors.Is(err, ops.ErrConflict) {
		t.Fatalf("a job's cursor on it: %v; want a conflict", err)
	}
	if n := e.depth("owned.dlq"); n != 3 {
		t.Fatalf("the queue holds %d after the refused reads; want 3", n)
	}
}
