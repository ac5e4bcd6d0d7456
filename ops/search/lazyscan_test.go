package search

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kafka"
)

// produceShapes writes 3,000 records of dead-letter header shapes to partition 0 of a new world's
// "dlt" (TestScanReadsDeadLetterFieldsAsDecoded's), and returns the world and the count.
func produceShapes(t *testing.T) (*kafkaWorld, int) {
	t.Helper()
	w := newKafkaWorld(t, 1)
	ctx := context.Background()
	h := func(kv ...string) []kgo.RecordHeader {
		var hs []kgo.RecordHeader
		for i := 0; i < len(kv); i += 2 {
			hs = append(hs, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return hs
	}
	shapes := [][]kgo.RecordHeader{
		nil,
		h("kafka_dlt-exception-fqcn", "a.TimeoutException", "tenant", "3"),
		h("x-exception-fqcn", "b.Other", "kafka_dlt-exception-fqcn", "a.TimeoutException"),
		h("kafka_dlt-exception-fqcn", "a.TimeoutException", "x-exception-fqcn", "b.Other"),
		h("KAFKA_DLT-EXCEPTION-FQCN", "c.TimeoutException", "Tenant", "3", "tenant", "4"),
		h("kafka_dlt-exception-fqcn", "first", "kafka_dlt-exception-fqcn", "d.TimeoutException", "tenant", "3", "tenant", "3"),
		h("kafka_dlt-exception-fqcn", "", "kafka_dlt-original-topic", "orders"),
		h("traceId", "t-1", "tenant", "3"),
		h("lastErrorType", "e.TimeoutException", "consumer", "billing", "originalTopic", "payments"),
		{{Key: "kafka_dlt-exception-fqcn", Value: []byte{0xff, 0xfe}}, {Key: "tenant", Value: []byte{0xff}}},
		h("kafka_exception-fqcn", "f.TimeoutException", "kafka_exception-message", "timed out", "kafka_exception-stacktrace", "at x"),
	}
	n := 0
	for i := range 3000 {
		r := &kgo.Record{Topic: "dlt", Partition: 0, Key: []byte("k"), Value: []byte(`{"n":1}`), Headers: shapes[i%len(shapes)]}
		if i%len(shapes) == 1 && i > 2000 {
			// More distinct values than the cache of texts keeps.
			r.Headers = h("kafka_dlt-exception-fqcn", "x"+string(rune('a'+i%26))+decimal(i)+"TimeoutException", "tenant", decimal(i))
		}
		w.prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
		n++
	}
	if err := w.prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return w, n
}

// TestScanReadsDeadLetterFieldsAsDecoded proves that a scan, which reads a dead-letter text field
// from its one header (kafka.Lazy.DeadLetterText) and header values through its cache of texts,
// judges every record as MatchKafka does over the record decoded whole: names of every
// convention and case, a better-ranked name after a worse one, repeated headers, empty and binary
// values, a record with only a trace id, and more distinct values than the cache keeps.
func TestScanReadsDeadLetterFieldsAsDecoded(t *testing.T) {
	w, n := produceShapes(t)
	ctx := context.Background()
	p := int32(0)
	for _, expr := range []string{
		`headers["tenant"] == "3" && dead_letter.exception_type.endsWith("TimeoutException")`,
		`dead_letter.exception_type == ""`, `dead_letter.exception_type == "//4="`, `headers["tenant"] == "/w=="`,
		`dead_letter.original_topic == "orders" || dead_letter.original_topic == "payments"`,
		`dead_letter.consumer_group == "billing"`, `dead_letter.exception_message == "timed out" && dead_letter.stacktrace == "at x"`,
		`dead_letter.trace_id == "t-1"`, `dead_letter.convention == "spring-dlt" && dead_letter.exception_cause == ""`,
		`headers.tenant.startsWith("2") && dead_letter.exception_type.startsWith("x")`,
		`size(dead_letter) == 13 && dead_letter.exception_type != ""`, `"tenant" in headers && has(dead_letter.exception_type)`,
	} {
		f := mustCompile(t, Kafka, expr)
		want := map[int64]bool{}
		sc := w.c.NewScanner("dlt")
		if _, err := sc.Forward(ctx, 0, 0, int64(n), func(r kafka.Record) bool {
			m, err := f.MatchKafka(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			if m {
				want[r.Offset] = true
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		sc.Close()
		got := map[int64]bool{}
		res, err := ScanKafka(ctx, w.c, Query{Topic: "dlt", Partition: &p, Order: "oldest", Filter: f, Each: func(r kafka.Record) error {
			got[r.Offset] = true
			if r.DeadLetter == nil && r.Headers != nil && len(r.Headers) > 0 && r.Headers[0].Key == "kafka_dlt-exception-fqcn" {
				t.Errorf("%s: match at %d handed on undecoded", expr, r.Offset)
			}
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Scanned != int64(n) || len(got) != len(want) {
			t.Errorf("%s: scanned %d, matched %d; MatchKafka matched %d", expr, res.Scanned, len(got), len(want))
		}
		for off := range want {
			if !got[off] {
				t.Errorf("%s: the scan missed offset %d", expr, off)
				break
			}
		}
	}
}

func decimal(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		if i /= 10; i == 0 {
			return string(b)
		}
	}
}

// TestScreensDecideAsCEL proves that a scan screening records on its filter's conjuncts (the key,
// a header, a dead-letter text field against a constant) finds what the same scan without
// screens finds: the same matches, the same evaluation errors and first error, on the same shapes
// of records, with conjuncts that are true, false, missing, not UTF-8, in either order and beside
// an error.
func TestScreensDecideAsCEL(t *testing.T) {
	w, n := produceShapes(t)
	ctx := context.Background()
	p := int32(0)
	for _, expr := range []string{
		`headers["tenant"] == "3" && dead_letter.exception_type.endsWith("TimeoutException")`,
		`key == "k"`, `key == "nope"`, `"k" != key`, `key.startsWith("k") && headers.tenant == "3"`,
		`headers["missing"] == "x" && key == "nope"`, `headers["missing"] == "x" && key == "k"`,
		`key == "k" && headers["missing"] == "x"`, `headers.tenant != "3" && dead_letter.exception_type.contains("Timeout")`,
		`headers["tenant"] == "/w==" || key == "nope"`, `headers["tenant"] == "/w==" && key == "k"`,
		`dead_letter.exception_type == "" && headers.tenant == "3"`, `dead_letter.exception_type == "//4=" && key == "k"`,
		`dead_letter.exception_type == "\uFFFD\uFFFD"`, `dead_letter.original_topic.startsWith("pay") && dead_letter.consumer_group == "billing"`,
		`dead_letter.exception_message == "timed out" && dead_letter.stacktrace.endsWith("x")`,
		`headers.Tenant == "3" && int(headers.tenant) > 2`, `int(headers.tenant) > 2 && headers.tenant == "3"`,
		`dead_letter.original_partition == "3" && key == "k"`, `dead_letter.trace_id == "" && headers.tenant == "4"`,
	} {
		f := mustCompile(t, Kafka, expr)
		scan := func() (Result, []int64) {
			var offs []int64
			res, err := ScanKafka(ctx, w.c, Query{Topic: "dlt", Partition: &p, Order: "oldest", Filter: f, Each: func(r kafka.Record) error {
				offs = append(offs, r.Offset)
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			return res, offs
		}
		if screens, _ := screensOf(f, false); len(screens) == 0 && !strings.Contains(expr, "||") {
			t.Errorf("%s: no screen", expr)
		}
		got, gotOffs := scan()
		t.Logf("%s: matched %d, eval errors %d", expr, got.Matched, got.EvalErrors)
		screening = false
		want, wantOffs := scan()
		screening = true
		if got.Scanned != int64(n) || got.Matched != want.Matched || got.EvalErrors != want.EvalErrors || got.EvalError != want.EvalError ||
			!slices.Equal(gotOffs, wantOffs) {
			t.Errorf("%s: screened matched %d (errors %d %q), unscreened %d (errors %d %q)", expr, got.Matched, got.EvalErrors,
				got.EvalError, want.Matched, want.EvalErrors, want.EvalError)
		}
	}
}

// TestScreensWhole checks which filters are nothing but their screens (a record on which every
// screen holds matches without CEL) and which leave CEL a part.
func TestScreensWhole(t *testing.T) {
	for expr, want := range map[string]bool{
		`key == "k"`: true, `headers["tenant"] == "3" && dead_letter.exception_type.endsWith("TimeoutException")`: true,
		`"3" == headers.tenant && (key.startsWith("o") && dead_letter.original_topic != "x")`: true,
		`key == "k" && value.n == 1`: false, `key == "k" || headers.tenant == "3"`: false, `has(headers.tenant) && key == "k"`: false,
		`dead_letter.original_partition == 3 && key == "k"`: false, `dyn(headers).tenant == "3" && key == "k"`: false,
	} {
		if _, whole := screensOf(mustCompile(t, Kafka, expr), false); whole != want {
			t.Errorf("%s: whole %v, want %v", expr, whole, want)
		}
	}
	if _, whole := screensOf(mustCompile(t, Kafka, `key == "k" && headers.tenant == "3"`), true); whole {
		t.Error("under a view a header screen is left to CEL: not whole")
	}
}
