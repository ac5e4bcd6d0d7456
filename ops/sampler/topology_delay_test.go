package sampler

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/health"
	"github.com/redrive/redrive/ops/rabbittest"
)

// A delay queue (a TTL, dead-lettering into the work exchange) made the work queue it returns to
// a "DLQ": its backlog was "holds 20 dead letters" and each message its own consumer acked was
// counted lost. The work queue is no DLQ: no problem, no loss.
func TestDelayQueueReturnIsNoDeadLetter(t *testing.T) {
	ctx := ctxT(t)
	e := newRmqEnv(t)
	clk := newClock()
	e.Exchange("orders", "direct")
	e.Queue("orders.work", nil)
	e.Bind("orders.work", "order", "orders")
	e.Queue("orders.delay", amqp.Table{"x-message-ttl": int32(30000), "x-dead-letter-exchange": "orders", "x-dead-letter-routing-key": "order"})
	a := rabbitSampler(t, openStore(t, testDSN(t)), clk, nil, e.b)
	v := e.vhost
	e.publish("orders", "order", 20)
	e.waitReady("orders.work", 20)
	rabbittest.WaitFor(t, 15*time.Second, "orders.delay's consumers reported", func(ctx context.Context) bool {
		qs, err := e.b.Queues(ctx)
		for _, q := range qs {
			if q.Name == "orders.delay" {
				return err == nil && !q.ConsumersUnreported
			}
		}
		return false
	})
	if q := lostIn(t, ctx, a, clk, 15*time.Second, v, "orders.work"); q.IsDeadLetterQueue {
		t.Fatalf("orders.work, the work queue a delay queue returns to, is a DLQ")
	}
	for range 20 { // the service's consumer does its job
		d, ok, err := e.ch.Get("orders.work", false)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if err := d.Ack(false); err != nil {
			t.Fatal(err)
		}
	}
	e.waitReady("orders.work", 0)
	if q := lostIn(t, ctx, a, clk, 15*time.Second, v, "orders.work"); q.IsDeadLetterQueue || q.Lost != 0 {
		t.Errorf("after its consumer took 20: DLQ %v, lost %d", q.IsDeadLetterQueue, q.Lost)
	}
	for _, p := range health.RabbitProblems("main", mustLatest(t, ctx, a), nil, clk.Now()) {
		t.Errorf("problem: %s %s", p.Kind, p.Title)
	}
}
