package rabbit

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"
)

func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func TestDecodeDeadLetter(t *testing.T) {
	t0, t1 := *ts("2026-03-01T10:00:00Z"), *ts("2026-03-01T10:05:00Z")
	for _, tc := range []struct {
		name    string
		headers amqp.Table
		want    *DeadLetter
	}{
		{"NoHeaders", nil, nil},
		{"UnrelatedHeaders", amqp.Table{"messageId": "m", "traceId": "t"}, nil},
		{
			"RetryLoopThenParked",
			// As RabbitMQ 3.10 writes it: newest entry first; one entry per (queue, reason).
			amqp.Table{
				"x-death": []any{
					amqp.Table{"count": int64(1), "reason": "rejected", "queue": "orders.retry", "time": t1,
						"exchange": "", "routing-keys": []any{"orders.retry"}},
					amqp.Table{"count": int64(3), "reason": "rejected", "queue": "orders", "time": t0,
						"exchange": "shop", "routing-keys": []any{"order.created", "cc.audit"}, "original-expiration": "60000"},
				},
				"x-first-death-queue": "orders", "x-first-death-reason": "rejected", "x-first-death-exchange": "shop",
				"x-redrive-replay-count": int32(2),
			},
			&DeadLetter{
				Reason: "rejected", Count: 1, LastQueue: "orders.retry", FirstReason: "rejected",
				OriginalQueue: "orders", OriginalExchange: "shop", OriginalRoutingKeys: []string{"order.created", "cc.audit"},
				FirstDeathAt: &t0, ReplayCount: 2,
				Deaths: []Death{
					{Queue: "orders.retry", Reason: "rejected", Count: 1, Time: &t1, Exchange: "", RoutingKeys: []string{"orders.retry"}},
					{Queue: "orders", Reason: "rejected", Count: 3, Time: &t0, Exchange: "shop", RoutingKeys: []string{"order.created", "cc.audit"}, OriginalExpiration: "60000"},
				},
			},
		},
		{
			"XDeathWithoutFirstDeathHeaders",
			amqp.Table{"x-death": []any{
				map[string]any{"count": int32(2), "reason": "expired", "queue": "b", "exchange": "", "routing-keys": []any{[]byte("b")}},
				map[string]any{"count": int32(1), "reason": "maxlen", "queue": "a", "exchange": "ex", "routing-keys": []any{"k"}},
			}},
			&DeadLetter{
				Reason: "expired", Count: 2, LastQueue: "b", FirstReason: "maxlen",
				OriginalQueue: "a", OriginalExchange: "ex", OriginalRoutingKeys: []string{"k"},
				Deaths: []Death{
					{Queue: "b", Reason: "expired", Count: 2, RoutingKeys: []string{"b"}},
					{Queue: "a", Reason: "maxlen", Count: 1, Exchange: "ex", RoutingKeys: []string{"k"}},
				},
			},
		},
		{
			"SpringRepublished",
			amqp.Table{
				"x-exception-message": "Listener threw exception", "x-exception-stacktrace": []byte("java.lang.IllegalStateException: boom\n\tat ..."),
				"x-original-exchange": "shop", "x-original-routingKey": "order.created", "retry-count": "4",
			},
			&DeadLetter{
				Count: 4, OriginalExchange: "shop", OriginalRoutingKeys: []string{"order.created"},
				ExceptionMessage: "Listener threw exception", Stacktrace: "java.lang.IllegalStateException: boom\n\tat ...",
			},
		},
		{
			"SpringOverridesBroker",
			amqp.Table{
				"x-death":             []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "q", "exchange": "dlx", "routing-keys": []any{"q"}}},
				"x-original-exchange": "shop", "x-original-routingKey": "order.paid",
			},
			&DeadLetter{
				Reason: "rejected", Count: 1, LastQueue: "q", FirstReason: "rejected", OriginalQueue: "q",
				OriginalExchange: "shop", OriginalRoutingKeys: []string{"order.paid"},
				Deaths: []Death{{Queue: "q", Reason: "rejected", Count: 1, Exchange: "dlx", RoutingKeys: []string{"q"}}},
			},
		},
		{
			"LastDeathHeadersOnly",
			// RabbitMQ 3.13+ also writes x-last-death-*; a message may carry them without x-death.
			amqp.Table{"x-last-death-queue": "q2", "x-last-death-reason": "delivery_limit", "x-last-death-exchange": "e",
				"x-first-death-queue": "q1", "x-first-death-reason": "expired", "x-first-death-exchange": "e0"},
			&DeadLetter{Reason: "delivery_limit", LastQueue: "q2", FirstReason: "expired", OriginalQueue: "q1", OriginalExchange: "e0"},
		},
		{
			"Malformed",
			amqp.Table{"x-death": "not an array", "x-first-death-queue": int64(7), "x-redrive-replay-count": "many"},
			&DeadLetter{OriginalQueue: "7", LastQueue: "7"},
		},
		{
			"MalformedEntries",
			amqp.Table{"x-death": []any{nil, "x", amqp.Table{"count": "3", "time": int64(1772359200), "routing-keys": "k"}}},
			&DeadLetter{Count: 3, FirstDeathAt: ts("2026-03-01T10:00:00Z"),
				Deaths: []Death{{Count: 3, Time: ts("2026-03-01T10:00:00Z")}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DecodeDeadLetter(tc.headers)
			if !reflect.DeepEqual(got, tc.want) {
				gj, _ := json.MarshalIndent(got, "", " ")
				wj, _ := json.MarshalIndent(tc.want, "", " ")
				t.Fatalf("got\n%s\nwant\n%s", gj, wj)
			}
		})
	}
}

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

// FuzzDecodeDeadLetter builds tables of every AMQP field type, nested, under the header names the
// decoder reads: decoding must not panic and the result must encode as JSON.
func FuzzDecodeDeadLetter(f *testing.F) {
	f.Add([]byte("x-death\x00queue\x00count"), int64(3), "rejected", []byte{0xff, 1}, uint8(0))
	f.Add([]byte("x-first-death-queue"), int64(-1), "", []byte(nil), uint8(7))
	f.Add([]byte("time\x00routing-keys"), int64(1<<62), "\xff", []byte("k"), uint8(200))
	names := []string{
		HeaderXDeath, HeaderFirstDeathQueue, HeaderFirstDeathReason, HeaderFirstDeathExchange, HeaderLastDeathQueue,
		HeaderLastDeathReason, HeaderExceptionMessage, HeaderExceptionStacktrace, HeaderOriginalExchange,
		HeaderOriginalRoutingKey, HeaderRetryCount, HeaderReplayCount, "queue", "reason", "count", "time", "exchange",
		"routing-keys", "original-expiration",
	}
	f.Fuzz(func(t *testing.T, shape []byte, n int64, s string, raw []byte, seed uint8) {
		// shape drives a tiny generator: each byte picks a name and a value type.
		var gen func(depth int) any
		i := 0
		next := func() byte {
			if len(shape) == 0 {
				return seed
			}
			b := shape[i%len(shape)] + seed
			i++
			return b
		}
		gen = func(depth int) any {
			switch k := next() % 14; {
			case k == 0:
				return s
			case k == 1:
				return raw
			case k == 2:
				return n
			case k == 3:
				return int32(n)
			case k == 4:
				return float64(n) / 3
			case k == 5:
				return time.Unix(n, 0)
			case k == 6:
				return amqp.Decimal{Scale: seed, Value: int32(n)}
			case k == 7:
				return nil
			case k == 8:
				return n%2 == 0
			case k == 9 && depth < 4:
				arr := []any{}
				for j := 0; j < int(next()%4); j++ {
					arr = append(arr, gen(depth+1))
				}
				return arr
			case k == 10 && depth < 4:
				tb := amqp.Table{}
				for j := 0; j < int(next()%5); j++ {
					tb[names[int(next())%len(names)]] = gen(depth + 1)
				}
				return tb
			case k == 11:
				return uint8(n)
			case k == 12:
				return []any{amqp.Table{"queue": s, "reason": s, "count": n, "time": time.Unix(n, 0), "routing-keys": []any{s, raw}}}
			default:
				return float32(n)
			}
		}
		headers := amqp.Table{}
		for j := 0; j < 1+len(shape)%6; j++ {
			headers[names[int(next())%len(names)]] = gen(0)
		}
		dl := DecodeDeadLetter(headers)
		for _, h := range headersOf(headers) {
			if !utf8.ValidString(h.Value) {
				t.Fatalf("rendered header %s is not UTF-8: %q", h.Key, h.Value)
			}
		}
		if dl == nil {
			return
		}
		for _, v := range append([]string{dl.Reason, dl.OriginalQueue, dl.OriginalExchange, dl.ExceptionMessage, dl.Stacktrace},
			dl.OriginalRoutingKeys...) {
			if !utf8.ValidString(v) {
				t.Fatalf("invalid UTF-8 %q", v)
			}
		}
		if _, err := json.Marshal(dl); err != nil {
			t.Fatalf("dead letter does not encode: %v", err)
		}
		if dl.FirstDeathAt != nil && strings.Contains(dl.FirstDeathAt.Format(time.RFC3339), "-0") && dl.FirstDeathAt.Year() < 1 {
			t.Fatalf("first death before year 1: %v", dl.FirstDeathAt)
		}
	})
}

func TestRenderValue(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{"plain \"text\"", `plain "text"`},
		{[]byte("bytes"), "bytes"},
		{[]byte{0xff, 0x00}, "0xff00"},
		{int32(-5), "-5"},
		{float64(1.5), "1.5"},
		// Every integer and float type, at its edges, as strconv writes it.
		{int(-1 << 40), "-1099511627776"}, {int8(-128), "-128"}, {int16(32767), "32767"}, {int64(-1 << 63), "-9223372036854775808"},
		{uint8(255), "255"}, {uint16(65535), "65535"}, {uint32(1<<32 - 1), "4294967295"}, {uint64(1<<64 - 1), "18446744073709551615"},
		{float32(0.1), "0.1"}, {float64(0.1), "0.1"}, {float64(1e8), "1e+08"}, {float32(-3.4e38), "-3.4e+38"},
		{true, "true"},
		{false, "false"},
		{nil, "null"},
		{amqp.Decimal{Scale: 2, Value: 12345}, "123.45"},
		{amqp.Decimal{Scale: 3, Value: -5}, "-0.005"},
		{*ts("2026-03-01T10:00:00Z"), `"2026-03-01T10:00:00Z"`},
		{[]any{"a", int64(1), []byte{0xff}}, `["a",1,"0xff"]`},
		{amqp.Table{"b": amqp.Table{"x": "<y>\n"}, "a": []any{}}, `{"a":[],"b":{"x":"<y>\n"}}`},
	} {
		if got := renderValue(tc.in); got != tc.want {
			t.Errorf("renderValue(%#v) = %s, want %s", tc.in, got, tc.want)
		}
	}
	// A table that contains itself must not recurse forever.
	self := amqp.Table{}
	self["me"] = self
	if got := renderValue(self); !strings.Contains(got, "…") {
		t.Errorf("self-referencing table rendered as %s", got)
	}
}

func TestMessageID(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prop    string
		headers amqp.Table
		body    string
		want    string
	}{
		{"Property", "p", amqp.Table{"messageId": "h"}, `{"id":"j"}`, "p"},
		{"Header", "", amqp.Table{"eventId": []byte("h2"), "messageId": "h1"}, `{"id":"j"}`, "h1"},
		{"HeaderCaseInsensitive", "", amqp.Table{"MESSAGEID": "h"}, ``, "h"},
		{"HeaderInt", "", amqp.Table{"eventId": int64(42)}, ``, "42"},
		{"JSONPath", "", nil, `{"meta":{"id":"nested"},"id":"top"}`, "nested"},
		{"JSONPathNumber", "", nil, `{"id":12345678901234567890}`, "12345678901234567890"},
		{"NotJSON", "", nil, `id=1`, ""},
		{"EmptyHeaderFallsThrough", "", amqp.Table{"messageId": ""}, `{"id":"j"}`, "j"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := messageID(tc.prop, tc.headers, []byte(tc.body), testIDs); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// valueInt reads every integer type the AMQP library decodes, whole floats and decimal text, and
// refuses what is not a whole number that fits.
func TestValueInt(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want int64
		ok   bool
	}{
		{int(-7), -7, true}, {int8(-128), -128, true}, {int16(300), 300, true}, {int32(-5), -5, true}, {int64(1 << 62), 1 << 62, true},
		{uint8(255), 255, true}, {uint16(65535), 65535, true}, {uint32(1<<32 - 1), 1<<32 - 1, true}, {uint64(1 << 62), 1 << 62, true},
		{uint64(1<<62 + 1), 0, false}, {float64(3), 3, true}, {float32(2.5), 0, false}, {" 12 ", 12, true}, {[]byte("-4"), -4, true},
		{"x", 0, false}, {true, 0, false}, {nil, 0, false},
	} {
		if got, ok := valueInt(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("valueInt(%#v) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
