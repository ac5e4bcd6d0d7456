package rabbit

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/rabbittest"
)

// A delay queue (a message TTL, dead-lettering into the work exchange, no consumer) made the work
// queue it returns to a "DLQ": its backlog read as dead letters and every ack of its consumer as a
// lost one. What a delay dead-letters is what expired waiting, not what failed: its target is not
// a DLQ for it. What a work queue with a TTL and consumers dead-letters is, and so is what a DLQ
// passes on when its own TTL expires it (a parking queue behind it).
func TestTopologyADelayQueueMakesNoDLQ(t *testing.T) {
	e := newEnv(t)
	e.Exchange("orders", "direct")
	e.Exchange("orders.dlx", "direct")
	e.Queue("orders.work", amqp.Table{"x-dead-letter-exchange": "orders.dlx", "x-dead-letter-routing-key": "failed"})
	e.Bind("orders.work", "order", "orders")
	e.Queue("orders.delay", amqp.Table{"x-message-ttl": int32(30000), "x-dead-letter-exchange": "orders", "x-dead-letter-routing-key": "order"})
	// orders.failed is a DLQ by its source, not by its name; expiring, it hands dead letters on.
	e.Queue("orders.failed", amqp.Table{"x-message-ttl": int32(600000), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "orders.parking"})
	e.Bind("orders.failed", "failed", "orders.dlx")
	e.Queue("orders.parking", nil)
	// A work queue whose old messages expire into a queue of expired ones: consumed, so no delay.
	e.Queue("invoices", amqp.Table{"x-message-ttl": int32(60000), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "invoices.expired"})
	e.Queue("invoices.expired", nil)
	for _, q := range []string{"orders.work", "invoices"} {
		rabbittest.Consume(t, e.url, q, "worker-"+q, 1)
	}

	var topo Topology
	rabbittest.WaitFor(t, 20*time.Second, "the queues' consumers reported", func(ctx context.Context) bool {
		var err error
		if topo, err = e.b.Topology(ctx); err != nil {
			return false
		}
		for _, q := range topo.Queues {
			if q.ConsumersUnreported || (q.Name == "invoices" || q.Name == "orders.work") && q.Consumers != 1 {
				return false
			}
		}
		return true
	})
	want := map[string]bool{"orders.work": false, "orders.delay": false, "orders.failed": true, "orders.parking": true,
		"invoices": false, "invoices.expired": true}
	for _, q := range topo.Queues {
		if q.IsDeadLetterQueue != want[q.Name] {
			t.Errorf("%s: dead-letter queue %v, want %v (delay %v, consumers %d)", q.Name, q.IsDeadLetterQueue, want[q.Name], q.IsDelay(), q.Consumers)
		}
	}
}

// The rule on what the sampler cannot see live: a queue whose consumers are not reported is not
// taken for a delay (its target stays a DLQ), nor is one that delivers (basic.get polling shows
// as a deliver rate, not as a consumer); a chain of delays makes no DLQ.
func TestTopologyDelayRule(t *testing.T) {
	ttl := int64(30000)
	q := func(name string, mod func(*Queue)) Queue {
		x := Queue{Vhost: "v", Name: name, Type: TypeClassic}
		if mod != nil {
			mod(&x)
		}
		return x
	}
	delayTo := func(target string) func(*Queue) {
		return func(x *Queue) {
			x.HasDeadLetterExchange, x.DeadLetterExchange, x.DeadLetterRoutingKey, x.MessageTTL = true, "", target, &ttl
		}
	}
	for _, tc := range []struct {
		name  string
		delay func(*Queue)
		dlq   map[string]bool
	}{
		{"a delay", delayTo("work"), map[string]bool{"work": false}},
		{"consumers not reported", func(x *Queue) { delayTo("work")(x); x.ConsumersUnreported = true }, map[string]bool{"work": true}},
		{"polled with basic.get", func(x *Queue) { delayTo("work")(x); x.DeliverRate = 2 }, map[string]bool{"work": true}},
		{"consumed", func(x *Queue) { delayTo("work")(x); x.Consumers = 1 }, map[string]bool{"work": true}},
		{"no TTL", func(x *Queue) { delayTo("work")(x); x.MessageTTL = nil }, map[string]bool{"work": true}},
		{"a chain of delays", delayTo("delay2"), map[string]bool{"delay2": false, "work": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			qs := []Queue{q("delay", tc.delay), q("delay2", delayTo("work")), q("work", nil)}
			topo := buildTopology(qs, nil, nil, nil)
			for _, x := range topo.Queues {
				if want, ok := tc.dlq[x.Name]; ok && x.IsDeadLetterQueue != want {
					t.Errorf("%s: dead-letter queue %v, want %v", x.Name, x.IsDeadLetterQueue, want)
				}
			}
		})
	}
}
