package sampler

import (
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
)

// A group whose partition 0 drains fast while partition 1 is stuck (its commit never moves and
// records keep arriving): the total lag falls at every sample, yet the group never catches up.
// The sampler says so (CatchUp < 0), where the total's slope promised a few minutes. Once both
// partitions drain, the catch-up time is the slower one's.
func TestCatchUpIsTheSlowestPartitions(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	clk := newClock()
	rules := configs.LagRules{Window: configs.Duration(time.Minute), StopAfter: configs.Duration(time.Hour), WarnMinLag: 1}
	s := newSampler(t, openStore(t, testDSN(t)), clk, nil, KafkaSource{Cluster: b.cluster(t, 10*time.Second), Rules: rules})

	b.topic(t, "orders", 2)
	b.fill(t, "orders", 400, 0, 1)
	committed := map[int32]int64{0: 0, 1: 0}
	tick := func() (catchUp time.Duration, known bool, lag int64) {
		t.Helper()
		b.commit(t, "billing", "orders", committed)
		clk.Add(20 * time.Second)
		if err := s.SampleOnce(ctx); err != nil {
			t.Fatalf("SampleOnce: %v", err)
		}
		snap, err := s.LatestKafka(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		g := group(t, snap, "billing")
		return g.CatchUp, g.RateKnown, g.TotalLag
	}

	// Partition 0: 100 consumed and 10 written per 20 s (lag −90); partition 1: 2 written, none
	// consumed (lag +2). The total falls by 88 every 20 s.
	var prevLag int64 = -1
	for i := range 4 {
		b.fill(t, "orders", 10, 0)
		b.fill(t, "orders", 2, 1)
		committed[0] += 100
		catchUp, known, total := tick()
		if prevLag >= 0 && total >= prevLag {
			t.Fatalf("tick %d: total lag %d after %d, want it falling (the case where its slope misleads)", i, total, prevLag)
		}
		prevLag = total
		if i > 0 && (!known || catchUp >= 0) {
			t.Fatalf("tick %d: catch-up %v (known %v), want not catching up: partition 1 is stuck", i, catchUp, known)
		}
	}

	// Partition 1 starts draining too: 60 consumed per 20 s, nothing new. Partition 0 is at
	// 400+40−400 = 40 and stops receiving; 40 left at 100 per 20 s goes first, so the group waits
	// for partition 1: 400+8−60·k left at 3 msgs/s.
	committed[1] = 60
	tick()
	committed[1] = 120
	committed[0] = 440 // partition 0 caught up
	tick()
	committed[1] = 180
	catchUp, known, _ := tick()
	// 408−180 = 228 left on partition 1, shrinking 3 msgs/s: 76 s.
	if want := 76 * time.Second; !known || (catchUp-want).Abs() > 2*time.Second {
		t.Fatalf("catch-up %v (known %v), want about %v: partition 1's 228 records at 3 msgs/s", catchUp, known, want)
	}
}
