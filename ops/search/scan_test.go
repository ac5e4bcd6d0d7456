package search

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
)

// kafkaWorld is a kfake broker with topic "dlt" of 3 partitions and a Redrive cluster on it.
type kafkaWorld struct {
	c    *kafka.Cluster
	prod *kgo.Client
}

func newKafkaWorld(tb testing.TB, partitions int32) *kafkaWorld {
	tb.Helper()
	broker := kfaketest.Cluster(tb, kfake.SeedTopics(partitions, "dlt"))
	c, err := kafka.New(configs.KafkaCluster{Name: "t", Brokers: broker.ListenAddrs(), RequestTimeout: configs.Duration(10 * time.Second)},
		configs.MessageIDRules{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	prod := kfaketest.Client(tb, broker, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(200_000))
	return &kafkaWorld{c: c, prod: prod}
}

// produce writes n records to each partition: key k-<p>-<i>, value {"n": i, "tenant": i%7}, a
// Spring exception header naming TimeoutException for every 10th record.
func (w *kafkaWorld) produce(tb testing.TB, partitions int32, n int) {
	tb.Helper()
	ctx := context.Background()
	for p := range partitions {
		for i := range n {
			r := &kgo.Record{Topic: "dlt", Partition: p, Key: fmt.Appendf(nil, "k-%d-%d", p, i),
				Value:   fmt.Appendf(nil, `{"n":%d,"tenant":%d}`, i, i%7),
				Headers: []kgo.RecordHeader{{Key: "tenant", Value: fmt.Appendf(nil, "%d", i%7)}}}
			if i%10 == 0 {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: "kafka_dlt-exception-fqcn", Value: []byte("java.util.concurrent.TimeoutException")},
					kgo.RecordHeader{Key: "kafka_dlt-original-topic", Value: []byte("orders")})
			}
			w.prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					tb.Error(err)
				}
			})
		}
	}
	if err := w.prod.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
}

func mustCompile(tb testing.TB, kind Kind, expr string) *Filter {
	tb.Helper()
	f, err := Compile(kind, expr)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

func TestScanKafka(t *testing.T) {
	w := newKafkaWorld(t, 3)
	w.produce(t, 3, 1000)
	ctx := context.Background()

	t.Run("Filters", func(t *testing.T) {
		for expr, want := range map[string]int64{
			`key == "k-1-77"`: 1,
			`value.n < 10`:    30,
			`headers["tenant"] == "3" && value.tenant == 3`:                      3 * 143,
			`dead_letter.exception_type.endsWith("TimeoutException")`:            300,
			`dead_letter.original_topic == "orders" && partition == 2`:           100,
			`dead_letter.exception_type == "" && offset >= 990 && offset < 1000`: 27,
		} {
			res, err := ScanKafka(ctx, w.c, Query{Topic: "dlt", Filter: mustCompile(t, Kafka, expr), Limit: 10_000})
			if err != nil {
				t.Fatal(err)
			}
			if res.Matched != want || int64(len(res.Matches)) != want || res.Scanned != 3000 || !res.Exhausted || res.Stopped != StoppedEnd {
				t.Errorf("%s: matched %d (%d), scanned %d, exhausted %v %s; want %d", expr, res.Matched, len(res.Matches), res.Scanned,
					res.Exhausted, res.Stopped, want)
			}
		}
	})

	for _, order := range []string{"oldest", "newest"} {
		t.Run("CursorAcrossPartitions/"+order, func(t *testing.T) {
			f := mustCompile(t, Kafka, `value.n % 3 == 0`)
			seen := map[string]bool{}
			var cursor map[int32]int64
			pages, scanned := 0, int64(0)
			for {
				res, err := ScanKafka(ctx, w.c, Query{Topic: "dlt", Filter: f, Order: order, Limit: 77, MaxScan: 500, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				pages++
				scanned += res.Scanned
				var last map[int32]int64 = map[int32]int64{}
				for _, r := range res.Matches {
					k := string(r.Key)
					if seen[k] {
						t.Fatalf("page %d: %s repeated", pages, k)
					}
					seen[k] = true
					if prev, ok := last[r.Partition]; ok && (order == "oldest") != (r.Offset > prev) {
						t.Fatalf("page %d: partition %d offsets out of %s order: %d after %d", pages, r.Partition, order, r.Offset, prev)
					}
					last[r.Partition] = r.Offset
				}
				if res.Exhausted {
					if res.Next != nil {
						t.Fatal("exhausted with a next cursor")
					}
					break
				}
				if res.Stopped != StoppedLimit && res.Stopped != StoppedMaxScan {
					t.Fatalf("stopped %q", res.Stopped)
				}
				cursor = res.Next
				if pages > 100 {
					t.Fatal("does not end")
				}
			}
			if len(seen) != 3*334 || scanned != 3000 {
				t.Fatalf("found %d matches in %d pages, scanned %d; want %d, 3000", len(seen), pages, scanned, 3*334)
			}
		})
	}

	t.Run("MaxScan", func(t *testing.T) {
		p := int32(1)
		res, err := ScanKafka(ctx, w.c, Query{Topic: "dlt", Filter: mustCompile(t, Kafka, `key == "none"`), Partition: &p, MaxScan: 250, Order: "oldest"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stopped != StoppedMaxScan || res.Scanned != 250 || res.Exhausted || res.Next[1] != 250 || len(res.Next) != 1 {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		res, err := ScanKafka(ctx, w.c, Query{Topic: "dlt", Filter: mustCompile(t, Kafka, `key == "none"`), Timeout: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stopped != StoppedTimeout || res.Exhausted || res.Scanned >= 3000 || res.Next == nil {
			t.Fatalf("stopped %q scanned %d", res.Stopped, res.Scanned)
		}
	})
	t.Run("Cancelled", func(t *testing.T) {
		// A bounded filter is not interrupted inside an evaluation: the scan notices ctx itself.
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		last := int64(0)
		res, err := ScanKafka(cctx, w.c, Query{Topic: "dlt", Filter: mustCompile(t, Kafka, `key == "none"`),
			Progress: func(scanned, _ int64) {
				if last = scanned; scanned >= 512 {
					cancel()
				}
			}})
		// The records fetched with the first ones are not all read: the scan stops at the check.
		if !errors.Is(err, context.Canceled) || res.Scanned != 0 || last != 512 {
			t.Fatalf("err = %v, last progress at %d, res %+v", err, last, res)
		}
	})
	t.Run("CostLimit", func(t *testing.T) {
		_, err := ScanKafka(ctx, w.c, Query{Topic: "dlt", Filter: mustCompile(t, Kafka, costly)})
		if err != ErrCostLimit {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("View", func(t *testing.T) {
		// The view masks the tenant header, the value and the exception type, as a redaction
		// rule would; the filter sees only the view, and a filter over the key views only its
		// matches.
		views := 0
		view := func(r kafka.Record) kafka.Record {
			views++
			hs := make([]kafka.Header, len(r.Headers))
			for i, h := range r.Headers {
				if hs[i] = h; h.Key == "tenant" {
					hs[i].Value = []byte("***")
				}
			}
			r.Headers, r.Value = hs, []byte(`{"n":"***"}`)
			r.Size = 42 // a masked record's size is what it shows (redact.Rules.Record)
			if r.DeadLetter != nil {
				dl := *r.DeadLetter
				dl.ExceptionType = "***"
				r.DeadLetter = &dl
			}
			return r
		}
		for _, tc := range []struct {
			expr           string
			matched, views int64
		}{
			{`headers["tenant"] == "3"`, 0, 3000},
			{`value.n == 5 || value.tenant == 3`, 0, 3000},
			{`dead_letter.exception_type.endsWith("TimeoutException")`, 0, 3000},
			{`headers["tenant"] == "***" && value.n == "***"`, 3000, 3000},
			{`dead_letter.exception_type == "***" && dead_letter.original_topic == "orders"`, 300, 3000},
			{`key == "k-1-77"`, 1, 1},
			{`offset < 10 && partition == 2`, 10, 10},
			// Masking reveals no length: size is the view's.
			{`size == 42`, 3000, 3000},
		} {
			views = 0
			var got []kafka.Record
			res, err := ScanKafka(ctx, w.c, Query{Topic: "dlt", Filter: mustCompile(t, Kafka, tc.expr), View: view,
				Each: func(r kafka.Record) error { got = append(got, r); return nil }})
			if err != nil {
				t.Fatal(err)
			}
			if res.Matched != tc.matched || int64(views) != tc.views || res.Scanned != 3000 {
				t.Errorf("%s: matched %d with %d views of %d records; want %d with %d", tc.expr, res.Matched, views, res.Scanned,
					tc.matched, tc.views)
			}
			for _, r := range got {
				if string(r.Value) != `{"n":"***"}` || string(r.Headers[0].Value) != "***" {
					t.Fatalf("%s: a match handed on unviewed: %s %s", tc.expr, r.Value, r.Headers[0].Value)
				}
				// What the view kept of the record is the match's own, intact after the scan.
				if string(r.Key) != fmt.Sprintf("k-%d-%d", r.Partition, r.Offset) ||
					(r.Offset%10 == 0 && string(r.Headers[2].Value) != "orders") {
					t.Fatalf("%s: record %d/%d changed after it was handed on: key %q headers %v", tc.expr, r.Partition, r.Offset, r.Key, r.Headers)
				}
			}
		}
	})
	for _, order := range []string{"oldest", "newest"} {
		t.Run("MatchesKeptAcrossTheScan/"+order, func(t *testing.T) {
			// The scanner lends a record's buffers to later fetches once it is handed on: what a
			// scan keeps must be its own copy, intact after every later record was read.
			res, err := ScanKafka(ctx, w.c, Query{Topic: "dlt", Order: order, Filter: mustCompile(t, Kafka, `offset % 2 == 0`)})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Matches) != 1500 {
				t.Fatalf("%d matches", len(res.Matches))
			}
			for _, r := range res.Matches {
				i := r.Offset
				if string(r.Key) != fmt.Sprintf("k-%d-%d", r.Partition, i) || string(r.Value) != fmt.Sprintf(`{"n":%d,"tenant":%d}`, i, i%7) ||
					r.Headers[0].Key != "tenant" || string(r.Headers[0].Value) != fmt.Sprint(i%7) {
					t.Fatalf("record %d/%d changed after it was handed on: key %q value %q headers %v", r.Partition, i, r.Key, r.Value, r.Headers)
				}
				if i%10 == 0 && (r.DeadLetter == nil || r.DeadLetter.OriginalTopic != "orders") {
					t.Fatalf("record %d/%d: dead letter %+v", r.Partition, i, r.DeadLetter)
				}
			}
		})
	}
	t.Run("Range", func(t *testing.T) {
		from, to := int64(100), int64(199)
		res, err := ScanKafka(ctx, w.c, Query{Topic: "dlt", FromOffset: &from, ToOffset: &to, Order: "oldest"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Scanned != 300 || res.Matched != 300 || res.Matches[0].Offset != 100 || res.Matches[99].Offset != 199 {
			t.Fatalf("scanned %d matched %d", res.Scanned, res.Matched)
		}
	})
}
