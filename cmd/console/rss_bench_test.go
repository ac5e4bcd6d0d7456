package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/benchtest"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// TestSteadyStateRSS measures the console process's resident memory once its sampler holds a full
// status window of 200 groups × 50 partitions: 62 samples of each partition, as the defaults keep
// (stop_after 15 m + 2 intervals at 15 s), reached here in about a minute with a 1 s interval and
// stop_after 60 s. Every partition lags (its time lag is read each round). Run:
// REDRIVE_BENCH=1 go test ./cmd/console -run TestSteadyStateRSS -v -count=1
func TestSteadyStateRSS(t *testing.T) {
	benchtest.Require(t)
	const groups, partitions = 200, 50
	k := startKafka(t, map[string]int32{"orders": partitions})
	ctx := waittest.Context(t, 5*time.Minute)
	cl := kfaketest.Client(t, k.Cluster(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := range int32(partitions) {
		for i := range 20 {
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: p, Value: []byte(fmt.Sprintf(`{"orderId":%d}`, i)),
				Timestamp: time.Now().Add(-time.Duration(20-i) * time.Minute)})
		}
	}
	mustDo(t, cl.ProduceSync(ctx, recs...).FirstErr())
	adm := kadm.NewClient(cl)
	for g := range groups {
		offs := kadm.Offsets{}
		for p := range int32(partitions) {
			offs.Add(kadm.Offset{Topic: "orders", Partition: p, At: int64(1 + (g+int(p))%15), LeaderEpoch: -1})
		}
		if _, err := adm.CommitOffsets(ctx, fmt.Sprintf("service-%03d", g), offs); err != nil {
			t.Fatal(err)
		}
	}

	if os.Getenv("REDRIVE_BENCH_GCTRACE") != "" {
		t.Setenv("GODEBUG", "gctrace=1") // the console's log then shows the live heap at each GC
	}
	p := newProcess(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
sampler: {interval: 1s}
kafka: [{name: main, brokers: [%q], lag: {window: 20s, stop_after: 60s}}]
`, pgtest.NewDatabase(t), k.Addrs()[0]))
	// The console binary as it is shipped, not this test binary acting as one: its code pages are
	// part of the RSS, and the test binary carries the tests' code too (chromedp, kfake's tests).
	p.bin = shippedConsole(t)
	p.start()
	pid := p.cmd.Process.Pid

	// 62 samples fill the window; a little more for the sampler's first rounds.
	fill := 75 * time.Second
	start := time.Now()
	var rss []string
	for time.Since(start) < fill+15*time.Second {
		time.Sleep(time.Second)
		if time.Since(start) > fill {
			rss = append(rss, procStatus(pid, "VmRSS"))
		}
	}
	r := doRaw("GET", p.base+"/api/v1/kafka/main/groups", "", "")
	if r.status != 200 || len(r.body) < 1_000_000 {
		t.Fatalf("groups: %d, %d bytes", r.status, len(r.body))
	}
	if os.Getenv("REDRIVE_BENCH_GCTRACE") != "" {
		b, _ := os.ReadFile(p.log.Name())
		var gcs []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "gc ") {
				gcs = append(gcs, l)
			}
		}
		t.Logf("the last GCs:\n%s", strings.Join(gcs[max(0, len(gcs)-6):], "\n"))
	}
	// "NN.N MiB" strings: sorted by their number (as text, "106.0" would sort before "98.1").
	sort.Slice(rss, func(i, j int) bool { return mib(rss[i]) < mib(rss[j]) })
	t.Logf("steady-state RSS with a full window of %d groups × %d partitions: median %s, max %s; peak (VmHWM) %s; now anonymous %s, file-backed (the binary's pages) %s",
		groups, partitions, rss[len(rss)/2], rss[len(rss)-1], procStatus(pid, "VmHWM"), procStatus(pid, "RssAnon"), procStatus(pid, "RssFile"))
}

// mib reads procStatus's "NN.N MiB".
func mib(s string) float64 {
	v, _ := strconv.ParseFloat(strings.TrimSuffix(s, " MiB"), 64)
	return v
}
