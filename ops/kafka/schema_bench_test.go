package kafka

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
)

// BenchmarkRecordsAvroPage reads a page of 500 Schema Registry Avro records (acme.Order: a
// reference, an enum, unions, decimal and timestamps, an array of records) decoded to JSON, and
// the same page from a cluster configured without a registry ("raw"). Schemas are cached after
// the first page. Reproduce with:
//
//	go test ./ops/kafka/ -run '^$' -bench 'RecordsAvroPage|AvroDecode500' -benchtime 100x -benchmem
func BenchmarkRecordsAvroPage(b *testing.B) {
	f, reg := registryFake(b)
	id := registerOrder(b, reg)
	f.topic(b, "orders.DLT", 1)
	const n = 500
	recs := make([]*kgo.Record, 0, n)
	for i := range n {
		note := "gift"
		o := hOrder{MessageID: fmt.Sprintf("7d3c3a2e-5b1f-4c53-9a43-%012d", i), Status: "FAILED", Note: &note,
			Total:    hMoney{Amount: big.NewRat(int64(1000+i), 100), Currency: "EUR"},
			PlacedAt: time.UnixMilli(1_770_000_000_000 + int64(i)).UTC(), Day: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
			Card: hCard{Number: "4111111111111111"}, Lines: []hLine{{"A-1", 2}, {"B-7", 1}, {"C-3", 5}}}
		recs = append(recs, &kgo.Record{Topic: "orders.DLT", Value: frame(id, nil, hambaEncode(b, o, moneyAvro, orderAvro)),
			Headers: dltHeaders()})
	}
	f.produce(b, recs...)
	raw, err := New(configs.KafkaCluster{Name: "raw", Brokers: f.broker.ListenAddrs(), RequestTimeout: configs.Duration(10 * time.Second)},
		configs.MessageIDRules{JSONPaths: []string{"messageId"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(raw.Close)
	ctx := context.Background()
	q := RecordQuery{Topic: "orders.DLT", Limit: n}
	page := func(b *testing.B, c *Cluster, decoded bool) {
		p, err := c.Records(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Records) != n || (p.Records[0].ValueSchema != nil) != decoded {
			b.Fatalf("got %d records, schema %+v", len(p.Records), p.Records[0].ValueSchema)
		}
		if decoded && (p.Records[0].ValueSchema.JSON == nil || !strings.HasPrefix(p.Records[n-1].DeadLetter.MessageID, "7d3c3a2e-")) {
			b.Fatalf("not decoded, or no message id from it: %+v %+v", p.Records[n-1].ValueSchema, p.Records[n-1].DeadLetter)
		}
	}
	for _, bc := range []struct {
		name    string
		c       *Cluster
		decoded bool
	}{{"raw", raw, false}, {"avro", f.c, true}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				page(b, bc.c, bc.decoded)
			}
		})
	}
	// The two pages in turns, four of each, so that both meet the same load (this machine is
	// shared; run alone, raw and avro can be seconds apart), and in fours so that the collector,
	// which runs about every other page here, does not fall in step with one of them: the median
	// wall time of each and their ratio, and the ratio of the process's CPU time over all the
	// pages of each (every goroutine: the broker, the client, the GC; summed, since the kernel
	// counts it in ticks).
	b.Run("interleaved", func(b *testing.B) {
		var wall [2][]float64
		var cpu [2]time.Duration
		for b.Loop() {
			for i, c := range []*Cluster{raw, f.c} {
				for range 4 {
					w0, c0 := time.Now(), cpuTime(b)
					page(b, c, i == 1)
					wall[i] = append(wall[i], float64(time.Since(w0)))
					cpu[i] += cpuTime(b) - c0
				}
			}
		}
		b.ReportMetric(median(wall[0])/1e6, "raw-ms")
		b.ReportMetric(median(wall[1])/1e6, "avro-ms")
		b.ReportMetric(median(wall[1])/median(wall[0]), "x-raw")
		b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "x-raw-cpu")
	})
}

// cpuTime is the CPU time the process has used (user and system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// BenchmarkAvroDecode500 decodes the page's 500 values alone (no Kafka), schema cached.
func BenchmarkAvroDecode500(b *testing.B) {
	f, reg := registryFake(b)
	id := registerOrder(b, reg)
	note := "gift"
	o := hOrder{MessageID: "7d3c3a2e-5b1f-4c53-9a43-000000000001", Status: "FAILED", Note: &note,
		Total:    hMoney{Amount: big.NewRat(1000, 100), Currency: "EUR"},
		PlacedAt: time.UnixMilli(1_770_000_000_000).UTC(), Day: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		Card: hCard{Number: "4111111111111111"}, Lines: []hLine{{"A-1", 2}, {"B-7", 1}, {"C-3", 5}}}
	v := frame(id, nil, hambaEncode(b, o, moneyAvro, orderAvro))
	ctx := context.Background()
	for b.Loop() {
		for range 500 {
			d := f.c.schemas.Decode(ctx, "t", false, v)
			if d.JSON == nil {
				b.Fatal(d.Error)
			}
		}
	}
}
