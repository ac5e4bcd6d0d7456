package sampler

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/ops/waittest"
)

// slowListGroups makes the broker answer ListGroups — the first request of every sample — only
// after delay while slow is set: a re-sample then takes that long for real, the broker answering
// everything else meanwhile (SleepControl yields to the other connections).
func slowListGroups(b *broker, delay time.Duration) *atomic.Bool {
	var slow atomic.Bool
	b.kf.ControlKey(int16(kmsg.ListGroups), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.kf.KeepControl()
		if slow.Load() {
			b.kf.SleepControl(func() { time.Sleep(delay) })
		}
		return nil, nil, false
	})
	return &slow
}

// sampledBeforeASlowResample sets up issue 38's slow re-sample: group billing on orders (2
// partitions of 10 records, committed at 2: lag 16) sampled once, then committed at 10 and 9 (lag
// 1) with the sampler's clock moved 5 s on (past min_refresh, within MaxServeAge 30 s), so that the
// next FreshKafka starts a re-sample whose ListGroups the broker answers only after delay. It
// returns the ListGroups requests counted so far too.
func sampledBeforeASlowResample(t *testing.T, delay time.Duration) (*broker, *Sampler, *clock, context.Context, int) {
	t.Helper()
	b := newBroker(t)
	slow := slowListGroups(b, delay)
	b.topic(t, "orders", 2)
	b.fill(t, "orders", 10, 0, 1)
	b.commit(t, "billing", "orders", map[int32]int64{0: 2, 1: 2})
	st := openStore(t, testDSN(t))
	clk := newClock()
	s := newSampler(t, st, clk, func(o *Options) { o.Interval, o.MaxServeAge = 60*time.Second, 30*time.Second },
		KafkaSource{Cluster: b.cluster(t, 10*time.Second)})
	ctx := ctxT(t)
	if err := s.SampleOnce(ctx); err != nil {
		t.Fatal(err)
	}
	b.commit(t, "billing", "orders", map[int32]int64{0: 10, 1: 9})
	clk.Add(5 * time.Second)
	slow.Store(true)
	return b, s, clk, ctx, b.requests("ListGroups")
}

// Issue 38: every reader waited for the re-sample whenever the snapshot aged past min_refresh (8
// readers' p99 1.2 s). A read during a slow re-sample now answers at once from the previous
// snapshot, saying its age and that a re-sample runs behind it; the re-sample is one for all
// readers, and the read after it shows the commit. Only a snapshot older than MaxServeAge makes a
// read wait, and then it gets the new sample.
func TestReadDuringSlowResample(t *testing.T) {
	const delay = 1500 * time.Millisecond
	b, s, clk, ctx, before := sampledBeforeASlowResample(t, delay)
	sampledAt := clk.Now().Add(-5 * time.Second)

	var wg sync.WaitGroup
	type answer struct {
		took       time.Duration
		lag        int64
		age        time.Duration
		refreshing bool
		at         time.Time
	}
	answers := make([]answer, 8)
	for i := range answers {
		wg.Go(func() {
			start := time.Now()
			snap, err := s.FreshKafka(ctx, "main")
			if err != nil {
				t.Error(err)
				return
			}
			answers[i] = answer{time.Since(start), group(t, snap, "billing").TotalLag, snap.Age, snap.Refreshing, snap.At}
		})
	}
	wg.Wait()
	for i, a := range answers {
		if a.took > 200*time.Millisecond {
			t.Errorf("reader %d waited %v for a re-sample that takes %v", i, a.took, delay)
		}
		if a.lag != 16 || !a.at.Equal(sampledAt) || a.age != 5*time.Second || !a.refreshing {
			t.Errorf("reader %d: lag %d sampled at %v age %v refreshing %v; want the previous snapshot's 16, at %v, 5s old, refreshing",
				i, a.lag, a.at, a.age, a.refreshing, sampledAt)
		}
	}
	t.Logf("8 readers during a %v re-sample answered in %v … %v", delay, answers[0].took, answers[len(answers)-1].took)

	// One re-sample for all of them; once it is stored, a read shows the commit.
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap, err := s.FreshKafka(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		if !snap.Refreshing {
			if got := group(t, snap, "billing").TotalLag; got != 1 || !snap.At.Equal(clk.Now()) {
				t.Fatalf("after the re-sample: lag %d at %v, want 1 at %v", got, snap.At, clk.Now())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the re-sample never finished")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := b.requests("ListGroups") - before; n != 1 {
		t.Errorf("%d re-samples for 8 readers and the polls, want 1", n)
	}

	// Older than max_serve_age (30 s): the read waits for the re-sample and answers it.
	b.commit(t, "billing", "orders", map[int32]int64{0: 10, 1: 10})
	clk.Add(31 * time.Second)
	start := time.Now()
	snap, err := s.FreshKafka(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if got := group(t, snap, "billing").TotalLag; got != 0 || snap.Refreshing || !snap.At.Equal(clk.Now()) || took < delay {
		t.Errorf("a read of a 31 s old snapshot: lag %d refreshing %v at %v after %v; want the new sample (lag 0, at %v) after waiting ≥ %v",
			got, snap.Refreshing, snap.At, took, clk.Now(), delay)
	}

	// A reader that gives up while waiting leaves with its context's error; the re-sample goes on.
	clk.Add(31 * time.Second)
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := s.FreshKafka(cctx, "main"); err == nil {
		t.Error("a reader whose context ended while waiting got no error")
	}
}

// A read that joins a re-sample in flight leaves nothing behind it. Each used to start a goroutine
// (and a singleflight channel) that waited for the re-sample's end: on a busy console of one CPU,
// the hundreds woken together at its end kept some readers' answers waiting for the scheduler for
// as long as the re-sample had run (~100 ms, the groups benchmark's max; docs/benchmarks.md). 2,000
// reads from 20 readers during a slow re-sample now add no goroutine, start one re-sample, and the
// read after it shows the commit.
func TestReadsDuringAResampleLeaveNothingBehind(t *testing.T) {
	b, s, _, ctx, before := sampledBeforeASlowResample(t, 2*time.Second)
	if _, err := s.FreshKafka(ctx, "main"); err != nil { // starts the re-sample
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for range 100 {
				snap, err := s.FreshKafka(ctx, "main")
				if err != nil {
					t.Error(err)
					return
				}
				if !snap.Refreshing || group(t, snap, "billing").TotalLag != 16 {
					t.Errorf("a read during the re-sample: refreshing %v, lag %d; want the previous snapshot's 16, refreshing",
						snap.Refreshing, group(t, snap, "billing").TotalLag)
					return
				}
			}
		})
	}
	wg.Wait()
	if grew := runtime.NumGoroutine() - base; grew > 50 {
		t.Errorf("2,000 reads during a re-sample left %d more goroutines waiting for it, want none", grew)
	}
	waittest.Until(t, 10*time.Second, "the re-sample is stored", func() bool {
		snap, err := s.FreshKafka(ctx, "main")
		return err == nil && !snap.Refreshing && group(t, snap, "billing").TotalLag == 1
	})
	if n := b.requests("ListGroups") - before; n != 1 {
		t.Errorf("%d re-samples for 2,000 reads, want 1", n)
	}
}
