package replay_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/replay"
)

// BenchmarkPlanKafka makes a plan of the first 100,000 and of 1,000,000 records of a DLT (kfake
// in its own process) in the background, as POST /api/v1/replays/plan does, polling it as a
// client would every 200 ms: plan-ms is until it is ready, slowest-poll-ms the slowest read of it
// meanwhile. KcatRead reads the same records with kcat -C -e (the floor: reading alone, nothing
// decided or stored), in the same run. Run with -benchtime=1x.
func BenchmarkPlanKafka(b *testing.B) {
	const n = 1_000_000
	addr := externalKafka(b)
	w := newWorldOn(b, addr)
	for i := 0; i < n; i += 10_000 {
		recs := make([]*kgo.Record, 0, 10_000)
		for j := i; j < i+10_000; j++ {
			recs = append(recs, benchRecord(j))
		}
		if err := w.client.ProduceSync(ctxT(b), recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	e := w.engine(b, "bench")
	for _, size := range []int{100_000, n} {
		last := int64(size/2 - 1) // the records alternate between the 2 partitions
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			for b.Loop() {
				ctx := ctxT(b)
				start := time.Now()
				pl, err := e.StartPlan(ctx, "bench", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT", ToOffset: &last}, replay.Filter{})
				if err != nil {
					b.Fatal(err)
				}
				var slowest time.Duration
				for {
					t := time.Now()
					p, err := e.LoadPlan(ctx, pl.ID)
					slowest = max(slowest, time.Since(t))
					if err != nil {
						b.Fatal(err)
					}
					if p.Ready() {
						if p.Total != size {
							b.Fatalf("plan of %d, want %d", p.Total, size)
						}
						break
					}
					if p.State != replay.PlanPlanning {
						b.Fatalf("plan %s: %s", p.State, p.Error)
					}
					time.Sleep(200 * time.Millisecond)
				}
				took := time.Since(start)
				b.ReportMetric(took.Seconds()*1000, "plan-ms")
				b.ReportMetric(float64(size)/took.Seconds(), "msgs/s")
				b.ReportMetric(slowest.Seconds()*1000, "slowest-poll-ms")
			}
		})
		b.Run("KcatRead/"+strconv.Itoa(size), func(b *testing.B) {
			for b.Loop() {
				start := time.Now()
				// -c: exactly size records, whichever partition they come from (kcat reads both at once).
				out, err := exec.Command("kcat", "-b", addr, "-C", "-t", "orders.DLT", "-o", "beginning", "-e", "-q",
					"-c", strconv.Itoa(size), "-f", "%o\n").Output()
				if err != nil {
					b.Fatalf("kcat: %v", err)
				}
				took := time.Since(start)
				if got := strings.Count(string(out), "\n"); got != size {
					b.Fatalf("kcat read %d records, want %d", got, size)
				}
				b.ReportMetric(took.Seconds()*1000, "read-ms")
				b.ReportMetric(float64(size)/took.Seconds(), "msgs/s")
			}
		})
	}
}
