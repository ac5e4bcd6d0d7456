package handlers

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kafka/schema"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/replay"
)

// ?reveal= takes true or false; anything else is a 400 naming the parameter, for every role, and
// shows nothing unmasked.
func TestRedactionForReadsReveal(t *testing.T) {
	rules, err := redact.New(nil, []string{"$.email"})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	for _, q := range []string{"?reveal=maybe", "?reveal=1x"} {
		c := e.NewContext(httptest.NewRequest("GET", "/x"+q, nil), httptest.NewRecorder())
		SetActor(c, access.Actor{Name: "root", Role: access.Admin})
		if red, err := redactionFor(c, rules, "x"); !errors.Is(err, ops.ErrInvalid) || red != nil {
			t.Errorf("%s: %v %v; want ErrInvalid", q, red, err)
		}
	}
	c := e.NewContext(httptest.NewRequest("GET", "/x?reveal=false", nil), httptest.NewRecorder())
	SetActor(c, access.Actor{Name: "vera", Role: access.Viewer})
	if red, err := redactionFor(c, rules, "x"); err != nil || red == nil {
		t.Errorf("reveal=false: %v %v; want the rules", red, err)
	}
}

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

// Secrets in masked headers or JSON paths must not show through any field derived from them.
func TestRedactDerivedFields(t *testing.T) {
	const secret, id, card = "card 4111 1111 declined", "msg-7f3a", "4111-2222"
	red, err := redact.New([]string{"kafka_dlt-exception-message", "messageId", "x-exception-message"}, []string{"$.card"})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("KafkaRecord", func(t *testing.T) {
		hs := []kafka.Header{{Key: "kafka_dlt-exception-message", Value: []byte(secret)},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("java.lang.IllegalStateException")},
			{Key: "kafka_dlt-exception-stacktrace", Value: []byte("IllegalStateException: " + secret + "\n\tat x")},
			{Key: "messageId", Value: []byte(id)}}
		value := []byte(`{"card":"` + card + `","sku":"A"}`)
		rec := kafka.Record{Value: value, Headers: hs, DeadLetter: kafka.DecodeDeadLetter(hs, value, kafka.DefaultHeaderNames(),
			configs.MessageIDRules{Headers: []string{"messageId"}})}
		if rec.DeadLetter.ExceptionMessage != secret || rec.DeadLetter.MessageID != id {
			t.Fatalf("fixture: %+v", rec.DeadLetter)
		}
		got, redacted := red.Record(rec)
		raw, _ := json.Marshal(toRecordJSON(got, false))
		view, _ := json.Marshal(toRecordView(got))
		for _, out := range [][]byte{raw, view} {
			for _, leak := range []string{secret, id, card} {
				if strings.Contains(string(out), leak) {
					t.Errorf("%q shows through: %s", leak, out)
				}
			}
		}
		if !redacted || got.DeadLetter.ExceptionType != "java.lang.IllegalStateException" || !strings.Contains(string(got.Value), `"sku":"A"`) {
			t.Errorf("masked too much or too little: %+v %s", got.DeadLetter, got.Value)
		}
		g := red.ErrorGroup(kafka.ErrorGroup{ExceptionType: "java.lang.IllegalStateException", SampleMessage: secret})
		if g.SampleMessage != redact.Redacted || g.ExceptionType != "java.lang.IllegalStateException" {
			t.Errorf("error group: %+v", g)
		}
	})
	t.Run("RabbitMessage", func(t *testing.T) {
		m := rabbit.Message{MessageID: id, Properties: rabbit.Properties{}, Body: []byte("plain " + card),
			Headers:    []rabbit.Header{{Key: "x-exception-message", Value: secret}, {Key: "messageId", Value: id}},
			DeadLetter: rabbit.DecodeDeadLetter(amqp.Table{"x-exception-message": secret, "x-first-death-reason": "rejected"})}
		shown, masked := red.Messages([]rabbit.Message{m})
		j := toRabbitMessageJSON(shown[0])
		raw, _ := json.Marshal(j)
		groups, _ := json.Marshal(rabbit.ErrorGroups(masked))
		for _, out := range [][]byte{raw, groups} {
			for _, leak := range []string{secret, id, card} {
				if strings.Contains(string(out), leak) {
					t.Errorf("%q shows through: %s", leak, out)
				}
			}
		}
		if !j.BodyRedacted || j.Body != redact.Redacted {
			t.Errorf("a non-JSON body with json_paths rules is masked whole: %q %v", j.Body, j.BodyRedacted)
		}
		// A header rule alone masks no body: body_redacted says so.
		headersOnly, _ := redact.New([]string{"x-exception-message"}, nil)
		if j := toRabbitMessageJSON(headersOnly.Message(m)); j.BodyRedacted || j.Body != string(m.Body) {
			t.Errorf("body_redacted without a masked body: %+v", j)
		}
	})
	t.Run("Plan", func(t *testing.T) {
		p := replay.Plan{Source: replay.Source{Kind: "rabbitmq"}, Items: []replay.Item{{MessageID: id, ErrorGroup: "rejected " + secret}},
			ErrorGroups: map[string]map[replay.Action]int{"rejected " + secret: {replay.Action("publish"): 1}}}
		got := red.Plan(p)
		raw, _ := json.Marshal(toPlanJSON(got))
		if strings.Contains(string(raw), secret) || strings.Contains(string(raw), id) || got.Items[0].ErrorGroup != "rejected "+redact.Redacted {
			t.Errorf("plan shows masked content: %s", raw)
		}
		if p.Items[0].MessageID != id {
			t.Error("RedactPlan changed the engine's plan")
		}
		var none *redact.Rules
		if none.Plan(p).Items[0].MessageID != id {
			t.Error("a nil Redactor masked a plan")
		}
	})
}

// An edit and retry's diff shows no more of the message than the message itself would: the
// masked JSON paths of the value before and after, the masked headers, and the message id when
// ids are masked; the engine's plan keeps its edit.
func TestRedactPlanEditDiff(t *testing.T) {
	red, err := redact.New([]string{"authorization", "messageId"}, []string{"$.card"})
	if err != nil {
		t.Fatal(err)
	}
	value := `{"card":"4111-after","n":1}`
	ed := &replay.Edit{Value: &value, SetHeaders: map[string]string{"authorization": "Bearer new"},
		Diff: &replay.EditDiff{ValueBefore: `{"card":"4111-before","n":1}`, ValueAfter: value,
			Headers:   map[string][2]string{"authorization": {"Bearer old", "Bearer new"}, "fixed-by": {"", "ops"}},
			MessageID: &[2]string{"m-secret", "fresh-1"}}}
	p := replay.Plan{Source: replay.Source{Kind: "rabbitmq", Edit: ed}}
	got := red.Plan(p)
	raw, _ := json.Marshal(got.Source) // what the plan page shows of the edit
	for _, leak := range []string{"4111-before", "4111-after", "Bearer old", "Bearer new", "m-secret"} {
		if strings.Contains(string(raw), leak) {
			t.Errorf("%q shows through: %s", leak, raw)
		}
	}
	if !strings.Contains(string(raw), `"fixed-by":["","ops"]`) || !strings.Contains(string(raw), "fresh-1") {
		t.Errorf("what is not masked must stay: %s", raw)
	}
	if p.Source.Edit.Diff.ValueBefore != `{"card":"4111-before","n":1}` || *p.Source.Edit.Value != value {
		t.Error("RedactPlan changed the engine's plan")
	}
}

// The audit log's entry for an edit and retry's plan records the edit and its diff; read back by
// someone who sees masked content, it shows no more than the message would — and an edit that
// cannot be read back is left out whole.
func TestRedactAuditEditDiff(t *testing.T) {
	red, err := redact.New([]string{"authorization"}, []string{"$.card"})
	if err != nil {
		t.Fatal(err)
	}
	value := `{"card":"4111-after","n":1}`
	src := replay.Source{Kind: "kafka", Topic: "orders.DLT", Edit: &replay.Edit{Value: &value,
		SetHeaders: map[string]string{"authorization": "Bearer new"},
		Diff: &replay.EditDiff{ValueBefore: `{"card":"4111-before","n":1}`, ValueAfter: value,
			Headers: map[string][2]string{"authorization": {"Bearer old", "Bearer new"}}}}}
	var detail map[string]any // as the store gives it back: decoded JSON
	b, _ := json.Marshal(map[string]any{"source": src, "actions": map[string]int{"replay": 1}})
	if err := json.Unmarshal(b, &detail); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(red.AuditDetail(detail))
	for _, leak := range []string{"4111-before", "4111-after", "Bearer old", "Bearer new"} {
		if strings.Contains(string(raw), leak) {
			t.Errorf("%q shows through the audit entry: %s", leak, raw)
		}
	}
	if !strings.Contains(string(raw), `"topic":"orders.DLT"`) || !strings.Contains(string(raw), `\"n\":1`) {
		t.Errorf("what is not masked must stay: %s", raw)
	}
	if orig, _ := json.Marshal(detail); !strings.Contains(string(orig), "4111-before") {
		t.Error("AuditDetail changed the entry it was given")
	}
	if got, _ := json.Marshal((*redact.Rules)(nil).AuditDetail(detail)); !strings.Contains(string(got), "4111-before") {
		t.Error("with nothing to mask (or an admin revealing) the entry is shown as recorded")
	}
	detail["source"].(map[string]any)["edit"] = "not an edit"
	if got, _ := json.Marshal(red.AuditDetail(detail)); strings.Contains(string(got), "not an edit") {
		t.Errorf("an unreadable edit shows: %s", got)
	}
}
