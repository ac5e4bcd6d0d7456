package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/cmd/internal/demo"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
)

// fullConsole is one console over every kind of source the demo seeds: the outbox (and its inbox),
// a Kafka cluster on kfake with a Spring-style DLT, and a RabbitMQ vhost with its live traffic. The
// pools have their default sizes: what is tested is the console as it ships.
func fullConsole(t *testing.T) (base, vhost string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Kafka in a process of its own, as in production: an in-process kfake under -race starved
	// the console on a loaded machine, and its reads timed out (kfaketest.External).
	kafka := kfaketest.External(t, nil)
	if err := demo.SeedKafka(ctx, []string{kafka}); err != nil {
		t.Fatal(err)
	}
	orders := seededOutbox(t)
	vhost, _ = demoVhost(t)
	base = startConsole(t, fullConfig(t, kafka, orders, vhost))
	return base, vhost
}

// result is one request of a burst.
type result struct {
	status int
	took   time.Duration
	err    error
	body   string
}

// burst sends n requests at the same instant (all goroutines released together) and returns them
// with the wall time of the whole burst. call builds and sends request i.
func burst(n int, call func(i int) (*http.Response, error)) ([]result, time.Duration) {
	out := make([]result, n)
	var ready, wg sync.WaitGroup
	ready.Add(n)
	gate := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			ready.Done()
			<-gate
			start := time.Now()
			resp, err := call(i)
			r := result{took: time.Since(start), err: err}
			if err == nil {
				r.status = resp.StatusCode
				r.body = said(resp)
			}
			out[i] = r
		})
	}
	ready.Wait()
	start := time.Now()
	close(gate)
	wg.Wait()
	return out, time.Since(start)
}

// said is what a response of a burst says, for a failure's message: the error page's message
// (its HTML head alone is the first kilobyte), else the body's first 512 bytes.
func said(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if doc, err := goquery.NewDocumentFromReader(bytes.NewReader(b)); err == nil {
		if msg := doc.Find(`[data-testid="error-message"]`).Text(); msg != "" {
			return strings.Join(strings.Fields(msg), " ")
		}
	}
	return string(b[:min(len(b), 512)])
}

// percentile of the burst's latencies (p in 0..100).
func percentile(rs []result, p int) time.Duration {
	d := make([]time.Duration, len(rs))
	for i, r := range rs {
		d[i] = r.took
	}
	slices.Sort(d)
	return d[min(len(d)-1, len(d)*p/100)]
}

// Twenty people opening the same page, or twenty scripts reading the same API, at the same
// instant all get a 200 within a few seconds: nothing waits for a pooled connection while holding
// one, and the default pools are large enough for the console's own concurrency.
func TestTwentySimultaneousReadsOfEachPage(t *testing.T) {
	base, vhost := fullConsole(t)
	queue := "/rabbitmq/main/queues/" + url.PathEscape(vhost) + "/orders.dlq"
	apiQueue := "/api/v1/rabbitmq/main/queues/" + url.PathEscape(vhost) + "/orders.dlq"
	paths := []string{
		// pages
		"/", "/outboxes/orders", "/kafka/main", "/kafka/main/topics/orders.DLT", "/rabbitmq/main", queue, "/replays",
		// the API behind them
		"/api/v1/overview", "/api/v1/outboxes", "/api/v1/outboxes/orders/events?status=DEAD",
		"/api/v1/kafka/main/groups", "/api/v1/kafka/main/dead-letter-topics",
		"/api/v1/kafka/main/topics/orders.DLT/records?limit=20",
		"/api/v1/rabbitmq/main/queues", apiQueue, "/api/v1/replays", "/api/v1/audit",
	}
	// The first sample lands before serving; the pages read it.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 20},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(p string) func(int) (*http.Response, error) {
		return func(int) (*http.Response, error) { return client.Get(base + p) }
	}
	// Warm: each path once, alone, so that a slow first render is not counted as contention.
	for _, p := range paths {
		if rs, _ := burst(1, get(p)); rs[0].err != nil || rs[0].status != 200 {
			t.Fatalf("GET %s alone: %d %v %s", p, rs[0].status, rs[0].err, rs[0].body)
		}
	}
	const n, bound = 20, 15 * time.Second // generous: -race on 2 shared cores
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			rs, wall := burst(n, get(p))
			for i, r := range rs {
				if r.err != nil || r.status != 200 {
					t.Errorf("request %d: %d %v %s", i, r.status, r.err, r.body)
				}
			}
			t.Logf("%d × GET %s: wall %s, p50 %s, max %s", n, p, wall.Round(time.Millisecond),
				percentile(rs, 50).Round(time.Millisecond), percentile(rs, 100).Round(time.Millisecond))
			if wall > bound {
				t.Errorf("%d simultaneous requests took %s (bound %s)", n, wall, bound)
			}
		})
	}
	// Then every path at once: 20 of each, all released together.
	t.Run("AllAtOnce", func(t *testing.T) {
		rs, wall := burst(n*len(paths), func(i int) (*http.Response, error) { return get(paths[i%len(paths)])(i) })
		failed := 0
		for i, r := range rs {
			if r.err != nil || r.status != 200 {
				failed++
				if failed <= 5 {
					t.Errorf("GET %s: %d %v %s", paths[i%len(paths)], r.status, r.err, r.body)
				}
			}
		}
		t.Logf("%d requests over %d paths at once: wall %s, p50 %s, p99 %s, max %s; %d failed", len(rs), len(paths),
			wall.Round(time.Millisecond), percentile(rs, 50).Round(time.Millisecond),
			percentile(rs, 99).Round(time.Millisecond), percentile(rs, 100).Round(time.Millisecond), failed)
		if wall > 4*bound {
			t.Errorf("%d simultaneous requests took %s", len(rs), wall)
		}
	})
}

// The twenty-simultaneous-plans test (issue 11: a plan held one pooled store connection in its
// transaction while looking up the ledger on another; 8 concurrent plans deadlocked the 4
// connection pool) belongs here, on fullConsole and burst: 20 POSTs of /api/v1/replays/plan of
// each kind (kafka, rabbitmq, outbox) released together, each answering 200 with its full plan.
// It is added with the deadlock fix in ops/replay/planner.go and ops/store/replays.go.

// When a pool really is exhausted, a request waits at most acquire_timeout and answers 503 with
// what was busy and the key to raise — JSON under /api, the error page elsewhere — and names no
// host, user or database.
func TestBusyPoolAnswers503SayingWhat(t *testing.T) {
	storeDSN, orders := pgtest.NewDatabase(t), seededOutbox(t)
	ctx := context.Background()
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q, max_conns: 1, acquire_timeout: 300ms}]
`, storeDSN, orders))
	// Another session locks the table; a list then waits on the lock holding the outbox pool's
	// only connection.
	lock, err := pgx.Connect(ctx, orders)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(ctx)
	if _, err := lock.Exec(ctx, `BEGIN; LOCK TABLE outbox_event IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan response, 1)
	go func() { blocked <- do(t, nil, "GET", base+"/api/v1/outboxes/orders/events", "", "") }()
	pgtest.WaitLockWaiters(t, orders, 1) // the list holds the outbox's only connection, waiting on the lock

	const want = `outbox \"orders\" is busy: its only connection is in use for 300ms; try again or raise max_conns of outbox \"orders\" (outboxes[].max_conns)`
	u, _ := url.Parse(orders)
	for _, tc := range []struct{ path, want string }{
		{"/api/v1/outboxes/orders/events?status=DEAD", want},
		{"/outboxes/orders/events/1", strings.ReplaceAll(want, `\"`, "&#34;")},
	} {
		start := time.Now()
		r := do(t, nil, "GET", base+tc.path, "", "")
		took := time.Since(start)
		if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, tc.want) {
			t.Errorf("GET %s: %d %s\nwant 503 saying %s", tc.path, r.status, r.body, tc.want)
		}
		if took > 2*time.Second {
			t.Errorf("GET %s answered after %s; acquire_timeout is 300ms", tc.path, took)
		}
		for _, secret := range []string{u.Host, u.Hostname(), u.User.Username(), strings.TrimPrefix(u.Path, "/")} {
			if secret != "" && strings.Contains(r.body, secret) {
				t.Errorf("GET %s leaks %q: %s", tc.path, secret, r.body)
			}
		}
		t.Logf("GET %s after %s: %d", tc.path, took.Round(time.Millisecond), r.status)
	}
	if _, err := lock.Exec(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if r := <-blocked; r.status != 200 {
		t.Errorf("the request that held the connection: %d %s", r.status, r.body)
	}
	if r := do(t, nil, "GET", base+"/api/v1/outboxes/orders/events?status=DEAD", "", ""); r.status != 200 {
		t.Errorf("after the lock: %d %s", r.status, r.body)
	}
}
