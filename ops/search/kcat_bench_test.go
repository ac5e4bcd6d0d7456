package search

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kafka"
)

// TestScanVsKcat is the benchmark of docs/benchmarks.md (one run, not part of make test): a
// filtered scan of one partition of REDRIVE_KCAT_RECORDS (default 1,000,000) records against
// kcat -C -e reading the same partition to /dev/null, and the heap while the same records are
// encoded as an export would. Run: REDRIVE_KCAT=1 go test ./ops/search -run TestScanVsKcat -v
func TestScanVsKcat(t *testing.T) {
	if os.Getenv("REDRIVE_KCAT") == "" {
		t.Skip("set REDRIVE_KCAT=1 (needs kcat)")
	}
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("REDRIVE_KCAT_RECORDS")); err == nil {
		n = v
	}
	w := newKafkaWorld(t, 1)
	ctx := context.Background()
	start := time.Now()
	produceDLT(t, w, n)
	t.Logf("produced %d records in %v", n, time.Since(start))
	brokers := w.prod.OptValue(kgo.SeedBrokers).([]string)

	// Each run starts after a GC, so that one run's garbage is not the next one's cost, and
	// reports the CPU it took as well as its time: the machine is shared, and CPU seconds say
	// what the work costs whatever the load. kcat's CPU is its own plus kfake's serving it, in
	// this process.
	kcat := func() (time.Duration, time.Duration) {
		runtime.GC()
		cmd := exec.Command("kcat", "-b", brokers[0], "-C", "-t", "dlt", "-p", "0", "-o", "beginning", "-e", "-q")
		devnull, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		defer devnull.Close()
		cmd.Stdout = devnull
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		c0 := processCPU()
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("kcat: %v %s", err, stderr.String())
		}
		return time.Since(t0), processCPU() - c0 + cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	p := int32(0)
	scan := func(expr string) (time.Duration, time.Duration, Result) {
		runtime.GC()
		c0 := processCPU()
		t0 := time.Now()
		res, err := ScanKafka(ctx, w.c, Query{Topic: "dlt", Partition: &p, Order: "oldest", Filter: mustCompile(t, Kafka, expr),
			Each: func(kafka.Record) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		if res.Scanned != int64(n) {
			t.Fatalf("scanned %d", res.Scanned)
		}
		return time.Since(t0), processCPU() - c0, res
	}
	kcat() // warm the broker's path once
	rounds := 5
	if v, err := strconv.Atoi(os.Getenv("REDRIVE_KCAT_ROUNDS")); err == nil {
		rounds = v
	}
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	// Each filter: rounds of kcat then the scan, alternating, and the medians of each side.
	for _, expr := range []string{`key == "order-123"`, `headers["tenant"] == "3" && dead_letter.exception_type.endsWith("TimeoutException")`,
		`value.orderId == 999999`} {
		var kd, kcs, sd, scs []time.Duration
		var matched int64
		for range rounds {
			k, kc := kcat()
			d, dc, res := scan(expr)
			kd, kcs, sd, scs, matched = append(kd, k), append(kcs, kc), append(sd, d), append(scs, dc), res.Matched
		}
		k, kc, d, dc := med(kd), med(kcs), med(sd), med(scs)
		t.Logf("BENCH records=%d filter=%q medians of %d: kcat=%v (%.0f rec/s, cpu %v) scan=%v (%.0f rec/s, cpu %v) matched=%d speed=%.0f%% of kcat, cpu %.2fx kcat's",
			n, expr, rounds, k.Round(time.Millisecond), float64(n)/k.Seconds(), kc.Round(time.Millisecond), d.Round(time.Millisecond),
			float64(n)/d.Seconds(), dc.Round(time.Millisecond), matched, 100*k.Seconds()/d.Seconds(), dc.Seconds()/kc.Seconds())
		t.Logf("BENCH rounds: kcat %v cpu %v; scan %v cpu %v", kd, kcs, sd, scs)
		if l, err := os.ReadFile("/proc/loadavg"); err == nil {
			t.Logf("BENCH load average: %s", bytes.TrimSpace(l))
		}
	}

	// Memory during an export-like pass: every record encoded to JSON and written (to io.Discard).
	var peak, samples atomic.Uint64
	var after100k uint64
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if live := liveHeap(); live > peak.Load() {
					peak.Store(live)
				}
				samples.Add(1)
			}
		}
	}()
	runtime.GC()
	base := liveHeap()
	enc := json.NewEncoder(io.Discard)
	written := 0
	t0 := time.Now()
	_, err := ScanKafka(ctx, w.c, Query{Topic: "dlt", Partition: &p, Order: "oldest", Each: func(r kafka.Record) error {
		written++
		if written == 100_000 {
			after100k = liveHeap()
		}
		return enc.Encode(map[string]any{"partition": r.Partition, "offset": r.Offset, "key": string(r.Key), "value": string(r.Value),
			"headers": r.Headers, "dead_letter": r.DeadLetter})
	}})
	close(done)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("BENCH export-like pass of %d records in %v: live heap (after each GC, kfake's own data included) before %.1f MiB, after 100k records %.1f MiB, peak %.1f MiB (%d samples)",
		written, time.Since(t0).Round(time.Millisecond), mib(base), mib(after100k), mib(peak.Load()), samples.Load())
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// liveHeap is the heap the last GC found live: what the process keeps, not its garbage.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
