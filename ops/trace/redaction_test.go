package trace_test

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/trace"
)

// maskingRules hide the traceId header, the exception message headers and the body's $.messageId.
func maskingRules(t *testing.T) *redact.Rules {
	t.Helper()
	rules, err := redact.New([]string{"traceId", "kafka_dlt-exception-message", rabbit.HeaderExceptionMessage}, []string{"$.messageId"})
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// views are the masked views of a reader who may not reveal (what handlers.Trace hands the trace).
func views(rules *redact.Rules, q trace.Query) trace.Query {
	q.KafkaView = func(r kafka.Record) kafka.Record { out, _ := rules.Record(r); return out }
	var last redact.Message
	q.RabbitView = rules.View(&last)
	return q
}

func found(res trace.Result, kind string) []trace.Step {
	var out []trace.Step
	for _, s := range res.Steps {
		if s.Found && s.Kind == kind {
			out = append(out, s)
		}
	}
	return out
}

// A trace matches on what its reader may see, as a content search's filter does: a reader who
// sees the traceId header and the body's $.messageId masked finds nothing by their values (the
// trace matched the records as read, so it confirmed a hidden trace id: orders.DLT/0 @ 0), and by
// an id in clear finds the record, shown masked. Without a view (an admin who asked to reveal)
// the hidden values match.
func TestTraceMatchesOnWhatTheReaderMaySee(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rules := maskingRules(t)
	ids := ops.MessageIDRules{Headers: []string{"messageId"}, JSONPaths: []string{"$.messageId"}}

	broker := kfaketest.Cluster(t)
	k, err := kafka.New(configs.KafkaCluster{Name: "main", Brokers: broker.ListenAddrs(), DeadLetterTopics: []string{"*.DLT"},
		RequestTimeout: configs.Duration(10 * time.Second)}, configs.MessageIDRules(ids))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	prod := kfaketest.Client(t, broker)
	if _, err := kadm.NewClient(prod).CreateTopics(ctx, 1, 1, nil, "orders", "orders.DLT"); err != nil {
		t.Fatal(err)
	}
	dl := []kgo.RecordHeader{
		{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
		{Key: "kafka_dlt-original-partition", Value: binary.BigEndian.AppendUint32(nil, 0)},
		{Key: "kafka_dlt-original-offset", Value: binary.BigEndian.AppendUint64(nil, 0)},
		{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.StockException")},
		{Key: "kafka_dlt-exception-message", Value: []byte("SKU-9 out of stock")},
	}
	for _, r := range []*kgo.Record{
		{Topic: "orders.DLT", Key: []byte("ord-1"), Value: []byte(`{"n":1}`),
			Headers: append([]kgo.RecordHeader{{Key: "messageId", Value: []byte("m-clear")}, {Key: "traceId", Value: []byte("t-hidden")}}, dl...)},
		{Topic: "orders.DLT", Key: []byte("ord-2"), Value: []byte(`{"messageId":"m-hidden","n":2}`), Headers: dl},
	} {
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	vhost, amqpURL, _ := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	rabbittest.Topology{TB: t, Ch: ch}.Orders("orders.work", "k")
	for _, p := range []amqp.Publishing{
		{MessageId: "r-clear", Headers: amqp.Table{"traceId": "rt-hidden", rabbit.HeaderExceptionMessage: "card 4111 declined"}, Body: []byte(`{"n":1}`)},
		{Body: []byte(`{"messageId":"rm-hidden","n":2}`)},
	} {
		if err := ch.PublishWithContext(ctx, "orders", "k", false, false, p); err != nil {
			t.Fatal(err)
		}
	}
	rabbittest.WaitDepth(t, ch, "orders.work", 2, 10*time.Second)
	for range 2 {
		d, ok, err := ch.Get("orders.work", false)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		if err := d.Nack(false, false); err != nil {
			t.Fatal(err)
		}
	}
	rabbittest.WaitDepth(t, ch, "orders.dlq", 2, 10*time.Second)
	b := openBroker(t, vhost, configs.MessageIDRules(ids), 20*time.Second, "orders.dlq in the management API", func(topo rabbit.Topology) bool {
		for _, q := range topo.Queues {
			if q.Name == "orders.dlq" && q.Ready == 2 {
				return true
			}
		}
		return false
	})

	tr := trace.New(trace.Options{Kafka: []trace.KafkaCluster{k}, Rabbit: []trace.RabbitBroker{b}, IDs: ids})
	run := func(q trace.Query) trace.Result {
		t.Helper()
		res, err := tr.Trace(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	for _, tc := range []struct {
		name string
		q    trace.Query
		kind string
	}{
		{"KafkaHeader", trace.Query{TraceID: "t-hidden"}, trace.KindKafka},
		{"KafkaBodyPath", trace.Query{MessageID: "m-hidden"}, trace.KindKafka},
		{"RabbitHeader", trace.Query{TraceID: "rt-hidden"}, trace.KindRabbitMQ},
		{"RabbitBodyPath", trace.Query{MessageID: "rm-hidden"}, trace.KindRabbitMQ},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := found(run(views(rules, tc.q)), tc.kind); len(got) != 0 {
				t.Errorf("a reader who sees it masked found %+v", got)
			}
			if got := found(run(tc.q), tc.kind); len(got) != 1 {
				t.Errorf("revealed: found %+v, want the one %s", got, tc.kind)
			}
		})
	}

	// By an id in clear the record is found, and what the step quotes is masked.
	kres := run(views(rules, trace.Query{MessageID: "m-clear"}))
	if s := found(kres, trace.KindKafka); len(s) != 1 || s[0].Place != "orders.DLT/0 @ 0" ||
		!strings.Contains(s[0].Detail, "com.acme.StockException: "+redact.Redacted) || strings.Contains(s[0].Detail, "SKU-9") {
		t.Errorf("by m-clear: %+v", s)
	}
	rres := run(views(rules, trace.Query{MessageID: "r-clear"}))
	if s := found(rres, trace.KindRabbitMQ); len(s) != 1 || !strings.Contains(s[0].Detail, "message id r-clear") ||
		!strings.Contains(s[0].Detail, redact.Redacted) || strings.Contains(s[0].Detail, "4111") {
		t.Errorf("by r-clear: %+v", s)
	}
}
