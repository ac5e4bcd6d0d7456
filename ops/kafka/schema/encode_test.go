package schema_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/schema"
)

const everyAvroType = `{"type":"record","name":"Every","namespace":"acme","fields":[
 {"name":"b","type":"boolean"},
 {"name":"f","type":"float"},
 {"name":"d","type":"double"},
 {"name":"raw","type":"bytes"},
 {"name":"fx","type":{"type":"fixed","name":"Four","size":4}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"tm","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"tu","type":{"type":"long","logicalType":"time-micros"}},
 {"name":"tsu","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"lts","type":{"type":"long","logicalType":"local-timestamp-millis"}},
 {"name":"dec","type":{"type":"fixed","name":"Money","size":6,"logicalType":"decimal","precision":12,"scale":3}},
 {"name":"neg","type":{"type":"bytes","logicalType":"decimal","precision":20,"scale":0}},
 {"name":"kids","type":{"type":"array","items":["null",{"type":"record","name":"Kid","fields":[{"name":"name","type":"string"}]}]}},
 {"name":"counts","type":{"type":"map","values":["null","long"]}},
 {"name":"later","type":"long","default":42}]}`

type every struct {
	B      bool              `avro:"b"`
	F      float32           `avro:"f"`
	D      float64           `avro:"d"`
	Raw    []byte            `avro:"raw"`
	Fx     [4]byte           `avro:"fx"`
	Day    time.Time         `avro:"day"`
	Tm     time.Duration     `avro:"tm"`
	Tu     time.Duration     `avro:"tu"`
	Tsu    time.Time         `avro:"tsu"`
	Lts    time.Time         `avro:"lts"`
	Dec    *big.Rat          `avro:"dec"`
	Neg    *big.Rat          `avro:"neg"`
	Kids   []*kid            `avro:"kids"`
	Counts map[string]*int64 `avro:"counts"`
	Later  int64             `avro:"later"`
}

type kid struct {
	Name string `avro:"name"`
}

// The writer is the transcoder's inverse: a value written by another library (hamba/avro),
// decoded to the JSON the pages show and encoded back, is the same value for both readers; a field left out takes
// the schema's default.
func TestEncodeAvroRoundTrip(t *testing.T) {
	ctx := context.Background()
	reg := srfake.New()
	t.Cleanup(reg.Close)
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.CreateSchema(ctx, "every-value", sr.Schema{Schema: everyAvroType})
	if err != nil {
		t.Fatal(err)
	}
	seven := int64(-7)
	v := every{B: true, F: 1.5, D: -0.1, Raw: []byte{0, 1, 255}, Fx: [4]byte{9, 8, 7, 6},
		Day: time.Date(1969, 12, 30, 0, 0, 0, 0, time.UTC), Tm: 10*time.Hour + 20*time.Minute + 30*time.Second + 123*time.Millisecond,
		Tu: 23*time.Hour + 59*time.Minute + 59*time.Second + 999*time.Millisecond, Tsu: time.UnixMicro(1767225600123456).UTC(),
		Lts: time.UnixMilli(1767225600123).UTC(), Dec: big.NewRat(-12345678, 1000), Neg: big.NewRat(-128, 1),
		Kids: []*kid{{Name: "ada"}, nil}, Counts: map[string]*int64{"a": &seven, "b": nil}, Later: 5}
	payload, err := hamba.Marshal(hamba.MustParse(everyAvroType), v)
	if err != nil {
		t.Fatal(err)
	}
	original := append(binary.BigEndian.AppendUint32([]byte{0}, uint32(ss.ID)), payload...)
	d, err := schema.New(schema.Options{Registry: &configs.SchemaRegistry{URL: reg.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	dec := d.Decode(ctx, "every", false, original)
	if dec == nil || dec.JSON == nil {
		t.Fatalf("decode: %+v", dec)
	}
	enc, err := d.Encode(ctx, "every", false, original, dec.JSON)
	if err != nil {
		t.Fatalf("encode %s: %v", dec.JSON, err)
	}
	// The same value, read by the transcoder and by hamba/avro (the bytes may differ: hamba writes
	// array and map blocks with their sizes, and decimals not in their fewest bytes).
	if again := d.Decode(ctx, "every", false, enc.Bytes); again == nil || string(again.JSON) != string(dec.JSON) {
		t.Fatalf("encoded back % x reads %+v, want %s", enc.Bytes, again, dec.JSON)
	}
	var same every
	if err := hamba.Unmarshal(hamba.MustParse(everyAvroType), enc.Bytes[5:], &same); err != nil {
		t.Fatalf("hamba/avro cannot read % x: %v", enc.Bytes, err)
	}
	if same.B != v.B || same.F != v.F || same.D != v.D || string(same.Raw) != string(v.Raw) || same.Fx != v.Fx ||
		!same.Day.Equal(v.Day) || same.Tm != v.Tm || same.Tu != v.Tu || !same.Tsu.Equal(v.Tsu) || !same.Lts.Equal(v.Lts) ||
		same.Dec.Cmp(v.Dec) != 0 || same.Neg.Cmp(v.Neg) != 0 || len(same.Kids) != 2 || same.Kids[0].Name != "ada" ||
		same.Kids[1] != nil || *same.Counts["a"] != -7 || same.Counts["b"] != nil || same.Later != 5 {
		t.Fatalf("hamba/avro reads %+v, want %+v", same, v)
	}
	if enc.Format != schema.FormatAvro || enc.ID != ss.ID || enc.Type != "acme.Every" || enc.Subject != "every-value" {
		t.Fatalf("%+v", enc)
	}
	// "later" left out: its default, 42.
	short := strings.Replace(string(dec.JSON), `,"later":5`, "", 1)
	enc, err = d.Encode(ctx, "every", false, original, []byte(short))
	if err != nil {
		t.Fatalf("%s: %v", short, err)
	}
	var back every
	if err := hamba.Unmarshal(hamba.MustParse(everyAvroType), enc.Bytes[5:], &back); err != nil || back.Later != 42 || back.Dec.Cmp(v.Dec) != 0 {
		t.Fatalf("read back %+v %v", back, err)
	}
	for _, c := range []struct{ from, to, want string }{
		{`"fx":"CQgHBg=="`, `"fx":"CQgH"`, "field fx must be base64 text of exactly 4 bytes"},
		{`"day":"1969-12-30"`, `"day":"30/12/1969"`, `field day must be a date like "2026-03-01"`},
		{`"kids":[{"name":"ada"},null]`, `"kids":[{"name":7},null]`, "field kids[0].name must be text"},
		{`"counts":{"a":-7,"b":null}`, `"counts":{"a":"x","b":null}`, `field counts["a"] must be a whole number`},
		{`"b":true`, `"b":"yes"`, "field b must be true or false"},
	} {
		bad := strings.Replace(string(dec.JSON), c.from, c.to, 1)
		if bad == string(dec.JSON) {
			t.Fatalf("%s not in %s", c.from, dec.JSON)
		}
		_, err := d.Encode(ctx, "every", false, original, []byte(bad))
		var me *schema.MismatchError
		if !errors.As(err, &me) || !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.to, err, c.want)
		}
	}
	// Not for a schema: nothing to encode; the text is the value.
	if enc, err := d.Encode(ctx, "every", false, []byte(`{"a":1}`), []byte(`{"a":2}`)); enc != nil || err != nil {
		t.Fatalf("plain JSON: %+v %v", enc, err)
	}
	// An id the registry does not know: a conflict saying so, not an encoding.
	unknown := append(binary.BigEndian.AppendUint32([]byte{0}, 999), payload...)
	if _, err := d.Encode(ctx, "every", false, unknown, dec.JSON); !errors.Is(err, ops.ErrConflict) ||
		!strings.Contains(ops.Message(err), "schema id 999, which the schema registry does not know") {
		t.Fatalf("unknown id: %v", err)
	}
}
