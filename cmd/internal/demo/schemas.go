package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// SchemaRegistry is franz-go's in-memory Schema Registry (srfake) served on loopback.
type SchemaRegistry struct {
	Registry *srfake.Registry
	srv      *http.Server
	url      string
}

// StartSchemaRegistry serves an empty registry on addr ("127.0.0.1:0" picks a free port).
func StartSchemaRegistry(addr string) (*SchemaRegistry, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("demo: schema registry: %w", err)
	}
	reg := srfake.NewRegistry()
	s := &SchemaRegistry{Registry: reg, srv: &http.Server{Handler: reg.Handler(), ReadHeaderTimeout: 5 * time.Second},
		url: "http://" + ln.Addr().String()}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("demo: schema registry:", err)
		}
	}()
	return s, nil
}

// URL is the registry's base URL.
func (s *SchemaRegistry) URL() string { return s.url }

// Close stops serving.
func (s *SchemaRegistry) Close() { _ = s.srv.Close() }

const invoiceAvro = `{"type":"record","name":"Invoice","namespace":"acme.billing","fields":[
 {"name":"messageId","type":{"type":"string","logicalType":"uuid"}},
 {"name":"invoiceId","type":"string"},
 {"name":"status","type":{"type":"enum","name":"InvoiceStatus","symbols":["DRAFT","ISSUED","PAID","VOID"]}},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}},
 {"name":"currency","type":"string"},
 {"name":"issuedAt","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"customerEmail","type":["null","string"],"default":null}]}`

const shipmentProto = `syntax = "proto3";
package acme.logistics;
import "google/protobuf/timestamp.proto";
message Address { string city = 1; string country = 2; }
message Shipment {
  message Parcel { string sku = 1; int32 qty = 2; double weight_kg = 3; }
  string message_id = 1;
  string order_id = 2;
  Address to = 3;
  repeated Parcel parcels = 4;
  google.protobuf.Timestamp promised_by = 5;
}
`

// SeedSchemaTopics registers an Avro and a Protobuf schema and fills invoices.DLT and
// shipments.DLT with Confluent-framed dead letters (Spring DLT headers), so every decoded view
// of the console has something to show.
func SeedSchemaTopics(ctx context.Context, brokers []string, reg *srfake.Registry) error {
	invID, _, err := reg.RegisterSchema("invoices-value", sr.Schema{Schema: invoiceAvro})
	if err != nil {
		return fmt.Errorf("demo: register invoice schema: %w", err)
	}
	shipID, _, err := reg.RegisterSchema("shipments-value", sr.Schema{Schema: shipmentProto, Type: sr.TypeProtobuf})
	if err != nil {
		return fmt.Errorf("demo: register shipment schema: %w", err)
	}
	inv, err := avro.Parse(invoiceAvro)
	if err != nil {
		return err
	}
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"shipment.proto": shipmentProto})})}
	files, err := comp.Compile(ctx, "shipment.proto")
	if err != nil {
		return err
	}
	shipment := files[0].FindDescriptorByName("acme.logistics.Shipment").(protoreflect.MessageDescriptor)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for topic, parts := range map[string]int32{"invoices": 2, "invoices.DLT": 2, "shipments": 1, "shipments.DLT": 1} {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
			return fmt.Errorf("demo: create topic %s: %w", topic, err)
		}
	}
	hdr := &sr.ConfluentHeader{}
	now := time.Now()
	dlt := func(orig string, part int32, off int64, fqcn, msg string) []kgo.RecordHeader {
		return []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte(orig)},
			{Key: "kafka_dlt-original-partition", Value: be32(part)},
			{Key: "kafka_dlt-original-offset", Value: be64(off)},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte(orig + "-service")},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte(fqcn)},
			{Key: "kafka_dlt-exception-message", Value: []byte(msg)},
		}
	}
	var recs []*kgo.Record
	for i := range 24 {
		var email any
		if i%3 != 0 {
			email = fmt.Sprintf("customer%d@example.com", i)
		}
		payload, err := inv.Encode(map[string]any{
			"messageId": fmt.Sprintf("5f0e8a4c-0000-4000-8000-%012d", i), "invoiceId": fmt.Sprintf("INV-%05d", 700+i),
			"status": []string{"ISSUED", "PAID", "VOID"}[i%3], "amount": fmt.Sprintf("%d.%02d", 10+i*7, i%100), "currency": "EUR",
			"issuedAt": now.Add(-time.Duration(i) * time.Hour), "customerEmail": email,
		})
		if err != nil {
			return fmt.Errorf("demo: encode invoice: %w", err)
		}
		b, _ := hdr.AppendEncode(nil, invID, nil)
		part := int32(i % 2)
		recs = append(recs, &kgo.Record{Topic: "invoices.DLT", Partition: part, Key: []byte(fmt.Sprintf("INV-%05d", 700+i)),
			Value: append(b, payload...), Timestamp: now.Add(-time.Duration(24-i) * 5 * time.Minute),
			Headers: dlt("invoices", part, int64(40+i), "org.apache.kafka.common.errors.SerializationException",
				"Error deserializing Avro message for id "+fmt.Sprint(invID))})
	}
	for i := range 16 {
		m := dynamicpb.NewMessage(shipment)
		js := fmt.Sprintf(`{"message_id":"shp-%04d","order_id":"ord-%d","to":{"city":"Lyon","country":"FR"},
			"parcels":[{"sku":"SKU-%d","qty":%d,"weight_kg":%.1f}],"promised_by":%q}`,
			i, 10000+i, i%50, 1+i%3, 0.5+float64(i%4), now.Add(48*time.Hour).UTC().Format(time.RFC3339))
		if err := protojson.Unmarshal([]byte(js), m); err != nil {
			return fmt.Errorf("demo: shipment: %w", err)
		}
		payload, err := proto.Marshal(m)
		if err != nil {
			return err
		}
		b, _ := hdr.AppendEncode(nil, shipID, []int{1}) // Shipment is the file's second message
		recs = append(recs, &kgo.Record{Topic: "shipments.DLT", Key: []byte(fmt.Sprintf("ord-%d", 10000+i)),
			Value: append(b, payload...), Timestamp: now.Add(-time.Duration(16-i) * 7 * time.Minute),
			Headers: dlt("shipments", 0, int64(12+i), "com.acme.logistics.CarrierRejectedException",
				fmt.Sprintf("carrier rejected parcel %d: address not serviceable", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("demo: produce schema topics: %w", err)
	}
	return nil
}
