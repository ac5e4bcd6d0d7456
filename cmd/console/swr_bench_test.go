package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/benchtest"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
)

// TestGroupsReadersDuringResamples is issue 38's first row through the whole server: 8 readers of
// GET /api/v1/kafka/main/groups (identity, closed loop, 15 s each way) on 200 groups × 50
// partitions, sampler.min_refresh 2s, so a re-sample starts every 2 s while they read. Both ways in
// one run, alternating, each a console of its own over the same Kafka: "wait" is
// sampler.max_serve_age = min_refresh (every read that starts a re-sample waits for it, the
// behaviour before), "swr" the default (stale while revalidate); the control takes no re-sample
// while they read (min_refresh = interval). The floors serve the console's last answer as a static
// file from the same CPUs, a bare net/http server and (REDRIVE_BENCH_NGINX, its path) nginx: what
// the machine itself gives these readers.
//
// As the issue measured it, the console is the binary as shipped, in a process of its own, and
// Kafka (kfake, built without -race) another: the readers alone run in this test's process. With
// REDRIVE_BENCH_INPROCESS=1 all three share this process, and its garbage collector: kfake's
// answers to every re-sample's 10,000-partition requests are then collected among the console's
// reads. With REDRIVE_BENCH_SERVER_CPUS (a CPU list, e.g. 0) each console under test, Redrive's
// or Redpanda Console, runs on those CPUs and the readers and Kafka on the others, as when the
// console has a host of its own (benchtest.CPUsOf).
//
//	REDRIVE_BENCH=1 REDRIVE_TEST_PG_DSN=… go test ./cmd/console -run TestGroupsReadersDuringResamples -v -count=1
func TestGroupsReadersDuringResamples(t *testing.T) {
	benchtest.Require(t)
	const (
		readers = 8
		span    = 15 * time.Second
	)
	inProcess := os.Getenv("REDRIVE_BENCH_INPROCESS") != ""
	serverCPUs, restCPUs, split := benchtest.CPUsOf(t, "REDRIVE_BENCH_SERVER_CPUS")
	pinServer := func(pid int) {
		if split {
			benchtest.Pin(t, serverCPUs, pid)
		}
	}
	if split {
		if inProcess {
			t.Fatal("REDRIVE_BENCH_SERVER_CPUS needs the console in a process of its own: unset REDRIVE_BENCH_INPROCESS")
		}
		benchtest.Pin(t, restCPUs, os.Getpid()) // before Kafka starts: its process inherits it
		t.Logf("each console on CPU %s; the readers and Kafka on CPU %s", benchtest.CPUList(serverCPUs), benchtest.CPUList(restCPUs))
	}
	var addr, bin string
	if inProcess {
		addr = startKafka(t, groupsTopics()).Addrs()[0]
	} else {
		addr = kfaketest.External(t, groupsTopics())
		bin = shippedConsole(t)
	}
	fillGroups(t, addr)

	// measure runs the readers against url for span and logs their latencies and the server's CPU
	// (serverCPU nil: the server runs in this process, whose garbage collector is logged instead).
	measure := func(name, url string, serverCPU func() float64) {
		get := func(hc *http.Client) time.Duration {
			start := time.Now()
			resp, err := hc.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			return time.Since(start)
		}
		var mu sync.Mutex
		var lat []time.Duration
		gcBefore := readGC()
		var cpuBefore float64
		if serverCPU != nil {
			cpuBefore = serverCPU()
		}
		stop := time.Now().Add(span)
		var wg sync.WaitGroup
		for range readers {
			wg.Go(func() {
				// A 256 KiB read buffer, as curl's or a browser's: with the transport's 4 KiB one each
				// 1.4 MB answer took ~350 read syscalls, and the measuring client used more of the
				// 2 cores than the console it measured.
				hc := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: readers, ReadBufferSize: 256 << 10}}
				get(hc) // warm the connection
				var mine []time.Duration
				for time.Now().Before(stop) {
					mine = append(mine, get(hc))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		gcAfter := readGC()
		if serverCPU == nil {
			t.Logf("GC %s (the whole process: kfake, the console, the readers): %.0f cycles, %.0f MB allocated, %.2f s GC CPU", name, gcAfter[0]-gcBefore[0], float64(gcAfter[1]-gcBefore[1])/1e6, gcAfter[2]-gcBefore[2])
		} else {
			t.Logf("%s: the server's process %.2f s CPU; the readers' GC %.0f cycles, %.0f MB allocated", name, serverCPU()-cpuBefore, gcAfter[0]-gcBefore[0], float64(gcAfter[1]-gcBefore[1])/1e6)
		}
		slices.Sort(lat)
		p50, p99, mx := lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
		t.Logf("| %s | %d | %.1f ms | %.1f ms | %.0f ms | %.1f |", name, len(lat), msec(p50), msec(p99), msec(mx), float64(p99)/float64(p50))
	}

	var answer []byte // the last way's answer, which the floors serve as a file
	run := func(name, minRefresh, maxServeAge string) {
		cfg := fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
kafka: [{name: main, brokers: [%q]}]
sampler: {interval: 120s, min_refresh: %s, max_serve_age: %s}
`, pgtest.NewDatabase(t), addr, minRefresh, maxServeAge)
		var base string
		var p *consoleProcess
		if inProcess {
			base = startConsole(t, cfg)
		} else {
			p = newProcess(t, cfg)
			p.bin = bin
			p.start()
			pinServer(p.cmd.Process.Pid)
			base = p.base
		}
		waittestFor(t, time.Minute, "the first sample", func() bool {
			r := do(t, nil, "GET", base+"/api/v1/kafka/main/groups", "", "")
			return r.status == 200 && len(decode[apiGroups](t, r).Groups) == lagGroups
		})
		var cpu func() float64
		if p != nil {
			cpu = func() float64 { return benchtest.ProcCPU(p.cmd.Process.Pid) }
		}
		measure(name, base+"/api/v1/kafka/main/groups", cpu)
		answer = []byte(do(t, nil, "GET", base+"/api/v1/kafka/main/groups", "", "").body)
		if p != nil {
			p.kill() // its sampler's next round would land in the next way's span
		}
	}
	// peer is Redpanda Console (REDRIVE_BENCH_CONSOLE_BIN, its backend's cmd/api built from
	// source) over the same Kafka: GET /api/consumer-groups describes every group and reads its
	// offsets and the partitions' end offsets at each request, with the lag of each.
	peer := func(bin string) {
		url, cmd := startPeerConsole(t, bin, addr)
		defer func() { _ = cmd.Process.Kill() }() // the cleanup waits for it
		pinServer(cmd.Process.Pid)
		url += "/api/consumer-groups"
		waittestFor(t, time.Minute, "Redpanda Console lists the groups", func() bool {
			r := doRaw("GET", url, "", "")
			return r.status == 200 && strings.Count(string(r.body), `"groupId"`) >= lagGroups
		})
		measure("Redpanda Console", url, func() float64 { return benchtest.ProcCPU(cmd.Process.Pid) })
	}
	// floor serves the console's last answer as a static file (startFileServer, startNginx), on the
	// console's CPUs, to the same readers: what the machine gives them, whatever the server does.
	floor := func(name string, start func(t *testing.T, file string) (string, *exec.Cmd)) {
		file := filepath.Join(t.TempDir(), "groups.json")
		mustDo(t, os.WriteFile(file, answer, 0o600))
		url, cmd := start(t, file)
		defer func() { _ = cmd.Process.Kill() }() // the cleanup waits for it
		pinServer(cmd.Process.Pid)
		time.Sleep(2 * time.Second) // a Go server's GOMAXPROCS follows its affinity within a second
		measure(name, url, func() float64 { return benchtest.ProcCPU(cmd.Process.Pid) })
	}
	nginx := os.Getenv("REDRIVE_BENCH_NGINX")
	t.Logf("| way | reads | p50 | p99 | max | p99/p50 |")
	t.Logf("|---|---|---|---|---|---|")
	peerBin := os.Getenv("REDRIVE_BENCH_CONSOLE_BIN")
	for range 2 {
		run("wait (max_serve_age = min_refresh)", "2s", "2s")
		run("swr (max_serve_age default, 240s)", "2s", "0s")
		run("control: no re-sample (min_refresh = interval)", "120s", "0s")
		if !inProcess {
			floor("floor: net/http writes the answer as a file", startFileServer)
			if nginx != "" {
				floor("floor: nginx sends the answer as a file", func(t *testing.T, file string) (string, *exec.Cmd) { return startNginx(t, nginx, file) })
			}
		}
		if peerBin != "" {
			peer(peerBin)
		}
	}
}

func readGC() [3]float64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/allocs:bytes"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return [3]float64{float64(s[0].Value.Uint64()), float64(s[1].Value.Uint64()), s[2].Value.Float64()}
}

func msec(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// The cluster of issue 38's group rows: 200 groups, each on one of 20 topics of 50 partitions (20
// records each), committed at various offsets: 10,000 partitions with lag.
const lagGroups, lagTopics, lagPartitions = 200, 20, 50

func groupsTopics() map[string]int32 {
	ts := map[string]int32{}
	for i := range lagTopics {
		ts[fmt.Sprintf("topic-%02d", i)] = lagPartitions
	}
	return ts
}

// fillGroups writes the records and commits the groups of groupsTopics on the Kafka at addr.
func fillGroups(t *testing.T, addr string) {
	t.Helper()
	cl := kfaketest.ClientAt(t, []string{addr}, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(100_000))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for topic := range groupsTopics() {
		for p := range int32(lagPartitions) {
			for i := range 20 {
				cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d", i)}, nil)
			}
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	for g := range lagGroups {
		o := kadm.Offsets{}
		for p := range int32(lagPartitions) {
			o.AddOffset(fmt.Sprintf("topic-%02d", g%lagTopics), p, int64((g+int(p))%20), -1)
		}
		if _, err := adm.CommitOffsets(ctx, fmt.Sprintf("group-%03d", g), o); err != nil {
			t.Fatal(err)
		}
	}
}

// shippedConsole builds the console binary as it is shipped (no -race, without the tests' code)
// and returns its path.
func shippedConsole(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "console")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startPeerConsole runs Redpanda Console's backend (bin, built from source: docs/benchmarks.md)
// on a free port over the Kafka at addr until the test ends (or the caller kills it); its base
// URL and process.
func startPeerConsole(t *testing.T, bin, addr string) (base string, cmd *exec.Cmd) {
	t.Helper()
	port := freeAddr(t)[len("127.0.0.1:"):]
	cmd = exec.Command(bin)
	cmd.Env = append(os.Environ(), "KAFKA_BROKERS="+addr, "SERVER_LISTENPORT="+port, "LOGGER_LEVEL=warn")
	log, err := os.Create(filepath.Join(t.TempDir(), "console.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("Redpanda Console's log:\n%s", tail(readFile(log.Name()), 2000))
		}
	})
	return "http://127.0.0.1:" + port, cmd
}
