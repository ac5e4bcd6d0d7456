package web

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/health"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/outbox"
)

// The exporter's reads, each narrowed to the one method it calls. None of them reaches a broker:
// the Kafka and RabbitMQ numbers come from the sampler's stored snapshots (health.KafkaSnapshots
// and health.RabbitSnapshots, as the problems are read), the outbox numbers from the services'
// outbox tables (the cached Stats the pages use: one count per outbox.StatsMaxAge at most, shared
// by concurrent callers), the replay numbers from the console's store.
type (
	exporterOutbox interface {
		Name() string
		CachedStats(ctx context.Context, maxAge time.Duration) (outbox.Stats, error)
	}
	exporterReplays interface {
		ReplayOutcomeCounts(ctx context.Context) (map[string]int64, error)
	}
)

const (
	// exporterTimeout bounds one scrape: a source that has not answered by then is skipped and
	// counted in redrive_exporter_errors_total. It is below Prometheus' default scrape_timeout (10 s).
	exporterTimeout = 5 * time.Second
	// replayCountsTTL is how long the ledger's outcome counts are reused: counting the whole ledger
	// at every scrape of every Prometheus would cost more than a counter a few seconds late.
	replayCountsTTL = 10 * time.Second
)

// kafkaStatusCodes is the numeric value of redrive_kafka_group_status, from harmless to gone.
// lag.StatusCode.Severity is not used because it gives EMPTY and DEAD the same value.
var kafkaStatusCodes = map[lag.StatusCode]float64{
	lag.StatusOK: 0, lag.StatusWarn: 1, lag.StatusStall: 2, lag.StatusStop: 3,
	lag.StatusEmpty: 4, lag.StatusDead: 5, lag.StatusErr: 6,
}

// replayOutcomes are the ledger's settled outcomes, exported even at zero so that rate() and
// increase() see the first message.
var replayOutcomes = []string{"published", "skipped", "failed"}

// deadLettersHelp is the help of both redrive_dead_letters descriptors: one metric name, so one
// text (a scrape whose families disagree on it fails).
const deadLettersHelp = "Dead letters waiting, from the sampler's latest snapshots: the ready count of each RabbitMQ dead-letter queue " +
	"(source rabbitmq/<broker>, name <vhost>/<queue>, or <queue> in the default vhost /; left out while its counts are not reported) and " +
	"the records of each Kafka dead-letter topic, end − start over its partitions (source kafka/<cluster>, name <topic>; retry topics are left out)."

var (
	descKafkaLag = prometheus.NewDesc("redrive_kafka_group_lag",
		"Consumer group lag per partition from the sampler's latest snapshot (partitions with unknown lag are left out).",
		[]string{"cluster", "group", "topic", "partition"}, nil)
	descKafkaStatus = prometheus.NewDesc("redrive_kafka_group_status",
		"Consumer group status from the sampler's latest snapshot: OK 0, WARN 1, STALL 2, STOP 3, EMPTY 4, DEAD 5, ERR 6.",
		[]string{"cluster", "group"}, nil)
	descKafkaLagSeconds = prometheus.NewDesc("redrive_kafka_group_lag_seconds",
		"Consumer group time lag per partition from the sampler's latest snapshot: now minus the timestamp of the next record to consume "+
			"at the time of the sample, 0 when caught up (partitions with unknown time lag are left out).",
		[]string{"cluster", "group", "topic", "partition"}, nil)
	descRabbitMessages = prometheus.NewDesc("redrive_rabbitmq_queue_messages",
		"Messages in a RabbitMQ queue from the sampler's latest snapshot, by state (ready, unacked); a queue whose counts "+
			"the management API did not report (statistics disabled, or not reported yet) is left out.",
		[]string{"broker", "vhost", "queue", "state"}, nil)
	descOutboxEvents = prometheus.NewDesc("redrive_outbox_events",
		"Outbox rows by status (SENT is the planner's estimate on large tables).",
		[]string{"outbox", "status"}, nil)
	descOutboxStuck = prometheus.NewDesc("redrive_outbox_stuck_leases",
		"Outbox rows in PROCESSING whose lease (locked_until) has expired.",
		[]string{"outbox"}, nil)
	descOutboxAge = prometheus.NewDesc("redrive_outbox_oldest_ready_age_seconds",
		"How long the oldest due READY outbox row has waited; 0 when none is due.",
		[]string{"outbox"}, nil)
	descDeadLetters = prometheus.NewDesc("redrive_dead_letters",
		deadLettersHelp,
		[]string{"source", "name"}, nil)
	// descDeadLettersByState is the same series name with a state label: state="open" counts the
	// dead letters nobody has resolved, ignored or replayed (a RabbitMQ DLQ's ready messages are
	// all open). The label-less series above stays as it was, so that existing alerts keep
	// their series; the registry does not let one collector describe one name with two label
	// sets, so this one is emitted without being described (a checked collector may do that).
	descDeadLettersByState = prometheus.NewDesc("redrive_dead_letters",
		deadLettersHelp,
		[]string{"source", "name", "state"}, nil)
	descReplayMessages = prometheus.NewDesc("redrive_replay_messages_total",
		"Messages of all replay jobs by settled outcome (published, skipped, failed), from the replay ledger.",
		[]string{"outcome"}, nil)
	descProblems = prometheus.NewDesc("redrive_problems",
		"What is on fire, by kind and severity: the problems of the one model (ops/health) that the overview lists and "+
			"notifications are sent about (new_error_group, kafka_group, outbox_stuck, dependency_down, …).",
		[]string{"kind", "severity"}, nil)
	descSnapshotAge = prometheus.NewDesc("redrive_snapshot_age_seconds",
		"Age of the sampler's latest good snapshot of a source (kafka/<cluster>, rabbitmq/<broker>); it grows when "+
			"sampling fails or no replica samples.",
		[]string{"source"}, nil)
)

// exporter is the Prometheus collector of what the console watches. Each scrape reads every
// source concurrently within exporterTimeout; a source that fails or is late loses its series
// for that scrape and counts one error, and the rest of the scrape is unaffected.
type exporter struct {
	kafka    health.KafkaSnapshots // nil when no Kafka cluster is configured
	clusters []string
	rabbit   health.RabbitSnapshots // nil when no RabbitMQ broker is configured
	brokers  []string
	outboxes []exporterOutbox
	replays  exporterReplays  // nil: no replay series
	problems exporterProblems // nil: no redrive_problems
	log      *slog.Logger
	timeout  time.Duration
	now      func() time.Time

	errors *prometheus.CounterVec

	replayFlight singleflight.Group
	replayMu     sync.Mutex
	replayCounts map[string]int64
	replayAt     time.Time
}

// newExporter builds the collector from the web layer's dependencies; it reads nothing yet.
func newExporter(deps Deps) *exporter {
	e := &exporter{log: deps.Logger, outboxes: make([]exporterOutbox, len(deps.Outboxes))}
	if deps.Snapshot != nil {
		e.kafka = deps.Snapshot
		for _, k := range deps.Kafka {
			e.clusters = append(e.clusters, k.Name())
		}
	}
	if deps.RabbitSnapshots != nil {
		e.rabbit = deps.RabbitSnapshots
		for _, b := range deps.Rabbit {
			e.brokers = append(e.brokers, b.Name())
		}
	}
	for i, o := range deps.Outboxes {
		e.outboxes[i] = o
	}
	if deps.Store != nil {
		e.replays = deps.Store
	}
	if deps.Store != nil || len(deps.Outboxes) > 0 || len(deps.Kafka) > 0 || len(deps.Rabbit) > 0 {
		if deps.Problems == nil {
			deps.Problems = NewProblems(deps)
		}
		e.problems = deps.Problems
	}
	return e.init()
}

// init fills the defaults and the error counter, with every source at 0 before its first error.
func (e *exporter) init() *exporter {
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.timeout == 0 {
		e.timeout = exporterTimeout
	}
	if e.now == nil {
		e.now = time.Now
	}
	e.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "redrive_exporter_errors_total",
		Help: "Scrapes that could not read a source (kafka/<cluster>, rabbitmq/<broker>, outbox/<name>, replays); its series were left out.",
	}, []string{"source"})
	for _, s := range e.sources() {
		e.errors.WithLabelValues(s.name)
	}
	return e
}

// Describe implements prometheus.Collector.
func (e *exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descKafkaLag, descKafkaLagSeconds, descKafkaStatus, descRabbitMessages, descOutboxEvents,
		descOutboxStuck, descOutboxAge, descDeadLetters, descReplayMessages, descSnapshotAge, descProblems} {
		ch <- d
	}
	e.errors.Describe(ch)
}

// source is one thing a scrape reads; collect returns the source's series, or an error and none.
type source struct {
	name    string
	collect func(ctx context.Context) ([]prometheus.Metric, error)
}

func (e *exporter) sources() []source {
	var out []source
	for _, c := range e.clusters {
		out = append(out, source{"kafka/" + c, func(ctx context.Context) ([]prometheus.Metric, error) { return e.collectKafka(ctx, c) }})
	}
	for _, b := range e.brokers {
		out = append(out, source{"rabbitmq/" + b, func(ctx context.Context) ([]prometheus.Metric, error) { return e.collectRabbit(ctx, b) }})
	}
	for _, o := range e.outboxes {
		out = append(out, source{"outbox/" + o.Name(), func(ctx context.Context) ([]prometheus.Metric, error) { return e.collectOutbox(ctx, o) }})
	}
	if e.replays != nil {
		out = append(out, source{"replays", e.collectReplays})
	}
	if e.problems != nil {
		out = append(out, source{"health", e.collectProblems})
	}
	return out
}

// Collect implements prometheus.Collector.
func (e *exporter) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range e.sources() {
		wg.Go(func() {
			// Some sources finish on their own deadline (outbox.Stats shares one query among
			// callers): the scrape stops waiting when its own time is up.
			ms, err := ops.Within(ctx, func() ([]prometheus.Metric, error) { return s.collect(ctx) })
			if err != nil {
				e.errors.WithLabelValues(s.name).Inc()
				e.log.Debug("exporter: source skipped", "source", s.name, "err", err)
				return
			}
			for _, m := range ms {
				ch <- m
			}
		})
	}
	wg.Wait()
	e.errors.Collect(ch)
}

// series accumulates one source's metrics. A label set seen twice is dropped (a duplicate would
// make the registry fail the whole scrape), as is an invalid label value (not UTF-8).
type series struct {
	out  []prometheus.Metric
	seen map[seriesKey]bool
}

type seriesKey struct {
	desc   *prometheus.Desc
	labels string
}

func (s *series) add(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	key := seriesKey{d, strings.Join(labels, "\xff")}
	if s.seen[key] {
		return
	}
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return
	}
	if s.seen == nil {
		s.seen = map[seriesKey]bool{}
	}
	s.seen[key] = true
	s.out = append(s.out, m)
}

// deadLetters exports one dead-letter topic or queue twice under redrive_dead_letters: all it
// holds (the label-less series) and the open ones (state="open").
func (s *series) deadLetters(source, name string, total, open int64) {
	s.add(descDeadLetters, prometheus.GaugeValue, float64(total), source, name)
	s.add(descDeadLettersByState, prometheus.GaugeValue, float64(open), source, name, "open")
}

func (e *exporter) snapshotAge(s *series, source string, at time.Time) {
	if !at.IsZero() {
		s.add(descSnapshotAge, prometheus.GaugeValue, max(0, e.now().Sub(at).Seconds()), source)
	}
}

// collectKafka exports the latest lag snapshot. It holds the last good sample when the last
// sampling failed (redrive_snapshot_age_seconds then grows); a cluster never sampled has none.
func (e *exporter) collectKafka(ctx context.Context, cluster string) ([]prometheus.Metric, error) {
	snap, err := e.kafka.LatestKafka(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var s series
	e.snapshotAge(&s, "kafka/"+cluster, snap.At)
	for _, g := range snap.Groups {
		if code, ok := kafkaStatusCodes[g.Status.Code]; ok {
			s.add(descKafkaStatus, prometheus.GaugeValue, code, cluster, g.Name)
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if p.Lag >= 0 {
					s.add(descKafkaLag, prometheus.GaugeValue, float64(p.Lag), cluster, g.Name, t.Topic, strconv.Itoa(int(p.Partition)))
				}
				if p.TimeLag >= 0 {
					s.add(descKafkaLagSeconds, prometheus.GaugeValue, p.TimeLag.Seconds(), cluster, g.Name, t.Topic, strconv.Itoa(int(p.Partition)))
				}
			}
		}
	}
	for _, t := range snap.DeadLetterTopics {
		if !t.Retry {
			s.deadLetters("kafka/"+cluster, t.Topic, t.Records, t.Open())
		}
	}
	return s.out, nil
}

// collectRabbit exports the latest queue snapshot: every queue's depths, and the ready count of
// each dead-letter queue (retry queues are not dead-letter queues; see rabbit.Topology). A queue
// whose counts the broker did not report (CountsUnreported: statistics disabled, or not reported
// yet) has no depth series: its 0 means "not known", and exported it would read as emptied (and
// resolve an alert on it). No consumer or rate series is exported, so ConsumersUnreported leaves
// nothing out.
func (e *exporter) collectRabbit(ctx context.Context, broker string) ([]prometheus.Metric, error) {
	snap, err := e.rabbit.LatestRabbit(ctx, broker)
	if err != nil {
		return nil, err
	}
	var s series
	e.snapshotAge(&s, "rabbitmq/"+broker, snap.At)
	for _, q := range snap.Queues {
		if q.CountsUnreported {
			continue
		}
		s.add(descRabbitMessages, prometheus.GaugeValue, float64(q.Ready), broker, q.Vhost, q.Name, "ready")
		s.add(descRabbitMessages, prometheus.GaugeValue, float64(q.Unacked), broker, q.Vhost, q.Name, "unacked")
		if q.IsDeadLetterQueue {
			s.deadLetters("rabbitmq/"+broker, q.Ref().String(), q.Ready, q.Ready)
		}
	}
	return s.out, nil
}

func (e *exporter) collectOutbox(ctx context.Context, o exporterOutbox) ([]prometheus.Metric, error) {
	st, err := o.CachedStats(ctx, outbox.StatsMaxAge)
	if err != nil {
		return nil, err
	}
	var s series
	name := o.Name()
	states := outbox.Statuses
	if st.Format != nil { // a registry format: its own states (none for debezium)
		states = st.Format.States
	}
	for _, status := range states {
		s.add(descOutboxEvents, prometheus.GaugeValue, float64(st.Counts[status]), name, string(status))
	}
	s.add(descOutboxStuck, prometheus.GaugeValue, float64(st.StuckLeases), name)
	age := 0.0
	if st.OldestReadyAge != nil {
		age = st.OldestReadyAge.Seconds()
	}
	s.add(descOutboxAge, prometheus.GaugeValue, age, name)
	return s.out, nil
}

func (e *exporter) collectReplays(ctx context.Context) ([]prometheus.Metric, error) {
	counts, err := e.replayOutcomeCounts(ctx)
	if err != nil {
		return nil, err
	}
	var s series
	for _, o := range replayOutcomes {
		s.add(descReplayMessages, prometheus.CounterValue, float64(counts[o]), o)
	}
	for o, n := range counts { // an outcome added to the ledger later still shows
		s.add(descReplayMessages, prometheus.CounterValue, float64(n), o)
	}
	return s.out, nil
}

// replayOutcomeCounts serves the ledger's counts from a copy at most replayCountsTTL old;
// concurrent scrapes share one query.
func (e *exporter) replayOutcomeCounts(ctx context.Context) (map[string]int64, error) {
	e.replayMu.Lock()
	counts, at := e.replayCounts, e.replayAt
	e.replayMu.Unlock()
	if counts != nil && e.now().Sub(at) < replayCountsTTL {
		return counts, nil
	}
	return ops.Shared(ctx, &e.replayFlight, "counts", e.timeout, "replay outcome counts", func(ctx context.Context) (map[string]int64, error) {
		counts, err := e.replays.ReplayOutcomeCounts(ctx)
		if err != nil {
			return nil, err
		}
		e.replayMu.Lock()
		e.replayCounts, e.replayAt = counts, e.now()
		e.replayMu.Unlock()
		return counts, nil
	})
}

// exporterProblems evaluates the one problem model (*health.Monitor).
type exporterProblems interface {
	Evaluate(ctx context.Context) health.Report
}

// collectProblems counts the current problems by kind and severity; a severity of a kind with no
// problem now is left out (its series goes stale), as Alertmanager rules expect of a gauge of
// things on fire. Job outcomes (notices) are not on fire and are left out too.
func (e *exporter) collectProblems(ctx context.Context) ([]prometheus.Metric, error) {
	counts := map[[2]string]int{}
	for _, p := range e.problems.Evaluate(ctx).Problems {
		if !p.Notice() {
			counts[[2]string{p.Kind, p.Severity}]++
		}
	}
	var s series
	for k, n := range counts {
		s.add(descProblems, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	return s.out, nil
}
