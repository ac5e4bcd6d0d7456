package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/kafka/schema"
	"github.com/redrive/redrive/ops/waittest"
)

const moneyAvro = `{"type":"record","name":"Money","namespace":"acme","fields":[
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"currency","type":"string"}]}`

const orderAvro = `{"type":"record","name":"Order","namespace":"acme","fields":[
 {"name":"messageId","type":{"type":"string","logicalType":"uuid"}},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","FAILED"]}},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"coupon","type":["null","string"],"default":null},
 {"name":"total","type":"acme.Money"},
 {"name":"placedAt","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"card","type":{"type":"record","name":"Card","fields":[{"name":"number","type":"string"}]}},
 {"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[
   {"name":"sku","type":"string"},{"name":"qty","type":"int"}]}}}]}`

const orderKeyAvro = `{"type":"record","name":"OrderKey","namespace":"acme","fields":[{"name":"orderId","type":"long"}]}`

const commonProto = `syntax = "proto3";
package acme.common;
message Meta { string id = 1; string trace = 2; }
`

const paymentProto = `syntax = "proto3";
package acme;
import "acme/common.proto";
import "google/protobuf/timestamp.proto";
message Refund { string reason = 1; }
message Payment {
  message Line { string sku = 1; int32 qty = 2; }
  acme.common.Meta meta = 1;
  repeated Line lines = 2;
  google.protobuf.Timestamp at = 3;
  int64 cents = 4;
}
`

// The Avro bytes come from hamba/avro, a second implementation, so the decoder (twmb/avro) is
// not only checked against itself.
type hMoney struct {
	Amount   *big.Rat `avro:"amount"`
	Currency string   `avro:"currency"`
}
type hCard struct {
	Number string `avro:"number"`
}
type hLine struct {
	SKU string `avro:"sku"`
	Qty int    `avro:"qty"`
}
type hOrder struct {
	MessageID string    `avro:"messageId"`
	Status    string    `avro:"status"`
	Note      *string   `avro:"note"`
	Coupon    *string   `avro:"coupon"`
	Total     hMoney    `avro:"total"`
	PlacedAt  time.Time `avro:"placedAt"`
	Day       time.Time `avro:"day"`
	Card      hCard     `avro:"card"`
	Lines     []hLine   `avro:"lines"`
}
type hOrderKey struct {
	OrderID int64 `avro:"orderId"`
}

func frame(id int, index []int, payload []byte) []byte {
	b, _ := (&sr.ConfluentHeader{}).AppendEncode(nil, id, index)
	return append(b, payload...)
}

func register(t testing.TB, reg *srfake.Registry, subject string, s sr.Schema) int {
	t.Helper()
	id, _, err := reg.RegisterSchema(subject, s)
	if err != nil {
		t.Fatalf("register %s: %v", subject, err)
	}
	return id
}

func hambaEncode(t testing.TB, v any, texts ...string) []byte {
	t.Helper()
	cache := &hamba.SchemaCache{}
	var s hamba.Schema
	var err error
	for _, text := range texts {
		if s, err = hamba.ParseWithCache(text, "", cache); err != nil {
			t.Fatalf("hamba parse: %v", err)
		}
	}
	b, err := hamba.Marshal(s, v)
	if err != nil {
		t.Fatalf("hamba marshal: %v", err)
	}
	return b
}

// protoEncode builds a message of the compiled payment.proto from its JSON form.
func protoEncode(t testing.TB, name, js string) []byte {
	t.Helper()
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"payment.proto": paymentProto, "acme/common.proto": commonProto})})}
	files, err := comp.Compile(context.Background(), "payment.proto")
	if err != nil {
		t.Fatal(err)
	}
	d := files[0].FindDescriptorByName(protoreflect.FullName(name))
	m := dynamicpb.NewMessage(d.(protoreflect.MessageDescriptor))
	if err := protojson.Unmarshal([]byte(js), m); err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// srFixture is a kfake cluster whose Cluster decodes through an srfake registry.
type srFixture struct {
	*fake
	reg *srfake.Registry
	ids struct{ order, orderKey, payment, jsonSchema int }
}

func newSRFixture(t *testing.T) *srFixture {
	fk, reg := registryFake(t)
	f := &srFixture{fake: fk, reg: reg}
	// A short back-off, so "the registry is back" is seen within the test.
	d, err := schema.New(schema.Options{Registry: &configs.SchemaRegistry{URL: reg.URL()}, Retry: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.c.schemas = d

	f.ids.order = registerOrder(t, reg)
	f.ids.orderKey = register(t, reg, "orders-key", sr.Schema{Schema: orderKeyAvro})
	register(t, reg, "acme/common.proto", sr.Schema{Schema: commonProto, Type: sr.TypeProtobuf})
	f.ids.payment = register(t, reg, "payments-value", sr.Schema{Schema: paymentProto, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "acme/common.proto", Subject: "acme/common.proto", Version: 1}}})
	f.ids.jsonSchema = register(t, reg, "signups-value", sr.Schema{Type: sr.TypeJSON,
		Schema: `{"title":"acme.Signup","type":"object","properties":{"email":{"type":"string"}}}`})
	return f
}

// registryFake is a kfake cluster whose Cluster decodes through an srfake registry of its own.
func registryFake(tb testing.TB) (*fake, *srfake.Registry) {
	reg := srfake.New()
	tb.Cleanup(reg.Close)
	return newFake(tb, func(c *configs.KafkaCluster) { c.SchemaRegistry = &configs.SchemaRegistry{URL: reg.URL()} }), reg
}

// registerOrder registers acme.Order (orders-value) with the acme.Money it references: the id
// of orders-value.
func registerOrder(tb testing.TB, reg *srfake.Registry) int {
	register(tb, reg, "acme.Money", sr.Schema{Schema: moneyAvro})
	return register(tb, reg, "orders-value", sr.Schema{Schema: orderAvro,
		References: []sr.SchemaReference{{Name: "acme.Money", Subject: "acme.Money", Version: 1}}})
}

func dltHeaders() []kgo.RecordHeader {
	return []kgo.RecordHeader{{Key: "kafka_dlt-exception-fqcn", Value: []byte("java.lang.IllegalStateException")},
		{Key: "kafka_dlt-original-topic", Value: []byte("orders")}}
}

func jsonEq(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: not JSON: %v: %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}

func TestSchemaRegistryDecoding(t *testing.T) {
	f := newSRFixture(t)
	f.topic(t, "orders.DLT", 1)
	note := "gift"
	order := hOrder{MessageID: "7d3c3a2e-5b1f-4c53-9a43-0c1f2f6f9a10", Status: "PAID", Note: &note,
		Total:    hMoney{Amount: big.NewRat(1250, 100), Currency: "EUR"},
		PlacedAt: time.Date(2026, 3, 1, 10, 20, 30, 123e6, time.UTC), Day: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		Card: hCard{Number: "4111111111111111"}, Lines: []hLine{{"A-1", 2}, {"B-7", 1}}}
	value := frame(f.ids.order, nil, hambaEncode(t, order, moneyAvro, orderAvro))
	key := frame(f.ids.orderKey, nil, hambaEncode(t, hOrderKey{OrderID: 42}, orderKeyAvro))
	payment := frame(f.ids.payment, []int{1}, protoEncode(t, "acme.Payment",
		`{"meta":{"id":"pay-42","trace":"t1"},"lines":[{"sku":"A-1","qty":2}],"at":"2026-03-01T10:20:30Z","cents":"1250"}`))
	line := frame(f.ids.payment, []int{1, 0}, protoEncode(t, "acme.Payment.Line", `{"sku":"Z-9","qty":3}`))
	refund := frame(f.ids.payment, []int{0}, protoEncode(t, "acme.Refund", `{"reason":"late"}`))
	signup := frame(f.ids.jsonSchema, nil, []byte(`{"email": "a@example.com"}`))
	unknown := frame(4242, nil, []byte{2, 'x'})
	garbage := frame(f.ids.order, nil, []byte{0xff, 0xff, 0xff})
	plain := []byte(`{"messageId":"plain-1"}`)
	f.produce(t,
		&kgo.Record{Topic: "orders.DLT", Key: key, Value: value, Headers: dltHeaders()},
		&kgo.Record{Topic: "orders.DLT", Value: payment, Headers: dltHeaders()},
		&kgo.Record{Topic: "orders.DLT", Value: line},
		&kgo.Record{Topic: "orders.DLT", Value: refund},
		&kgo.Record{Topic: "orders.DLT", Value: signup},
		&kgo.Record{Topic: "orders.DLT", Value: unknown},
		&kgo.Record{Topic: "orders.DLT", Value: garbage},
		&kgo.Record{Topic: "orders.DLT", Value: plain},
	)
	page, err := f.c.Records(ctxT(t), RecordQuery{Topic: "orders.DLT", Order: "oldest", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != 8 {
		t.Fatalf("got %d records", len(page.Records))
	}
	rs := page.Records

	t.Run("AvroValueAndKeyWithDifferentSchemas", func(t *testing.T) {
		r := rs[0]
		v := r.ValueSchema
		if v == nil || v.Error != "" {
			t.Fatalf("value schema %+v", v)
		}
		if v.Format != schema.FormatAvro || v.ID != f.ids.order || v.Subject != "orders-value" || v.Type != "acme.Order" {
			t.Errorf("value schema %+v", v)
		}
		jsonEq(t, "value", v.JSON, `{"messageId":"7d3c3a2e-5b1f-4c53-9a43-0c1f2f6f9a10","status":"PAID","note":"gift","coupon":null,
			"total":{"amount":12.50,"currency":"EUR"},"placedAt":"2026-03-01T10:20:30.123Z","day":"2026-03-01",
			"card":{"number":"4111111111111111"},"lines":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}]}`)
		if !strings.HasPrefix(string(v.JSON), `{"messageId":`) || !strings.Contains(string(v.JSON), `"amount":12.50`) {
			t.Errorf("field order or decimal scale lost: %s", v.JSON)
		}
		k := r.KeySchema
		if k == nil || k.ID != f.ids.orderKey || k.Type != "acme.OrderKey" || k.Subject != "orders-key" {
			t.Fatalf("key schema %+v", k)
		}
		jsonEq(t, "key", k.JSON, `{"orderId":42}`)
		if !bytes.Equal(r.Value, value) || !bytes.Equal(r.Key, key) {
			t.Error("the record's bytes changed")
		}
		if r.DeadLetter == nil || r.DeadLetter.MessageID != order.MessageID {
			t.Errorf("message id from the decoded Avro value: %+v", r.DeadLetter)
		}
	})
	t.Run("ProtobufSecondMessageWithImports", func(t *testing.T) {
		v := rs[1].ValueSchema
		if v == nil || v.Error != "" || v.Format != schema.FormatProtobuf || v.Subject != "payments-value" {
			t.Fatalf("value schema %+v", v)
		}
		jsonEq(t, "payment", v.JSON, `{"meta":{"id":"pay-42","trace":"t1"},"lines":[{"sku":"A-1","qty":2}],"at":"2026-03-01T10:20:30Z","cents":"1250"}`)
		if rs[1].DeadLetter == nil || rs[1].DeadLetter.MessageID != "pay-42" {
			t.Errorf("message id from the Protobuf field meta.id: %+v", rs[1].DeadLetter)
		}
	})
	t.Run("ProtobufNestedMessageIndex", func(t *testing.T) {
		jsonEq(t, "line", rs[2].ValueSchema.JSON, `{"sku":"Z-9","qty":3}`)
		if rs[1].ValueSchema.Type != "acme.Payment" || rs[2].ValueSchema.Type != "acme.Payment.Line" || rs[3].ValueSchema.Type != "acme.Refund" {
			t.Errorf("types by message index: %s %s %s", rs[1].ValueSchema.Type, rs[2].ValueSchema.Type, rs[3].ValueSchema.Type)
		}
		jsonEq(t, "refund", rs[3].ValueSchema.JSON, `{"reason":"late"}`)
	})
	t.Run("JSONSchema", func(t *testing.T) {
		v := rs[4].ValueSchema
		if v == nil || v.Format != schema.FormatJSONSchema || v.Type != "acme.Signup" {
			t.Fatalf("value schema %+v", v)
		}
		jsonEq(t, "signup", v.JSON, `{"email":"a@example.com"}`)
	})
	t.Run("UnknownSchemaID", func(t *testing.T) {
		v := rs[5].ValueSchema
		if v == nil || v.ID != 4242 || v.JSON != nil || !strings.Contains(v.Error, "not found") {
			t.Fatalf("value schema %+v", v)
		}
		if !bytes.Equal(rs[5].Value, unknown) {
			t.Error("raw bytes not kept")
		}
	})
	t.Run("BytesThatDoNotMatch", func(t *testing.T) {
		if v := rs[6].ValueSchema; v == nil || v.JSON != nil || v.Error == "" {
			t.Fatalf("value schema %+v", v)
		}
	})
	t.Run("PlainJSONUntouched", func(t *testing.T) {
		if rs[7].ValueSchema != nil {
			t.Fatalf("value schema %+v", rs[7].ValueSchema)
		}
	})
	t.Run("ScanForPlansReadsDecodedIDsAndKeepsBytes", func(t *testing.T) {
		var got []Record
		if err := f.c.Scan(ctxT(t), "orders.DLT", 0, 0, 2, func(r Record) error { got = append(got, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].DeadLetter.MessageID != order.MessageID || got[1].DeadLetter.MessageID != "pay-42" {
			t.Fatalf("scan: %+v", got)
		}
		if !bytes.Equal(got[0].Value, value) || !bytes.Equal(got[1].Value, payment) {
			t.Error("scan changed the bytes a replay republishes")
		}
	})
	t.Run("LazyScanDecodesAsRecords", func(t *testing.T) {
		// A filter over the value asks for its schema first, and the match is decoded whole
		// after: each way ends with the record Records shows.
		sc := f.c.NewScanner("orders.DLT")
		defer sc.Close()
		i := 0
		if _, err := sc.ForwardLazy(ctxT(t), 0, 0, 8, func(l kafkamodel.LazyRecord) bool {
			if l.Plain().DeadLetter != nil || l.Plain().ValueSchema != nil || l.Plain().KeySchema != nil {
				t.Errorf("record %d decoded before it was asked: %+v", i, *l.Plain())
			}
			if i%2 == 0 {
				if vs, want := l.ValueSchema(), rs[i].ValueSchema; (vs == nil) != (want == nil) || (vs != nil && !bytes.Equal(vs.JSON, want.JSON)) {
					t.Errorf("record %d: value schema %+v, want %+v", i, vs, want)
				}
			}
			got, want := l.Record(), rs[i]
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			if !bytes.Equal(gj, wj) {
				t.Errorf("record %d: lazily %s\nwant %s", i, gj, wj)
			}
			i++
			return true
		}); err != nil || i != 8 {
			t.Fatalf("read %d: %v", i, err)
		}
	})
}

func TestSchemaRegistryDownAndBack(t *testing.T) {
	f := newSRFixture(t)
	f.topic(t, "pay.DLT", 1)
	v := frame(f.ids.payment, []int{1}, protoEncode(t, "acme.Payment", `{"meta":{"id":"p-1"}}`))
	f.produce(t, &kgo.Record{Topic: "pay.DLT", Value: v})
	f.reg.Intercept(func(w http.ResponseWriter, _ *http.Request) bool {
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	read := func() *schema.Decoded {
		t.Helper()
		p, err := f.c.Records(ctxT(t), RecordQuery{Topic: "pay.DLT"})
		if err != nil {
			t.Fatalf("the page must work while the registry is down: %v", err)
		}
		return p.Records[0].ValueSchema
	}
	d := read()
	if d == nil || d.JSON != nil || !strings.Contains(d.Error, "unavailable") {
		t.Fatalf("down: %+v", d)
	}
	f.reg.ClearInterceptors()
	if d := read(); d.JSON != nil {
		t.Fatalf("asked the registry again inside the back-off: %+v", d)
	}
	waittest.For(t, 10*time.Second, "decoded again once the back-off passed", func() (*schema.Decoded, bool) {
		d := read()
		return d, d != nil && d.Error == "" && d.JSON != nil
	})
	// Cached: a registry gone again does not matter for a known id.
	f.reg.Close()
	if d := read(); d.JSON == nil {
		t.Fatalf("cached id after the registry left: %+v", d)
	}
}
