package replay_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/replay"
)

const orderAvroSchema = `{"type":"record","name":"Order","namespace":"acme","fields":[
 {"name":"id","type":"string"},
 {"name":"qty","type":"int"},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID"]}},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
 {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[
   {"name":"sku","type":"string"},{"name":"n","type":"long"}]}}},
 {"name":"tags","type":{"type":"map","values":"string"}}]}`

// avroOrder is acme.Order as hamba/avro reads and writes it: the test's own Avro library, not the
// console's (twmb/avro parses, Redrive's transcoder reads and writes the bytes).
type avroOrder struct {
	ID     string            `avro:"id"`
	Qty    int32             `avro:"qty"`
	Status string            `avro:"status"`
	Amount *big.Rat          `avro:"amount"`
	At     time.Time         `avro:"at"`
	Note   *string           `avro:"note"`
	Lines  []avroLine        `avro:"lines"`
	Tags   map[string]string `avro:"tags"`
}

type avroLine struct {
	Sku string `avro:"sku"`
	N   int64  `avro:"n"`
}

// schemaWorld is a world whose cluster decodes (and encodes edits) through an srfake registry,
// with a client of that registry to register schemas.
func schemaWorld(t *testing.T) (*world, *srfake.Registry, *sr.Client) {
	t.Helper()
	w := newWorld(t)
	reg := srfake.New()
	t.Cleanup(reg.Close)
	kc := w.cfg.Kafka[0]
	kc.SchemaRegistry = &configs.SchemaRegistry{URL: reg.URL()}
	cl, err := kafka.New(kc, w.cfg.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	w.cluster = cl
	rc, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	return w, reg, rc
}

// deadLetterValue writes a Spring-style dead letter of orders[0] with value as it is.
func (w *world) deadLetterValue(t *testing.T, id string, value []byte) {
	t.Helper()
	r := &kgo.Record{Topic: "orders.DLT", Partition: 0, Key: []byte("k-" + id), Value: value,
		Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
			{Key: "kafka_dlt-original-partition", Value: []byte{0, 0, 0, 0}},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.BadQty")},
			{Key: "messageId", Value: []byte(id)},
		}}
	if err := w.client.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func framed(id int, payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), payload...)
}

func editOf(offset int64, value string) replay.Source {
	return replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT",
		Records: []replay.RecordRef{{Partition: 0, Offset: offset}}, Edit: &replay.Edit{Value: &value}}
}

// Edit and retry of an Avro record in Confluent wire format: the operator edits the JSON the page
// shows, and the copy published is Avro again — magic byte 0 and the record's own schema id, then
// the edited value written with that schema — not the JSON text (which landed in the original
// topic before: 511 bytes of pretty JSON where the consumer's Avro deserializer wanted 164 of
// Avro). Read back by hamba/avro and by Apache Avro's Python reader. The plan says it
// re-encodes with schema id N; an edit that does not fit says which field, in words for a person;
// a registry that does not answer refuses the plan (503) rather than publish JSON.
func TestEditAndRetryReencodesAvro(t *testing.T) {
	w, reg, cl := schemaWorld(t)
	ctx := ctxT(t)
	// Another subject first, so that the order's id is not 1 by chance.
	if _, err := cl.CreateSchema(ctx, "other-value", sr.Schema{Schema: `"string"`}); err != nil {
		t.Fatal(err)
	}
	ss, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: orderAvroSchema})
	if err != nil {
		t.Fatal(err)
	}
	hs := hamba.MustParse(orderAvroSchema)
	note := "rush"
	orig := avroOrder{ID: "o-2", Qty: -1, Status: "NEW", Amount: big.NewRat(1250, 100),
		At: time.UnixMilli(1767225600123).UTC(), Note: &note, Lines: []avroLine{{"SKU-1", 2}, {"SKU-2", 300000}},
		Tags: map[string]string{"b": "2", "a": "1"}}
	payload, err := hamba.Marshal(hs, orig)
	if err != nil {
		t.Fatal(err)
	}
	w.deadLetterValue(t, "m-1", framed(ss.ID, payload))
	w.deadLetterValue(t, "m-2", framed(ss.ID, payload))
	e := w.engineWith(t, replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 100})

	// What the edit box holds: the decoded value, pretty-printed, with the quantity fixed.
	var doc map[string]any
	recs, err := w.cluster.Records(ctx, kafka.RecordQuery{Topic: "orders.DLT", Partition: 0, Order: "oldest"})
	if err != nil || len(recs.Records) == 0 || recs.Records[0].ValueSchema == nil || recs.Records[0].ValueSchema.JSON == nil {
		t.Fatalf("the record does not decode: %+v %v", recs, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(recs.Records[0].ValueSchema.JSON)))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	doc["qty"] = json.Number("3")
	doc["note"] = nil
	pretty, _ := json.MarshalIndent(doc, "", "  ")

	for _, c := range []struct {
		change func(m map[string]any)
		want   []string
	}{
		{func(m map[string]any) { m["qty"] = "three" }, []string{"field qty must be a whole number", `not "three"`}},
		{func(m map[string]any) { m["qty"] = json.Number("3000000000") }, []string{"field qty must be a whole number from -2147483648 to 2147483647"}},
		{func(m map[string]any) { m["status"] = "SHIPPED" }, []string{"field status must be one of NEW, PAID"}},
		{func(m map[string]any) { m["amount"] = json.Number("12.505") }, []string{"field amount has more than the 2 decimals"}},
		{func(m map[string]any) { m["lines"].([]any)[1].(map[string]any)["n"] = "x" }, []string{"field lines[1].n must be a whole number"}},
		{func(m map[string]any) { m["colour"] = "red" }, []string{"field colour is not a field of acme.Order"}},
		{func(m map[string]any) { delete(m, "id") }, []string{"field id is missing"}},
		{func(m map[string]any) { m["at"] = "yesterday" }, []string{`field at must be a time like "2026-03-01T10:20:30Z"`}},
	} {
		m := map[string]any{}
		b, _ := json.Marshal(doc)
		d := json.NewDecoder(strings.NewReader(string(b)))
		d.UseNumber()
		_ = d.Decode(&m)
		c.change(m)
		bad, _ := json.Marshal(m)
		_, err := e.Plan(ctx, "alice", editOf(0, string(bad)), replay.Filter{})
		msg := ops.Message(err)
		if !errors.Is(err, ops.ErrInvalid) || !strings.HasPrefix(msg, "edit.value: does not fit avro acme.Order (schema id ") {
			t.Errorf("%s: %v, want an edit.value 400", bad, err)
			continue
		}
		for _, wnt := range c.want {
			if !strings.Contains(msg, wnt) {
				t.Errorf("%s: %q lacks %q", bad, msg, wnt)
			}
		}
		for _, goWords := range []string{"int32", "json.Number", "map[string]", "[]interface", "avro:", "*big"} {
			if strings.Contains(msg, goWords) {
				t.Errorf("%q names Go's %q", msg, goWords)
			}
		}
	}
	if _, err := e.Plan(ctx, "alice", editOf(0, "{not json"), replay.Filter{}); !errors.Is(err, ops.ErrInvalid) ||
		!strings.Contains(ops.Message(err), "is not JSON text") {
		t.Errorf("not JSON: %v", err)
	}

	plan, err := e.Plan(ctx, "alice", editOf(0, string(pretty)), replay.Filter{})
	if err != nil || plan.Total != 1 || plan.Counts[replay.Publish] != 1 {
		t.Fatalf("plan: %v %+v", err, plan.Counts)
	}
	wantEnc := "re-encoded as avro acme.Order with schema id " + itoa(ss.ID) + " (orders-value)"
	if !strings.Contains(strings.Join(plan.Warnings, "\n"), wantEnc) {
		t.Fatalf("the plan does not say it re-encodes: %v", plan.Warnings)
	}
	if !w.audit.has("replay.plan", `"encoding":"avro acme.Order with schema id `+itoa(ss.ID), `"value_before":"{\"id\":\"o-2\",\"qty\":-1`) {
		t.Fatal("the replay.plan audit does not carry the encoding and the decoded value before")
	}
	work(t, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, Reason: "qty fixed"})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitJob(t, e, job.ID); done.Status != replay.JobDone || done.Published != 1 {
		t.Fatalf("job %+v", done)
	}
	got := w.originals(t)
	if len(got) != 1 {
		t.Fatalf("%d records on the original topic, want 1", len(got))
	}
	v := got[0].Value
	if len(v) < 5 || v[0] != 0 || int(binary.BigEndian.Uint32(v[1:5])) != ss.ID {
		t.Fatalf("published %d bytes %.40q: not Confluent framing with schema id %d", len(v), v, ss.ID)
	}
	var back avroOrder
	if err := hamba.Unmarshal(hs, v[5:], &back); err != nil {
		t.Fatalf("hamba/avro cannot read the published value: %v", err)
	}
	want := orig
	want.Qty, want.Note = 3, nil
	if back.ID != want.ID || back.Qty != 3 || back.Status != "NEW" || back.Amount.Cmp(want.Amount) != 0 ||
		!back.At.Equal(want.At) || back.Note != nil || len(back.Lines) != 2 || back.Lines[1] != want.Lines[1] ||
		back.Tags["a"] != "1" || back.Tags["b"] != "2" {
		t.Fatalf("read back %+v, want %+v", back, want)
	}
	// Apache Avro's Python reader (Debian's python3-avro) with the writer schema the registry gives for
	// the id in the framing, as a consumer's deserializer reads it.
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		out, err := exec.Command("/usr/bin/python3", "-c", `
import sys, json, io, struct, requests
import avro.schema, avro.io
b = bytes.fromhex(sys.argv[2])
assert b[0] == 0, "magic byte"
sid = struct.unpack(">I", b[1:5])[0]
text = requests.get(sys.argv[1] + "/schemas/ids/%d" % sid).json()["schema"]
r = avro.io.DatumReader(avro.schema.parse(text))
v = r.read(avro.io.BinaryDecoder(io.BytesIO(b[5:])))
print(json.dumps(v, default=str, sort_keys=True))
`, reg.URL(), hexOf(v)).CombinedOutput()
		if err != nil {
			t.Fatalf("python3-avro: %v\n%s", err, out)
		}
		for _, wnt := range []string{`"qty": 3`, `"id": "o-2"`, `"note": null`, `"amount": "12.50"`, `"n": 300000`, `"status": "NEW"`} {
			if !strings.Contains(string(out), wnt) {
				t.Errorf("python read %s, lacking %s", out, wnt)
			}
		}
	}

	// The registry gone: the plan is refused with what to do, nothing planned as JSON.
	reg.Close()
	_, err = e.Plan(ctx, "alice", editOf(1, string(pretty)), replay.Filter{})
	if !errors.Is(err, ops.ErrUnavailable) || !strings.Contains(ops.Message(err), "schema registry did not answer") ||
		strings.Contains(ops.Message(err), "127.0.0.1") {
		t.Fatalf("registry down: %v (%q)", err, ops.Message(err))
	}
}

// A Protobuf record keeps its message indexes (the second message of the file here) and a JSON
// Schema record its framing; a plain JSON record is published as the text, as before.
func TestEditAndRetryReencodesProtobufAndJSONSchema(t *testing.T) {
	w, _, cl := schemaWorld(t)
	ctx := ctxT(t)
	proto, err := cl.CreateSchema(ctx, "carts-value", sr.Schema{Type: sr.TypeProtobuf, Schema: `syntax = "proto3";
package acme.shop;
message Cart { string id = 1; }
message Line { string sku = 1; int32 qty = 2; int64 cents = 3; }`})
	if err != nil {
		t.Fatal(err)
	}
	js, err := cl.CreateSchema(ctx, "signups-value", sr.Schema{Type: sr.TypeJSON, Schema: `{"title":"acme.Signup","type":"object"}`})
	if err != nil {
		t.Fatal(err)
	}
	// Line{sku:"SKU-42", qty:3, cents:1299} after the indexes [1] (zigzag varints: count 1, index 1).
	line := []byte{0x0a, 6, 'S', 'K', 'U', '-', '4', '2', 0x10, 3, 0x18, 0x93, 0x0a}
	w.deadLetterValue(t, "p-1", framed(proto.ID, append([]byte{2, 2}, line...)))
	w.deadLetterValue(t, "j-1", framed(js.ID, []byte(`{"email": "ada@example.com", "n": 7}`)))
	w.deadLetterValue(t, "t-1", []byte(`{"messageId":"t-1","n":1}`))
	e := w.engineWith(t, replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 100})
	work(t, e)

	if _, err := e.Plan(ctx, "alice", editOf(0, `{"sku":"SKU-42","qty":"many"}`), replay.Filter{}); !errors.Is(err, ops.ErrInvalid) ||
		!strings.Contains(ops.Message(err), "does not fit protobuf acme.shop.Line (schema id") || !strings.Contains(ops.Message(err), "qty") {
		t.Errorf("a bad protobuf edit: %v", err)
	}
	for i, edit := range []string{"{\n  \"sku\": \"SKU-42\",\n  \"qty\": 4,\n  \"cents\": \"1299\"\n}", `{"email": "ada@example.org", "n": 7}`, `{"messageId":"t-1","n":2}`} {
		plan, err := e.Plan(ctx, "alice", editOf(int64(i), edit), replay.Filter{})
		if err != nil {
			t.Fatalf("plan %d: %v", i, err)
		}
		job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, Reason: "fixed"})
		if err != nil {
			t.Fatal(err)
		}
		if done := waitJob(t, e, job.ID); done.Status != replay.JobDone || done.Published != 1 {
			t.Fatalf("job %d: %+v", i, done)
		}
	}
	got := w.originals(t)
	if len(got) != 3 {
		t.Fatalf("%d records on the original topic, want 3", len(got))
	}
	p := got[0].Value
	if len(p) < 7 || p[0] != 0 || int(binary.BigEndian.Uint32(p[1:5])) != proto.ID || p[5] != 2 || p[6] != 2 {
		t.Fatalf("protobuf copy % x: not framed with schema id %d and indexes [1]", p, proto.ID)
	}
	wantLine := []byte{0x0a, 6, 'S', 'K', 'U', '-', '4', '2', 0x10, 4, 0x18, 0x93, 0x0a}
	if string(p[7:]) != string(wantLine) {
		t.Fatalf("protobuf message % x, want % x", p[7:], wantLine)
	}
	j := got[1].Value
	if len(j) < 5 || j[0] != 0 || int(binary.BigEndian.Uint32(j[1:5])) != js.ID || string(j[5:]) != `{"email":"ada@example.org","n":7}` {
		t.Fatalf("JSON Schema copy %q", j)
	}
	if string(got[2].Value) != `{"messageId":"t-1","n":2}` {
		t.Fatalf("plain JSON copy %q", got[2].Value)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
