package handlers

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kafka/schema"
	"github.com/redrive/redrive/ops/redact"
)

// An Avro value is masked in its decoded form; its original bytes, where a path cannot reach,
// are withheld whole, in the API with and without ?raw=true.
func TestRedactDecodedAvroField(t *testing.T) {
	red, err := redact.New(nil, []string{"$.card.number"})
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte{0, 0, 0, 0, 7, 0x48, '4', '1', '1', '1'}
	rec := kafka.Record{Topic: "orders.DLT", Value: raw,
		ValueSchema: &schema.Decoded{Format: schema.FormatAvro, ID: 7, Subject: "orders-value", Type: "acme.Order",
			JSON: []byte(`{"messageId":"m-1","card":{"number":"4111111111111111"}}`)}}
	got, redacted := red.Record(rec)
	if !redacted {
		t.Fatal("not reported as redacted")
	}
	for _, rawFlag := range []bool{false, true} {
		j := toRecordJSON(got, rawFlag)
		out, _ := json.Marshal(j)
		if strings.Contains(string(out), "4111") {
			t.Errorf("raw=%v leaks the card number: %s", rawFlag, out)
		}
		if j.ValueSchema == nil || j.ValueSchema.Type != "acme.Order" || j.ValueSchema.ID != 7 {
			t.Errorf("raw=%v value_schema %+v", rawFlag, j.ValueSchema)
		}
	}
	j := toRecordJSON(got, false)
	if j.Value == nil || !strings.Contains(*j.Value, `"messageId":"m-1"`) || !strings.Contains(*j.Value, redact.Redacted) || j.ValueEncoding != "json" {
		t.Errorf("decoded value: %v %s", j.Value, j.ValueEncoding)
	}
	if string(rec.Value) != string(raw) || !strings.Contains(string(rec.ValueSchema.JSON), "4111") {
		t.Error("masking changed the caller's record")
	}
}

func TestRecordJSONSchemaFields(t *testing.T) {
	t.Run("Undecoded", func(t *testing.T) {
		out, _ := json.Marshal(toRecordJSON(kafka.Record{Value: []byte(`{"a":1}`)}, false))
		if !strings.Contains(string(out), `"value_schema":null`) || !strings.Contains(string(out), `"key_schema":null`) {
			t.Errorf("%s", out)
		}
	})
	t.Run("Failed", func(t *testing.T) {
		r := kafka.Record{Value: []byte{0, 0, 0, 0, 9, 0xff}, ValueSchema: &schema.Decoded{ID: 9, Error: "schema 9: not found in the schema registry"}}
		j := toRecordJSON(r, false)
		if j.ValueSchema.Error == "" || j.ValueEncoding != "base64" {
			t.Errorf("%+v %s", j.ValueSchema, j.ValueEncoding)
		}
	})
	t.Run("Raw", func(t *testing.T) {
		r := kafka.Record{Value: []byte("\x00\x00\x00\x00\x05{}"), ValueSchema: &schema.Decoded{Format: schema.FormatJSONSchema, ID: 5, JSON: []byte(`{}`)}}
		if j := toRecordJSON(r, true); j.ValueEncoding != "base64" || *j.Value != "AAAAAAV7fQ==" {
			t.Errorf("raw: %s %s", *j.Value, j.ValueEncoding)
		}
		if j := toRecordJSON(r, false); j.ValueEncoding != "json" || *j.Value != `{}` {
			t.Errorf("decoded: %s %s", *j.Value, j.ValueEncoding)
		}
	})
}
