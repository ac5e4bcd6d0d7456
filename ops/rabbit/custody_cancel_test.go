package rabbit

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// A read whose caller goes away halfway (a page's request cancelled, a plan cancelled) still
// keeps what it read near the delivery limit before it gives the rest back: the messages it holds
// go back to the queue whatever happens to the read, and each return counts one delivery. Before,
// the keep was skipped on any error: three such reads of a queue with a delivery limit of 3 on
// RabbitMQ 4 had it drop the two messages near the limit (to parking here), which any read that
// ended well would have kept.
func TestReadCutShortStillKeeps(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if !e.rules().headReturns {
		t.Skip("RabbitMQ 3.x refuses to read a quorum queue with a delivery limit (TestCursorKeepsWhatItMayNotReturn)")
	}
	e.deadLetterInto(2, int32(3))
	// "0" and "1" at one delivery: the next return leaves one, under the reserve of 2.
	if _, err := e.b.Peek(ctxT(t), e.vhost, "orders.dlq", 10, func(Message) {}); err != nil {
		t.Fatal(err)
	}
	n := 2
	for round := range 3 {
		// Fresh dead letters behind the others: the first is where the read is cut short (the
		// first message it hands on, the ones before it being near the limit); the rest are
		// what it is still taking when its caller's context ends.
		for i := range 20 {
			e.publish("", "orders", amqp.Publishing{MessageId: strconv.Itoa(n + i), Body: []byte("fresh")})
		}
		for range 20 {
			e.reject(t, "orders")
		}
		n += 20
		e.waitDepth("orders.dlq", n-len(e.kept.keptIDs()))
		ctx, cancel := context.WithCancel(ctxT(t))
		_, err := e.b.Peek(ctx, e.vhost, "orders.dlq", 100, func(Message) { cancel() })
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: %v; want the read cancelled", round, err)
		}
	}
	e.accountFor(n) // every id in one place, none in parking
	if kept := e.kept.keptIDs(); !slices.Contains(kept, "0") || !slices.Contains(kept, "1") {
		t.Fatalf("kept %v; want 0 and 1 among them", kept)
	}
}
