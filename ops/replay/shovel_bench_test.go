package replay_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/benchtest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
)

// BenchmarkRabbitReplayVsShovel measures a guarded RabbitMQ replay (the job alone, from Start to
// done: inbox check, ledger claim in PostgreSQL, publish with mandatory on a confirm channel,
// the confirms, the ledger, the DLQ acks) against the RabbitMQ Shovel moving the same number of
// messages from the DLQ to the work queue (a dynamic shovel, ack-mode on-confirm,
// src-delete-after queue-length), side by side in one run. Two more sides put the gap in scale:
// "shovel-tcp", the same shovel with both URIs naming the node's host and port, so that it is a
// TCP client as Redrive is (the plain "shovel" uses the node's in-VM connections: no AMQP framing
// either way), and "amqp091", the naive way (bareMove: a plain amqp091 client, no guarantee). The
// sides alternate, each size runs REDRIVE_BENCH_ROUNDS times (default 3), and the medians are
// reported. CPU is read from /proc/<pid>/stat: the broker's beam process (found by its AMQP port),
// this process (the console: the engine runs in it) and the PostgreSQL backends of the store's and
// the inbox's databases; the heap this process allocated (runtime/metrics: the garbage collector's
// work in the console) is reported a message. After every run an independent AMQP consumer empties
// the work queue and every id must be there exactly once, and the DLQ empty.
//
// The shovel needs the rabbitmq_shovel plugin: run it against a private node (never the shared
// test broker, whose CPU is everyone's), e.g.
//
//	go run ./cmd/devstack up --dir /tmp/bench --no-postgres --no-mariadb --no-rabbitmq4
//	source /tmp/bench/env   # REDRIVE_TEST_AMQP_URL, REDRIVE_TEST_RABBIT_MGMT_URL of that node
//	REDRIVE_BENCH_RABBIT_LOG=/tmp/bench/rabbitmq/log/rabbit.log \
//	  go test ./ops/replay/ -run '^$' -bench RabbitReplayVsShovel -benchtime 1x -timeout 60m -v
//
// REDRIVE_BENCH_RABBIT_SIZES (default 20000,100000) and REDRIVE_BENCH_ROUNDS change the sizes and
// rounds, REDRIVE_BENCH_SIDES (comma-separated) the sides; REDRIVE_BENCH_CPUPROFILE=path writes a
// CPU profile of each Redrive job (path.N); with REDRIVE_BENCH_RABBIT_LOG set, a run of Redrive's
// that adds an [error] line to the broker's log fails the benchmark. REDRIVE_BENCH_BROKER_CPUS (a
// CPU list, e.g. 0) runs the broker on those CPUs and this process and PostgreSQL on the others,
// as when each has a host of its own (benchtest.CPUsOf); REDRIVE_BENCH_HOOK names a command run
// around each measured run (hook). Without the shovel plugin the shovels are not measured.
func BenchmarkRabbitReplayVsShovel(b *testing.B) {
	sizes := []int{20_000, 100_000}
	if s := os.Getenv("REDRIVE_BENCH_RABBIT_SIZES"); s != "" {
		sizes = nil
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("REDRIVE_BENCH_RABBIT_SIZES: %q is not a positive number", f)
			}
			sizes = append(sizes, n)
		}
	}
	rounds := 3
	if s := os.Getenv("REDRIVE_BENCH_ROUNDS"); s != "" {
		var err error
		if rounds, err = strconv.Atoi(s); err != nil || rounds < 1 {
			b.Fatalf("REDRIVE_BENCH_ROUNDS: %q is not a positive number", s)
		}
	}
	allSides := []string{"redrive", "shovel", "shovel-tcp", "amqp091"}
	if s := os.Getenv("REDRIVE_BENCH_SIDES"); s != "" {
		known := allSides
		allSides = strings.Split(s, ",")
		for _, side := range allSides {
			if !slices.Contains(known, side) {
				b.Fatalf("REDRIVE_BENCH_SIDES: %q is not one of %s", side, strings.Join(known, ", "))
			}
		}
	}
	w := newRabbitWorld(b)
	base, _ := rabbittest.Env(b)
	vhostURL := benchVhostURL(b, base, w.vhost)
	beam := pidListening(b, base)
	if broker, rest, ok := benchtest.CPUsOf(b, "REDRIVE_BENCH_BROKER_CPUS"); ok {
		// Hosts of their own (benchtest.CPUsOf): the broker on these CPUs, the console (this
		// process) and PostgreSQL (its postmaster, whose new backends inherit it) on the others.
		var backend int
		if err := pgtest.Conn(b, pgtest.AdminDSN(b)).QueryRow(ctxT(b), `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
			b.Fatal(err)
		}
		postmaster := benchtest.Parent(backend)
		benchtest.Pin(b, broker, beam)
		benchtest.Pin(b, rest, append([]int{os.Getpid(), postmaster}, benchtest.Children(postmaster)...)...)
		b.Logf("the broker on CPU %s; this process (the console, the shovel's poller) and PostgreSQL on CPU %s",
			benchtest.CPUList(broker), benchtest.CPUList(rest))
	}
	_, shovelErr := rabbittest.Admin(b).ListShovels()
	shovel := shovelErr == nil
	if !shovel {
		b.Logf("the broker has no rabbitmq_shovel plugin (%v): measuring Redrive only", shovelErr)
	}
	var storeDB string
	if err := w.store.Pool().QueryRow(ctxT(b), `SELECT current_database()`).Scan(&storeDB); err != nil {
		b.Fatal(err)
	}
	pgDBs := []string{dbName(b, w.inboxDSN), storeDB}
	admin := pgtest.Conn(b, pgtest.AdminDSN(b))
	pgPIDs := func() []int {
		rows, err := admin.Query(ctxT(b), `SELECT pid FROM pg_stat_activity WHERE datname = ANY($1)`, pgDBs)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		var out []int
		for rows.Next() {
			var pid int
			if err := rows.Scan(&pid); err != nil {
				b.Fatal(err)
			}
			out = append(out, pid)
		}
		return out
	}
	e := w.engine(b)
	work(b, e)
	logPath := os.Getenv("REDRIVE_BENCH_RABBIT_LOG")

	type result struct {
		rate                  float64 // msg/s
		cpuBeam, cpuGo, cpuPG float64 // seconds
	}
	results := map[string][]result{} // "redrive 20000", "shovel 20000"
	run := 0
	for b.Loop() {
		for round := range rounds {
			for _, n := range sizes {
				sides := slices.Clone(allSides)
				if round%2 == 1 {
					slices.Reverse(sides)
				}
				for _, side := range sides {
					if strings.HasPrefix(side, "shovel") && !shovel {
						continue
					}
					run++
					prefix := fmt.Sprintf("r%d-%d", run, time.Now().UnixNano())
					death := deathOf("order.created")
					rabbittest.Fill(b, vhostURL, "orders.dlq", n, func(i int) amqp.Publishing {
						id := fmt.Sprintf("%s-%d", prefix, i)
						return amqp.Publishing{MessageId: id, ContentType: "application/json", DeliveryMode: amqp.Persistent,
							Headers: amqp.Table{"x-death": death}, Body: fmt.Appendf(nil, `{"messageId":%q,"amount":12.5}`, id)}
					})
					var planID string
					if side == "redrive" {
						plan, err := e.Plan(waitCtx(b, 5*time.Minute), "bench",
							replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: n}, replay.Filter{})
						if err != nil {
							b.Fatal(err)
						}
						planID = plan.ID
					}
					rabbittest.WaitDepth(b, w.ch, "orders.dlq", n, 5*time.Minute) // the browse's requeue done
					logFrom := logSize(logPath)
					pids := pgPIDs()
					hook(b, "start")
					before := cpuOf(beam, os.Getpid(), pids)
					start := time.Now()
					if side == "redrive" {
						if prof := os.Getenv("REDRIVE_BENCH_CPUPROFILE"); prof != "" { // the job's alone, one file per run
							f, err := os.Create(fmt.Sprintf("%s.%d", prof, run))
							if err != nil {
								b.Fatal(err)
							}
							if err := pprof.StartCPUProfile(f); err != nil {
								b.Fatal(err)
							}
							defer f.Close()
							defer pprof.StopCPUProfile() // the job's last poll has run by the time it stops, below
						}
						job, err := e.Start(ctxT(b), replay.StartRequest{PlanID: planID, Actor: access.Actor{Name: "bench"}, RatePerSecond: 1_000_000})
						if err != nil {
							b.Fatal(err)
						}
						for {
							if job, err = e.Job(ctxT(b), job.ID); err != nil {
								b.Fatal(err)
							}
							if job.Status != replay.JobPending && job.Status != replay.JobRunning {
								break
							}
							time.Sleep(benchPoll)
						}
						pprof.StopCPUProfile()
						if job.Status != replay.JobDone || job.Published != n {
							b.Fatalf("job %+v; want done with %d published", job, n)
						}
					} else if side == "amqp091" {
						bareMove(b, vhostURL, "orders.dlq", "orders.work", n)
					} else {
						uri := "amqp:///" + url.PathEscape(w.vhost)
						if side == "shovel-tcp" {
							uri = vhostURL
						}
						w.shovelVia(b, uri, "orders.dlq", "orders.work")
						waitDepthTight(b, w.ch, "orders.work", n, 5*time.Minute)
					}
					elapsed := time.Since(start)
					after := cpuOf(beam, os.Getpid(), append(pids, pgPIDs()...))
					hook(b, "stop", side)
					if strings.HasPrefix(side, "shovel") { // gone before the next fill, which it would move too
						rabbittest.WaitFor(b, time.Minute, "the shovel deletes itself", func(context.Context) bool {
							sh, err := rabbittest.Admin(b).ListShovelsIn(w.vhost)
							return err == nil && len(sh) == 0
						})
					}
					r := result{rate: float64(n) / elapsed.Seconds(), cpuBeam: after.beam - before.beam, cpuGo: after.self - before.self}
					for pid, t := range after.pg {
						r.cpuPG += t - before.pg[pid]
					}
					key := fmt.Sprintf("%s %d", side, n)
					results[key] = append(results[key], r)
					b.Logf("%-8s %7d: %8.0f msg/s in %6.2fs, CPU broker %.2fs + console %.2fs + PostgreSQL %.2fs = %.2fs; console write syscalls %d, heap allocated %.1f KiB a message",
						side, n, r.rate, elapsed.Seconds(), r.cpuBeam, r.cpuGo, r.cpuPG, r.cpuBeam+r.cpuGo+r.cpuPG, after.writes-before.writes,
						float64(after.allocated-before.allocated)/1024/float64(n))
					if side == "redrive" {
						if errs := logErrors(logPath, logFrom); len(errs) > 0 {
							b.Fatalf("the broker logged %d error(s) during a successful job, first: %s", len(errs), errs[0])
						}
					}
					countOnce(b, vhostURL, "orders.work", prefix, n)
					if d := rabbittest.Depth(b, w.ch, "orders.dlq"); d != 0 {
						b.Fatalf("%s %d: %d message(s) left in orders.dlq", side, n, d)
					}
				}
			}
		}
	}
	med := func(rs []result, f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	cpu := func(r result) float64 { return r.cpuBeam + r.cpuGo + r.cpuPG }
	for _, n := range sizes {
		rr := results[fmt.Sprintf("redrive %d", n)]
		if len(rr) == 0 {
			continue
		}
		rate, c := med(rr, func(r result) float64 { return r.rate }), med(rr, cpu)
		b.ReportMetric(rate, fmt.Sprintf("redrive-%d-msg/s", n))
		b.ReportMetric(c, fmt.Sprintf("redrive-%d-cpu-s", n))
		line := fmt.Sprintf("%7d: Redrive %.0f msg/s, CPU %.2fs (broker %.2f, console %.2f, PostgreSQL %.2f)", n, rate, c,
			med(rr, func(r result) float64 { return r.cpuBeam }), med(rr, func(r result) float64 { return r.cpuGo }),
			med(rr, func(r result) float64 { return r.cpuPG }))
		b.Logf("median of %d: %s", len(rr), line)
		for _, peer := range []string{"shovel", "shovel-tcp", "amqp091"} {
			sr := results[fmt.Sprintf("%s %d", peer, n)]
			if len(sr) == 0 {
				continue
			}
			srate, sc := med(sr, func(r result) float64 { return r.rate }), med(sr, cpu)
			b.ReportMetric(srate, fmt.Sprintf("%s-%d-msg/s", peer, n))
			b.ReportMetric(sc, fmt.Sprintf("%s-%d-cpu-s", peer, n))
			b.ReportMetric(100*rate/srate, fmt.Sprintf("redrive/%s-%d-%%", peer, n))
			b.ReportMetric(c/sc, fmt.Sprintf("cpu-redrive/%s-%d-x", peer, n))
			b.Logf("median of %d: %7d: %-10s %.0f msg/s, CPU %.2fs (broker %.2f, test process %.2f) | Redrive at %.0f%% of its pace, %.2f× its CPU",
				len(sr), n, peer, srate, sc, med(sr, func(r result) float64 { return r.cpuBeam }), med(sr, func(r result) float64 { return r.cpuGo }),
				100*rate/srate, c/sc)
		}
	}
}

// hook runs REDRIVE_BENCH_HOOK, when set, with args: "start" before each measured run and "stop"
// and the side's name after it, outside the measured window — e.g. to sample the broker's work
// per process during the run (docs/benchmarks.md: scripts/bench/broker-reductions).
func hook(tb testing.TB, args ...string) {
	tb.Helper()
	h := os.Getenv("REDRIVE_BENCH_HOOK")
	if h == "" {
		return
	}
	if out, err := exec.Command(h, args...).CombinedOutput(); err != nil {
		tb.Fatalf("REDRIVE_BENCH_HOOK %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// waitCtx is a context that ends after d or at the test's end.
func waitCtx(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// benchPoll is how often the benchmark looks whether a side is done: the job (a query to the
// store) and the shovel (a passive declare) alike, each look a cost on its side's CPU.
const benchPoll = 20 * time.Millisecond

// waitDepthTight waits, polling every benchPoll, until queue holds n ready messages.
func waitDepthTight(tb testing.TB, ch *amqp.Channel, queue string, n int, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		d := rabbittest.Depth(tb, ch, queue)
		if d == n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d messages in %s, want %d", d, queue, n)
		}
		time.Sleep(benchPoll)
	}
}

// countOnce empties queue with an AMQP consumer of its own and fails unless it held the ids
// prefix-0 … prefix-(n-1), each exactly once, and nothing else.
func countOnce(tb testing.TB, vhostURL, queue, prefix string, n int) {
	tb.Helper()
	conn, err := amqp.Dial(vhostURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		tb.Fatal(err)
	}
	if err := ch.Qos(2000, 0, false); err != nil {
		tb.Fatal(err)
	}
	ds, err := ch.Consume(queue, "bench-count", false, true, false, false, nil)
	if err != nil {
		tb.Fatal(err)
	}
	seen := make([]int, n)
	got, other := 0, 0
	idle := time.NewTimer(time.Minute)
	for done := false; !done; {
		select {
		case d := <-ds:
			got++
			i, err := strconv.Atoi(strings.TrimPrefix(d.MessageId, prefix+"-"))
			if err != nil || !strings.HasPrefix(d.MessageId, prefix+"-") || i < 0 || i >= n {
				other++
			} else {
				seen[i]++
			}
			if got%1000 == 0 || got >= n {
				if err := d.Ack(true); err != nil {
					tb.Fatal(err)
				}
			}
			wait := time.Minute
			if got >= n {
				wait = 300 * time.Millisecond // anything more would be a duplicate
			}
			idle.Reset(wait)
		case <-idle.C:
			done = true
		}
	}
	if got%1000 != 0 && got < n { // unacked tail: leave nothing behind
		_ = ch.Cancel("bench-count", false)
	}
	missing, twice := 0, 0
	for _, c := range seen {
		switch {
		case c == 0:
			missing++
		case c > 1:
			twice++
		}
	}
	if missing > 0 || twice > 0 || other > 0 || got != n {
		tb.Fatalf("%s: %d messages read, %d ids missing, %d more than once, %d not of this run; want each of %d once",
			queue, got, missing, twice, other, n)
	}
}

func benchVhostURL(tb testing.TB, base, vhost string) string {
	tb.Helper()
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path, u.RawPath = "/"+vhost, "/"+url.PathEscape(vhost)
	return u.String()
}

func dbName(tb testing.TB, dsn string) string {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// pidListening finds the process listening on amqpURL's port on this machine (the broker's beam):
// the socket's inode in /proc/net/tcp, then the process holding it.
func pidListening(tb testing.TB, amqpURL string) int {
	tb.Helper()
	u, err := url.Parse(amqpURL)
	if err != nil {
		tb.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(u.Host)
	port, _ := strconv.Atoi(p)
	var inode string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, _ := os.ReadFile(f)
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "0A" { // LISTEN
				continue
			}
			if i := strings.LastIndexByte(fs[1], ':'); i >= 0 {
				if v, err := strconv.ParseInt(fs[1][i+1:], 16, 32); err == nil && int(v) == port {
					inode = fs[9]
				}
			}
		}
	}
	if inode == "" {
		tb.Fatalf("no process listens on port %d here: the benchmark reads the broker's CPU, so it runs on the broker's machine", port)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		if l, err := os.Readlink(fd); err == nil && l == "socket:["+inode+"]" {
			pid, _ := strconv.Atoi(strings.Split(fd, "/")[2])
			return pid
		}
	}
	tb.Fatalf("no process holds the socket listening on port %d", port)
	return 0
}

type cpuTimes struct {
	beam, self float64
	pg         map[int]float64
	writes     int64  // this process's write syscalls (/proc/self/io syscw)
	allocated  uint64 // bytes this process has allocated on the heap: the garbage collector's work
}

func cpuOf(beam, self int, pg []int) cpuTimes {
	t := cpuTimes{beam: benchtest.ProcCPU(beam), self: benchtest.ProcCPU(self), pg: map[int]float64{}, writes: selfWrites(), allocated: heapAllocated()}
	for _, pid := range pg {
		t.pg[pid] = benchtest.ProcCPU(pid)
	}
	return t
}

// heapAllocated is how many bytes this process has allocated on the heap since it started
// (runtime/metrics, which reads it without stopping the world as ReadMemStats would).
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// selfWrites is how many write syscalls this process has made (syscw in /proc/self/io); 0 where
// the kernel does not say.
func selfWrites() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func logSize(path string) int64 {
	if path == "" {
		return 0
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logErrors is the [error] lines the broker's log gained since offset from.
func logErrors(path string, from int64) []string {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(from, 0); err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "[error]") {
			out = append(out, sc.Text())
		}
	}
	return out
}

// bareMove is the naive way, for scale: a plain amqp091 client (its own connection, none of
// Redrive's) moving n messages from one queue to another as a hand-written mover would — consume
// with a prefetch of 2,000, republish each to the default exchange (properties and headers as
// they came, persistent, mandatory) on a confirm channel, and every 1,000 wait for the confirms,
// then ack the DLQ up to the last one (multiple). No ledger, no inbox, no plan: what a TCP client
// costs the broker and itself before any guarantee.
func bareMove(tb testing.TB, vhostURL, from, to string, n int) {
	tb.Helper()
	conn, err := amqp.Dial(vhostURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	in, err := conn.Channel()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := conn.Channel()
	if err != nil {
		tb.Fatal(err)
	}
	if err := in.Qos(2000, 0, false); err != nil {
		tb.Fatal(err)
	}
	if err := out.Confirm(false); err != nil {
		tb.Fatal(err)
	}
	returns := out.NotifyReturn(make(chan amqp.Return, 1))
	ds, err := in.Consume(from, "bench-bare", false, false, false, false, nil)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := waitCtx(tb, 5*time.Minute)
	const batch = 1000
	confirms := make([]*amqp.DeferredConfirmation, 0, batch)
	for moved := 0; moved < n; {
		var last amqp.Delivery
		confirms = confirms[:0]
		for len(confirms) < min(batch, n-moved) {
			select {
			case d := <-ds:
				c, err := out.PublishWithDeferredConfirmWithContext(ctx, "", to, true, false, amqp.Publishing{
					Headers: d.Headers, ContentType: d.ContentType, ContentEncoding: d.ContentEncoding, DeliveryMode: amqp.Persistent,
					Priority: d.Priority, CorrelationId: d.CorrelationId, ReplyTo: d.ReplyTo, Expiration: d.Expiration,
					MessageId: d.MessageId, Timestamp: d.Timestamp, Type: d.Type, UserId: d.UserId, AppId: d.AppId, Body: d.Body})
				if err != nil {
					tb.Fatal(err)
				}
				confirms = append(confirms, c)
				last = d
			case <-ctx.Done():
				tb.Fatalf("bare mover: %d of %d moved: %v", moved, n, ctx.Err())
			}
		}
		for _, c := range confirms {
			if ok, err := c.WaitContext(ctx); err != nil || !ok {
				tb.Fatalf("bare mover: a publish not confirmed (%v)", err)
			}
		}
		select {
		case r := <-returns:
			tb.Fatalf("bare mover: %s returned (%s)", r.MessageId, r.ReplyText)
		default:
		}
		if err := last.Ack(true); err != nil {
			tb.Fatal(err)
		}
		moved += len(confirms)
	}
	if err := in.Cancel("bench-bare", false); err != nil {
		tb.Fatal(err)
	}
}
