package schema_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka/schema"
)

const invoiceAvro = `{"type":"record","name":"Invoice","namespace":"acme.billing","fields":[
 {"name":"id","type":"string"},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["DRAFT","PAID"]}},
 {"name":"amount","type":"double"},
 {"name":"note","type":["null","string"],"default":null}]}`

// The decoder reads what others wrote: Confluent's own Python serializers (Debian's
// python3-confluent-kafka: JSON Schema, and Protobuf — registered as Confluent's clients do, a
// base64 FileDescriptorProto, its second message so the indexes are not the first's) against the
// registry, and Apache Avro's Python implementation (python3-avro) for the Avro bytes, framed here.
func TestDecodesConfluentAndApacheEncoders(t *testing.T) {
	python := "/usr/bin/python3" // Debian's, with the packages .ci/run installs
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s: %v (install python3-confluent-kafka python3-avro python3-requests python3-jsonschema python3-protobuf)", python, err)
	}
	reg := srfake.New()
	t.Cleanup(reg.Close)
	out, err := exec.Command(python, "testdata/confluent_encode.py", reg.URL(), invoiceAvro).CombinedOutput()
	if err != nil {
		t.Fatalf("the Python encoders (apt-get install python3-confluent-kafka python3-avro python3-requests python3-jsonschema python3-protobuf): %v\n%s", err, out)
	}
	var enc map[string]string
	if err := json.Unmarshal(out, &enc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.CreateSchema(context.Background(), "invoices-value", sr.Schema{Schema: invoiceAvro})
	if err != nil {
		t.Fatal(err)
	}
	avroBytes, _ := hex.DecodeString(enc["avro"])
	framed := binary.BigEndian.AppendUint32([]byte{0}, uint32(ss.ID))
	enc["avro"] = hex.EncodeToString(append(framed, avroBytes...))

	d, err := schema.New(schema.Options{Registry: &configs.SchemaRegistry{URL: reg.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, topic, format, typ string
		want                     []string
	}{
		{"json", "signups", schema.FormatJSONSchema, "acme.Signup", []string{`"email":"ada@example.com"`, `"n":7`}},
		{"protobuf", "carts", schema.FormatProtobuf, "acme.shop.Line", []string{`"sku":"SKU-42"`, `"qty":3`, `"cents":"1299"`}},
		{"avro", "invoices", schema.FormatAvro, "acme.billing.Invoice", []string{`"id":"INV-7"`, `"status":"PAID"`, `"amount":12.5`, `"note":null`}},
	} {
		b, err := hex.DecodeString(enc[c.name])
		if err != nil || len(b) < 6 {
			t.Fatalf("%s: %q %v", c.name, enc[c.name], err)
		}
		got := d.Decode(context.Background(), c.topic, false, b)
		if got == nil || got.Error != "" || got.Format != c.format || got.Type != c.typ {
			t.Errorf("%s: %+v", c.name, got)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(string(got.JSON), w) {
				t.Errorf("%s: %s lacks %s", c.name, got.JSON, w)
			}
		}
	}
	// Bytes of the second message that do not decode (a field cut short) are said not to decode
	// as that message, the one their indexes picked, not as the schema's first.
	b, _ := hex.DecodeString(enc["protobuf"])
	bad := d.Decode(context.Background(), "carts", false, append(b, 0x0a, 0x7f))
	if bad == nil || bad.Type != "acme.shop.Line" || !strings.Contains(bad.Error, "do not decode as protobuf acme.shop.Line:") {
		t.Errorf("cut short: %+v", bad)
	}
}
