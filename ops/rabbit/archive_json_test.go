package rabbit

import (
	"encoding/json"
	"math"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// A message whose headers hold a float JSON cannot (NaN, ±Inf: an AMQP table may) is archived,
// those values as their text: json.Marshal refused the whole message, so on RabbitMQ 4 a quorum
// queue's message near its delivery limit failed custody on every read while the store answered,
// and each read returned it one delivery nearer to being dropped. The wire form keeps the values.
func TestWholeHeadersAreJSON(t *testing.T) {
	d := Delivery{d: amqp.Delivery{MessageId: "m", Headers: amqp.Table{"score": math.NaN(),
		"deep": amqp.Table{"up": math.Inf(1)}, "list": []any{float32(math.Inf(-1)), 1.5}}}}
	w, err := d.Whole()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(w.HeadersJSON)
	if err != nil {
		t.Fatalf("the archive's JSON of the headers: %v", err)
	}
	if want := `{"deep":{"up":"+Inf"},"list":["-Inf",1.5],"score":"NaN"}`; string(b) != want {
		t.Errorf("headers as JSON %s; want %s", b, want)
	}
	back, err := DecodeHeaders(w.Headers)
	if err != nil || !math.IsNaN(back["score"].(float64)) {
		t.Errorf("the wire form: %v, %v; want NaN kept", back, err)
	}
}
