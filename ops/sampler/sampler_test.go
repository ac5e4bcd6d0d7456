package sampler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/waittest"
)

// A live group is judged over time from the sampler's window: OK while it keeps up, WARN once the
// lag rose at every sample of a window although it commits, STALL once its member stops committing
// for a window, STOP after StopAfter. The clock is fake; Kafka and PostgreSQL are real.
func TestStatusesOverTime(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	st := openStore(t, testDSN(t))
	clk := newClock()
	rules := lag.Rules{Window: time.Minute, StopAfter: 10 * time.Minute, WarnMinLag: 5}
	s := newSampler(t, st, clk, nil, KafkaSource{Cluster: b.cluster(t, 10*time.Second), Rules: rules})

	b.topic(t, "orders", 2)
	b.fill(t, "orders", 10, 0, 1)
	m := b.member(t, "billing", "orders", 20)
	committed := int64(10)
	m.commit(t, "orders", map[int32]int64{0: committed, 1: committed})

	step := func(want lag.StatusCode) lag.Group {
		t.Helper()
		sampleAfter(t, ctx, s, clk, 20*time.Second)
		snap, err := s.LatestKafka(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		if !snap.At.Equal(clk.Now()) || snap.Error != "" {
			t.Fatalf("snapshot at %v error %q, want at %v without error", snap.At, snap.Error, clk.Now())
		}
		g := group(t, snap, "billing")
		if g.Status.Code != want {
			t.Fatalf("at +%v: status %s (%s), lag %d; want %s", clk.Now().Sub(newClock().Now()), g.Status.Code, g.Status.Reason, g.TotalLag, want)
		}
		return g
	}

	t.Run("OK", func(t *testing.T) {
		step(lag.StatusOK)
		g := step(lag.StatusOK)
		if g.Members != 1 || g.State != "Stable" || g.TotalLag != 0 {
			t.Errorf("group = %s %d members lag %d, want Stable, 1 member, no lag", g.State, g.Members, g.TotalLag)
		}
		if !g.RateKnown || g.Rate != 0 || g.CatchUp != 0 {
			t.Errorf("rate %v catch-up %v known %v, want 0 msg/s, caught up", g.Rate, g.CatchUp, g.RateKnown)
		}
	})

	// Each tick 10 new records per partition and 2 committed: the lag grows while commits move. It is
	// WARN only once the whole window (1 m, four samples) rose and none of it was zero.
	t.Run("WARN", func(t *testing.T) {
		var g lag.Group
		for i, want := range []lag.StatusCode{lag.StatusOK, lag.StatusOK, lag.StatusOK, lag.StatusWarn} {
			b.fill(t, "orders", 10, 0, 1)
			committed += 2
			m.commit(t, "orders", map[int32]int64{0: committed, 1: committed})
			g = step(want)
			if wantLag := int64(2 * 8 * (i + 1)); g.TotalLag != wantLag {
				t.Errorf("tick %d: lag %d, want %d", i, g.TotalLag, wantLag)
			}
		}
		// 2 partitions × 2 messages per 20 s.
		if !g.RateKnown || math.Abs(g.Rate-0.2) > 1e-9 {
			t.Errorf("rate %v (known %v), want 0.2 msg/s", g.Rate, g.RateKnown)
		}
		if g.CatchUp >= 0 {
			t.Errorf("catch-up %v, want < 0 (lag growing)", g.CatchUp)
		}
		// 2 partitions × 10 records per 20 s produced, 2 × 2 consumed: the pipeline's rates.
		if r := g.TopicRates["orders"]; math.Abs(r.Produced-1.0) > 1e-9 || math.Abs(r.Consumed-0.2) > 1e-9 {
			t.Errorf("orders' rates %+v, want 1 msg/s produced and 0.2 consumed", r)
		}
		if len(g.Partitions) != 2 || g.Partitions["orders/0"].Code != lag.StatusWarn {
			t.Errorf("partition statuses %v, want both WARN", g.Partitions)
		}
		if want := "lag rose at every sample on partitions 0, 1: 16 → 32 → 48 → 64 over 1 min"; g.Status.Reason != want {
			t.Errorf("reason %q, want %q", g.Status.Reason, want)
		}
	})

	// Commits stop; the member stays. Within a window it is still judged by the growth, then the
	// committed offset has not moved for a whole window: STALL.
	t.Run("STALL", func(t *testing.T) {
		step(lag.StatusOK) // stuck 20 s, the lag no longer rises
		step(lag.StatusOK) // stuck 40 s
		g := step(lag.StatusStall)
		if g.Partitions["orders/1"].Code != lag.StatusStall || g.Status.Reason == "" {
			t.Errorf("partition statuses %v, reason %q", g.Partitions, g.Status.Reason)
		}
		if g.Rate != 0 || g.CatchUp >= 0 {
			t.Errorf("rate %v catch-up %v, want 0 and not catching up", g.Rate, g.CatchUp)
		}
	})

	t.Run("STOP", func(t *testing.T) {
		clk.Add(10 * time.Minute)
		step(lag.StatusStop)
	})

	t.Run("History", func(t *testing.T) {
		rows, err := st.KafkaGroupSamples(ctx, "main", "billing", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 10 {
			t.Fatalf("%d history rows, want one per tick (10)", len(rows))
		}
		last := rows[len(rows)-1]
		if last.Status != string(lag.StatusStop) || last.Members != 1 || len(last.Partitions) != 2 ||
			last.Partitions[0] != (history.KafkaPartitionSample{Topic: "orders", Partition: 0, Committed: 18, Lag: 32}) {
			t.Errorf("last row = %+v", last)
		}
	})
}

// A group whose partition 0 drains fast while partition 1 is stuck (its commit never moves and
// records keep arriving): the total lag falls at every sample, yet the group never catches up.
// The sampler says so (CatchUp < 0), where the total's slope promised a few minutes. Once both
// partitions drain, the catch-up time is the slower one's.
func TestCatchUpIsTheSlowestPartitions(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	clk := newClock()
	rules := lag.Rules{Window: time.Minute, StopAfter: time.Hour, WarnMinLag: 1}
	s := newSampler(t, openStore(t, testDSN(t)), clk, nil, KafkaSource{Cluster: b.cluster(t, 10*time.Second), Rules: rules})

	b.topic(t, "orders", 2)
	b.fill(t, "orders", 400, 0, 1)
	committed := map[int32]int64{0: 0, 1: 0}
	tick := func() (catchUp time.Duration, known bool, lag int64) {
		t.Helper()
		b.commit(t, "billing", "orders", committed)
		sampleAfter(t, ctx, s, clk, 20*time.Second)
		snap, err := s.LatestKafka(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		g := group(t, snap, "billing")
		return g.CatchUp, g.RateKnown, g.TotalLag
	}

	// The group has no members (its offsets are committed from outside, as a consumer in assign
	// mode does): its rate is told once it committed steadily, in three sample intervals.
	for range 3 {
		committed[0]++
		tick()
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
	// 400+40−403 = 37 and stops receiving; 37 left at 100 per 20 s goes first, so the group waits
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

// The stored snapshot decodes to exactly what the leader computed; a failing cluster keeps its last
// good groups and gains an error; it recovers on the next good sample.
func TestSnapshotRoundTrip(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	clk := newClock()
	leader, reader := replicas(t, b, clk, time.Second, func(o *Options) { o.CacheTTL = -1 })

	t.Run("NotSampledYet", func(t *testing.T) {
		snap, err := reader.LatestKafka(ctx, "main")
		if err != nil || !snap.At.IsZero() || snap.Cluster != "main" || len(snap.Groups) != 0 {
			t.Fatalf("LatestKafka = %+v, %v; want an empty snapshot with zero At", snap, err)
		}
	})
	t.Run("UnknownCluster", func(t *testing.T) {
		if _, err := reader.LatestKafka(ctx, "nope"); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})

	b.topic(t, "orders", 3)
	b.topic(t, "payments", 2)
	b.fill(t, "orders", 5, 0, 1, 2)
	b.fill(t, "payments", 7, 0, 1)
	b.commit(t, "offsets-only", "orders", map[int32]int64{0: 1, 1: 5})
	b.commit(t, "offsets-only", "payments", map[int32]int64{0: 7})
	b.member(t, "live", "payments", 14)

	for range 2 {
		sampleAfter(t, ctx, leader, clk, 15*time.Second)
	}
	want, err := leader.LatestKafka(ctx, "main") // the leader's in-memory copy
	if err != nil {
		t.Fatal(err)
	}
	got, err := reader.LatestKafka(ctx, "main") // decoded from the store
	if err != nil {
		t.Fatal(err)
	}
	if !got.At.Equal(clk.Now()) || got.Error != "" || !got.ErrorAt.IsZero() {
		t.Errorf("at %v error %q %v, want at %v and no error", got.At, got.Error, got.ErrorAt, clk.Now())
	}
	if len(got.Groups) != 2 || !reflect.DeepEqual(got.Groups, want.Groups) {
		t.Fatalf("stored groups differ:\n got %+v\nwant %+v", got.Groups, want.Groups)
	}
	if g := group(t, got, "live"); g.Topics[0].Partitions[0].Member == "" || g.Status.Code != lag.StatusOK {
		t.Errorf("live group = %+v", g)
	}
	if g := group(t, got, "offsets-only"); g.State != "Empty" || g.Status.Code != lag.StatusEmpty || len(g.Partitions) != numPartitions(g) {
		t.Errorf("offsets-only group = %s %s partitions %v, want every partition EMPTY", g.State, g.Status.Code, g.Partitions)
	}
	goodAt := got.At

	t.Run("ClusterDown", func(t *testing.T) {
		b.kf.Close()
		sampleUnavailableAfter(t, ctx, leader, clk, 15*time.Second)
		got, err := reader.LatestKafka(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		if got.Error == "" || !got.ErrorAt.Equal(clk.Now()) || !got.At.Equal(goodAt) {
			t.Errorf("error %q at %v, sampled at %v; want an error now and the last good sample at %v", got.Error, got.ErrorAt, got.At, goodAt)
		}
		if !reflect.DeepEqual(got.Groups, want.Groups) {
			t.Errorf("groups changed after a failed sample")
		}
		if cached, _ := leader.LatestKafka(ctx, "main"); cached.Error == "" {
			t.Errorf("the leader's own cache still shows no error")
		}
	})
}

// oneGroupReplicas is the set-up of the LatestKafka tests: two replicas over one store (the
// reader's options changed by mod), on a broker with one group, g, on topic orders.
func oneGroupReplicas(t *testing.T, clk *clock, mod func(*Options)) (leader, reader *Sampler) {
	t.Helper()
	b := newBroker(t)
	b.topic(t, "orders", 2)
	b.commit(t, "g", "orders", map[int32]int64{0: 0})
	return replicas(t, b, clk, 5*time.Second, mod)
}

// Fifty concurrent viewers of a replica share one store read and one decoded snapshot.
func TestLatestKafkaSharesReads(t *testing.T) {
	ctx := ctxT(t)
	leader, reader := oneGroupReplicas(t, newClock(), nil)
	if err := leader.SampleOnce(ctx); err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first = map[*lag.Group]int{}
	)
	for range 50 {
		wg.Go(func() {
			snap, err := reader.LatestKafka(ctx, "main")
			if err != nil || len(snap.Groups) != 1 {
				t.Errorf("LatestKafka = %d groups, %v", len(snap.Groups), err)
				return
			}
			mu.Lock()
			first[&snap.Groups[0]]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(first) != 1 {
		t.Errorf("50 viewers got %d distinct decoded snapshots, want 1 (one read)", len(first))
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	st := openStore(t, testDSN(t))
	b := newBroker(t)
	c := b.cluster(t, time.Second)
	for name, opts := range map[string]Options{
		"NoStore":       {Kafka: []KafkaSource{{Cluster: c}}},
		"NoCluster":     {Store: st, Kafka: []KafkaSource{{}}},
		"DuplicateName": {Store: st, Kafka: []KafkaSource{{Cluster: c}, {Cluster: c}}},
		"NegativeTime":  {Store: st, Interval: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(opts); !errors.Is(err, ops.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func numPartitions(g lag.Group) int {
	n := 0
	for _, t := range g.Topics {
		n += len(t.Partitions)
	}
	return n
}

// A replica whose cached copy expired reads the document again only when a new sample exists; a
// failed sample in between updates just the error.
func TestLatestKafkaRevalidates(t *testing.T) {
	ctx := ctxT(t)
	clk := newClock()
	leader, reader := oneGroupReplicas(t, clk, func(o *Options) { o.CacheTTL = time.Nanosecond })
	read := func() lag.Snapshot {
		t.Helper()
		snap, err := reader.LatestKafka(ctx, "main")
		if err != nil || len(snap.Groups) != 1 {
			t.Fatalf("LatestKafka: %d groups, %v", len(snap.Groups), err)
		}
		return snap
	}
	if err := leader.SampleOnce(ctx); err != nil {
		t.Fatal(err)
	}
	first := read()
	if again := read(); &again.Groups[0] != &first.Groups[0] || !again.At.Equal(first.At) {
		t.Errorf("unchanged snapshot was decoded again")
	}
	if err := leader.store.(*store.Store).SetSnapshotError(ctx, "kafka", "main", "broken", clk.Now()); err != nil {
		t.Fatal(err)
	}
	if failed := read(); failed.Error != "broken" || &failed.Groups[0] != &first.Groups[0] {
		t.Errorf("after a failed sample: error %q, groups re-read %v", failed.Error, &failed.Groups[0] != &first.Groups[0])
	}
	sampleAfter(t, ctx, leader, clk, 15*time.Second)
	if next := read(); !next.At.Equal(clk.Now()) || next.Error != "" || &next.Groups[0] == &first.Groups[0] {
		t.Errorf("after a new sample: at %v error %q", next.At, next.Error)
	}
}

// A replica whose copy expired answers from it while the store is read behind the answer (stale
// while revalidate), with its sample's age; only a copy cacheServeFor CacheTTLs old makes the
// readers wait for the store. The store is held by a lock on its snapshot table, so a read that
// goes to it cannot return until the lock goes.
func TestLatestKafkaAnswersFromTheCopyWhileTheStoreIsRead(t *testing.T) {
	ctx := ctxT(t)
	clk := newClock()
	const ttl = 100 * time.Millisecond
	b := newBroker(t)
	b.topic(t, "orders", 2)
	b.commit(t, "g", "orders", map[int32]int64{0: 0})
	dsn := testDSN(t)
	leader := newSampler(t, openStore(t, dsn), clk, nil, KafkaSource{Cluster: b.cluster(t, 5*time.Second)})
	reader := newSampler(t, openStore(t, dsn), clk, func(o *Options) { o.CacheTTL = ttl }, KafkaSource{Cluster: b.cluster(t, 5*time.Second)})
	if err := leader.SampleOnce(ctx); err != nil {
		t.Fatal(err)
	}
	first, err := reader.LatestKafka(ctx, "main")
	if err != nil || len(first.Groups) != 1 {
		t.Fatalf("LatestKafka: %d groups, %v", len(first.Groups), err)
	}
	sampleAfter(t, ctx, leader, clk, 15*time.Second) // a newer sample the reader has not read

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+store.Schema+".snapshot IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * ttl) // the copy expired
	start := time.Now()
	served, err := reader.LatestKafka(ctx, "main")
	if took := time.Since(start); err != nil || !served.At.Equal(first.At) || took > ttl {
		t.Fatalf("with the store held: the copy of %v (%v) in %v, want the copy of %v at once", served.At, err, took, first.At)
	}
	if served.Age < 15*time.Second {
		t.Errorf("the copy says it is %v old; its sample is 15 s older than the clock", served.Age)
	}
	// Twenty readers at once get the copy too, and the store gets one read behind them all.
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if snap, err := reader.LatestKafka(ctx, "main"); err != nil || !snap.At.Equal(first.At) {
				t.Errorf("one of twenty readers: the copy of %v (%v), want %v", snap.At, err, first.At)
			}
		})
	}
	wg.Wait()
	waiting := waittest.For(t, 5*time.Second, "the read behind the answers waits for the lock", func() (int, bool) {
		var n int
		err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FROM snapshot%'`).Scan(&n)
		return n, err == nil && n > 0
	})
	if waiting != 1 {
		t.Errorf("%d reads of the store wait behind 21 readers; want one", waiting)
	}
	time.Sleep(cacheServeFor * ttl) // the copy is now too old to answer without the store
	wctx, cancel := context.WithTimeout(ctx, 3*ttl)
	_, err = reader.LatestKafka(wctx, "main")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a copy %d CacheTTLs old answered without the store: %v", cacheServeFor, err)
	}
	if err := tx.Rollback(ctx); err != nil { // the store answers again
		t.Fatal(err)
	}
	waittest.For(t, 5*time.Second, "the reader shows the newer sample", func() (string, bool) {
		snap, err := reader.LatestKafka(ctx, "main")
		return fmt.Sprintf("at %v (%v), want %v", snap.At, err, clk.Now()), err == nil && snap.At.Equal(clk.Now())
	})
}
