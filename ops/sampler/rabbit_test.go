package sampler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/store"
)

// mgmtProxy sits between the console and the real management API: it counts the requests by path
// and can drop every connection, as a network partition would.
type mgmtProxy struct {
	srv  *httptest.Server
	down atomic.Bool
	mu   sync.Mutex
	hits map[string]int
}

func newMgmtProxy(tb testing.TB) *mgmtProxy {
	tb.Helper()
	_, mgmtURL := rabbittest.Env(tb)
	target, err := url.Parse(mgmtURL)
	if err != nil {
		tb.Fatal(err)
	}
	p := &mgmtProxy{hits: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		p.mu.Lock()
		p.hits[r.URL.Path]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	tb.Cleanup(p.srv.Close)
	return p
}

// count is how many requests reached paths starting with prefix.
func (p *mgmtProxy) count(prefix string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for path, c := range p.hits {
		if strings.HasPrefix(path, prefix) {
			n += c
		}
	}
	return n
}

// rmqEnv is a test vhost with a channel to build things in and a Broker that watches it through
// a management proxy.
type rmqEnv struct {
	rabbittest.Topology // declares on ch
	tb                  testing.TB
	vhost, amqpURL      string // amqpURL opens the vhost
	mgmt                *rabbithole.Client
	ch                  *amqp.Channel
	proxy               *mgmtProxy
	b                   *rabbit.Broker
	sent                int // messages deadLetter published, for their ids
}

func newRmqEnv(tb testing.TB) *rmqEnv {
	tb.Helper()
	vhost, amqpURL, mgmt := rabbittest.NewVhost(tb)
	_, ch := rabbittest.Channel(tb, amqpURL)
	if err := ch.Confirm(false); err != nil {
		tb.Fatal(err)
	}
	e := &rmqEnv{Topology: rabbittest.Topology{TB: tb, Ch: ch}, tb: tb, vhost: vhost, amqpURL: amqpURL, mgmt: mgmt, ch: ch, proxy: newMgmtProxy(tb)}
	e.b = e.broker("main")
	return e
}

// broker is one console replica's client for the test vhost, through the proxy.
func (e *rmqEnv) broker(name string) *rabbit.Broker {
	cfg := rabbittest.Config(e.tb, e.vhost)
	cfg.Name, cfg.ManagementURL = name, e.proxy.srv.URL
	b, err := rabbit.New(cfg, configs.MessageIDRules{})
	if err != nil {
		e.tb.Fatal(err)
	}
	e.tb.Cleanup(b.Close)
	return b
}

// publish sends n messages with publisher confirms.
func (e *rmqEnv) publish(exchange, key string, n int) {
	e.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var dcs []*amqp.DeferredConfirmation
	for i := range n {
		dc, err := e.ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false,
			amqp.Publishing{Body: fmt.Appendf(nil, `{"n":%d}`, i), ContentType: "application/json"})
		if err != nil {
			e.tb.Fatalf("publish: %v", err)
		}
		dcs = append(dcs, dc)
	}
	for _, dc := range dcs {
		if ok, err := dc.WaitContext(ctx); err != nil || !ok {
			e.tb.Fatalf("publish not confirmed: %v %v", ok, err)
		}
	}
}

// waitReady waits until the management API (what the sampler reads) reports ready messages in queue.
func (e *rmqEnv) waitReady(queue string, ready int64) {
	e.tb.Helper()
	rabbittest.WaitFor(e.tb, 15*time.Second, fmt.Sprintf("%d ready in %s", ready, queue), func(ctx context.Context) bool {
		qs, err := e.b.Queues(ctx)
		if err != nil {
			return false
		}
		for _, q := range qs {
			if q.Name == queue {
				return q.Ready == ready
			}
		}
		return false
	})
}

func rabbitSampler(tb testing.TB, st *store.Store, clk *clock, mod func(*Options), brokers ...*rabbit.Broker) *Sampler {
	tb.Helper()
	return newSampler(tb, st, clk, func(o *Options) {
		for _, b := range brokers {
			o.Rabbit = append(o.Rabbit, RabbitSource{Broker: b})
		}
		if mod != nil {
			mod(o)
		}
	})
}

func rq(tb testing.TB, snap queues.Snapshot, vhost, name string) queues.Queue {
	tb.Helper()
	q, ok := snap.Queue(vhost, name)
	if !ok {
		tb.Fatalf("queue %s/%s not in the snapshot of %s at %v (%d queues)", vhost, name, snap.Broker, snap.At, len(snap.Queues))
	}
	return q
}

// A RabbitMQ-only sampler stores the queues and the dead-letter topology the broker has; a replica
// reading the store sees exactly what the leader sampled; history gets one row per queue per tick.
func TestRabbitSnapshot(t *testing.T) {
	ctx := ctxT(t)
	e := newRmqEnv(t)
	dsn := testDSN(t)
	clk := newClock()

	// orders (topic) → orders.work ─reject→ orders.dlx (direct) → orders.dlq
	//                   orders.work ⇄ orders.retry (30 s TTL back to orders), a policy-set DLX on audit.
	e.Exchange("orders", "topic")
	e.Exchange("orders.dlx", "direct")
	e.Exchange("audit.dlx", "fanout")
	e.Queue("orders.work", amqp.Table{"x-dead-letter-exchange": "orders.dlx", "x-dead-letter-routing-key": "retry"})
	e.Bind("orders.work", "order.*", "orders")
	e.Queue("orders.retry", amqp.Table{"x-message-ttl": int32(30000), "x-dead-letter-exchange": "orders", "x-dead-letter-routing-key": "order.retried"})
	e.Bind("orders.retry", "retry", "orders.dlx")
	e.Queue("payments", amqp.Table{"x-dead-letter-exchange": "orders.dlx", "x-dead-letter-routing-key": "dead"})
	e.Queue("orders.dlq", nil)
	e.Bind("orders.dlq", "dead", "orders.dlx")
	e.Queue("audit", nil)
	e.Queue("audit.parking", nil)
	e.Bind("audit.parking", "", "audit.dlx")
	if _, err := e.mgmt.PutPolicy(e.vhost, "audit-dlx", rabbithole.Policy{Pattern: "^audit$", ApplyTo: "queues",
		Definition: rabbithole.PolicyDefinition{"dead-letter-exchange": "audit.dlx"}}); err != nil {
		t.Fatal(err)
	}
	e.publish("orders", "order.created", 7)
	e.publish("", "orders.dlq", 3)
	e.waitReady("orders.work", 7)
	e.waitReady("orders.dlq", 3)
	rabbittest.WaitFor(t, 15*time.Second, "policy on audit", func(ctx context.Context) bool {
		qs, err := e.b.Queues(ctx)
		for _, q := range qs {
			if q.Name == "audit" {
				return err == nil && q.Policy == "audit-dlx"
			}
		}
		return false
	})

	leader := rabbitSampler(t, openStore(t, dsn), clk, nil, e.b)
	reader := rabbitSampler(t, openStore(t, dsn), clk, func(o *Options) { o.CacheTTL = -1 }, e.broker("main"))

	t.Run("NotSampledYet", func(t *testing.T) {
		snap, err := reader.LatestRabbit(ctx, "main")
		if err != nil || !snap.At.IsZero() || snap.Broker != "main" || len(snap.Queues) != 0 {
			t.Fatalf("LatestRabbit = %+v, %v; want an empty snapshot", snap, err)
		}
		if _, err := reader.LatestRabbit(ctx, "nope"); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("unknown broker: %v, want ErrNotFound", err)
		}
		if _, err := reader.LatestKafka(ctx, "main"); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("a RabbitMQ broker is not a Kafka cluster: %v", err)
		}
	})

	sampleAfter(t, ctx, leader, clk, 15*time.Second)
	want, err := leader.LatestRabbit(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	got, err := reader.LatestRabbit(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if !got.At.Equal(clk.Now()) || got.Error != "" {
		t.Fatalf("at %v error %q, want at %v and no error", got.At, got.Error, clk.Now())
	}
	if !reflect.DeepEqual(got.Queues, want.Queues) || !reflect.DeepEqual(got.Edges, want.Edges) ||
		!reflect.DeepEqual(got.RetryLoops, want.RetryLoops) {
		t.Fatalf("stored snapshot differs from the sampled one:\n got %+v\nwant %+v", got, want)
	}
	if len(got.Queues) != 6 {
		t.Fatalf("%d queues, want 6", len(got.Queues))
	}

	v := e.vhost
	t.Run("Queues", func(t *testing.T) {
		w := rq(t, got, v, "orders.work")
		if w.Ready != 7 || w.Type != rabbit.TypeClassic || w.DeadLetterExchange != "orders.dlx" ||
			w.DeadLetterSource != rabbit.SourceArgument || w.IsDeadLetterQueue || w.Retry || w.Growing {
			t.Errorf("orders.work = %+v", w)
		}
		if d := rq(t, got, v, "orders.dlq"); !d.IsDeadLetterQueue || d.Ready != 3 {
			t.Errorf("orders.dlq = %+v, want a DLQ with 3 ready", d)
		}
		if r := rq(t, got, v, "orders.retry"); !r.Retry || r.IsDeadLetterQueue || r.MessageTTL == nil || *r.MessageTTL != 30000 {
			t.Errorf("orders.retry = %+v, want a retry queue (not a DLQ) with a 30 s TTL", r)
		}
		if a := rq(t, got, v, "audit"); a.DeadLetterExchange != "audit.dlx" || a.DeadLetterSource != rabbit.SourcePolicy {
			t.Errorf("audit = %+v, want its DLX from the policy", a)
		}
		if p := rq(t, got, v, "audit.parking"); !p.IsDeadLetterQueue {
			t.Errorf("audit.parking receives audit's dead letters: %+v", p)
		}
	})
	t.Run("Topology", func(t *testing.T) {
		if len(got.RetryLoops) != 1 || got.RetryLoops[0].RetryQueue != "orders.retry" || got.RetryLoops[0].WorkQueue != "orders.work" ||
			got.RetryLoops[0].Delay != 30*time.Second {
			t.Errorf("retry loops = %+v", got.RetryLoops)
		}
		if from := got.DeadLettersFrom(v, "orders.dlq"); strings.Join(from, ",") != "payments" {
			t.Errorf("dead letters into orders.dlq from %v, want payments", from)
		}
		if from := got.DeadLettersFrom(v, "orders.retry"); strings.Join(from, ",") != "orders.work" {
			t.Errorf("dead letters into orders.retry from %v", from)
		}
		if e, ok := got.Edge(v, "audit"); !ok || strings.Join(e.ToQueues, ",") != "audit.parking" || e.ExchangeType != "fanout" {
			t.Errorf("audit edge = %+v, %v", e, ok)
		}
		if _, ok := got.Edge(v, "orders.dlq"); ok {
			t.Error("orders.dlq has no dead-letter exchange, so no edge")
		}
	})
	t.Run("History", func(t *testing.T) {
		rows, err := leader.store.RabbitQueueSamples(ctx, "main", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 6 {
			t.Fatalf("%d history rows, want one per queue (6)", len(rows))
		}
		points, err := reader.RabbitQueueHistory(ctx, "main", v, "orders.work", clk.Now().Add(-time.Hour), 100)
		if err != nil || len(points) != 1 || points[0].Ready != 7 || !points[0].At.Equal(clk.Now()) {
			t.Fatalf("history = %+v, %v", points, err)
		}
	})

	t.Run("BrokerDown", func(t *testing.T) {
		goodAt := got.At
		e.proxy.down.Store(true)
		sampleUnavailableAfter(t, ctx, leader, clk, 15*time.Second)
		down, err := reader.LatestRabbit(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		if down.Error == "" || !down.ErrorAt.Equal(clk.Now()) || !down.At.Equal(goodAt) || !reflect.DeepEqual(down.Queues, want.Queues) {
			t.Errorf("error %q at %v, sampled at %v; want an error now and the last good sample from %v", down.Error, down.ErrorAt, down.At, goodAt)
		}
		if cached, _ := leader.LatestRabbit(ctx, "main"); cached.Error == "" {
			t.Error("the leader's own cache shows no error")
		}

		e.proxy.down.Store(false)
		sampleAfter(t, ctx, leader, clk, 15*time.Second)
		back, err := reader.LatestRabbit(ctx, "main")
		if err != nil || back.Error != "" || !back.At.Equal(clk.Now()) || len(back.Queues) != 6 {
			t.Fatalf("after recovery: at %v error %q (%d queues), %v", back.At, back.Error, len(back.Queues), err)
		}
	})
}

// A queue whose ready count rises at every one of GrowthSamples ticks is marked growing, and stops
// being marked when it does not; a replica taking over leadership carries the marks on from the
// history instead of starting afresh. Two replicas cost the management API one queue list per tick.
func TestRabbitGrowthAndOneLeader(t *testing.T) {
	ctx := ctxT(t)
	e := newRmqEnv(t)
	dsn := testDSN(t)
	clk := newClock()
	e.Queue("inbound", nil)
	e.Queue("steady", nil)
	e.publish("", "steady", 5)
	e.waitReady("steady", 5)

	a := rabbitSampler(t, openStore(t, dsn), clk, nil, e.b)
	c := rabbitSampler(t, openStore(t, dsn), clk, nil, e.broker("main"))
	ready := int64(0)
	replicas := []*Sampler{a, c}
	tick := func(leader *Sampler, grow bool) queues.Snapshot {
		t.Helper()
		if grow {
			e.publish("", "inbound", 10)
			ready += 10
			e.waitReady("inbound", ready)
		}
		clk.Add(15 * time.Second)
		before := e.proxy.count("/api/queues")
		for _, s := range replicas {
			if err := s.SampleOnce(ctx); err != nil {
				t.Fatalf("SampleOnce: %v", err)
			}
		}
		if n := e.proxy.count("/api/queues") - before; n != 1 {
			t.Fatalf("one tick of %d replicas listed the queues %d times, want 1", len(replicas), n)
		}
		if !leader.Leader() {
			t.Fatal("unexpected leader")
		}
		snap, err := leader.LatestRabbit(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}

	for i := range GrowthSamples - 1 {
		if q := rq(t, tick(a, true), e.vhost, "inbound"); q.Growing {
			t.Fatalf("tick %d: growing after %d samples (%s), want %d samples first", i, i+1, q.Growth, GrowthSamples)
		}
	}
	snap := tick(a, true)
	if q := rq(t, snap, e.vhost, "inbound"); !q.Growing || q.Growth != "ready 10 → 40 in 45 s" {
		t.Fatalf("inbound after %d rising samples: growing %v %q", GrowthSamples, q.Growing, q.Growth)
	}
	if q := rq(t, snap, e.vhost, "steady"); q.Growing {
		t.Errorf("steady is flat but marked growing: %s", q.Growth)
	}

	// Viewers of another replica share its cached copy and never call the broker.
	before := e.proxy.count("/api/")
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if s, err := c.LatestRabbit(ctx, "main"); err != nil || len(s.Queues) != 2 {
				t.Errorf("LatestRabbit: %d queues, %v", len(s.Queues), err)
			}
		})
	}
	wg.Wait()
	if n := e.proxy.count("/api/") - before; n != 0 {
		t.Errorf("50 viewers made %d management API calls, want 0", n)
	}

	// a stops (a replica shutting down): c takes over with a's samples and still sees the growth.
	a.Close()
	replicas = []*Sampler{c}
	snap = tick(c, true)
	if q := rq(t, snap, e.vhost, "inbound"); !q.Growing || q.Growth != "ready 20 → 50 in 45 s" {
		t.Fatalf("after failover: growing %v %q, want the growth carried over", q.Growing, q.Growth)
	}
	snap = tick(c, false)
	if q := rq(t, snap, e.vhost, "inbound"); q.Growing {
		t.Errorf("inbound stopped growing but is still marked: %s", q.Growth)
	}
}

// History is cut into buckets holding the highest depths and the average rates.
func TestRabbitQueueHistory(t *testing.T) {
	ctx := ctxT(t)
	st := openStore(t, testDSN(t))
	clk := newClock()
	b, err := rabbit.New(configs.RabbitMQBroker{Name: "main", URL: "amqp://guest:guest@127.0.0.1:1/",
		ManagementURL: "http://127.0.0.1:1"}, configs.MessageIDRules{}) // never dialled here
	if err != nil {
		t.Fatal(err)
	}
	s := rabbitSampler(t, st, clk, nil, b)
	start := clk.Now().Add(-99 * time.Second)
	var rows []history.RabbitQueueSample
	for i := range 100 {
		rows = append(rows, history.RabbitQueueSample{Broker: "main", Vhost: "/", Queue: "q", At: start.Add(time.Duration(i) * time.Second),
			Ready: int64(i), Unacked: int64(100 - i), Consumers: i % 3, PublishRate: float64(i), DeliverRate: 1})
	}
	rows = append(rows, history.RabbitQueueSample{Broker: "main", Vhost: "/", Queue: "other", At: start, Ready: 1e6},
		history.RabbitQueueSample{Broker: "other", Vhost: "/", Queue: "q", At: start, Ready: 1e6})
	if err := st.InsertRabbitQueueSamples(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertRabbitQueueSamples(ctx, rows[:1]); !errors.Is(err, ops.ErrConflict) {
		t.Errorf("a duplicate sample: %v, want ErrConflict", err)
	}

	t.Run("Every", func(t *testing.T) {
		points, err := s.RabbitQueueHistory(ctx, "main", "/", "q", start, 1000)
		if err != nil || len(points) != 100 {
			t.Fatalf("%d points, %v; want every sample", len(points), err)
		}
		if p := points[42]; p.Ready != 42 || p.Unacked != 58 || p.Consumers != 0 || p.PublishRate != 42 || !p.At.Equal(start.Add(42*time.Second)) {
			t.Errorf("point 42 = %+v", p)
		}
	})
	t.Run("Downsampled", func(t *testing.T) {
		points, err := s.RabbitQueueHistory(ctx, "main", "/", "q", start, 10)
		if err != nil || len(points) != 10 {
			t.Fatalf("%d points, %v; want 10", len(points), err)
		}
		// Buckets of 10 samples: the highest depths, the mean rates.
		if p := points[0]; p.Ready != 9 || p.Unacked != 100 || p.Consumers != 2 || p.PublishRate != 4.5 || p.DeliverRate != 1 ||
			!p.At.Equal(start.Add(9*time.Second)) {
			t.Errorf("first bucket = %+v", p)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		points, err := s.RabbitQueueHistory(ctx, "main", "/", "none", start, 10)
		if err != nil || points == nil || len(points) != 0 {
			t.Fatalf("= %v, %v; want no points", points, err)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		for name, call := range map[string]func() error{
			"MaxPoints0": func() error { _, err := s.RabbitQueueHistory(ctx, "main", "/", "q", start, 0); return err },
			"Future": func() error {
				_, err := s.RabbitQueueHistory(ctx, "main", "/", "q", clk.Now().Add(time.Hour), 10)
				return err
			},
			"NoVhost": func() error { _, err := s.RabbitQueueHistory(ctx, "main", "", "q", start, 10); return err },
			"NoQueue": func() error { _, err := s.RabbitQueueHistory(ctx, "main", "/", "", start, 10); return err },
		} {
			if err := call(); !errors.Is(err, ops.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
		if _, err := s.RabbitQueueHistory(ctx, "nope", "/", "q", start, 10); !errors.Is(err, ops.ErrNotFound) {
			t.Errorf("unknown broker: %v, want ErrNotFound", err)
		}
	})
}

func TestNewRabbitOptions(t *testing.T) {
	st := openStore(t, testDSN(t))
	b, err := rabbit.New(configs.RabbitMQBroker{Name: "main", URL: "amqp://guest:guest@127.0.0.1:1/",
		ManagementURL: "http://127.0.0.1:1"}, configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]Options{
		"NoBroker":      {Store: st, Rabbit: []RabbitSource{{}}},
		"DuplicateName": {Store: st, Rabbit: []RabbitSource{{Broker: b}, {Broker: b}}},
	} {
		if _, err := New(opts); !errors.Is(err, ops.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := New(Options{Store: st, Rabbit: []RabbitSource{{Broker: b}}}); err != nil {
		t.Errorf("a sampler of RabbitMQ alone: %v", err)
	}
}

func TestRabbitWireRoundTrip(t *testing.T) {
	ttl, limit := int64(0), int64(3)
	in := queues.Snapshot{
		Queues: []queues.Queue{
			{Queue: rabbit.Queue{Vhost: "/", Name: "a", Type: "quorum", State: "running", Ready: 1, Unacked: 2, Total: 3, Consumers: 4,
				PublishRate: 0.1, DeliverRate: 1e-9, AckRate: 3.5, RedeliverRate: 7, DeadLetterExchange: "", HasDeadLetterExchange: true,
				DeadLetterRoutingKey: "a.dlq", DeadLetterSource: rabbit.SourcePolicy, MessageTTL: &ttl, DeliveryLimit: &limit,
				Overflow: "reject-publish-dlx", SingleActiveConsumer: true, Policy: "p", OperatorPolicy: "op",
				Arguments: map[string]string{"x-queue-type": "quorum"}},
				Retry: true, Growing: true, Growth: "ready 1 → 4 in 45s", Inflow: 0.25},
			{Queue: rabbit.Queue{Vhost: "/", Name: "a.dlq", IsDeadLetterQueue: true, Arguments: map[string]string{}},
				Lost: 40, LostSince: time.Date(2026, 3, 1, 18, 2, 0, 123000, time.UTC), LostAt: time.Date(2026, 3, 1, 18, 2, 15, 0, time.UTC),
				HeldSince: time.Date(2026, 3, 1, 17, 30, 0, 5000, time.UTC)},
		},
		Edges: []rabbit.Edge{
			{FromVhost: "/", FromQueue: "a", ExchangeType: "direct", RoutingKey: "a.dlq", ToQueues: []string{"a.dlq"}},
			{FromVhost: "/", FromQueue: "b", Exchange: "gone", OwnKeys: []string{"b"}, ToQueues: []string{}, Missing: true, Note: "n"},
		},
		RetryLoops: []rabbit.RetryLoop{{Vhost: "/", RetryQueue: "r", WorkQueue: "w", Delay: 1500 * time.Millisecond}},
	}
	data, err := encodeRabbit(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, ok, err := decodeRabbit(data)
	if err != nil || !ok || !reflect.DeepEqual(out, in) {
		t.Fatalf("round trip (%v, %v):\n got %+v\nwant %+v", ok, err, out, in)
	}
	// A snapshot stored before inflow was kept reads its publish rate as its inflow.
	old, ok, err := decodeRabbit([]byte(fmt.Sprintf(`{"v":%d,"q":[{"vh":"/","n":"a","pr":0.5}]}`, rabbitWireVersion)))
	if err != nil || !ok || len(old.Queues) != 1 || old.Queues[0].Inflow != 0.5 {
		t.Errorf("a snapshot without inflow: %+v %v %v", old.Queues, ok, err)
	}
	if _, ok, err := decodeRabbit([]byte(`{}`)); ok || err != nil {
		t.Errorf("an empty document must read as not sampled: %v %v", ok, err)
	}
}

// A DLQ filled by RabbitMQ's own dead-lettering has a publish rate of 0 in the management API
// (it counts only what channels publish), so the queue page's "Inflow — dead letters arriving"
// read "—" while the demo's orders.dlq grew 7 messages every 15 s. Its inflow is now the rise of
// its depth over the sampler's window (plus its acks): 10 dead letters every 15 s is 0.67/s.
func TestRabbitDeadLetterInflow(t *testing.T) {
	ctx := ctxT(t)
	e := newRmqEnv(t)
	clk := newClock()
	e.Queue("work", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "work.dlq"})
	e.Queue("work.dlq", nil)
	s := rabbitSampler(t, openStore(t, testDSN(t)), clk, nil, e.b)
	dead := int64(0)
	var snap queues.Snapshot
	for range 3 {
		e.publish("", "work", 10)
		for range 10 {
			d, ok, err := e.ch.Get("work", false)
			if err != nil || !ok {
				t.Fatalf("get: %v %v", ok, err)
			}
			if err := d.Nack(false, false); err != nil {
				t.Fatal(err)
			}
		}
		dead += 10
		e.waitReady("work.dlq", dead)
		clk.Add(15 * time.Second)
		if err := s.SampleOnce(ctx); err != nil {
			t.Fatalf("SampleOnce: %v", err)
		}
		var err error
		if snap, err = s.LatestRabbit(ctx, "main"); err != nil {
			t.Fatal(err)
		}
	}
	q := rq(t, snap, e.vhost, "work.dlq")
	if !q.IsDeadLetterQueue || q.PublishRate != 0 {
		t.Fatalf("work.dlq: DLQ %v, publish rate %v: want a DLQ the broker counts no publishes for", q.IsDeadLetterQueue, q.PublishRate)
	}
	if want := 20.0 / 30; q.Inflow < want-0.01 || q.Inflow > want+0.01 {
		t.Errorf("work.dlq inflow %.3f/s, want %.3f (10 dead letters every 15 s)", q.Inflow, want)
	}
	if w := rq(t, snap, e.vhost, "work"); w.Inflow < w.PublishRate {
		t.Errorf("work: inflow %v below its publish rate %v", w.Inflow, w.PublishRate)
	}
}
