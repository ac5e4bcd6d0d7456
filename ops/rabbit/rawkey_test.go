package rabbit

import (
	"testing"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"
)

// A routing key or exchange that is not UTF-8 — a string, or a byte array as some clients write
// x-death's routing-keys — is shown with those bytes replaced (a byte array in hex, never as ""),
// and Destination gives it byte for byte: a replay must see what it would publish to.
func TestDeadLetterDestinationIsByteForByte(t *testing.T) {
	death := func(exchange any, keys ...any) amqp.Table {
		return amqp.Table{"x-death": []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "q", "exchange": exchange,
			"routing-keys": keys}}}
	}
	for _, tc := range []struct {
		name                 string
		headers              amqp.Table
		showX, showKey       string
		rawX, rawKey         string
		springKeyOverridesIt bool
	}{
		{"StringKey", death("orders", "qa3.\xff"), "orders", "qa3.\uFFFD", "orders", "qa3.\xff", false},
		{"BytesKey", death([]byte("orders"), []byte("qa4.\xfe")), "orders", "0x7161342efe", "orders", "qa4.\xfe", false},
		{"BytesKeyUTF8", death("orders", []byte("order.created")), "orders", "order.created", "orders", "order.created", false},
		{"Exchange", death("ord\xffers", "k"), "ord\uFFFDers", "k", "ord\xffers", "k", false},
		{"Spring", amqp.Table{"x-original-exchange": []byte("shop\xff"), "x-original-routingKey": "k\xfe"},
			"0x73686f70ff", "k\uFFFD", "shop\xff", "k\xfe", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dl := DecodeDeadLetter(tc.headers)
			if dl == nil || len(dl.OriginalRoutingKeys) != 1 {
				t.Fatalf("decoded %+v", dl)
			}
			if dl.OriginalExchange != tc.showX || dl.OriginalRoutingKeys[0] != tc.showKey ||
				!utf8.ValidString(dl.OriginalExchange+dl.OriginalRoutingKeys[0]) {
				t.Errorf("shown %q %q; want %q %q", dl.OriginalExchange, dl.OriginalRoutingKeys[0], tc.showX, tc.showKey)
			}
			if x, k := dl.Destination(); x != tc.rawX || k != tc.rawKey {
				t.Errorf("destination %q %q; want %q %q", x, k, tc.rawX, tc.rawKey)
			}
			if !tc.springKeyOverridesIt && len(dl.Deaths) != 1 {
				t.Errorf("deaths %+v", dl.Deaths)
			}
		})
	}
	// Made by hand (a test, a redacted copy's fields changed): its display fields.
	dl := &DeadLetter{OriginalExchange: "e", OriginalRoutingKeys: []string{"k"}}
	if x, k := dl.Destination(); x != "e" || k != "k" {
		t.Errorf("by hand: %q %q", x, k)
	}
}
