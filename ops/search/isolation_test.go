package search

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
)

// A scan (and so a filter's search, an export and a trace, which read through it) sees what a
// read_committed consumer sees: of the DLT — 6 committed and 6 aborted transactional
// records, 24 offsets — it reads and matches the 6 committed, both ways, and an open
// transaction's record is not read until it ends.
func TestScanReadsCommittedOnly(t *testing.T) {
	broker := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders.DLT"))
	c, err := kafka.New(configs.KafkaCluster{Name: "t", Brokers: broker.ListenAddrs(), RequestTimeout: configs.Duration(10 * time.Second)},
		configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for i := range 12 {
		commit := i%2 == 0
		v := fmt.Sprintf("a-%d", i)
		if commit {
			v = fmt.Sprintf("c-%d", i)
		}
		kfaketest.Transaction(t, broker, "listener-tx", commit, &kgo.Record{Topic: "orders.DLT", Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.StockException")}}})
	}
	ctx := context.Background()
	want := []string{"c-0", "c-2", "c-4", "c-6", "c-8", "c-10"}
	for _, order := range []string{"oldest", "newest"} {
		for expr, n := range map[string]int{"true": 6, `dead_letter.exception_type == "com.acme.StockException"`: 6, `value.startsWith("a-")`: 0} {
			res, err := ScanKafka(ctx, c, Query{Topic: "orders.DLT", Filter: mustCompile(t, Kafka, expr), Order: order})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range res.Matches {
				got = append(got, string(r.Value))
			}
			if order == "newest" {
				slices.Reverse(got)
			}
			if res.Scanned != 6 || len(got) != n || (n == 6 && !slices.Equal(got, want)) || !res.Exhausted {
				t.Errorf("%s %s: scanned %d, matched %v (exhausted %v); want 6 scanned, %d matched", order, expr, res.Scanned, got, res.Exhausted, n)
			}
		}
	}
	end := kfaketest.OpenTransaction(t, broker, "still-open", &kgo.Record{Topic: "orders.DLT", Value: []byte("o-24")})
	res, err := ScanKafka(ctx, c, Query{Topic: "orders.DLT", Order: "oldest"})
	if err != nil || res.Scanned != 6 || res.Partitions[0].Stable != 24 || res.Partitions[0].End != 25 {
		t.Errorf("with a transaction open: scanned %d, partitions %+v, %v; want 6, stable 24 of 25", res.Scanned, res.Partitions, err)
	}
	end(true)
	if res, err := ScanKafka(ctx, c, Query{Topic: "orders.DLT", Order: "oldest"}); err != nil || res.Scanned != 7 {
		t.Errorf("once it committed: scanned %d, %v; want 7", res.Scanned, err)
	}
}
