package search

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
)

// pathExprs read parts of the value by constant keys (decoded down those paths only) or as a
// whole (decoded whole), and mix both.
var pathExprs = []string{
	`value.orderId == 999999`,
	`value.orderId > 1`,
	`value.orderId == 1.5`,
	`value.a == 2`,
	`value.a == null`,
	`value.a`,
	`value.order.id == 7`,
	`value["order"]["id"] == 7`,
	`value.order.lines.size() == 2`,
	`value.order.lines.exists(l, l == 2)`,
	`has(value.order)`,
	`has(value.order.id)`,
	`value.order.id.deep[0].x == 1`,
	`value.name == "café"`,
	`value.name == "\uFFFD"`,
	`value.name.startsWith("a")`,
	`value["na\"me"] == 1`,
	`value.orderId == 999999 || value.a == 2`,
	`value == "text"`,
	`size(value) == 2`,
	`value.order == {"id": 7, "lines": [1, 2]}`,
	`"a" in value`,
	`key == "k" && value.orderId == 999999`,
}

// pathDocs are values of every shape: JSON objects (with repeated keys, escapes, invalid UTF-8,
// numbers of each kind), other JSON, text, and JSON that encoding/json does not accept.
var pathDocs = []string{
	`{"orderId":999999,"tenant":3}`, `{"orderId":1.5}`, `{"orderId":"999999"}`, `{"orderId":1e3}`, `{"orderId":-0}`,
	`{"orderId":123456789012345678901234}`, `{"a":1,"a":2}`, `{"a":2,"a":1}`, `{"a":null}`, `{"a":true}`, `{"a":"x"}`,
	`{"order":{"id":7,"lines":[1,2]}}`, `{"order":"x"}`, `{"order":{"id":{"deep":[{"x":1}]}}}`, `{"order":[{"id":7}]}`,
	`{"n\u0061me":"esc"}`, `{"name":"caf\u00e9"}`, "{\"name\":\"caf\xc3\xa9\"}", "{\"name\":\"\xff\"}", `{"name":"a\"b"}`,
	`{"na\"me":1}`, `{"name":"\ud800"}`, `{"name":"tab\there"}`, "{\"n\xffame\":1}",
	`[1,2]`, `"text"`, `42`, `text`, `{"a":1}]`, `{"a":1} trailing`, ``, "  {\"a\" :\n { \"b\" : 2 } , \"orderId\" : 999999 }  ",
	`{}`, `{"a":{}}`, `{"order":{"id":7},"order":{"lines":[1,2]}}`, `{"orderId":999999,"orderId":{"x":1}}`,
	strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001), // deeper than encoding/json decodes: text
	`{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `,"orderId":999999}`,
}

// evalBoth evaluates f over value v reading only its paths, and over the whole decode.
func evalBoth(t testing.TB, f *Filter, v []byte) (partial, whole string) {
	t.Helper()
	result := func(paths *pathTree) string {
		r := kafka.Record{Key: []byte("k"), Value: v}
		m, evalErr, err := f.eval(context.Background(), &kafkaVars{plain: &r, seen: &r, paths: paths})
		if err != nil {
			t.Fatalf("%s over %q: %v", f.Text(), v, err)
		}
		return fmt.Sprintf("match=%v error=%v", m, evalErr)
	}
	return result(f.paths), result(nil)
}

// TestDocumentPaths proves that decoding a value only down the paths an expression reads gives
// the same result, error included, as decoding it whole, for every shape of value.
func TestDocumentPaths(t *testing.T) {
	for _, expr := range pathExprs {
		f := mustCompile(t, Kafka, expr)
		for _, doc := range pathDocs {
			if p, w := evalBoth(t, f, []byte(doc)); p != w {
				t.Errorf("%s over %.60q: reading its paths gives %s, the whole document %s", expr, doc, p, w)
			}
		}
	}
	t.Run("WhichPaths", func(t *testing.T) {
		for expr, want := range map[string]string{
			`value.orderId == 1`:                           "{orderId}",
			`value.order.id == 7 && value["order"].x`:      "{order{id x}}",
			`value.order.id == 7 && size(value.order) > 1`: "{order*}",
			`value.items.exists(i, i.sku == "x")`:          "{items}",
			`value == "x"`:                                 "whole",
			`"a" in value`:                                 "whole",
			`value.items.exists(value, value == 1)`:        "whole", // a loop variable hides it
			`key == "x"`:                                   "whole", // not read at all
		} {
			if got := mustCompile(t, Kafka, expr).paths.String(); got != want {
				t.Errorf("%s: paths %s, want %s", expr, got, want)
			}
		}
	})
	t.Run("Rabbit", func(t *testing.T) {
		f := mustCompile(t, RabbitMQ, `body.order.id == 7`)
		if f.paths.String() != "{order{id}}" {
			t.Fatalf("paths %s", f.paths)
		}
	})
}

// FuzzDocumentPaths: any value, the same answer read by paths as decoded whole.
func FuzzDocumentPaths(f *testing.F) {
	for _, d := range pathDocs {
		f.Add([]byte(d))
	}
	filters := make([]*Filter, len(pathExprs))
	for i, e := range pathExprs {
		filters[i] = mustCompile(f, Kafka, e)
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		for _, fl := range filters {
			if p, w := evalBoth(t, fl, v); p != w {
				t.Fatalf("%s over %q: reading its paths gives %s, the whole document %s", fl.Text(), v, p, w)
			}
		}
	})
}

// TestBoundedFilters: a filter whose cost cannot depend on the message runs without cost
// tracking; one whose cost grows with the message keeps it, and still stops at the limit.
func TestBoundedFilters(t *testing.T) {
	for expr, bounded := range map[string]bool{
		`key == "order-123"`:      true,
		`value.orderId == 999999`: true,
		`headers["tenant"] == "3" && dead_letter.exception_type.endsWith("TimeoutException")`: true,
		`key.contains("x")`:        false, // grows with the key
		`value.a == value.b`:       false, // two lists of any size
		`[1, 2].exists(x, x == 1)`: false, // loops are interrupted by ctx
	} {
		if got := mustCompile(t, Kafka, expr).bounded != nil; got != bounded {
			t.Errorf("%s: bounded %v, want %v", expr, got, bounded)
		}
	}
	// Four searches of a 100-character needle in a 256 KiB value: about 1.05 million units, and
	// no loop for ctx to interrupt.
	needle := strings.Repeat("n", 100)
	expr := strings.Repeat(fmt.Sprintf(`value.contains(%q) || `, needle), 3) + fmt.Sprintf(`value.contains(%q)`, needle)
	f := mustCompile(t, Kafka, expr)
	_, err := f.MatchKafka(context.Background(), kafka.Record{Value: []byte(strings.Repeat("x", kafka.MaxValueBytes))})
	if !errors.Is(err, ErrCostLimit) || !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("err = %v, want the cost limit", err)
	}
}

// nativeMaps resolves headers and dead_letter as the plain maps their lazyMaps stand for.
type nativeMaps struct{ *kafkaVars }

func (n nativeMaps) ResolveName(name string) (any, bool) {
	switch name {
	case "headers":
		return headerSource(n.plain.Headers).whole(), true
	case "dead_letter":
		return deadLetterSource{n.plain.DeadLetter}.whole(), true
	}
	return n.kafkaVars.ResolveName(name)
}

// TestLazyMaps proves that headers and dead_letter read in place answer every use of a map as
// the map itself does: lookups (the last value of a repeated header), presence, size, iteration,
// equality both ways, a missing key's error.
func TestLazyMaps(t *testing.T) {
	part, off, retries := int32(3), int64(17), 2
	records := []kafka.Record{
		{Key: []byte("tenant")},
		{Key: []byte("tenant"), Headers: []kafka.Header{{Key: "tenant", Value: []byte("6")}, {Key: "tenant", Value: []byte("7")}},
			DeadLetter: &kafka.DeadLetter{OriginalTopic: "orders", ExceptionType: "x.TimeoutException", Convention: "spring"}},
		{Key: []byte("tenant"), Headers: []kafka.Header{{Key: "tenant", Value: []byte("7")}, {Key: "Tenant", Value: []byte("8")},
			{Key: "bin", Value: []byte{0xff, 0}}},
			DeadLetter: &kafka.DeadLetter{OriginalPartition: &part, OriginalOffset: &off, RetryCount: &retries, MessageID: "m-1"}},
	}
	for _, expr := range []string{
		`headers["tenant"] == "7"`, `headers.tenant == "7"`, `"tenant" in headers`, `has(headers.tenant)`, `size(headers) == 2`,
		`headers == {"tenant": "7"}`, `{"tenant": "7"} == headers`, `headers.exists(k, k == "Tenant")`, `headers.all(k, headers[k] != "")`,
		`headers["missing"] == "x"`, `headers["bin"] == "/wA="`, `headers.map(k, headers[k]).size() > 0`, `dyn(headers).x == "y"`,
		`dyn(headers)[1] == "y"`, `headers[key] == "7"`, `type(headers) == map`,
		`dead_letter.original_topic == "orders" && dead_letter.exception_type.endsWith("TimeoutException")`,
		`dead_letter.original_partition == 3 && dead_letter.original_offset == 17 && dead_letter.retry_count == 2`,
		`dead_letter.original_partition == -1 && dead_letter.retry_count == 0`, `dead_letter.message_id == "m-1"`,
		`dead_letter.convention == "spring" && dead_letter.consumer_group == "" && dead_letter.trace_id == ""`,
		`dead_letter.stacktrace == "" && dead_letter.first_failed_at == "" && dead_letter.exception_cause == ""`,
		`dead_letter.nosuch == 1`, `size(dead_letter) == 13`, `dead_letter.exists(k, k == "convention")`,
		`"stacktrace" in dead_letter`, `dead_letter == {"original_topic": "orders"}`, `has(dead_letter.exception_message)`,
		`dead_letter[key] == ""`,
	} {
		f, err := Compile(Kafka, expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		for _, r := range records {
			m1, e1, err1 := f.eval(context.Background(), &kafkaVars{plain: &r, seen: &r})
			m2, e2, err2 := f.eval(context.Background(), nativeMaps{&kafkaVars{plain: &r, seen: &r}})
			if got, want := fmt.Sprint(m1, e1, err1), fmt.Sprint(m2, e2, err2); got != want {
				t.Errorf("%s over %v %+v: in place %s, as a map %s", expr, r.Headers, r.DeadLetter, got, want)
			}
		}
	}
}
