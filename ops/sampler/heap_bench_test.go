package sampler

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/benchtest"
)

// TestWindowHeap measures the live heap the leader holds for a full status window of 200 groups ×
// 50 partitions: 64 samples at the default 15 s interval (stop_after 15 m + 2 intervals), on a
// stepped clock so that it takes seconds. REDRIVE_HEAP_PROFILE=<file> writes a heap profile.
// Run: REDRIVE_BENCH=1 go test ./ops/sampler -run TestWindowHeap -v -count=1
func TestWindowHeap(t *testing.T) {
	benchtest.Require(t)
	ctx := context.Background()
	br := benchCluster(t)
	clk := newClock()
	s := newSampler(t, openStore(t, testDSN(t)), clk, nil, KafkaSource{Cluster: br.cluster(t, 30*time.Second)})
	live := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	if err := s.SampleOnce(ctx); err != nil {
		t.Fatal(err)
	}
	one := live()
	for range 64 {
		sampleAfter(t, ctx, s, clk, 15*time.Second)
	}
	full := live()
	if f := os.Getenv("REDRIVE_HEAP_PROFILE"); f != "" {
		out, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		if err := pprof.WriteHeapProfile(out); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("live heap of the test process (kfake included) after one sample %.1f MiB, with a full window %.1f MiB: the window costs %.1f MiB",
		float64(one)/(1<<20), float64(full)/(1<<20), (float64(full)-float64(one))/(1<<20))
	runtime.KeepAlive(s)
}
