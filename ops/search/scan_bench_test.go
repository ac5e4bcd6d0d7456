package search

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kafka"
)

// benchFilters are the three filters of docs/benchmarks.md's scans against kcat.
var benchFilters = map[string]string{
	"key":    `key == "order-123"`,
	"header": `headers["tenant"] == "3" && dead_letter.exception_type.endsWith("TimeoutException")`,
	"value":  `value.orderId == 999999`,
}

// produceDLT writes n records to partition 0 of w's "dlt": key order-<i>, a JSON value, a tenant
// header and two Spring dead-letter headers (TestScanVsKcat's records).
func produceDLT(tb testing.TB, w *kafkaWorld, n int) {
	tb.Helper()
	ctx := context.Background()
	for i := range n {
		r := &kgo.Record{Topic: "dlt", Partition: 0, Key: fmt.Appendf(nil, "order-%d", i),
			Value: fmt.Appendf(nil, `{"orderId":%d,"tenant":%d,"status":"FAILED","note":"payment gateway timed out"}`, i, i%7),
			Headers: []kgo.RecordHeader{{Key: "tenant", Value: fmt.Appendf(nil, "%d", i%7)},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("java.util.concurrent.TimeoutException")},
				{Key: "kafka_dlt-original-topic", Value: []byte("orders")}}}
		w.prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				tb.Error(err)
			}
		})
	}
	if err := w.prod.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkScanFilters scans one partition of REDRIVE_SCAN_RECORDS (default 200,000) records with
// each filter, for profiling (-cpuprofile): go test ./ops/search -run '^$' -bench ScanFilters/header
// -benchtime 3x -cpuprofile /tmp/scan.prof.
func BenchmarkScanFilters(b *testing.B) {
	n := 200_000
	if v, err := strconv.Atoi(os.Getenv("REDRIVE_SCAN_RECORDS")); err == nil {
		n = v
	}
	w := newKafkaWorld(b, 1)
	produceDLT(b, w, n)
	p := int32(0)
	for _, name := range []string{"key", "header", "value"} {
		b.Run(name, func(b *testing.B) {
			f := mustCompile(b, Kafka, benchFilters[name])
			c0 := processCPU()
			for b.Loop() {
				res, err := ScanKafka(context.Background(), w.c, Query{Topic: "dlt", Partition: &p, Order: "oldest", Filter: f,
					Each: func(kafka.Record) error { return nil }})
				if err != nil || res.Scanned != int64(n) {
					b.Fatalf("scanned %d: %v", res.Scanned, err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rec/s")
			b.ReportMetric(float64((processCPU()-c0).Nanoseconds())/float64(n)/float64(b.N), "cpu-ns/rec")
		})
	}
}
