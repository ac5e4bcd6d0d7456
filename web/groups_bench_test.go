package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/ops/benchtest"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/lag"
)

// memSnapshots serves one fixed snapshot from memory, as the sampler does on a cache hit.
type memSnapshots struct{ snap lag.Snapshot }

func (m memSnapshots) LatestKafka(context.Context, string) (lag.Snapshot, error) {
	return m.snap, nil
}

// FreshKafka is LatestKafka: nothing here re-samples.
func (m memSnapshots) FreshKafka(ctx context.Context, cluster string) (lag.Snapshot, error) {
	return m.LatestKafka(ctx, cluster)
}

func (m memSnapshots) KafkaGroupHistory(context.Context, string, string, time.Time, int) ([]lag.Point, error) {
	return nil, nil
}

type namedCluster struct {
	handlers.KafkaCluster
	name string
}

func (n namedCluster) Name() string { return n.name }

// bigSnapshot is groups × partitions, every partition lagging with a time lag, a member on each.
func bigSnapshot(groups, partitions int) lag.Snapshot {
	snap := lag.Snapshot{Cluster: "main", At: time.Now()}
	for g := range groups {
		kg := lag.Group{Group: kafka.Group{Name: fmt.Sprintf("service-%03d-consumer", g), State: "Stable", Protocol: "cooperative-sticky",
			Members: 5}, Status: lag.Status{Code: lag.StatusOK}, Rate: 120.5, RateKnown: true, CatchUp: time.Minute}
		t := kafka.TopicLag{Topic: fmt.Sprintf("events.service-%03d", g)}
		for p := range partitions {
			pl := kafka.PartitionLag{Partition: int32(p), Committed: 1_000_000 + int64(p*37), Start: 0, End: 1_000_500 + int64(p*41),
				TimeLag: time.Duration(1000+p*13) * time.Millisecond, Member: fmt.Sprintf("consumer-%d@10.0.%d.%d", p%5, g%250, p%5)}
			pl.Lag = pl.End - pl.Committed
			t.Lag += pl.Lag
			t.MaxTimeLag = max(t.MaxTimeLag, pl.TimeLag)
			t.Partitions = append(t.Partitions, pl)
		}
		kg.Topics, kg.TotalLag, kg.MaxTimeLag = []kafka.TopicLag{t}, t.Lag, t.MaxTimeLag
		snap.Groups = append(snap.Groups, kg)
	}
	return snap
}

// groupsServer is the console's server with one cluster, main, whose snapshot is snap.
func groupsServer(t *testing.T, snap lag.Snapshot) *httptest.Server {
	t.Helper()
	cfg, deps, _ := testDeps(t, authYAML(t, "basic", ""))
	deps.Kafka, deps.Snapshot = []handlers.KafkaCluster{namedCluster{name: "main"}}, memSnapshots{snap}
	e, err := New(deps, Options{RequestTimeout: 10 * time.Second, Version: "test", Auth: cfg.Auth})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv
}

// TestGroupsAPIBenchmark measures GET /api/v1/kafka/{cluster}/groups at 200 groups × 50
// partitions through the whole server (auth, middleware, JSON, gzip), served from memory.
// Run: REDRIVE_BENCH=1 go test ./web -run TestGroupsAPIBenchmark -v -count=1
func TestGroupsAPIBenchmark(t *testing.T) {
	benchtest.Require(t)
	srv := groupsServer(t, bigSnapshot(200, 50))

	get := func(cl *http.Client, gz bool) (int, time.Duration) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/kafka/main/groups", nil)
		req.Header.Set("Authorization", "Bearer tok-viewer")
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		start := time.Now()
		resp, err := cl.Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return int(n), time.Since(start)
	}
	run := func(readers int, gz bool) (p50, p99 time.Duration, bytes int) {
		const perReader = 60
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		for range readers {
			wg.Go(func() {
				cl := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 8}}
				get(cl, gz) // warm the connection
				for range perReader {
					n, d := get(cl, gz)
					mu.Lock()
					lat, bytes = append(lat, d), n
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(lat)
		return lat[len(lat)/2], lat[len(lat)*99/100], bytes
	}
	t.Logf("| readers | encoding | p50 | p99 | bytes on the wire |")
	t.Logf("|---|---|---|---|---|")
	for _, readers := range []int{1, 8} {
		for _, gz := range []bool{false, true} {
			p50, p99, n := run(readers, gz)
			enc := "identity"
			if gz {
				enc = "gzip"
			}
			t.Logf("| %d | %s | %.1f ms | %.1f ms | %d |", readers, enc, float64(p50.Microseconds())/1000, float64(p99.Microseconds())/1000, n)
		}
	}
}
