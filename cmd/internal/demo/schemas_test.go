package demo

import (
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/waittest"
)

// The demo's schema topics decode through its registry: Avro on invoices.DLT, Protobuf (the
// file's second message) on shipments.DLT, message ids read from the decoded values.
func TestSeedSchemaTopicsDecode(t *testing.T) {
	ctx := waittest.Context(t, 30*time.Second)
	broker := kfaketest.Cluster(t)
	reg, err := StartSchemaRegistry("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if err := SeedSchemaTopics(ctx, broker.ListenAddrs(), reg.Registry); err != nil {
		t.Fatal(err)
	}
	c, err := kafka.New(configs.KafkaCluster{Name: "demo", Brokers: broker.ListenAddrs(), SchemaRegistry: &configs.SchemaRegistry{URL: reg.URL()}},
		configs.MessageIDRules{JSONPaths: []string{"messageId", "message_id"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct{ topic, format, typ string }{
		{"invoices.DLT", "avro", "acme.billing.Invoice"}, {"shipments.DLT", "protobuf", "acme.logistics.Shipment"},
	} {
		p, err := c.Records(ctx, kafka.RecordQuery{Topic: tc.topic})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Records) == 0 {
			t.Fatalf("%s: empty", tc.topic)
		}
		r := p.Records[0]
		if d := r.ValueSchema; d == nil || d.Error != "" || d.Format != tc.format || d.JSON == nil {
			t.Fatalf("%s: %+v", tc.topic, d)
		}
		if r.DeadLetter == nil || r.DeadLetter.MessageID == "" {
			t.Errorf("%s: no message id from the decoded value: %+v", tc.topic, r.DeadLetter)
		}
		t.Logf("%s: %s %s", tc.topic, r.ValueSchema.Type, r.ValueSchema.JSON)
	}
}
