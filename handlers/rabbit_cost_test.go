package handlers

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/redact"
)

// The browse API gives each message its delivery count and what is left of its queue's limit —
// null, never a number, when the queue has none — and the result the limit, where it comes
// from and how many messages went to the archive instead of back.
func TestBrowsedMessageJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    rabbit.Message
		want []string
	}{
		{"Unlimited", rabbit.Message{DeliveryCount: 2, DeliveriesLeft: -1}, []string{`"delivery_count":2`, `"deliveries_left":null`, `"kept":false`}},
		{"Limited", rabbit.Message{DeliveryCount: 3, DeliveriesLeft: 16}, []string{`"delivery_count":3`, `"deliveries_left":16`, `"kept":false`}},
		{"Kept", rabbit.Message{DeliveryCount: 18, DeliveriesLeft: 0, Kept: true}, []string{`"deliveries_left":0`, `"kept":true`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, _ := json.Marshal(toBrowsedMessageJSON((*redact.Rules)(nil).Message(tc.m)))
			for _, w := range append(tc.want, `"position":0`, `"headers":{}`, `"dead_letter":null`) {
				if !strings.Contains(string(raw), w) {
					t.Errorf("lacks %s: %s", w, raw)
				}
			}
		})
	}
	limit := int64(20)
	for _, tc := range []struct {
		limit *int64
		want  string
	}{{nil, `"delivery_limit":null`}, {&limit, `"delivery_limit":20`}} {
		raw, _ := json.Marshal(browseJSON{DeliveryLimit: tc.limit, DeliveryLimitFrom: "RabbitMQ's default for quorum queues", Kept: 1})
		for _, w := range []string{tc.want, `"delivery_limit_from":"RabbitMQ's default for quorum queues"`, `"kept":1`, `"notes"`, `"messages"`} {
			if !strings.Contains(string(raw), w) {
				t.Errorf("browse JSON lacks %s: %s", w, raw)
			}
		}
	}
}
