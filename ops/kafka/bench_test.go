package kafka

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/benchtest"
)

// Reproduce with:
//
//	go test ./ops/kafka/ -run '^$' -bench . -benchtime=20x
//
// Both benchmarks, and the timing test TestGroupsStraightFromCluster, run against kfake in process
// on loopback, so they measure the client-side approach and the number of round trips, not a real
// broker's disk.

const (
	deepRecords = 1_000_000
	deepOffset  = 900_000
	deepLimit   = 50
)

// BenchmarkRecordsDeepPage reads 50 records at offset 900,000 of a 1,000,000-record partition.
// "direct" is Records (a direct consumer at the exact offset, stopping at the page's last
// offset); "naive" consumes the partition from the start until it reaches the page.
func BenchmarkRecordsDeepPage(b *testing.B) {
	f := newFake(b)
	f.topic(b, "deep", 1)
	start := time.Now()
	produceMany(b, f.prod, "deep", deepRecords)
	b.Logf("setup: produced %d records in %v", deepRecords, time.Since(start).Round(time.Millisecond))
	ctx := context.Background()

	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			p, err := f.c.Records(ctx, RecordQuery{Topic: "deep", Offset: new(int64(deepOffset)), Order: "oldest", Limit: deepLimit})
			if err != nil {
				b.Fatal(err)
			}
			if len(p.Records) != deepLimit || p.Records[0].Offset != deepOffset {
				b.Fatalf("got %d records from %d", len(p.Records), p.Records[0].Offset)
			}
		}
	})

	// kcat reading the same 50 records, side by side (Debian's kcat; .ci/run installs it). Its
	// time includes starting the process, as an operator running it would pay.
	b.Run("kcat", func(b *testing.B) {
		kcat, err := exec.LookPath("kcat")
		if err != nil {
			b.Skip("kcat is not installed (apt-get install kcat)")
		}
		for b.Loop() {
			out, err := exec.Command(kcat, "-C", "-b", f.broker.ListenAddrs()[0], "-t", "deep", "-p", "0",
				"-o", strconv.Itoa(deepOffset), "-c", strconv.Itoa(deepLimit), "-e", "-q").Output()
			if err != nil {
				b.Fatal(err)
			}
			if n := bytes.Count(out, []byte("\n")); n != deepLimit {
				b.Fatalf("kcat printed %d records", n)
			}
		}
	})

	b.Run("naive", func(b *testing.B) {
		for b.Loop() {
			cl, err := kgo.NewClient(
				kgo.SeedBrokers(f.broker.ListenAddrs()...),
				kgo.ConsumeTopics("deep"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			)
			if err != nil {
				b.Fatal(err)
			}
			var page []*kgo.Record
			for len(page) < deepLimit {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					b.Fatal(err)
				}
				fs.EachRecord(func(r *kgo.Record) {
					if r.Offset >= deepOffset && len(page) < deepLimit {
						page = append(page, r)
					}
				})
			}
			cl.Close()
		}
	})
}

// produceMany writes n ~40-byte records to partition 0 with a batching, pipelined producer.
func produceMany(b *testing.B, prod *kgo.Client, topic string, n int) {
	b.Helper()
	ctx := context.Background()
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	wg.Add(n)
	for i := range n {
		prod.Produce(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, `{"messageId":"m-%07d","n":%d}`, i, i)},
			func(_ *kgo.Record, err error) {
				if err != nil {
					errMu.Lock()
					if first == nil {
						first = err
					}
					errMu.Unlock()
				}
				wg.Done()
			})
	}
	wg.Wait()
	if first != nil {
		b.Fatalf("produce: %v", first)
	}
}

const (
	benchGroups     = 200
	benchTopics     = 5
	benchPartitions = 10 // per topic: 50 partitions per group
)

// BenchmarkGroups computes the lag of 200 groups, each committed on 50 partitions. "batched" is
// Groups (a fixed number of admin requests); "per-group" lists the groups and asks for each one's
// lag separately, as a page that loops over groups would.
func BenchmarkGroups(b *testing.B) {
	f := newFake(b)
	ctx := context.Background()
	for t := range benchTopics {
		topic := fmt.Sprintf("bench-%d", t)
		f.topic(b, topic, benchPartitions)
		for p := range int32(benchPartitions) {
			f.fill(b, topic, p, 20)
		}
	}
	for g := range benchGroups {
		os := kadm.Offsets{}
		for t := range benchTopics {
			for p := range int32(benchPartitions) {
				os.AddOffset(fmt.Sprintf("bench-%d", t), p, int64((g+int(p))%20), -1)
			}
		}
		if err := f.adm.CommitAllOffsets(ctx, fmt.Sprintf("group-%03d", g), os); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("batched", func(b *testing.B) {
		for b.Loop() {
			gs, err := f.c.Groups(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if len(gs) != benchGroups || len(gs[0].Topics) != benchTopics {
				b.Fatalf("%d groups", len(gs))
			}
		}
	})

	b.Run("per-group", func(b *testing.B) {
		for b.Loop() {
			listed, err := f.adm.ListGroups(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for _, name := range listed.Groups() {
				if _, err := f.c.Group(ctx, name); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// TestGroupsStraightFromCluster times Cluster.Groups (the sampler's read: lag plus one bounded
// fetch per lagging partition for the time lag) at 200 groups × 50 partitions on kfake, every
// partition lagging. Run: REDRIVE_BENCH=1 go test ./ops/kafka -run TestGroupsStraightFromCluster -v
func TestGroupsStraightFromCluster(t *testing.T) {
	benchtest.Require(t)
	f := newFake(t)
	ctx := ctxT(t)
	const groups, parts = 200, 50
	var recs []*kgo.Record
	for g := range groups {
		topic := fmt.Sprintf("events-%03d", g)
		f.topic(t, topic, parts)
		for p := range int32(parts) {
			for range 3 {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v"), Timestamp: time.Now().Add(-time.Minute)})
			}
		}
	}
	f.produce(t, recs...)
	for g := range groups {
		os := kadm.Offsets{}
		for p := range int32(parts) {
			os.AddOffset(fmt.Sprintf("events-%03d", g), p, 1, -1)
		}
		if err := f.adm.CommitAllOffsets(ctx, fmt.Sprintf("g-%03d", g), os); err != nil {
			t.Fatal(err)
		}
	}
	var lat []time.Duration
	for range 7 {
		start := time.Now()
		gs, err := f.c.Groups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		if len(gs) != groups || gs[0].MaxTimeLag < 59*time.Second {
			t.Fatalf("%d groups, max time lag %s", len(gs), gs[0].MaxTimeLag)
		}
	}
	slices.Sort(lat)
	t.Logf("Cluster.Groups at %d × %d, all lagging: median %s, max %s (7 reads)", groups, parts, lat[3].Round(time.Millisecond), lat[6].Round(time.Millisecond))
}
