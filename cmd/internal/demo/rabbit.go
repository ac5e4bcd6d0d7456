package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"
)

// The demo consumer's failures, as Spring AMQP's RepublishMessageRecoverer records them.
var rabbitExceptions = []struct{ message, frame string }{
	{"java.lang.NullPointerException: Cannot invoke \"com.acme.orders.Customer.getAddress()\" because \"customer\" is null",
		"com.acme.orders.OrderListener.onOrderCreated(OrderListener.java:88)"},
	{"com.acme.payments.ProviderTimeoutException: payment provider did not answer within 30000 ms",
		"com.acme.payments.PaymentClient.authorize(PaymentClient.java:142)"},
	{"org.springframework.messaging.converter.MessageConversionException: Cannot convert from [[B] to [com.acme.orders.OrderCreated]: currency \"EURO\" is not ISO 4217",
		"org.springframework.amqp.support.converter.Jackson2JsonMessageConverter.fromMessage(Jackson2JsonMessageConverter.java:315)"},
}

// SeedRabbit builds the demo's RabbitMQ topology in the vhost of amqpURL and fills its
// dead-letter queues the way a broker does it — a consumer rejects messages with requeue=false,
// others expire — so that every x-death header is the broker's own:
//
//	orders (topic) ─order.*→ orders.work ─DLX orders.dlx (fanout)→ orders.dlq
//	               ─reminder.*→ orders.reminders (TTL 2 s) ─DLX orders.dlx→ orders.dlq
//	               ─payment.*→ payments.work ⇄ payments.retry (TTL 10 s, both through the default exchange)
//	               ─invoice.*→ invoices (quorum, delivery limit 3) ─DLX orders.dlx
//	               ─audit.*→ audit.events ─DLX audit.dlx (set by the policy "audit-dead-letters")→ audit.dlq
//	               ─shipment.*→ shipping.work (3,000 messages, a slow consumer)
//
// Some of orders.dlq's messages carry Spring AMQP's x-exception-message, x-exception-stacktrace,
// x-original-exchange and x-original-routingKey headers; ids (message_id property, else the
// body's messageId) overlap the demo inventory inbox, so a replay plan skips some as processed.
// mgmtURL (with amqpURL's credentials) sets the policy.
//
// It then keeps traffic flowing until ctx ends: orders arrive twice a second and a flaky consumer
// rejects one in five (orders.dlq keeps growing), shipments arrive 15 a second and shipping.work's
// consumer acks 20 a second.
func SeedRabbit(ctx context.Context, amqpURL, mgmtURL string) error {
	uri, err := amqp.ParseURI(amqpURL)
	if err != nil {
		return fmt.Errorf("demo: rabbitmq url: %w", err)
	}
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		return fmt.Errorf("demo: rabbitmq: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("demo: rabbitmq: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		return fmt.Errorf("demo: rabbitmq: %w", err)
	}
	mgmt, err := rabbithole.NewClient(mgmtURL, uri.Username, uri.Password)
	if err != nil {
		return fmt.Errorf("demo: rabbitmq management: %w", err)
	}
	s := &seeder{ctx: ctx, ch: ch}

	// The policy first, so that audit.events has its dead-letter exchange from the start.
	if _, err := mgmt.PutPolicy(uri.Vhost, "audit-dead-letters", rabbithole.Policy{Pattern: "^audit\\.events$", ApplyTo: "queues",
		Definition: rabbithole.PolicyDefinition{"dead-letter-exchange": "audit.dlx"}}); err != nil {
		return fmt.Errorf("demo: rabbitmq policy: %w", err)
	}
	s.exchange("orders", "topic")
	s.exchange("orders.dlx", "fanout")
	s.exchange("audit.dlx", "fanout")
	s.queue("orders.work", amqp.Table{"x-dead-letter-exchange": "orders.dlx"}, "orders", "order.*")
	s.queue("orders.dlq", nil, "orders.dlx", "")
	s.queue("orders.reminders", amqp.Table{"x-message-ttl": int32(2000), "x-dead-letter-exchange": "orders.dlx"}, "orders", "reminder.*")
	s.queue("payments.work", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "payments.retry"}, "orders", "payment.*")
	s.queue("payments.retry", amqp.Table{"x-message-ttl": int32(10000), "x-dead-letter-exchange": "",
		"x-dead-letter-routing-key": "payments.work"}, "", "")
	s.queue("invoices", amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(3), "x-dead-letter-exchange": "orders.dlx"},
		"orders", "invoice.*")
	s.queue("audit.events", nil, "orders", "audit.*")
	s.queue("audit.dlq", nil, "audit.dlx", "")
	s.queue("shipping.work", nil, "orders", "shipment.*")
	for _, q := range []string{"orders.work", "audit.events"} { // a second run rejects its own messages
		if s.err == nil {
			_, err := s.ch.QueuePurge(q, false)
			s.fail("purge "+q, err)
		}
	}
	if s.err != nil {
		return s.err
	}

	// orders.dlq: 50 orders the consumer of orders.work rejected, 35 after Spring's retries.
	now := time.Now()
	for i := range 50 {
		id := fmt.Sprintf("evt-%06d", 7+i*11)
		p := amqp.Publishing{ContentType: "application/json", DeliveryMode: amqp.Persistent, AppId: "order-service",
			Type: "OrderCreated", Timestamp: now.Add(-time.Duration(50-i) * 3 * time.Minute),
			CorrelationId: fmt.Sprintf("%016x", rand.Uint64()), Body: envelope(id, "OrderCreated", 10000+i, now)}
		if i%3 != 2 {
			p.MessageId = id // the others are found by the body's messageId
		}
		if i < 35 {
			ex := rabbitExceptions[i%len(rabbitExceptions)]
			p.Headers = amqp.Table{
				"x-exception-message":    ex.message,
				"x-exception-stacktrace": ex.message + "\n\tat " + ex.frame + "\n\tat org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer.doInvokeListener(AbstractMessageListenerContainer.java:1663)\n\tat java.base/java.lang.Thread.run(Thread.java:1583)",
				"x-original-exchange":    "orders",
				"x-original-routingKey":  "order.created",
				"retry-count":            int32(3),
				"traceId":                fmt.Sprintf("%016x", rand.Uint64()),
			}
		}
		s.publish("orders", "order.created", p)
	}
	s.rejectAll("orders.work", 50)
	// 12 reminders nobody consumed in time: they expire into orders.dlq.
	for i := range 12 {
		id := fmt.Sprintf("evt-%06d", 900+i*13)
		s.publish("orders", "reminder.due", amqp.Publishing{ContentType: "application/json", MessageId: id,
			Body: envelope(id, "PaymentReminderDue", 20000+i, now)})
	}
	s.waitDepth("orders.dlq", 62)
	// audit.dlq: 3 of 8 audit records rejected, routed by the policy's dead-letter exchange.
	for i := range 8 {
		s.publish("orders", "audit.recorded", amqp.Publishing{ContentType: "application/json", MessageId: fmt.Sprintf("audit-%d", i),
			Body: fmt.Appendf(nil, `{"messageId":"audit-%d","action":"order.updated","actor":"support-%d"}`, i, i%3)})
	}
	s.rejectAll("audit.events", 3)
	s.waitDepth("audit.dlq", 3)
	for i := range 5 {
		id := fmt.Sprintf("inv-%04d", i)
		s.publish("orders", "invoice.issued", amqp.Publishing{ContentType: "application/json", MessageId: id,
			Body: envelope(id, "InvoiceIssued", 30000+i, now)})
	}
	for i := range 4 {
		id := fmt.Sprintf("pay-%04d", i)
		s.publish("", "payments.retry", amqp.Publishing{ContentType: "application/json", MessageId: id,
			Headers: amqp.Table{"retry-count": int32(1 + i%3)}, Body: envelope(id, "PaymentCaptured", 40000+i, now)})
	}
	for i := range 3000 {
		s.publishAsync("orders", "shipment.created", amqp.Publishing{ContentType: "application/json",
			MessageId: fmt.Sprintf("shp-%06d", i), Body: envelope(fmt.Sprintf("shp-%06d", i), "ShipmentCreated", 50000+i, now)})
	}
	s.confirmAll()
	if s.err != nil {
		return s.err
	}
	go rabbitTraffic(ctx, amqpURL)
	return nil
}

func envelope(id, eventType string, aggregate int, now time.Time) []byte {
	return fmt.Appendf(nil, `{"messageId":%q,"eventType":%q,"aggregateId":"ord-%d","occurredAt":%q,"traceId":"%016x","schemaVersion":1,"payload":{"sku":"SKU-%d","qty":%d,"currency":"EUR","amount":%d.90}}`,
		id, eventType, aggregate, now.UTC().Format(time.RFC3339), rand.Uint64(), aggregate%50, 1+aggregate%4, 10+aggregate%90)
}

// seeder declares and publishes on one confirm-mode channel, keeping the first error.
type seeder struct {
	ctx     context.Context
	ch      *amqp.Channel
	err     error
	pending []*amqp.DeferredConfirmation
}

func (s *seeder) fail(what string, err error) {
	if s.err == nil && err != nil {
		s.err = fmt.Errorf("demo: rabbitmq: %s: %w", what, err)
	}
}

func (s *seeder) exchange(name, kind string) {
	if s.err == nil {
		s.fail("declare exchange "+name, s.ch.ExchangeDeclare(name, kind, true, false, false, false, nil))
	}
}

// queue declares a durable queue and binds it to exchange with key (no binding when exchange is "").
func (s *seeder) queue(name string, args amqp.Table, exchange, key string) {
	if s.err != nil {
		return
	}
	if _, err := s.ch.QueueDeclare(name, true, false, false, false, args); err != nil {
		s.fail("declare queue "+name, err)
		return
	}
	if exchange != "" {
		s.fail("bind "+name, s.ch.QueueBind(name, key, exchange, false, nil))
	}
}

func (s *seeder) publishAsync(exchange, key string, p amqp.Publishing) {
	if s.err != nil {
		return
	}
	dc, err := s.ch.PublishWithDeferredConfirmWithContext(s.ctx, exchange, key, true, false, p)
	if err != nil {
		s.fail("publish", err)
		return
	}
	s.pending = append(s.pending, dc)
}

func (s *seeder) confirmAll() {
	for _, dc := range s.pending {
		if s.err != nil {
			break
		}
		ok, err := dc.WaitContext(s.ctx)
		if err == nil && !ok {
			err = errors.New("nacked by the broker")
		}
		s.fail("publish confirm", err)
	}
	s.pending = nil
}

// publish sends one message and waits for the broker's confirm.
func (s *seeder) publish(exchange, key string, p amqp.Publishing) {
	s.publishAsync(exchange, key, p)
	s.confirmAll()
}

// rejectAll takes n messages from queue and rejects them with requeue=false: the broker
// dead-letters each one.
func (s *seeder) rejectAll(queue string, n int) {
	deadline := time.Now().Add(30 * time.Second)
	for got := 0; got < n && s.err == nil; {
		d, ok, err := s.ch.Get(queue, false)
		switch {
		case err != nil:
			s.fail("get "+queue, err)
		case !ok && time.Now().After(deadline):
			s.fail("get "+queue, fmt.Errorf("only %d of %d messages arrived", got, n))
		case !ok:
			time.Sleep(20 * time.Millisecond)
		default:
			s.fail("reject", d.Reject(false))
			got++
		}
	}
}

// waitDepth waits until queue holds n ready messages (dead-lettering and expiry are asynchronous).
func (s *seeder) waitDepth(queue string, n int) {
	deadline := time.Now().Add(30 * time.Second)
	for s.err == nil {
		q, err := s.ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		switch {
		case err != nil:
			s.fail("inspect "+queue, err)
		case q.Messages >= n:
			return
		case time.Now().After(deadline):
			s.fail("wait for "+queue, fmt.Errorf("%d of %d messages after 30 s", q.Messages, n))
		default:
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// rabbitTraffic keeps the demo's queues moving until ctx ends; it gives up quietly when the broker
// goes away.
func rabbitTraffic(ctx context.Context, amqpURL string) {
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		return
	}
	go func() {
		<-ctx.Done()
		_ = conn.Close()
	}()
	go consumeRabbit(conn, "orders.work", 10, func(d amqp.Delivery) error {
		if rand.IntN(5) == 0 {
			return d.Reject(false) // dead-lettered into orders.dlq
		}
		return d.Ack(false)
	})
	go consumeRabbit(conn, "shipping.work", 20, func(d amqp.Delivery) error {
		time.Sleep(50 * time.Millisecond) // 20 a second
		return d.Ack(false)
	})
	ch, err := conn.Channel()
	if err != nil {
		return
	}
	now := time.Now()
	every(ctx, time.Second/15, func(i int) error {
		key, id, typ := "shipment.created", fmt.Sprintf("shp-live-%d", i), "ShipmentCreated"
		if i%7 == 0 { // about twice a second
			key, id, typ = "order.created", fmt.Sprintf("live-%d", i), "OrderCreated"
		}
		return ch.PublishWithContext(ctx, "orders", key, false, false, amqp.Publishing{ContentType: "application/json",
			MessageId: id, Body: envelope(id, typ, 60000+i%5000, now)})
	})
}

func consumeRabbit(conn *amqp.Connection, queue string, prefetch int, handle func(amqp.Delivery) error) {
	ch, err := conn.Channel()
	if err != nil {
		return
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		return
	}
	ds, err := ch.Consume(queue, "demo-"+queue, false, false, false, false, nil)
	if err != nil {
		return
	}
	for d := range ds { // ends when the connection closes
		if handle(d) != nil {
			return
		}
	}
}
