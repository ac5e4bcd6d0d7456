package sampler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/history"
)

// Reproduce with (PostgreSQL from `make test`, or any reachable one):
//
//	REDRIVE_TEST_PG_DSN=postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable \
//	  go test ./ops/sampler/ -run '^$' -bench . -benchtime=100x
//
// Both benchmarks see the same cluster: 200 consumer groups × 50 partitions (20 topics of 50
// partitions, each committed by 10 groups) on kfake in process. BenchmarkLatestKafka is what a page
// load costs: "miss" reads and decodes the stored snapshot (a replica's first read of each new
// sample), "revalidate" finds its expired copy still current (at most once a second per replica
// otherwise), "hit" is the in-memory copy; "select" and "decode" split "miss". BenchmarkGroupsFresh
// is the naive alternative: every page load asking the cluster itself — here an in-process broker
// on loopback, so a real cluster's round trips only make it slower.

const (
	benchGroups     = 200
	benchTopics     = 20
	benchPartitions = 50
)

// benchCluster fills a kfake cluster with benchGroups groups of benchPartitions partitions each.
func benchCluster(b testing.TB) *broker {
	br := newBroker(b)
	for i := range benchTopics {
		topic := fmt.Sprintf("topic-%02d", i)
		br.topic(b, topic, benchPartitions)
		parts := make([]int32, benchPartitions)
		for p := range parts {
			parts[p] = int32(p)
		}
		br.fill(b, topic, 20, parts...)
	}
	for g := range benchGroups {
		offsets := map[int32]int64{}
		for p := range benchPartitions {
			offsets[int32(p)] = int64((g + p) % 20)
		}
		br.commit(b, fmt.Sprintf("group-%03d", g), fmt.Sprintf("topic-%02d", g%benchTopics), offsets)
	}
	return br
}

func BenchmarkLatestKafka(b *testing.B) {
	ctx := context.Background()
	br := benchCluster(b)
	dsn := testDSN(b)
	clk := newClock()
	leader := newSampler(b, openStore(b, dsn), clk, nil, KafkaSource{Cluster: br.cluster(b, 10*time.Second)})
	for range 3 { // a window, so rates and statuses are filled in
		sampleAfter(b, ctx, leader, clk, 15*time.Second)
	}
	st := openStore(b, dsn)
	row, err := st.Snapshot(ctx, history.SnapshotKafka, "main")
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("stored snapshot: %d groups, %d bytes of JSON", benchGroups, len(row.Data))
	b.Run("select", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.Snapshot(ctx, history.SnapshotKafka, "main"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, _, _, err := decodeKafka(row.Data); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("miss", func(b *testing.B) {
		reader := newSampler(b, st, clk, func(o *Options) { o.CacheTTL = -1 }, KafkaSource{Cluster: br.cluster(b, 10*time.Second)})
		for b.Loop() {
			snap, err := reader.LatestKafka(ctx, "main")
			if err != nil || len(snap.Groups) != benchGroups || len(snap.Groups[0].Topics[0].Partitions) != benchPartitions {
				b.Fatalf("LatestKafka: %d groups, %v", len(snap.Groups), err)
			}
		}
	})
	for _, c := range []struct {
		name string
		ttl  time.Duration
	}{
		// revalidate: the cached copy has expired but is still the stored sample, so one small
		// row is read; hit: the cached copy is fresh.
		{"revalidate", time.Nanosecond},
		{"hit", time.Hour},
	} {
		b.Run(c.name, func(b *testing.B) {
			reader := newSampler(b, st, clk, func(o *Options) { o.CacheTTL = c.ttl }, KafkaSource{Cluster: br.cluster(b, 10*time.Second)})
			if _, err := reader.LatestKafka(ctx, "main"); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if snap, err := reader.LatestKafka(ctx, "main"); err != nil || len(snap.Groups) != benchGroups {
					b.Fatalf("LatestKafka: %d groups, %v", len(snap.Groups), err)
				}
			}
		})
	}
}

func BenchmarkGroupsFresh(b *testing.B) {
	ctx := context.Background()
	br := benchCluster(b)
	c := br.cluster(b, 10*time.Second)
	for b.Loop() {
		groups, err := c.Groups(ctx)
		if err != nil || len(groups) != benchGroups {
			b.Fatalf("Groups: %d groups, %v", len(groups), err)
		}
	}
}

// BenchmarkKafkaGroupHistory reads a week of one 50-partition group sampled every 15 s (40,320
// rows) down to 400 points, as the group page's 7d chart does, and the last hour of it.
func BenchmarkKafkaGroupHistory(b *testing.B) {
	ctx := context.Background()
	st := openStore(b, testDSN(b))
	clk := newClock()
	start := clk.Now().Add(-7 * 24 * time.Hour)
	const every = 15 * time.Second
	n := int(7 * 24 * time.Hour / every)
	rows := make([]history.KafkaGroupSample, 0, 1000)
	for i := range n {
		parts := make([]history.KafkaPartitionSample, benchPartitions)
		var total int64
		for p := range parts {
			lag := int64((i*7 + p*13) % 5000)
			parts[p] = history.KafkaPartitionSample{Topic: "orders", Partition: int32(p), Committed: int64(i * 100), Lag: lag}
			total += lag
		}
		rows = append(rows, history.KafkaGroupSample{Cluster: "main", Group: "g", At: start.Add(time.Duration(i) * every),
			TotalLag: total, State: "Stable", Members: 3, Status: "OK", Partitions: parts})
		if len(rows) == cap(rows) || i == n-1 {
			if err := st.InsertKafkaGroupSamples(ctx, rows); err != nil {
				b.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	if _, err := st.Pool().Exec(ctx, `ANALYZE kafka_group_sample`); err != nil {
		b.Fatal(err)
	}
	for _, r := range []struct {
		name string
		d    time.Duration
	}{{"7d", 7 * 24 * time.Hour}, {"1h", time.Hour}} {
		b.Run(r.name, func(b *testing.B) {
			for b.Loop() {
				h, err := st.KafkaGroupHistory(ctx, "main", "g", clk.Now().Add(-r.d), clk.Now(), 400, TopPartitions)
				if err != nil || len(h.Points) == 0 || len(h.Points) > 400 || len(h.Partitions) != TopPartitions {
					b.Fatalf("%d points, %d series, %v", len(h.Points), len(h.Partitions), err)
				}
			}
		})
	}
}

// BenchmarkSampleOnce is the leader's cost of one tick on the 200 × 50 cluster: the admin calls,
// judging every partition over its window (full after ~60 ticks), encoding, and writing the
// snapshot and 200 history rows.
func BenchmarkSampleOnce(b *testing.B) {
	ctx := context.Background()
	br := benchCluster(b)
	clk := newClock()
	s := newSampler(b, openStore(b, testDSN(b)), clk, nil, KafkaSource{Cluster: br.cluster(b, 10*time.Second)})
	for range 70 { // fill the windows
		sampleAfter(b, ctx, s, clk, 15*time.Second)
	}
	for b.Loop() {
		sampleAfter(b, ctx, s, clk, 15*time.Second)
	}
}
