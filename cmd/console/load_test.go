package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/cmd/internal/demo"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/waittest"
)

// envLoadDuration sets how long the load test runs (default 5s inside make test; `make load` runs 30s).
const envLoadDuration = "REDRIVE_LOAD_DURATION"

// The bounded load test of issue 11: 20 clients, each sending one request after another for the
// duration, over the main pages and the JSON API of a console that runs as its own process over
// every kind of source (outbox, Kafka on kfake, a RabbitMQ vhost with live traffic) while a Kafka
// replay job moves records the whole time. No request may fail; the test reports p50/p99 latency,
// the throughput and the console process's peak RSS (VmHWM). The numbers and the command are in
// docs/benchmarks.md.
func TestLoadPagesAndAPIWhileReplaying(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	duration := 5 * time.Second
	if v := os.Getenv(envLoadDuration); v != "" {
		var err error
		if duration, err = time.ParseDuration(v); err != nil || duration <= 0 || duration > 10*time.Minute {
			t.Fatalf("%s=%q: want a duration up to 10m", envLoadDuration, v)
		}
	}
	const clients, rate = 20, 1000
	ctx := waittest.Context(t, duration+3*time.Minute)

	// The sources, as the demo seeds them, and a dead-letter topic big enough for the whole run.
	k := startKafka(t, map[string]int32{"load.DLT": 2})
	mustDo(t, demo.SeedKafka(ctx, k.Addrs()))
	records := rate * int(duration/time.Second+10)
	cl := kfaketest.Client(t, k.Cluster(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	recs := make([]*kgo.Record, records)
	for i := range recs {
		id := fmt.Sprintf("load-%d", i)
		recs[i] = &kgo.Record{Topic: "load.DLT", Partition: int32(i % 2), Key: []byte(fmt.Sprintf("order-%d", i%101)),
			Value: []byte(fmt.Sprintf(`{"messageId":%q,"orderId":"o-%d"}`, id, i%101)),
			Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("java.lang.IllegalStateException")},
				{Key: "kafka_dlt-exception-message", Value: []byte("no stock")}, {Key: "messageId", Value: []byte(id)}}}
	}
	mustDo(t, cl.ProduceSync(ctx, recs...).FirstErr())
	cl.Close()
	orders := seededOutbox(t)
	vhost, _ := demoVhost(t)
	p := startProcess(t, fullConfig(t, k.Addrs()[0], orders, vhost))

	// The replay job that runs under the load.
	r := doRaw("POST", p.base+"/api/v1/replays/plan", "application/json", `{"source":{"kind":"kafka","cluster":"main","topic":"load.DLT"}}`)
	var plan struct {
		PlanID string `json:"plan_id"`
		Total  int    `json:"total"`
	}
	if r.status, r.body = planned(t, p.base, r.status, r.body); r.status != 200 || json.Unmarshal([]byte(r.body), &plan) != nil || plan.Total != records {
		t.Fatalf("plan: %d %s", r.status, tail(r.body, 500))
	}
	job := startJob(t, p.base, fmt.Sprintf(`{"plan_id":%q,"rate_per_second":%d,"reason":"load test"}`, plan.PlanID, rate))
	waitReplayMoves(t, p.base, job.ID, 0, 30*time.Second)

	pq := url.PathEscape(vhost)
	paths := []string{
		// pages
		"/", "/outboxes/orders", "/kafka/main", "/kafka/main/topics/orders.DLT", "/rabbitmq/main",
		"/rabbitmq/main/queues/" + pq + "/orders.dlq", "/replays", "/replays/" + job.ID, "/audit",
		// the API behind them
		"/api/v1/overview", "/api/v1/outboxes", "/api/v1/outboxes/orders/events?status=DEAD",
		"/api/v1/kafka/main/groups", "/api/v1/kafka/main/dead-letter-topics",
		"/api/v1/kafka/main/topics/orders.DLT/records?limit=20",
		"/api/v1/rabbitmq/main/queues", "/api/v1/rabbitmq/main/queues/" + pq + "/orders.dlq",
		"/api/v1/replays", "/api/v1/replays/" + job.ID, "/api/v1/audit",
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range paths { // each once, alone: a first render is not what is measured
		resp, err := client.Get(p.base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s alone: %d", path, resp.StatusCode)
		}
	}

	pubBefore := replayOf(p.base, job.ID).Published
	type sample struct {
		path int
		took time.Duration
	}
	var (
		mu      sync.Mutex
		samples []sample
		errs    []string
		nErrs   int
		wg      sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(duration)
	for c := range clients {
		wg.Go(func() {
			var mine []sample
			for i := c; time.Now().Before(end); i++ {
				pi := i % len(paths)
				t0 := time.Now()
				resp, err := client.Get(p.base + paths[pi])
				var status int
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status = resp.StatusCode
				}
				took := time.Since(t0)
				if err != nil || status != 200 {
					mu.Lock()
					if nErrs++; len(errs) < 10 {
						errs = append(errs, fmt.Sprintf("GET %s: %d %v", paths[pi], status, err))
					}
					mu.Unlock()
					continue
				}
				mine = append(mine, sample{pi, took})
			}
			mu.Lock()
			samples = append(samples, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	after := replayOf(p.base, job.ID)
	status, pubAfter := after.Status, after.Published
	hwm, rss := procStatus(p.cmd.Process.Pid, "VmHWM"), procStatus(p.cmd.Process.Pid, "VmRSS")

	pct := func(d []time.Duration, q float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[min(len(d)-1, int(float64(len(d))*q))]
	}
	all := make([]time.Duration, len(samples))
	per := make([][]time.Duration, len(paths))
	for i, s := range samples {
		all[i] = s.took
		per[s.path] = append(per[s.path], s.took)
	}
	slices.Sort(all)
	var b strings.Builder
	for i, d := range per {
		slices.Sort(d)
		fmt.Fprintf(&b, "\n  %-60s %6d  p50 %7s  p99 %7s", paths[i], len(d), pct(d, 0.50).Round(100*time.Microsecond), pct(d, 0.99).Round(100*time.Microsecond))
	}
	t.Logf("per path (requests, p50, p99):%s", b.String())
	t.Logf("load: %d clients for %s over %d paths: %d requests (%.0f/s), %d errors; p50 %s, p99 %s, max %s; "+
		"console peak RSS (VmHWM) %s, RSS at the end %s; the replay job moved %d records during the load (%s, %d/s)",
		clients, elapsed.Round(time.Millisecond), len(paths), len(samples)+nErrs, float64(len(samples)+nErrs)/elapsed.Seconds(), nErrs,
		pct(all, 0.50).Round(100*time.Microsecond), pct(all, 0.99).Round(100*time.Microsecond), pct(all, 1).Round(100*time.Microsecond),
		hwm, rss, pubAfter-pubBefore, status, int(float64(pubAfter-pubBefore)/elapsed.Seconds()))
	if nErrs > 0 {
		t.Errorf("%d requests failed, e.g.:\n%s\n%s", nErrs, strings.Join(errs, "\n"), p.logTail(3000))
	}
	if status != "running" && status != "done" || pubAfter <= pubBefore {
		t.Errorf("the replay job must keep moving under the load: %s, %d → %d published", status, pubBefore, pubAfter)
	}
}

// procStatus reads one field of /proc/<pid>/status ("VmHWM" → "123456 kB"), "" if unreadable.
func procStatus(pid int, field string) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				return strings.TrimSpace(v)
			}
			return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
		}
	}
	return ""
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
