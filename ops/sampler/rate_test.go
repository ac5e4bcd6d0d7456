package sampler

import (
	"math"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/lag"
)

// A group without members tells a rate only when it consumes steadily. An offset moved by hand
// (commit 10, 12 s later 12: once "0.12 msg/s, caught up in 733 s", growing every sample) has no
// known rate and no catch-up time while the move is in the window, nor after a second move; once
// the moves left the window it consumes nothing, known. A consumer in assign mode (no members,
// Empty) committing every second keeps its rate and catch-up time.
func TestRateOfGroupWithoutMembers(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	clk := newClock()
	s := newSampler(t, openStore(t, testDSN(t)), clk, nil, KafkaSource{Cluster: b.cluster(t, 10*time.Second)})
	b.topic(t, "orders", 1)
	b.fill(t, "orders", 100, 0)
	b.topic(t, "payments", 1)
	b.fill(t, "payments", 1000, 0)

	assigned := int64(0)
	sample := func(after time.Duration) (moved, steady lag.Group) {
		t.Helper()
		for range int(after / time.Second) { // the assign-mode consumer commits every second
			assigned++
			b.commit(t, "assigned", "payments", map[int32]int64{0: assigned})
			clk.Add(time.Second)
		}
		sampleAfter(t, ctx, s, clk, 0)
		snap, err := s.LatestKafka(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		return group(t, snap, "moved"), group(t, snap, "assigned")
	}
	unknown := func(when string, g lag.Group) {
		t.Helper()
		if g.State != "Empty" || g.RateKnown || g.Rate != 0 || g.CatchUp != 0 || g.TopicRates != nil {
			t.Fatalf("%s: %s, rate %v catch-up %v known %v topic rates %v; want no rate and no catch-up time",
				when, g.State, g.Rate, g.CatchUp, g.RateKnown, g.TopicRates)
		}
	}

	b.commit(t, "moved", "orders", map[int32]int64{0: 10})
	sample(time.Second)
	b.commit(t, "moved", "orders", map[int32]int64{0: 12})
	moved, steady := sample(12 * time.Second)
	unknown("12 s after a move of 2", moved)
	for i := range 4 {
		moved, steady = sample(15 * time.Second)
		unknown("after a move", moved)
		if i >= 1 { // three intervals of commits: 1 s, 12 s, 15 s, 15 s, …
			if g := steady; g.State != "Empty" || !g.RateKnown || math.Abs(g.Rate-1) > 0.1 || g.CatchUp <= 0 {
				t.Fatalf("assign mode, sample %d: %s, rate %v catch-up %v known %v; want about 1 msg/s and a catch-up time",
					i, g.State, g.Rate, g.CatchUp, g.RateKnown)
			}
			// About 1,000 − n records left at 1 msg/s.
			if want := time.Duration(1000-assigned) * time.Second; (steady.CatchUp - want).Abs() > 30*time.Second {
				t.Fatalf("assign mode: catch-up %v, want about %v", steady.CatchUp, want)
			}
		}
	}
	b.commit(t, "moved", "orders", map[int32]int64{0: 20}) // a second move, by shift
	moved, _ = sample(15 * time.Second)
	unknown("after a second move", moved)

	// The moves leave the window (5 m): the offset does not move, so nothing is consumed.
	clk.Add(6 * time.Minute)
	sample(0)
	moved, _ = sample(15 * time.Second)
	if !moved.RateKnown || moved.Rate != 0 || moved.CatchUp >= 0 {
		t.Fatalf("no move in the window: rate %v catch-up %v known %v; want 0 msg/s, not catching up", moved.Rate, moved.CatchUp, moved.RateKnown)
	}
}
