package sampler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/lease"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/storetest"
	"github.com/redrive/redrive/ops/waittest"
)

// Two replicas on one store: on every tick exactly one samples (one ListGroups reaches the
// broker); when the leader's Run is cancelled, the other takes over on its next tick, with the
// windows the first one stored, so a stalled group is still STALL right away.
func TestOneLeader(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	dsn := testDSN(t)
	clk := newClock()
	rules := lag.Rules{Window: time.Minute, StopAfter: time.Hour, WarnMinLag: 1}
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

// gated is a cluster whose Groups can be made to hang, ignoring its context: a replica frozen in
// the middle of a sample (SIGSTOP, a stalled VM), which renews nothing meanwhile.
type gated struct {
	KafkaGroups
	mu     sync.Mutex
	closed chan struct{} // nil when open
}

func (g *gated) Groups(ctx context.Context) ([]kafka.Group, error) {
	g.mu.Lock()
	c := g.closed
	g.mu.Unlock()
	if c != nil {
		<-c
	}
	return g.KafkaGroups.Groups(ctx)
}

func (g *gated) freeze() { g.mu.Lock(); g.closed = make(chan struct{}); g.mu.Unlock() }
func (g *gated) thaw()   { g.mu.Lock(); close(g.closed); g.closed = nil; g.mu.Unlock() }

// value reads a counter or gauge.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}

// namedCluster is one replica's client for broker b under a cluster name of its own.
func (b *broker) namedCluster(tb testing.TB, name string) *kafka.Cluster {
	tb.Helper()
	c, err := kafka.New(configs.KafkaCluster{Name: name, Brokers: b.kf.ListenAddrs(),
		RequestTimeout: configs.Duration(2 * time.Second)}, configs.MessageIDRules{})
	if err != nil {
		tb.Fatalf("kafka.New: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

// runSampler runs s.Run until the test ends (or stop is called) and waits for it to return.
func runSampler(t *testing.T, s *Sampler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// owners reads who holds each valid lease.
func owners(t *testing.T, st Leases) map[string]string {
	t.Helper()
	ls, err := st.SourceLeases(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range ls {
		if l.Valid {
			out[l.Source] = l.Owner
		}
	}
	return out
}

// Three replicas on one store. The leader hangs in the middle of a sample without dying (it renews
// nothing): another replica takes the source over within 2 intervals. While nobody samples, the
// snapshot reads as stale and Ping fails; when the hung one resumes, its write is refused and it
// steps down.
func TestHungLeaderReplaced(t *testing.T) {
	// The TTL is one interval, and the hung replica renews only when the test has it sample: 2 s
	// leaves room for its first sample and the other replicas' start on a loaded machine (under
	// -race beside the other packages' tests one interval of 1 s was not enough).
	const interval = 2 * time.Second
	ctx := ctxT(t)
	b := newBroker(t)
	b.topic(t, "orders", 1)
	b.fill(t, "orders", 10, 0)
	b.commit(t, "billing", "orders", map[int32]int64{0: 4})
	dsn := testDSN(t)
	replica := func(id string, c KafkaGroups) *Sampler {
		s, err := New(Options{Store: openStore(t, dsn), ReplicaID: id, Interval: interval,
			Kafka: []KafkaSource{{Cluster: c}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	g := &gated{KafkaGroups: b.cluster(t, time.Second)}
	hung := replica("hung", g)
	renewed := time.Now() // its lease runs one TTL from the start of its sample
	if err := hung.SampleOnce(ctx); err != nil || !slices.Equal(hung.Leads(), []string{"kafka/main"}) {
		t.Fatalf("first replica: leads %v, %v", hung.Leads(), err)
	}
	b2, c2 := replica("b", b.cluster(t, time.Second)), replica("c", b.cluster(t, time.Second))
	runSampler(t, b2)
	runSampler(t, c2)
	// Before the freeze the others run rounds too, and none of them takes the live leader's source
	// while its lease is valid: watched until shortly before it would lapse, at most half an interval.
	hold := min(interval/2, time.Until(renewed.Add(interval))-250*time.Millisecond)
	if hold < 100*time.Millisecond {
		t.Fatalf("the first sample and the replicas' start took %s of the %s lease: nothing left to watch", time.Since(renewed), interval)
	}
	waittest.Holds(t, hold, "the live leader keeps kafka/main before the freeze", func() bool {
		return owners(t, b2.store)["kafka/main"] == "hung"
	})

	g.freeze()
	frozenAt := time.Now()
	done := make(chan error, 1)
	go func() { done <- hung.SampleOnce(ctx) }() // hangs in Groups: no renewal, no write
	took := waittest.Until(t, 2*interval, "takeover", func() bool {
		o := owners(t, b2.store)["kafka/main"]
		return o == "b" || o == "c"
	})
	t.Logf("takeover %s after the leader froze (interval %s)", took.Round(time.Millisecond), interval)
	newLeader := b2
	if owners(t, b2.store)["kafka/main"] == "c" {
		newLeader = c2
	}
	waittest.Until(t, 2*interval, "the new leader's first sample", func() bool {
		snap, err := newLeader.LatestKafka(ctx, "main")
		return err == nil && snap.At.After(frozenAt)
	})

	g.thaw()
	select {
	case err := <-done:
		if !errors.Is(err, lease.ErrFenced) {
			t.Fatalf("resumed leader's SampleOnce = %v, want lease.ErrFenced", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the resumed leader did not finish its tick")
	}
	if hung.Leader() {
		t.Fatalf("resumed leader still leads %v", hung.Leads())
	}
	if n := value(t, hung.m.leader); n != 0 {
		t.Fatalf("resumed leader's gauge %v, want 0", n)
	}
	// It rejoins as a follower: the source stays with the new leader.
	if err := hung.SampleOnce(ctx); err != nil || hung.Leader() {
		t.Fatalf("resumed leader's next tick: leads %v, %v", hung.Leads(), err)
	}
}

// With every replica gone quiet, the snapshot is shown stale with its age after 3 intervals and
// Ping (the sampler's /readyz check) fails naming the source; a fresh sample clears both.
func TestStaleSnapshot(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	clk := newClock()
	leader, reader := replicas(t, b, clk, time.Second, func(o *Options) { o.CacheTTL = -1 })
	if err := leader.SampleOnce(ctx); err != nil {
		t.Fatal(err)
	}
	snap, err := reader.LatestKafka(ctx, "main")
	if err != nil || snap.Stale || snap.Age != 0 {
		t.Fatalf("fresh snapshot: stale %v age %s, %v", snap.Stale, snap.Age, err)
	}
	if err := reader.Ping(ctx); err != nil {
		t.Fatalf("Ping on a fresh snapshot: %v", err)
	}
	clk.Add(3*DefaultInterval + time.Second) // nobody sampled for more than 3 intervals
	snap, err = reader.LatestKafka(ctx, "main")
	if err != nil || !snap.Stale || snap.Age != 3*DefaultInterval+time.Second || snap.Error != "" {
		t.Fatalf("old snapshot: stale %v age %s error %q, %v; want stale, 46s, no error", snap.Stale, snap.Age, snap.Error, err)
	}
	err = reader.Ping(ctx)
	if err == nil || !containsAll(err.Error(), "kafka/main", "46s") {
		t.Fatalf("Ping on a stale snapshot = %v, want an error naming kafka/main and its age", err)
	}
	if err := leader.SampleOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if snap, _ := reader.LatestKafka(ctx, "main"); snap.Stale {
		t.Fatal("still stale after a new sample")
	}
	if err := reader.Ping(ctx); err != nil {
		t.Fatalf("Ping after a new sample: %v", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// Four sources (three Kafka clusters, one RabbitMQ broker) over three replicas: each source is
// sampled by exactly one replica and each replica leads one or two; when one replica dies (its
// store connection gone, so it renews nothing and releases nothing), the other two take its
// sources over within 2 intervals, still one sampler per source.
func TestSourcesSplitAcrossReplicas(t *testing.T) {
	const interval = time.Second
	b := newBroker(t)
	e := newRmqEnv(t)
	dsn := testDSN(t)
	type rep struct {
		s    *Sampler
		st   *store.Store
		stop func()
	}
	var reps []*rep
	for _, id := range []string{"r1", "r2", "r3"} {
		st := storetest.On(t, dsn)
		s, err := New(Options{Store: st, ReplicaID: id, Interval: interval,
			Kafka:  []KafkaSource{{Cluster: b.namedCluster(t, "k1")}, {Cluster: b.namedCluster(t, "k2")}, {Cluster: b.namedCluster(t, "k3")}},
			Rabbit: []RabbitSource{{Broker: e.broker("rmq")}}})
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, &rep{s: s, st: st, stop: runSampler(t, s)})
	}
	sources := []string{"kafka/k1", "kafka/k2", "kafka/k3", "rabbitmq/rmq"}
	reader := openStore(t, dsn)
	balanced := func(alive []*rep) func() bool {
		return func() bool {
			o := owners(t, reader)
			per := map[string]int{}
			for _, src := range sources {
				if o[src] == "" {
					return false
				}
				per[o[src]]++
			}
			lo, hi := len(sources), 0
			for _, r := range alive {
				lo, hi = min(lo, per[r.s.id]), max(hi, per[r.s.id])
			}
			return hi-lo <= 1 && len(per) == len(alive)
		}
	}
	waittest.Until(t, 8*interval, "four sources split over three replicas", balanced(reps))

	// Over three intervals, every source is sampled, and by one replica only.
	runs := func(alive []*rep) map[string]map[string]float64 {
		out := map[string]map[string]float64{}
		for _, src := range sources {
			out[src] = map[string]float64{}
			for _, r := range alive {
				out[src][r.s.id] = value(t, r.s.m.runs.WithLabelValues(src, "ok")) +
					value(t, r.s.m.runs.WithLabelValues(src, "error"))
			}
		}
		return out
	}
	checkOneSampler := func(alive []*rep) {
		t.Helper()
		before := runs(alive)
		time.Sleep(3 * interval)
		after := runs(alive)
		for _, src := range sources {
			var by []string
			for id, n := range after[src] {
				if n > before[src][id] {
					by = append(by, fmt.Sprintf("%s(+%v)", id, n-before[src][id]))
				}
			}
			if len(by) != 1 {
				t.Errorf("%s sampled by %v over 3 intervals, want exactly one replica", src, by)
			}
		}
		t.Logf("owners %v", owners(t, reader))
	}
	checkOneSampler(reps)

	// r-dead dies: its store goes away under it (as with kill -9, nothing is released).
	dead := reps[0]
	for _, r := range reps {
		if len(r.s.Leads()) == 2 {
			dead = r
		}
	}
	deadSources := dead.s.Leads()
	dead.st.Close()
	var alive []*rep
	for _, r := range reps {
		if r != dead {
			alive = append(alive, r)
		}
	}
	took := waittest.Until(t, 2*interval, "the dead replica's sources taken over", func() bool {
		o := owners(t, reader)
		for _, src := range deadSources {
			if o[src] == "" || o[src] == dead.s.id {
				return false
			}
		}
		return true
	})
	t.Logf("sources %v of the dead replica taken over %s after it died", deadSources, took.Round(time.Millisecond))
	dead.stop()
	waittest.Until(t, 4*interval, "four sources split over two replicas", balanced(alive))
	checkOneSampler(alive)
}
