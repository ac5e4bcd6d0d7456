package replay_test

import (
	"maps"
	"slices"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/replay"
)

// Error texts that differ only by the ids and numbers in them are one bug: one error group, on
// the queue's page and in a plan, for RabbitMQ's x-exception-message and an outbox's last_error
// alike (ops.ErrorGroupKey). Each group still shows one of its texts as they were. They once made
// one group each: "out of stock for o-100" and "out of stock for o-104" were two rows.
func TestErrorGroupsFoldIDsInMessages(t *testing.T) {
	texts := []string{"out of stock for o-100", "out of stock for o-104", "timeout after 30s (7)", "timeout after 45s (2)"}
	const stock, timeout = "out of stock for #", "timeout after # (#)"

	t.Run("RabbitMQ", func(t *testing.T) {
		w := newRabbitWorld(t)
		for i, text := range texts {
			w.putDLQ(t, amqp.Publishing{MessageId: "m-" + string(rune('a'+i)), DeliveryMode: amqp.Persistent,
				Headers: amqp.Table{"x-death": deathOf("order.created"), rabbit.HeaderExceptionMessage: text}, Body: []byte(`{}`)})
		}
		w.waitDepth(t, "orders.dlq", len(texts))
		res, err := w.broker.Browse(ctxT(t), w.vhost, "orders.dlq", 10)
		if err != nil {
			t.Fatal(err)
		}
		groups := rabbit.ErrorGroups(res.Messages)
		if len(groups) != 2 {
			t.Fatalf("%d groups, want 2: %+v", len(groups), groups)
		}
		for _, g := range groups {
			switch {
			case g.Key == stock && g.Count == 2 && g.ExceptionMessage == "out of stock for o-100":
			case g.Key == timeout && g.Count == 2 && g.ExceptionMessage == "timeout after 30s (7)":
			default:
				t.Errorf("group %q of %d, example %q", g.Key, g.Count, g.ExceptionMessage)
			}
		}
		e := w.engine(t)
		all := w.planQueue(t, e, 10, replay.Filter{})
		if got := slices.Sorted(maps.Keys(all.ErrorGroups)); !slices.Equal(got, []string{"rejected " + stock, "rejected " + timeout}) {
			t.Errorf("plan's error groups %v", got)
		}
		// A plan selects a group by its key or by any of its texts.
		for _, want := range []string{stock, "out of stock for o-7"} {
			if p := w.planQueue(t, e, 10, replay.Filter{ExceptionType: want}); p.Total != 2 {
				t.Errorf("exception_type %q selects %d, want 2", want, p.Total)
			}
		}
	})

	t.Run("Outbox", func(t *testing.T) {
		e, _ := outboxEngine(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
			status, attempts, available_at, last_error, created_at)
			VALUES ('e1','Order','o1','OrderCreated',1,'{}','DEAD',10,now(),'out of stock for o-100',now()),
			       ('e2','Order','o2','OrderCreated',1,'{}','DEAD',10,now(),'out of stock for o-104',now()),
			       ('e3','Order','o3','OrderCreated',1,'{}','DEAD',10,now(),'timeout after 30s (7)',now()),
			       ('e4','Order','o4','OrderCreated',1,'{}','FAILED',3,now(),'timeout after 45s (2)',now())`)
		src := replay.Source{Kind: "outbox", Outbox: "orders", Limit: 100}
		all, err := e.Plan(ctxT(t), "ops", src, replay.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all.ErrorGroups) != 2 || all.ErrorGroups[stock][replay.Publish] != 2 || all.ErrorGroups[timeout][replay.Publish] != 2 {
			t.Errorf("plan's error groups %v", all.ErrorGroups)
		}
		p, err := e.Plan(ctxT(t), "ops", src, replay.Filter{ExceptionType: "timeout after 5s (1)"})
		if err != nil || p.Total != 2 {
			t.Errorf("a timeout's text selects %d (%v), want 2", p.Total, err)
		}
	})

	t.Run("KafkaClassNamesStay", func(t *testing.T) {
		// A Kafka error group is its exception class; digits in a class's name are its name.
		w := newWorldWith(t, "com.acme.v2.StockException", 0, 0)
		plan, err := w.engine(t, "a").Plan(ctxT(t), "ops", kafkaSource(0, 0, 99), replay.Filter{ExceptionType: "StockException"})
		if err != nil || plan.Total != 2 || plan.ErrorGroups["com.acme.v2.StockException"][replay.Publish] != 2 {
			t.Errorf("plan %d %v %v", plan.Total, plan.ErrorGroups, err)
		}
	})
}
