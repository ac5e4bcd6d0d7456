package web

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/sampler"
	"github.com/redrive/redrive/ops/store"
)

// The fakes below stand for the console's own reads (the sampler's stored snapshots, the outbox
// stats, the replay ledger); the end-to-end test in cmd/console runs the exporter over the real ones.

type fakeSnapshots struct {
	kafka  map[string]lag.Snapshot
	rabbit map[string]queues.Snapshot
	err    map[string]error // by cluster or broker name
}

func (f fakeSnapshots) LatestKafka(_ context.Context, cluster string) (lag.Snapshot, error) {
	return f.kafka[cluster], f.err[cluster]
}

// FreshKafka is LatestKafka: nothing here re-samples.
func (f fakeSnapshots) FreshKafka(ctx context.Context, cluster string) (lag.Snapshot, error) {
	return f.LatestKafka(ctx, cluster)
}

func (f fakeSnapshots) LatestRabbit(_ context.Context, broker string) (queues.Snapshot, error) {
	return f.rabbit[broker], f.err[broker]
}

type fakeOutbox struct {
	name  string
	stats outbox.Stats
	err   error
	hang  chan struct{} // when set, CachedStats blocks until it is closed, ignoring ctx
}

func (f fakeOutbox) Name() string { return f.name }

func (f fakeOutbox) CachedStats(context.Context, time.Duration) (outbox.Stats, error) {
	if f.hang != nil {
		<-f.hang
	}
	return f.stats, f.err
}

type fakeLedger struct {
	counts map[string]int64
	err    error
	calls  atomic.Int32
}

func (f *fakeLedger) ReplayOutcomeCounts(context.Context) (map[string]int64, error) {
	f.calls.Add(1)
	return f.counts, f.err
}

// scrape gathers the exporter through a pedantic registry, which fails on a metric that does not
// match its description or on a duplicate series, and returns "name{labels}" → value.
func scrape(t *testing.T, e *exporter) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(e); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			out[seriesName(f.GetName(), m)] = value(m)
		}
	}
	return out
}

// wantSeries checks that got has each series of want with its value.
func wantSeries(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

func seriesName(name string, m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	sort.Strings(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return 0
}

func testExporter(snaps fakeSnapshots, clusters, brokers []string, outboxes []exporterOutbox, ledger *fakeLedger) *exporter {
	e := &exporter{kafka: snaps, clusters: clusters, rabbit: snaps, brokers: brokers, outboxes: outboxes,
		timeout: time.Second, now: func() time.Time { return time.Unix(1_800_000_000, 0) }}
	if ledger != nil {
		e.replays = ledger
	}
	return e.init()
}

func lagGroup(name string, code lag.StatusCode, lags ...int64) lag.Group {
	g := lag.Group{Group: kafka.Group{Name: name, State: "Stable"}, Status: lag.Status{Code: code}}
	t := kafka.TopicLag{Topic: "orders"}
	for i, l := range lags {
		t.Partitions = append(t.Partitions, kafka.PartitionLag{Partition: int32(i), Lag: l})
	}
	g.Topics = []kafka.TopicLag{t}
	return g
}

func TestExporterSeries(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	age := 7 * time.Minute
	snaps := fakeSnapshots{
		kafka: map[string]lag.Snapshot{"main": {Cluster: "main", At: now.Add(-20 * time.Second), Groups: []lag.Group{
			lagGroup("billing", lag.StatusStall, 5, -1, 0), lagGroup("mailer", lag.StatusDead),
		}}},
		rabbit: map[string]queues.Snapshot{"mq": {Broker: "mq", At: now.Add(-5 * time.Second), Queues: []queues.Queue{
			{Queue: rabbit.Queue{Vhost: "/", Name: "orders", Ready: 3, Unacked: 2}},
			{Queue: rabbit.Queue{Vhost: "/", Name: "orders.dlq", Ready: 40, Unacked: 1, IsDeadLetterQueue: true}},
			{Queue: rabbit.Queue{Vhost: "/", Name: "orders.retry", Ready: 9}, Retry: true},
		}}},
	}
	box := fakeOutbox{name: "orders", stats: outbox.Stats{Counts: map[outbox.Status]int64{outbox.Ready: 40, outbox.Processing: 12,
		outbox.Sent: 5000, outbox.Failed: 15, outbox.Dead: 25}, StuckLeases: 5, OldestReadyAge: &age}}
	idle := fakeOutbox{name: "idle", stats: outbox.Stats{Counts: map[outbox.Status]int64{}}}
	ledger := &fakeLedger{counts: map[string]int64{"published": 7, "failed": 1}}
	got := scrape(t, testExporter(snaps, []string{"main"}, []string{"mq"}, []exporterOutbox{box, idle}, ledger))

	want := map[string]float64{
		`redrive_kafka_group_lag{cluster="main",group="billing",partition="0",topic="orders"}`:      5,
		`redrive_kafka_group_lag{cluster="main",group="billing",partition="2",topic="orders"}`:      0,
		`redrive_kafka_group_status{cluster="main",group="billing"}`:                                2,
		`redrive_kafka_group_status{cluster="main",group="mailer"}`:                                 5,
		`redrive_snapshot_age_seconds{source="kafka/main"}`:                                         20,
		`redrive_snapshot_age_seconds{source="rabbitmq/mq"}`:                                        5,
		`redrive_rabbitmq_queue_messages{broker="mq",queue="orders",state="ready",vhost="/"}`:       3,
		`redrive_rabbitmq_queue_messages{broker="mq",queue="orders",state="unacked",vhost="/"}`:     2,
		`redrive_rabbitmq_queue_messages{broker="mq",queue="orders.dlq",state="ready",vhost="/"}`:   40,
		`redrive_rabbitmq_queue_messages{broker="mq",queue="orders.retry",state="ready",vhost="/"}`: 9,
		`redrive_dead_letters{name="orders.dlq",source="rabbitmq/mq"}`:                              40,
		`redrive_outbox_events{outbox="orders",status="READY"}`:                                     40,
		`redrive_outbox_events{outbox="orders",status="PROCESSING"}`:                                12,
		`redrive_outbox_events{outbox="orders",status="SENT"}`:                                      5000,
		`redrive_outbox_events{outbox="orders",status="FAILED"}`:                                    15,
		`redrive_outbox_events{outbox="orders",status="DEAD"}`:                                      25,
		`redrive_outbox_stuck_leases{outbox="orders"}`:                                              5,
		`redrive_outbox_oldest_ready_age_seconds{outbox="orders"}`:                                  420,
		`redrive_outbox_events{outbox="idle",status="DEAD"}`:                                        0,
		`redrive_outbox_oldest_ready_age_seconds{outbox="idle"}`:                                    0,
		`redrive_replay_messages_total{outcome="published"}`:                                        7,
		`redrive_replay_messages_total{outcome="skipped"}`:                                          0,
		`redrive_replay_messages_total{outcome="failed"}`:                                           1,
		`redrive_exporter_errors_total{source="kafka/main"}`:                                        0,
		`redrive_exporter_errors_total{source="outbox/orders"}`:                                     0,
	}
	wantSeries(t, got, want)
	for _, absent := range []string{
		`redrive_kafka_group_lag{cluster="main",group="billing",partition="1",topic="orders"}`, // unknown lag
		`redrive_dead_letters{name="orders.retry",source="rabbitmq/mq"}`,                       // a retry queue is not a DLQ
		`redrive_dead_letters{name="orders",source="rabbitmq/mq"}`,
	} {
		if _, ok := got[absent]; ok {
			t.Errorf("%s is exported", absent)
		}
	}
}

// One source down, one hanging, one never sampled: the scrape still answers on time with
// everything else, and counts an error for each source that failed.
func TestExporterDegradesPerSource(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	snaps := fakeSnapshots{
		kafka: map[string]lag.Snapshot{"up": {Cluster: "up", At: time.Unix(1_800_000_000, 0),
			Groups: []lag.Group{lagGroup("g", lag.StatusOK, 1)}}, "new": {Cluster: "new"}},
		err: map[string]error{"down": fmt.Errorf("read snapshot: %w", ops.ErrUnavailable), "mq": errors.New("store down")},
	}
	outboxes := []exporterOutbox{
		fakeOutbox{name: "orders", stats: outbox.Stats{Counts: map[outbox.Status]int64{outbox.Dead: 2}}},
		fakeOutbox{name: "billing", err: fmt.Errorf("outbox billing: stats: %w", ops.ErrUnavailable)},
		fakeOutbox{name: "stuck", hang: hang},
	}
	e := testExporter(snaps, []string{"up", "down", "new"}, []string{"mq"}, outboxes, &fakeLedger{err: errors.New("store down")})
	e.timeout = 200 * time.Millisecond

	start := time.Now()
	got := scrape(t, e)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("scrape took %v with a hanging source; the bound is %v", d, e.timeout)
	}
	wantSeries(t, got, map[string]float64{
		`redrive_kafka_group_lag{cluster="up",group="g",partition="0",topic="orders"}`: 1,
		`redrive_outbox_events{outbox="orders",status="DEAD"}`:                         2,
		`redrive_exporter_errors_total{source="kafka/down"}`:                           1,
		`redrive_exporter_errors_total{source="kafka/up"}`:                             0,
		`redrive_exporter_errors_total{source="kafka/new"}`:                            0,
		`redrive_exporter_errors_total{source="rabbitmq/mq"}`:                          1,
		`redrive_exporter_errors_total{source="outbox/billing"}`:                       1,
		`redrive_exporter_errors_total{source="outbox/stuck"}`:                         1,
		`redrive_exporter_errors_total{source="outbox/orders"}`:                        0,
		`redrive_exporter_errors_total{source="replays"}`:                              1,
	})
	for k := range got {
		if strings.HasPrefix(k, "redrive_exporter_errors_total") {
			continue
		}
		for _, failed := range []string{`outbox="billing"`, `outbox="stuck"`, `cluster="down"`, `cluster="new"`,
			`source="kafka/new"`, `broker="mq"`, "redrive_replay_messages_total"} {
			if strings.Contains(k, failed) {
				t.Errorf("series of a failed or unsampled source: %s", k)
			}
		}
	}
}

func TestExporterCachesReplayCounts(t *testing.T) {
	ledger := &fakeLedger{counts: map[string]int64{"published": 1}}
	e := testExporter(fakeSnapshots{}, nil, nil, nil, ledger)
	now := time.Unix(1_800_000_000, 0)
	e.now = func() time.Time { return now }
	scrape(t, e)
	scrape(t, e)
	if n := ledger.calls.Load(); n != 1 {
		t.Fatalf("two scrapes within %v counted the ledger %d times", replayCountsTTL, n)
	}
	ledger.counts = map[string]int64{"published": 2}
	now = now.Add(replayCountsTTL)
	if got := scrape(t, e)[`redrive_replay_messages_total{outcome="published"}`]; got != 2 || ledger.calls.Load() != 2 {
		t.Fatalf("after the TTL: published %v, %d ledger reads", got, ledger.calls.Load())
	}
}

// Label sets that collide (vhost "a/b" + queue "c" and vhost "a" + queue "b/c" both name
// "a/b/c") or values that are not UTF-8 must not fail the scrape: the registry would answer 500.
func TestExporterNeverFailsTheScrape(t *testing.T) {
	snaps := fakeSnapshots{rabbit: map[string]queues.Snapshot{"mq": {Broker: "mq", At: time.Unix(1_800_000_000, 0), Queues: []queues.Queue{
		{Queue: rabbit.Queue{Vhost: "a/b", Name: "c", Ready: 1, IsDeadLetterQueue: true}},
		{Queue: rabbit.Queue{Vhost: "a", Name: "b/c", Ready: 2, IsDeadLetterQueue: true}},
		{Queue: rabbit.Queue{Vhost: "/", Name: "bad\xff", Ready: 3, IsDeadLetterQueue: true}},
	}}}}
	got := scrape(t, testExporter(snaps, nil, []string{"mq"}, nil, nil))
	if v := got[`redrive_dead_letters{name="a/b/c",source="rabbitmq/mq"}`]; v != 1 {
		t.Errorf("first of the colliding names: %v", v)
	}
	if v := got[`redrive_rabbitmq_queue_messages{broker="mq",queue="b/c",state="ready",vhost="a"}`]; v != 2 {
		t.Errorf("the queue itself is still exported: %v", v)
	}
}

func TestExporterFromDeps(t *testing.T) {
	// New registers the exporter; with nothing configured it exports only its error counter.
	e := newExporter(Deps{})
	got := scrape(t, e)
	if len(got) != 0 {
		t.Errorf("nothing configured, yet %v", got)
	}
}

// docs/alerts.md names only series the console exports, and documents every series of the exporter.
func TestAlertsDocMatchesTheExporter(t *testing.T) {
	doc, err := os.ReadFile("../docs/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := func(cs ...prometheus.Collector) []string {
		ch := make(chan *prometheus.Desc, 100)
		for _, c := range cs {
			c.Describe(ch)
		}
		close(ch)
		var out []string
		for d := range ch {
			out = append(out, fqName.FindStringSubmatch(d.String())[1])
		}
		return out
	}
	s, err := sampler.New(sampler.Options{Store: &store.Store{}}) // connects nothing
	if err != nil {
		t.Fatal(err)
	}
	exporterNames := names(newExporter(Deps{}))
	known := map[string]bool{"redrive_http_request_duration_seconds": true}
	for _, n := range append(names(s.Collectors()...), exporterNames...) {
		known[n] = true
	}
	for _, used := range regexp.MustCompile(`\bredrive_[a-z_]+`).FindAllString(string(doc), -1) {
		if !known[used] {
			t.Errorf("docs/alerts.md uses %s, which the console does not export", used)
		}
	}
	for _, n := range exporterNames {
		if !strings.Contains(string(doc), "`"+n+"`") {
			t.Errorf("docs/alerts.md does not document %s", n)
		}
	}
}
