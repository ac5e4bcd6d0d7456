package redact

import (
	"testing"
	"time"

	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/replay"
)

// TestTrustBrowseMasksAsTheArchive: a browsed RabbitMQ message hides what repeats a masked value
// as the archive hides it of the same message — the routing key and every property but the
// message id (which has its own rule), a text property showing the mark, a time or number
// none — and a message id property that repeats a masked value hides with the id.
func TestTrustBrowseMasksAsTheArchive(t *testing.T) {
	r, err := New(nil, []string{"$.email", "$.ref", "$.at"})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "alice.smith@example.com"
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	body := []byte(`{"orderId":"o-1","email":"` + secret + `","ref":"m-secret-7","at":"2026-12-04T10:00:00Z"}`)
	m := rabbitmodel.Message{RoutingKey: "customer." + secret, Body: body, Size: len(body), MessageID: "m-secret-7",
		Properties: rabbitmodel.Properties{MessageID: "m-secret-7", CorrelationID: secret, Type: "welcome " + secret,
			ReplyTo: "reply." + secret, AppID: secret, UserID: secret, Expiration: secret, ContentType: "application/json",
			ContentEncoding: secret, Timestamp: &at, DeliveryMode: 2, Priority: 3}}
	shown := r.Message(m)
	a, _ := r.Archived(replay.Archived{RoutingKey: m.RoutingKey, Body: body, MessageID: m.MessageID,
		Properties: rabbitmodel.PropertiesMap(m.Properties)})
	if shown.RoutingKey != Redacted || shown.RoutingKey != a.RoutingKey {
		t.Errorf("routing key: browse %q, archive %q; want both masked", shown.RoutingKey, a.RoutingKey)
	}
	browsed := rabbitmodel.PropertiesMap(shown.Properties)
	for k, v := range a.Properties {
		if k == "timestamp" {
			continue // a time cannot show the mark: it shows none
		}
		if (v == Redacted) != (browsed[k] == Redacted) {
			t.Errorf("property %s: browse %v, archive %v", k, browsed[k], v)
		}
	}
	p := shown.Properties
	for name, v := range map[string]string{"correlation_id": p.CorrelationID, "type": p.Type, "reply_to": p.ReplyTo, "app_id": p.AppID,
		"user_id": p.UserID, "expiration": p.Expiration, "content_encoding": p.ContentEncoding, "message_id": p.MessageID} {
		if v != Redacted {
			t.Errorf("property %s shows %q, want it masked", name, v)
		}
	}
	if shown.MessageID != Redacted {
		t.Errorf("message id %q, want it masked", shown.MessageID)
	}
	if p.Timestamp != nil || p.ContentType != "application/json" || p.DeliveryMode != 2 || p.Priority != 3 {
		t.Errorf("the timestamp quoting a masked value shows (%v), or a property quoting none was hidden: %+v", p.Timestamp, p)
	}
	if !shown.Redacted {
		t.Error("the message is not said to be masked")
	}
	// A message quoting nothing hidden shows whole.
	clear := rabbitmodel.Message{RoutingKey: "customer.created", Body: []byte(`{"email":"x@example.com"}`),
		Properties: rabbitmodel.Properties{Type: "welcome", ReplyTo: "amq.rabbitmq.reply-to", Timestamp: &at}}
	if got := r.Message(clear); got.RoutingKey != "customer.created" || got.Properties.Type != "welcome" ||
		got.Properties.ReplyTo != "amq.rabbitmq.reply-to" || got.Properties.Timestamp == nil {
		t.Errorf("a message quoting nothing hidden: %+v %+v", got.RoutingKey, got.Properties)
	}
}
