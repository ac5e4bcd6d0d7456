package trace_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/trace"
)

// A trace finds a message where a read_committed consumer would: in the DLT of 6
// committed and 6 aborted transactional records, a committed dead letter's id is found at its
// offset, and an aborted one's — a record no consumer ever received — is not found at all.
func TestTraceSeesCommittedDeadLettersOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ids := ops.MessageIDRules{Headers: []string{"messageId"}}
	broker := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders", "orders.DLT"))
	k, err := kafka.New(configs.KafkaCluster{Name: "main", Brokers: broker.ListenAddrs(), DeadLetterTopics: []string{"*.DLT"},
		RequestTimeout: configs.Duration(10 * time.Second)}, configs.MessageIDRules(ids))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	for i := range 12 {
		commit := i%2 == 0
		id := fmt.Sprintf("a-%d", i)
		if commit {
			id = fmt.Sprintf("c-%d", i)
		}
		kfaketest.Transaction(t, broker, "listener-tx", commit, &kgo.Record{Topic: "orders.DLT", Value: []byte(`{}`),
			Headers: []kgo.RecordHeader{{Key: "messageId", Value: []byte(id)}, {Key: "kafka_dlt-original-topic", Value: []byte("orders")},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.StockException")}}})
	}
	tr := trace.New(trace.Options{Kafka: []trace.KafkaCluster{k}, IDs: ids})
	res, err := tr.Trace(ctx, trace.Query{MessageID: "c-2"})
	if err != nil {
		t.Fatal(err)
	}
	if s := found(res, trace.KindKafka); len(s) != 1 || s[0].Place != "orders.DLT/0 @ 4" {
		t.Errorf("c-2: %+v; want it found at orders.DLT/0 @ 4", s)
	}
	res, err = tr.Trace(ctx, trace.Query{MessageID: "a-3"})
	if err != nil {
		t.Fatal(err)
	}
	if s := found(res, trace.KindKafka); len(s) != 0 {
		t.Errorf("a-3 (aborted): found %+v; want nothing", s)
	}
}
