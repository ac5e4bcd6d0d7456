package search

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/waittest"
)

// Partitions added while a scan goes on by its cursor are read: a partition its cursor did not
// name was taken for one read already, and the scan ended "exhausted" over the new partition's
// matches. A partition read to its end stays read.
func TestScanReadsPartitionsAddedSinceItsCursor(t *testing.T) {
	broker, c, prod, ctx := kfakeWorld(t, kfake.SeedTopics(2, "orders.DLT"))
	rec := func(p int32, v string) *kgo.Record {
		return &kgo.Record{Topic: "orders.DLT", Partition: p, Value: []byte(v)}
	}
	if err := prod.ProduceSync(ctx, rec(0, "p0-a"), rec(1, "p1-a"), rec(1, "p1-b")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	first, err := ScanKafka(ctx, c, Query{Topic: "orders.DLT", Order: "oldest", Limit: 2, Timeout: 5 * time.Second})
	if err != nil || first.Exhausted || len(first.Matches) != 2 || first.Next == nil {
		t.Fatalf("first page: %d matches, exhausted %v, next %v, %v; want 2 and a cursor", len(first.Matches), first.Exhausted, first.Next, err)
	}
	if _, err := kadm.NewClient(prod).CreatePartitions(ctx, 1, "orders.DLT"); err != nil {
		t.Fatal(err)
	}
	prod2 := kfaketest.Client(t, broker, kgo.RecordPartitioner(kgo.ManualPartitioner())) // sees the new partition
	if err := prod2.ProduceSync(ctx, rec(2, "p2-a")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The cluster's metadata is kept a few seconds (kgo's MetadataMinAge): the scan goes on once
	// it lists the new partition, as a person's next page would.
	waittest.Until(t, 15*time.Second, "the new partition listed", func() bool {
		parts, err := c.Partitions(ctx, "orders.DLT")
		return err == nil && len(parts) == 3
	})
	rest, err := ScanKafka(ctx, c, Query{Topic: "orders.DLT", Order: "oldest", Cursor: first.Next, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range append(first.Matches, rest.Matches...) {
		if seen[string(m.Value)] {
			t.Errorf("%s read twice", m.Value)
		}
		seen[string(m.Value)] = true
	}
	if !rest.Exhausted || len(seen) != 4 || !seen["p2-a"] {
		t.Fatalf("after the cursor: exhausted %v, read %v; want all four, p2-a of the new partition among them", rest.Exhausted, seen)
	}
}
