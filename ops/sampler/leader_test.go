package sampler

import (
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/lag"
)

// Two replicas on one store: on every tick exactly one samples (one ListGroups reaches the
// broker); when the leader's Run is cancelled, the other takes over on its next tick, with the
// windows the first one stored, so a stalled group is still STALL right away.
func TestOneLeader(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	dsn := testDSN(t)
	clk := newClock()
	rules := configs.LagRules{Window: configs.Duration(time.Minute), StopAfter: configs.Duration(time.Hour), WarnMinLag: 1}
	replica := func() *Sampler {
		return newSampler(t, openStore(t, dsn), clk, nil, KafkaSource{Cluster: b.cluster(t, 5*time.Second), Rules: rules})
	}
	a, c := replica(), replica()

	b.topic(t, "orders", 1)
	b.fill(t, "orders", 10, 0)
	m := b.member(t, "billing", "orders", 10)
	m.commit(t, "orders", map[int32]int64{0: 4}) // lag 6, and it will not move again

	tick := func() {
		t.Helper()
		clk.Add(20 * time.Second)
		before := b.requests("ListGroups")
		for _, s := range []*Sampler{a, c} {
			if err := s.SampleOnce(ctx); err != nil {
				t.Fatalf("SampleOnce: %v", err)
			}
		}
		if n := b.requests("ListGroups") - before; n != 1 {
			t.Fatalf("tick sent %d ListGroups to the broker, want 1", n)
		}
	}
	for i := range 4 {
		tick()
		if !a.Leader() || c.Leader() || leaderGauge(t, a) != 1 || leaderGauge(t, c) != 0 {
			t.Fatalf("tick %d: leader a=%v (gauge %v) c=%v (gauge %v), want only a (the first to try)",
				i, a.Leader(), leaderGauge(t, a), c.Leader(), leaderGauge(t, c))
		}
	}
	snap, err := a.LatestKafka(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if g := group(t, snap, "billing"); g.Status.Code != lag.StatusStall {
		t.Fatalf("status before failover %s (%s), want STALL", g.Status.Code, g.Status.Reason)
	}

	// a runs its loop, and is stopped (a replica shutting down).
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if a.Leader() || leaderGauge(t, a) != 0 {
		t.Fatal("a still leader after its Run returned")
	}

	clk.Add(20 * time.Second)
	before := b.requests("ListGroups")
	if err := c.SampleOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if !c.Leader() || leaderGauge(t, c) != 1 || b.requests("ListGroups")-before != 1 {
		t.Fatalf("c did not take over: leader %v, ListGroups %d", c.Leader(), b.requests("ListGroups")-before)
	}
	snap, err = c.LatestKafka(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if g := group(t, snap, "billing"); g.Status.Code != lag.StatusStall || !g.RateKnown {
		t.Errorf("after failover: %s (%s), rate known %v; want STALL judged from the stored window", g.Status.Code, g.Status.Reason, g.RateKnown)
	}
}
