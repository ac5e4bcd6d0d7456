package sampler

import (
	"sync"
	"testing"
	"time"
)

// With sampler.interval 60s, a commit is visible through FreshKafka within MinRefresh (2 s): the
// leader re-samples a viewed cluster on demand, once for many concurrent viewers, and not again
// within MinRefresh. Here MaxServeAge is MinRefresh, so every read that starts a re-sample waits
// for it (the behaviour before stale while revalidate, which TestReadDuringSlowResample covers).
func TestFreshWhenSomeoneLooks(t *testing.T) {
	b := newBroker(t)
	b.topic(t, "orders", 2)
	b.fill(t, "orders", 10, 0, 1)
	b.commit(t, "billing", "orders", map[int32]int64{0: 2, 1: 2})
	st := openStore(t, testDSN(t))
	clk := newClock()
	s := newSampler(t, st, clk, func(o *Options) { o.Interval, o.MaxServeAge = 60*time.Second, 2*time.Second },
		KafkaSource{Cluster: b.cluster(t, 5*time.Second)})
	ctx := ctxT(t)
	if err := s.SampleOnce(ctx); err != nil {
		t.Fatal(err)
	}
	lagOf := func() int64 {
		t.Helper()
		snap, err := s.FreshKafka(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		return group(t, snap, "billing").TotalLag
	}
	if got := lagOf(); got != 16 {
		t.Fatalf("lag %d, want 16", got)
	}
	b.commit(t, "billing", "orders", map[int32]int64{0: 10, 1: 9})
	before := b.requests("OffsetFetch")

	// Within MinRefresh of the last sample: the snapshot is served as is.
	clk.Add(time.Second)
	if got := lagOf(); got != 16 {
		t.Errorf("lag %d within min_refresh, want the sampled 16", got)
	}
	if n := b.requests("OffsetFetch") - before; n != 0 {
		t.Errorf("%d OffsetFetch within min_refresh, want 0", n)
	}

	// 2 s after the sample, 20 viewers at once: one on-demand sample, and all see the commit.
	clk.Add(time.Second)
	var wg sync.WaitGroup
	lags := make([]int64, 20)
	for i := range lags {
		wg.Go(func() {
			snap, err := s.FreshKafka(ctx, "main")
			if err != nil {
				t.Error(err)
				return
			}
			for _, g := range snap.Groups {
				if g.Name == "billing" {
					lags[i] = g.TotalLag
				}
			}
		})
	}
	wg.Wait()
	for i, l := range lags {
		if l != 1 {
			t.Errorf("viewer %d saw lag %d, want 1 (the commit made 2 s ago)", i, l)
		}
	}
	if n := b.requests("OffsetFetch") - before; n != 1 {
		t.Errorf("%d OffsetFetch for 20 viewers, want 1", n)
	}

	t.Run("NotLeader", func(t *testing.T) {
		other := newSampler(t, st, clk, func(o *Options) { o.Interval = 60 * time.Second; o.ReplicaID = "other" },
			KafkaSource{Cluster: b.cluster(t, 5*time.Second)})
		clk.Add(5 * time.Second)
		before := b.requests("OffsetFetch")
		if _, err := other.FreshKafka(ctx, "main"); err != nil {
			t.Fatal(err)
		}
		if n := b.requests("OffsetFetch") - before; n != 0 {
			t.Errorf("a replica that does not lead the cluster sampled it (%d OffsetFetch)", n)
		}
	})
}
