package sampler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/benchtest"
)

// TestReadersDuringResamples measures what 8 readers of a cluster's groups wait (issue 38: every
// reader stalled 0.4-1.2 s together whenever the snapshot aged past min_refresh and a read waited
// for the re-sample). Both ways in one run, alternating, each on its own store and sampler over
// the same kfake cluster of 200 groups × 50 partitions: "wait" is MaxServeAge = MinRefresh (every
// read that starts a re-sample waits for it, the behaviour before), "swr" the default (stale while
// revalidate: the snapshot is answered and the re-sample runs behind it). Each reader reads
// (FreshKafka, what the groups API and pages call) every 20 ms for 20 s; min_refresh 2 s, a real
// clock, so a re-sample (~0.3-1 s on this machine) starts every 2 s while they read.
//
//	REDRIVE_BENCH=1 REDRIVE_TEST_PG_DSN=… go test ./ops/sampler -run TestReadersDuringResamples -v -count=1
func TestReadersDuringResamples(t *testing.T) {
	benchtest.Require(t)
	const (
		readers = 8
		think   = 20 * time.Millisecond
		span    = 20 * time.Second
	)
	br := benchCluster(t)
	ctx := context.Background()
	run := func(name string, mod func(*Options)) {
		s, err := New(func() Options {
			o := Options{Store: openStore(t, testDSN(t)), Kafka: []KafkaSource{{Cluster: br.cluster(t, 30*time.Second)}},
				Interval: 2 * time.Minute, MinRefresh: 2 * time.Second}
			mod(&o)
			return o
		}())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.SampleOnce(ctx); err != nil {
			t.Fatal(err)
		}
		before := br.requests("ListGroups")
		var mu sync.Mutex
		var lat []time.Duration
		stop := time.Now().Add(span)
		var wg sync.WaitGroup
		for range readers {
			wg.Go(func() {
				var mine []time.Duration
				for time.Now().Before(stop) {
					start := time.Now()
					snap, err := s.FreshKafka(ctx, "main")
					if err != nil || len(snap.Groups) != benchGroups {
						t.Errorf("FreshKafka: %d groups, %v", len(snap.Groups), err)
						return
					}
					mine = append(mine, time.Since(start))
					time.Sleep(think)
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		slices.Sort(lat)
		p50, p99, mx := lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
		t.Logf("| %s | %d | %d | %.2f ms | %.2f ms | %.0f ms | %.1f |", name, len(lat), br.requests("ListGroups")-before,
			msOf(p50), msOf(p99), msOf(mx), float64(p99)/float64(max(p50, time.Microsecond)))
	}
	t.Logf("| way | reads | re-samples | p50 | p99 | max | p99/p50 |")
	t.Logf("|---|---|---|---|---|---|---|")
	for range 2 {
		run("wait (max_serve_age = min_refresh)", func(o *Options) { o.MaxServeAge = o.MinRefresh })
		run("swr (default max_serve_age)", func(*Options) {})
	}
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
