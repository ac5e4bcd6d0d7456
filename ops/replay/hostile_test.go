package replay_test

import (
	"errors"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/replay"
)

// One message with a NUL or a 0xFF byte in each field must not make the whole DLQ unplannable:
// it is planned and skipped with a note, and the rest is replayed.
func TestRabbitHostileBytesArePlannedAndSkipped(t *testing.T) {
	w := newRabbitWorld(t)
	w.fillDLQ(t, 3)
	w.putDLQ(t,
		amqp.Publishing{MessageId: "bad\x00id", Body: []byte("\xff\x00"),
			Headers: amqp.Table{"x-death": deathOf("order.created"), "x-exception-message": "boom\x00\xff"}},
		amqp.Publishing{MessageId: "bad-rk", Headers: amqp.Table{"x-death": deathOf("order.\x00created")}, Body: []byte(`{}`)},
		amqp.Publishing{MessageId: "bad-\xff", Headers: amqp.Table{"x-death": deathOf("order.created")}, Body: []byte(`{}`)})
	w.waitDepth(t, "orders.dlq", 6)
	e := w.engine(t)
	plan := w.planQueue(t, e, 100, replay.Filter{})
	if plan.Total != 6 || plan.Counts[replay.Publish] != 3 || plan.Counts[replay.SkipUnresolvable] != 3 {
		t.Fatalf("plan %v of %d", plan.Counts, plan.Total)
	}
	for _, it := range plan.Items[3:] {
		if it.Note == "" || strings.ContainsRune(it.MessageID+it.Locator+it.ErrorGroup+it.Note, 0) {
			t.Errorf("item %+v: want a note and no raw NUL", it)
		}
	}
	work(t, e)
	job := w.run(t, e, plan.ID)
	if job.Status != replay.JobDone || job.Published != 3 || job.Skipped != 3 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.work", 3)
	w.waitDepth(t, "orders.dlq", 3)
}

func TestKafkaHostileBytesArePlannedAndSkipped(t *testing.T) {
	w := newWorld(t)
	w.deadLetter(t, 0, "good-1", "k1", "com.acme.StockException")
	ctx := ctxT(t)
	bad := []*kgo.Record{
		{Topic: "orders.DLT", Partition: 0, Value: []byte("\xff\x00"), Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte("orders")}, {Key: "messageId", Value: []byte("m\x00x")},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("Boom\x00\xff")}}},
		{Topic: "orders.DLT", Partition: 0, Value: []byte(`{}`), Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte("ord\x00ers")}, {Key: "messageId", Value: []byte("m-topic")}}},
	}
	if err := w.client.ProduceSync(ctx, bad...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e := w.engine(t, "a")
	plan, err := e.Plan(ctx, "a", kafkaSource(0, 0, 10), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Total != 3 || plan.Counts[replay.Publish] != 1 || plan.Counts[replay.SkipUnresolvable] != 2 {
		t.Fatalf("plan %v of %d", plan.Counts, plan.Total)
	}
	work(t, e)
	if job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "a"}}); job.Published != 1 || job.Skipped != 2 {
		t.Fatalf("job %+v", job)
	}
	// Bad bytes in what the caller typed are a 400 naming the field, not a 503 from the store.
	_, err = e.Plan(ctx, "a", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders\x00.DLT"}, replay.Filter{})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "source.topic") {
		t.Fatalf("a NUL in source.topic: %v", err)
	}
}
