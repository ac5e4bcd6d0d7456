package replay_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/replay"
)

// javaTrace is a Spring listener's stack trace whose application frame is frame.
func javaTrace(frame string) string {
	return "org.springframework.kafka.listener.ListenerExecutionFailedException: Listener failed\n" +
		"\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.doInvokeOnMessage(KafkaMessageListenerContainer.java:2814)\n" +
		"\tat java.base/java.lang.Thread.run(Thread.java:1583)\n" +
		"Caused by: com.acme.StockException: out of stock\n" +
		"\tat java.base/java.util.Objects.requireNonNull(Objects.java:259)\n" +
		"\tat app//" + frame + "(Code.java:42)\n" +
		"\tat com.acme.orders.Listener.on(Listener.java:17)\n"
}

const (
	reserve = "com.acme.StockException at com.acme.orders.Reserve.apply"
	invoice = "com.acme.StockException at com.acme.billing.Invoice.total"
)

// Java dead letters are grouped by exception class plus the first application frame of their
// stack trace (Wolverine's fingerprint), on Kafka and RabbitMQ alike: one class thrown in two
// places is two groups, one bug with other ids in its messages is one; a plan selects a group by
// its fingerprint, and by its class still selects both.
func TestErrorGroupsByFingerprint(t *testing.T) {
	t.Run("Kafka", func(t *testing.T) {
		w := newWorld(t)
		var recs []*kgo.Record
		for i, frame := range []string{"com.acme.orders.Reserve.apply", "com.acme.orders.Reserve.apply", "com.acme.billing.Invoice.total", ""} {
			r := deadLetterRecord(0, fmt.Sprint("m-", i), fmt.Sprint("k-", i), "com.acme.StockException")
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: "kafka_dlt-exception-message", Value: []byte(fmt.Sprintf("out of stock for o-%d", i))})
			if frame != "" {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: "kafka_dlt-exception-stacktrace", Value: []byte(javaTrace(frame))})
			}
			recs = append(recs, r)
		}
		if err := w.client.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		scan, err := w.cluster.ErrorGroups(ctxT(t), "orders.DLT", 0)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, g := range scan.Groups {
			got[g.ExceptionType] += g.Count
		}
		want := map[string]int64{reserve: 2, invoice: 1, "com.acme.StockException": 1}
		if !maps.Equal(got, want) {
			t.Fatalf("Kafka error groups %v, want %v", got, want)
		}
		e := w.engine(t, "a")
		plan, err := e.Plan(ctxT(t), "ops", kafkaSource(0, 0, 3), replay.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if g := slices.Sorted(maps.Keys(plan.ErrorGroups)); !slices.Equal(g, []string{"com.acme.StockException", invoice, reserve}) {
			t.Errorf("the plan's groups %q", g)
		}
		for filter, n := range map[string]int{reserve: 2, invoice: 1, "com.acme.StockException": 4, "StockException": 4} {
			p, err := e.Plan(ctxT(t), "ops", kafkaSource(0, 0, 3), replay.Filter{ExceptionType: filter})
			if err != nil || p.Total != n {
				t.Errorf("a plan of exception_type %q: %d, want %d (%v)", filter, p.Total, n, err)
			}
		}
	})
	t.Run("RabbitMQ", func(t *testing.T) {
		w := newRabbitWorld(t)
		for i, frame := range []string{"com.acme.orders.Reserve.apply", "com.acme.orders.Reserve.apply", "com.acme.billing.Invoice.total", ""} {
			h := amqp.Table{"messageId": fmt.Sprint("m-", i), "x-death": deathOf("order.created"),
				"x-exception-message": fmt.Sprintf("com.acme.StockException: out of stock for o-%d", i)}
			if frame != "" {
				h["x-exception-stacktrace"] = javaTrace(frame)
			}
			w.putDLQ(t, amqp.Publishing{Headers: h, Body: []byte(`{}`)})
		}
		w.waitDepth(t, "orders.dlq", 4)
		res, err := w.broker.Browse(ctxT(t), w.vhost, "orders.dlq", 10)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, g := range rabbit.ErrorGroups(res.Messages) {
			got[g.Key] += g.Count
		}
		if want := map[string]int{reserve: 2, invoice: 1, "com.acme.StockException": 1}; !maps.Equal(got, want) {
			t.Fatalf("RabbitMQ error groups %v, want %v", got, want)
		}
		e := w.engine(t)
		src := replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 10}
		for filter, n := range map[string]int{reserve: 2, invoice: 1, "com.acme.StockException": 4} {
			p, err := e.Plan(ctxT(t), "ops", src, replay.Filter{ExceptionType: filter})
			if err != nil || p.Total != n {
				t.Errorf("a plan of exception_type %q: %d, want %d (%v)", filter, p.Total, n, err)
			}
			if filter == reserve && p.ErrorGroups["rejected "+reserve] == nil {
				t.Errorf("the plan's groups %v", slices.Collect(maps.Keys(p.ErrorGroups)))
			}
		}
	})
}
