package sampler

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/store"
)

// synthetic writes one sample per second for n seconds from start: partition t/0 lags i, t/1
// 1000−i, t/2 5, t/3 is unknown (-1) throughout, u/0 i mod 7, and v/0 exists only for the first
// 100 samples with lag 50.
func synthetic(t *testing.T, st *store.Store, cluster, grp string, start time.Time, n int) []history.KafkaGroupSample {
	t.Helper()
	rows := make([]history.KafkaGroupSample, n)
	for i := range n {
		parts := []history.KafkaPartitionSample{
			{Topic: "t", Partition: 0, Committed: 1, Lag: int64(i)},
			{Topic: "t", Partition: 1, Committed: 1, Lag: int64(1000 - i)},
			{Topic: "t", Partition: 2, Committed: 1, Lag: 5},
			{Topic: "t", Partition: 3, Committed: -1, Lag: -1},
			{Topic: "u", Partition: 0, Committed: 1, Lag: int64(i % 7)},
		}
		if i < 100 {
			parts = append(parts, history.KafkaPartitionSample{Topic: "v", Partition: 0, Committed: 1, Lag: 50})
		}
		var total int64
		for _, p := range parts {
			total += max(p.Lag, 0)
		}
		rows[i] = history.KafkaGroupSample{Cluster: cluster, Group: grp, At: start.Add(time.Duration(i) * time.Second),
			TotalLag: total, State: "Stable", Members: 1, Status: "OK", Partitions: parts}
	}
	if err := st.InsertKafkaGroupSamples(ctxT(t), rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// History is cut into at most maxPoints buckets, each holding the maximum of each series, with the
// top partitions by their maximum over the range.
func TestKafkaGroupHistory(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	st := openStore(t, testDSN(t))
	clk := newClock()
	s := newSampler(t, st, clk, nil, KafkaSource{Cluster: b.cluster(t, time.Second)})
	start := clk.Now().Add(-999 * time.Second)
	rows := synthetic(t, st, "main", "g", start, 1000)
	synthetic(t, st, "main", "other", start, 10) // another group does not leak in

	wantKeys := []string{"t/1", "t/0", "v/0", "u/0", "t/2"} // by max lag: 1000, 999, 50, 6, 5; t/3 is never known

	for _, maxPoints := range []int{1, 7, 37, 400, 1000, 5000} {
		t.Run(fmt.Sprint(maxPoints), func(t *testing.T) {
			points, err := s.KafkaGroupHistory(ctx, "main", "g", start, maxPoints)
			if err != nil {
				t.Fatal(err)
			}
			if len(points) == 0 || len(points) > maxPoints || len(points) > len(rows) {
				t.Fatalf("%d points for maxPoints %d", len(points), maxPoints)
			}
			if maxPoints >= 1000 && len(points) != 1000 {
				t.Errorf("%d points, want every sample (1000) when maxPoints allows", len(points))
			}
			// Expected maxima, bucketing like the store: equal widths from start, microseconds.
			span := clk.Now().Sub(start)
			width := (span/time.Microsecond/time.Duration(maxPoints) + 1) * time.Microsecond
			type bucket struct {
				at    time.Time
				total int64
				parts map[string]int64
			}
			var want []*bucket
			idx := map[int64]*bucket{}
			for _, r := range rows {
				k := int64(r.At.Sub(start) / width)
				bk := idx[k]
				if bk == nil {
					bk = &bucket{parts: map[string]int64{}}
					for _, key := range wantKeys {
						bk.parts[key] = -1
					}
					idx[k] = bk
					want = append(want, bk)
				}
				bk.at, bk.total = r.At, max(bk.total, r.TotalLag)
				for _, p := range r.Partitions {
					if key := lag.PartitionKey(p.Topic, p.Partition); p.Lag >= 0 {
						if _, top := bk.parts[key]; top {
							bk.parts[key] = max(bk.parts[key], p.Lag)
						}
					}
				}
			}
			if len(points) != len(want) {
				t.Fatalf("%d points, want %d", len(points), len(want))
			}
			for i, p := range points {
				w := want[i]
				if !p.At.Equal(w.at) || p.TotalLag != w.total || len(p.Partitions) != len(wantKeys) {
					t.Fatalf("point %d = %v total %d (%d series), want %v total %d (%d series)",
						i, p.At, p.TotalLag, len(p.Partitions), w.at, w.total, len(wantKeys))
				}
				for key, lag := range w.parts {
					if got, ok := p.Partitions[key]; !ok || got != lag {
						t.Fatalf("point %d %s = %d (present %v), want %d", i, key, got, ok, lag)
					}
				}
			}
			if maxPoints == 1 && (points[0].TotalLag != 1061 || points[0].Partitions["t/1"] != 1000 || !points[0].At.Equal(clk.Now())) {
				t.Errorf("single point = %+v, want the range's maxima", points[0])
			}
		})
	}

	t.Run("Since", func(t *testing.T) {
		points, err := s.KafkaGroupHistory(ctx, "main", "g", clk.Now().Add(-9*time.Second), 400)
		if err != nil {
			t.Fatal(err)
		}
		if len(points) != 10 || points[0].Partitions["t/0"] != 990 {
			t.Fatalf("%d points, first %+v; want the last 10 samples", len(points), points[0])
		}
		if _, ok := points[0].Partitions["v/0"]; ok {
			t.Errorf("v/0 has no samples in the range but is a series")
		}
	})
	t.Run("SharedForAnInterval", func(t *testing.T) {
		first, err := s.KafkaGroupHistory(ctx, "main", "g", start, 50)
		if err != nil {
			t.Fatal(err)
		}
		synthetic(t, st, "main", "g", clk.Now().Add(time.Millisecond), 1) // a newer sample
		again, err := s.KafkaGroupHistory(ctx, "main", "g", start, 50)
		if err != nil || &again[0] != &first[0] {
			t.Fatalf("second viewer within the interval re-read the history (%v)", err)
		}
		uncached := newSampler(t, st, clk, func(o *Options) { o.CacheTTL = -1 }, KafkaSource{Cluster: b.cluster(t, time.Second)})
		fresh, err := uncached.KafkaGroupHistory(ctx, "main", "g", start, 50)
		if err != nil || &fresh[0] == &first[0] || len(fresh) != len(first) {
			t.Fatalf("uncached read: %d points, %v", len(fresh), err)
		}
	})
	t.Run("UnknownGroup", func(t *testing.T) {
		points, err := s.KafkaGroupHistory(ctx, "main", "nope", start, 400)
		if err != nil || len(points) != 0 || points == nil {
			t.Fatalf("= %v, %v; want an empty history", points, err)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		for name, call := range map[string]func() error{
			"MaxPoints0":  func() error { _, err := s.KafkaGroupHistory(ctx, "main", "g", start, 0); return err },
			"MaxPointsHi": func() error { _, err := s.KafkaGroupHistory(ctx, "main", "g", start, MaxHistoryPoints+1); return err },
			"Future": func() error {
				_, err := s.KafkaGroupHistory(ctx, "main", "g", clk.Now().Add(time.Hour), 10)
				return err
			},
			"NoGroup": func() error { _, err := s.KafkaGroupHistory(ctx, "main", "", start, 10); return err },
		} {
			if err := call(); !errors.Is(err, ops.ErrInvalid) {
				t.Errorf("%s: err = %v, want ErrInvalid", name, err)
			}
		}
		if _, err := s.KafkaGroupHistory(ctx, "nope", "g", start, 10); !errors.Is(err, ops.ErrNotFound) {
			t.Errorf("unknown cluster: err = %v, want ErrNotFound", err)
		}
	})
}

// The leader prunes history past retention when it takes over and hourly after that; pruning
// deletes in batches and covers the RabbitMQ table too.
func TestRetention(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	st := openStore(t, testDSN(t))
	clk := newClock()
	b.topic(t, "orders", 1)
	b.commit(t, "g", "orders", map[int32]int64{0: 0})
	s := newSampler(t, st, clk, func(o *Options) { o.Retention = 2 * time.Hour }, KafkaSource{Cluster: b.cluster(t, 5*time.Second)})

	count := func(table string) int {
		t.Helper()
		var n int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// 12,000 rows older than retention (more than one delete batch), and some recent ones.
	old := clk.Now().Add(-6 * time.Hour) // 12,000 s later is still 2 h 40 m ago
	synthetic(t, st, "main", "ancient", old, 12_000)
	synthetic(t, st, "main", "recent", clk.Now().Add(-time.Hour), 10)
	if _, err := st.Pool().Exec(ctx, `INSERT INTO rabbit_queue_sample (broker, vhost, queue, at, ready, unacked, consumers)
		VALUES ('b', '/', 'q', $1, 1, 0, 0), ('b', '/', 'q', $2, 2, 0, 0)`, old, clk.Now()); err != nil {
		t.Fatal(err)
	}

	if err := s.SampleOnce(ctx); err != nil { // takes leadership: prunes
		t.Fatal(err)
	}
	if n := count("kafka_group_sample"); n != 10+1 {
		t.Errorf("%d samples after the first prune, want 11 (10 recent + this tick)", n)
	}
	if n := count("rabbit_queue_sample"); n != 1 {
		t.Errorf("%d queue samples, want 1", n)
	}

	sampleAfter(t, ctx, s, clk, 30*time.Minute) // within the hour: no prune
	sampleAfter(t, ctx, s, clk, 61*time.Minute) // now − 2 h is past the "recent" rows (written at −1 h, now −2 h 31 m)
	if n := count("kafka_group_sample"); n != 3 {
		t.Errorf("%d samples after the hourly prune, want 3 (this sampler's ticks)", n)
	}

	n, err := st.PruneHistory(ctx, clk.Now().Add(time.Second))
	if err != nil || n != 3+1 {
		t.Errorf("PruneHistory = %d, %v; want 4 (3 group samples, 1 queue sample)", n, err)
	}
}
