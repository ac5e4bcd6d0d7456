package search

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/kfaketest"
)

// An oldest-first scan whose range ends in offsets no committed record holds — an aborted
// transaction, a compaction gap — is read once it meets a record past its end: it ends exhausted,
// with no cursor to repeat (it said "timeout" and handed out the same cursor for ever), and the
// scanner says the range is read.
func TestScanEndsInOffsetsWithoutRecords(t *testing.T) {
	broker, c, prod, ctx := kfakeWorld(t, kfake.SeedTopics(1, "aborted"))
	produce := func(recs ...*kgo.Record) {
		t.Helper()
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// aborted: 0 and 1 aborted in one transaction, the marker at 2.
	kfaketest.Transaction(t, broker, "tx", false,
		&kgo.Record{Topic: "aborted", Value: []byte("a-0")}, &kgo.Record{Topic: "aborted", Value: []byte("a-1")})

	// compacted: keys a, b, b, b, c; compaction keeps 0 (a), 3 (b) and 4 (c), the last batch.
	adm := kadm.NewClient(prod)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": new("compact")}, "compacted"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for _, k := range []string{"a", "b", "b", "b"} {
		recs = append(recs, &kgo.Record{Topic: "compacted", Key: []byte(k), Value: []byte(k)})
	}
	produce(recs...)
	produce(&kgo.Record{Topic: "compacted", Key: []byte("c"), Value: []byte("c")})
	broker.Compact()
	var left []int64
	whole := c.NewScanner("compacted")
	_, err := whole.Forward(ctx, 0, 0, 5, func(r kafkamodel.Record) bool { left = append(left, r.Offset); return true })
	whole.Close()
	if err != nil || len(left) != 3 || left[1] != 3 {
		t.Fatalf("after compaction: offsets %v, %v; want [0 3 4]", left, err)
	}

	for _, tc := range []struct {
		topic    string
		from, to int64 // inclusive, as the query has them
		scanned  int64
	}{
		{"aborted", 0, 1, 0},   // ends before the marker
		{"aborted", 1, 1, 0},   // one aborted offset
		{"compacted", 0, 2, 1}, // record 0, then the gap
		{"compacted", 1, 2, 0}, // the gap alone
	} {
		start := time.Now()
		res, err := ScanKafka(ctx, c, Query{Topic: tc.topic, Order: "oldest", FromOffset: &tc.from, ToOffset: &tc.to, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("%s %d–%d: %v", tc.topic, tc.from, tc.to, err)
		}
		if !res.Exhausted || res.Stopped != StoppedEnd || res.Next != nil || res.Scanned != tc.scanned {
			t.Errorf("%s %d–%d: exhausted %v, stopped %q, next %v, scanned %d; want exhausted, %q, no cursor, %d scanned",
				tc.topic, tc.from, tc.to, res.Exhausted, res.Stopped, res.Next, res.Scanned, StoppedEnd, tc.scanned)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("%s %d–%d took %v", tc.topic, tc.from, tc.to, took)
		}
		sc := c.NewScanner(tc.topic)
		got, err := sc.ForwardLazy(ctx, 0, tc.from, tc.to+1, func(kafkamodel.LazyRecord) bool { return true })
		sc.Close()
		if err != nil || got != tc.to+1 {
			t.Errorf("%s: the scanner's read of %d–%d goes on at %d, %v; want %d (read)", tc.topic, tc.from, tc.to, got, err, tc.to+1)
		}
	}

	// A read going on from there reads on in the same session: the record past the end is next.
	produce(&kgo.Record{Topic: "aborted", Value: []byte("c-3")})
	sc := c.NewScanner("aborted")
	defer sc.Close()
	var seen []string
	keep := func(r kafkamodel.Record) bool { seen = append(seen, string(r.Value)); return true }
	first, err1 := sc.Forward(ctx, 0, 0, 2, keep)
	second, err2 := sc.Forward(ctx, 0, first, 4, keep)
	if err1 != nil || err2 != nil || first != 2 || second != 4 || len(seen) != 1 || seen[0] != "c-3" {
		t.Errorf("reads 0–1 then 2–3: at %d then %d (%v, %v), read %v; want 2, 4 and [c-3]", first, second, err1, err2, seen)
	}
}

// kfakeWorld is a kfake cluster with opts, the console's client of it, a producer that names
// partitions, and the test's context.
func kfakeWorld(t *testing.T, opts ...kfake.Opt) (*kfake.Cluster, *kafka.Cluster, *kgo.Client, context.Context) {
	t.Helper()
	broker := kfaketest.Cluster(t, opts...)
	c, err := kafka.New(configs.KafkaCluster{Name: "t", Brokers: broker.ListenAddrs(), RequestTimeout: configs.Duration(10 * time.Second)},
		configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return broker, c, kfaketest.Client(t, broker, kgo.RecordPartitioner(kgo.ManualPartitioner())), ctx
}
