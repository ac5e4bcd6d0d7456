package schema_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka/schema"
)

// A JSON Schema–framed value whose bytes are not UTF-8 was given as its JSON with each bad byte
// replaced by U+FFFD (value_encoding "json", the bytes silently changed); a plain value of such
// bytes is given as base64. It is now not decoded: the note says why and the bytes are shown as
// they are. Valid UTF-8, and \u escapes of any code point, still decode.
func TestJSONSchemaValueNotUTF8(t *testing.T) {
	reg := srfake.New()
	t.Cleanup(reg.Close)
	id, _, err := reg.RegisterSchema("signups-value", sr.Schema{Type: sr.TypeJSON, Schema: `{"title":"acme.Signup","type":"object"}`})
	if err != nil {
		t.Fatal(err)
	}
	d, err := schema.New(schema.Options{Registry: &configs.SchemaRegistry{URL: reg.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	frame := func(payload string) []byte {
		b, _ := (&sr.ConfluentHeader{}).AppendEncode(nil, id, nil)
		return append(b, payload...)
	}
	for _, c := range []struct {
		name, payload, json string
	}{
		{"Valid", `{"name": "Zoë"}`, `{"name":"Zoë"}`},
		{"Escapes", `{"s":"\ud800\u00ff"}`, `{"s":"\ud800\u00ff"}`},
		{"BadByte", "{\"name\":\"Zo\xff\"}", ""},
		{"BadByteInKey", "{\"\xc3\":1}", ""},
		{"CutSequence", "{\"name\":\"\xe2\x82\"}", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := d.Decode(context.Background(), "signups", false, frame(c.payload))
			if got == nil || got.Format != schema.FormatJSONSchema || got.ID != id || got.Type != "acme.Signup" {
				t.Fatalf("%+v", got)
			}
			if c.json != "" {
				if got.Error != "" || string(got.JSON) != c.json {
					t.Errorf("%q: %+v", got.JSON, got)
				}
				return
			}
			if got.JSON != nil || got.Error != "the bytes do not decode as json_schema acme.Signup: not UTF-8 text" {
				t.Errorf("JSON %q, note %q", got.JSON, got.Error)
			}
		})
	}
}
