package kafka

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAcrossPageVsKcat is the benchmark of docs/benchmarks.md's DLT page (issue 38; one run, not
// part of make test): the first page of 500 records of a dead-letter topic across its
// REDRIVE_PAGE_PARTITIONS (default 4) partitions, RecordsAcross as GET
// /api/v1/kafka/{cluster}/topics/{topic}/records and the DLT page read it with no partition
// chosen, against kcat reading the same 500 records (the newest 500/partitions of each partition)
// with a short fetch wait, process start included; and kcat -L alone (its start, connection and
// metadata). Alternating, REDRIVE_PAGE_ROUNDS (default 7) rounds, medians; CPU seconds from
// getrusage (kcat's own plus this process's, where kfake serves it). Run:
// REDRIVE_KCAT=1 go test ./ops/kafka -run TestAcrossPageVsKcat -v
func TestAcrossPageVsKcat(t *testing.T) {
	if os.Getenv("REDRIVE_KCAT") == "" {
		t.Skip("set REDRIVE_KCAT=1 (needs kcat)")
	}
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed")
	}
	parts, rounds := int32(4), 7
	if v, err := strconv.Atoi(os.Getenv("REDRIVE_PAGE_PARTITIONS")); err == nil {
		parts = int32(v)
	}
	if v, err := strconv.Atoi(os.Getenv("REDRIVE_PAGE_ROUNDS")); err == nil {
		rounds = v
	}
	const perPartition, limit = 20_000, 500
	f := newFake(t)
	f.topic(t, "dlt", parts)
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	for i := range perPartition * int(parts) {
		r := &kgo.Record{Topic: "dlt", Partition: int32(i) % parts, Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			Key:   fmt.Appendf(nil, "order-%d", i),
			Value: fmt.Appendf(nil, `{"orderId":%d,"tenant":%d,"status":"FAILED","note":"payment gateway timed out"}`, i, i%7),
			Headers: []kgo.RecordHeader{{Key: "tenant", Value: fmt.Appendf(nil, "%d", i%7)},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("java.util.concurrent.TimeoutException")},
				{Key: "kafka_dlt-original-topic", Value: []byte("orders")}}}
		f.prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := f.prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	broker := f.broker.ListenAddrs()[0]
	each := limit / int(parts)

	run := func(args ...string) (time.Duration, time.Duration, []byte) {
		runtime.GC()
		cmd := exec.Command(kcat, args...)
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		c0 := selfCPU()
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("kcat %v: %v %s", args, err, stderr.String())
		}
		return time.Since(t0), selfCPU() - c0 + cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), out.Bytes()
	}
	kcatPage := func() (time.Duration, time.Duration) {
		d, c, out := run("-b", broker, "-C", "-t", "dlt", "-o", fmt.Sprint(-each), "-e", "-q", "-f", "%o\n",
			"-X", "fetch.wait.max.ms=10")
		if n := bytes.Count(out, []byte("\n")); n != limit {
			t.Fatalf("kcat read %d records, want %d", n, limit)
		}
		return d, c
	}
	kcatStart := func() (time.Duration, time.Duration) {
		d, c, _ := run("-b", broker, "-L", "-t", "dlt", "-q")
		return d, c
	}
	page := func() (time.Duration, time.Duration) {
		runtime.GC()
		c0 := selfCPU()
		t0 := time.Now()
		p, err := f.c.RecordsAcross(ctx, AcrossQuery{Topic: "dlt", Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		d := time.Since(t0)
		if len(p.Records) != limit || p.Records[0].Offset != perPartition-1 || p.Records[0].DeadLetter == nil {
			t.Fatalf("page of %d records from %v", len(p.Records), p.Records[0].Offset)
		}
		return d, selfCPU() - c0
	}
	// before is how RecordsAcross read a page before issue 38: the partitions listed, then each
	// partition's part read by Records (its own listing and consumer), eight at a time, merged.
	before := func() (time.Duration, time.Duration) {
		runtime.GC()
		c0 := selfCPU()
		t0 := time.Now()
		ps, err := f.c.Partitions(ctx, "dlt")
		if err != nil {
			t.Fatal(err)
		}
		lists, more := map[int32][]Record{}, map[int32]*int64{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for _, pr := range ps {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				pg, err := f.c.Records(ctx, RecordQuery{Topic: "dlt", Partition: pr.Partition, Limit: min(limit, 5000/len(ps))})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				lists[pr.Partition], more[pr.Partition] = pg.Records, pg.Next
				mu.Unlock()
			})
		}
		wg.Wait()
		recs, _ := mergeAcross(lists, more, limit, "newest")
		d := time.Since(t0)
		if len(recs) != limit {
			t.Fatalf("before: %d records", len(recs))
		}
		return d, selfCPU() - c0
	}
	page()
	kcatPage()
	before()
	var pd, pc, kd, kc, sd, sc, bd, bc []time.Duration
	for range rounds {
		d, c := page()
		pd, pc = append(pd, d), append(pc, c)
		d, c = before()
		bd, bc = append(bd, d), append(bc, c)
		d, c = kcatPage()
		kd, kc = append(kd, d), append(kc, c)
		d, c = kcatStart()
		sd, sc = append(sd, d), append(sc, c)
	}
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	t.Logf("BENCH page of %d across %d partitions (%d records each), medians of %d alternating rounds: page %s (cpu %s) | kcat -o -%d -e fetch.wait.max.ms=10 %s (cpu %s) | kcat -L %s (cpu %s) | page/kcat %.2fx, cpu %.2fx",
		limit, parts, perPartition, rounds, ms(med(pd)), ms(med(pc)), each, ms(med(kd)), ms(med(kc)), ms(med(sd)), ms(med(sc)),
		med(pd).Seconds()/med(kd).Seconds(), med(pc).Seconds()/med(kc).Seconds())
	t.Logf("BENCH before (a listing and a consumer per partition): %s (cpu %s), %.2fx kcat", ms(med(bd)), ms(med(bc)),
		med(bd).Seconds()/med(kd).Seconds())
	t.Logf("BENCH rounds: page %v; before %v; kcat %v; kcat -L %v", pd, bd, kd, sd)
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		t.Logf("BENCH load average: %s", bytes.TrimSpace(l))
	}
}

// selfCPU is the CPU time this process has used, user and system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
