package sampler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/lease"
)

// Defaults for the zero values of Options.
const (
	DefaultInterval  = 15 * time.Second
	DefaultRetention = 7 * 24 * time.Hour
	DefaultCacheTTL  = time.Second
	// DefaultMinRefresh is Options.MinRefresh's zero value.
	DefaultMinRefresh = 2 * time.Second
	// DefaultMaxServeAgeIntervals is Options.MaxServeAge's zero value in Intervals: a reader
	// waits for a re-sample only when the snapshot missed more than one scheduled sample.
	DefaultMaxServeAgeIntervals = 2
)

// pruneEvery is how often (on the sampler's clock) the leader deletes history past retention; it
// also prunes when it becomes leader.
const pruneEvery = time.Hour

// readTimeout bounds the store read shared by concurrent LatestKafka callers.
const readTimeout = 5 * time.Second

// Options configure a Sampler.
type Options struct {
	// Store is the console's database: snapshots, history and the sources' leases. Required.
	Store Store
	// ReplicaID names this replica in the sources' leases and in /api/v1/replicas; give the replay
	// engine the same (replay.Options.Owner) so its jobs list under it. Empty means
	// "<host>-<pid>-<random>". Must be unique among the replicas.
	ReplicaID string
	// Kafka lists the clusters to sample, in the order pages list them. Names must be unique.
	Kafka []KafkaSource
	// Rabbit lists the RabbitMQ brokers to sample, in config order. Names must be unique. Either
	// list may be empty.
	Rabbit []RabbitSource
	// Interval between samples; 0 means DefaultInterval (15 s). One sample of all clusters must
	// finish within four fifths of it, or the clusters still running are reported as failed. It is
	// also the TTL of a source's lease (renewed every quarter of it): a leader that stops renewing
	// is replaced within 1¼ intervals, and a snapshot older than StaleAfter intervals is stale.
	Interval time.Duration
	// Retention is how long history is kept; 0 means DefaultRetention (7 days).
	Retention time.Duration
	// NewGroupWindow is how long an error group of a dead-letter topic must have been quiet for
	// its next record to start a new episode (notify.new_group_window); 0 means 24 h.
	NewGroupWindow time.Duration
	// ErrorSample is what of an error group's newest exception message the store keeps, and so
	// the overview and notifications quote: masked as its record's content is masked for
	// everyone, and the rules it was masked by (redact.Rules.StoredSample). Nil keeps it as read.
	ErrorSample func(kafkamodel.ErrorGroup) (sample, maskedBy string)
	// Logger receives leadership changes and failed samples; nil discards them.
	Logger *slog.Logger
	// Now is the clock samples are stamped and judged with; nil means time.Now. Tests step it.
	Now func() time.Time
	// CacheTTL is how long LatestKafka serves a snapshot from memory before reading the store
	// again; 0 means DefaultCacheTTL (1 s), negative disables the cache. KafkaGroupHistory keeps
	// an answer for one Interval (a new sample arrives no sooner); a negative CacheTTL disables
	// that too.
	CacheTTL time.Duration
	// MinRefresh is how old a Kafka cluster's snapshot may be when someone looks (FreshKafka)
	// before the replica leading that cluster samples it again on demand, once for all
	// concurrent viewers; 0 means DefaultMinRefresh (2 s), negative turns on-demand samples off.
	MinRefresh time.Duration
	// MaxServeAge bounds how old a Kafka cluster's snapshot may be and still be served at once by
	// FreshKafka while its re-sample runs behind the answer (stale while revalidate); a read of a
	// snapshot this old or older waits for the re-sample. 0 means DefaultMaxServeAgeIntervals Intervals (30 s
	// at the default interval); it is at least MinRefresh (equal to it, every read that starts a
	// re-sample waits for it, as before stale while revalidate).
	MaxServeAge time.Duration
}

// Sampler samples each configured source on one replica at a time (the replicas split the sources,
// see leadership.go) and serves their snapshots and history to every replica. Create it with New;
// it is safe for concurrent use.
type Sampler struct {
	store          Store
	id             string
	ttl            time.Duration // of a source's lease: one Interval
	order          []string      // the sources' names, in this replica's order of preference
	lead           leadership
	started        time.Time // sampler clock, for the staleness of a source never sampled
	log            *slog.Logger
	now            func() time.Time
	interval       time.Duration
	timeout        time.Duration
	retention      time.Duration
	cacheTTL       time.Duration
	minFresh       time.Duration // Options.MinRefresh; <= 0 off
	maxServeAge    time.Duration // Options.MaxServeAge, defaulted
	newGroupWindow time.Duration // Options.NewGroupWindow, defaulted
	errorSample    func(kafkamodel.ErrorGroup) (string, string)

	kafka       []*kafkaState // config order
	kafkaByName map[string]*kafkaState
	rmq         rabbitPart

	running atomic.Bool
	// tickMu serializes ticks (Run's and SampleOnce's); it guards the fields below and the
	// kafkaStates' windows.
	tickMu    sync.Mutex
	lastTick  time.Time // wall clock, for Run's first tick
	lastPrune time.Time // sampler clock; zero until this replica pruned
	pruner    string    // the source whose leader prunes history: the first configured
	pruneTok  int64     // the token of the pruning source's lease when lastPrune was set

	cacheMu sync.Mutex
	cache   map[string]cached[lag.Snapshot]
	history map[historyKey]cached[[]lag.Point]
	reads   singleflight.Group

	m metrics
}

// historyKey identifies a chart: the range is its length, which is what a page asks for ("the
// last 24 h"), rounded to the second.
type historyKey struct {
	cluster, group string
	span           time.Duration
	maxPoints      int
}

// New checks opts and builds a Sampler. It does not connect or sample: call SampleOnce and Run.
// A missing Store, a source without a cluster or broker, or two sources of one kind with one name
// are ops.ErrInvalid. Kafka and Rabbit may each be empty.
func New(opts Options) (*Sampler, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("sampler: %w", ops.Invalid("store", "required"))
	}
	if opts.Interval < 0 {
		return nil, fmt.Errorf("sampler: %w", ops.Invalid("sampler.interval", "must not be negative"))
	}
	if opts.Retention < 0 {
		return nil, fmt.Errorf("sampler: %w", ops.Invalid("sampler.retention", "must not be negative"))
	}
	s := &Sampler{
		store:       opts.Store,
		id:          opts.ReplicaID,
		lead:        leadership{held: map[string]heldLease{}},
		log:         opts.Logger,
		now:         opts.Now,
		interval:    opts.Interval,
		retention:   opts.Retention,
		cacheTTL:    opts.CacheTTL,
		minFresh:    opts.MinRefresh,
		maxServeAge: opts.MaxServeAge,
		kafkaByName: map[string]*kafkaState{},
		cache:       map[string]cached[lag.Snapshot]{},
		history:     map[historyKey]cached[[]lag.Point]{},
		m:           newMetrics(),

		newGroupWindow: opts.NewGroupWindow,
		errorSample:    opts.ErrorSample,
	}
	if s.newGroupWindow <= 0 {
		s.newGroupWindow = 24 * time.Hour
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.interval == 0 {
		s.interval = DefaultInterval
	}
	if s.retention == 0 {
		s.retention = DefaultRetention
	}
	if s.cacheTTL == 0 {
		s.cacheTTL = DefaultCacheTTL
	}
	if s.minFresh == 0 {
		s.minFresh = DefaultMinRefresh
	}
	if s.maxServeAge <= 0 {
		s.maxServeAge = DefaultMaxServeAgeIntervals * s.interval
	}
	s.maxServeAge = max(s.maxServeAge, s.minFresh)
	s.timeout = s.interval - s.interval/5
	s.ttl = s.interval
	s.started = s.now()
	if s.id == "" {
		s.id = defaultReplicaID()
	}
	for i, src := range opts.Kafka {
		if src.Cluster == nil {
			return nil, fmt.Errorf("sampler: %w", ops.Invalid(fmt.Sprintf("kafka[%d]", i), "cluster is required"))
		}
		name := src.Cluster.Name()
		if _, dup := s.kafkaByName[name]; dup {
			return nil, fmt.Errorf("sampler: %w", ops.Invalid(fmt.Sprintf("kafka[%d].name", i), fmt.Sprintf("%q is used twice", name)))
		}
		st := newKafkaState(src, s.interval)
		s.kafka = append(s.kafka, st)
		s.kafkaByName[name] = st
	}
	if err := s.rmq.init(opts.Rabbit, s.interval); err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	var names []string
	for _, st := range s.kafka {
		names = append(names, kafkaSourceName(st.name))
	}
	for _, st := range s.rmq.brokers {
		names = append(names, rabbitSourceName(st.name))
	}
	s.order = preference(s.id, names)
	if len(names) > 0 {
		s.pruner = names[0]
	}
	return s, nil
}

// Run samples every Interval until ctx is done, then gives up its leases (so other replicas take
// the sources over at once) and returns nil. Beside the samples, it renews and rebalances the
// leases every Interval/4, so that a sample slower than that does not let a lease lapse. The first
// tick is immediate unless SampleOnce ran less than an interval ago. Failures are logged, counted
// and stored in the snapshots; they never stop the loop. Run may be called once.
func (s *Sampler) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return fmt.Errorf("sampler: %w: Run called twice", ops.ErrConflict)
	}
	defer s.resign()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		t := time.NewTicker(s.ttl / renewsPerTTL)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				lctx, cancel := context.WithTimeout(ctx, s.ttl/renewsPerTTL)
				s.logLeases(ctx, s.syncLeases(lctx))
				cancel()
			}
		}
	})
	t := time.NewTicker(s.interval)
	defer t.Stop()
	s.tickMu.Lock()
	recent := !s.lastTick.IsZero() && time.Since(s.lastTick) < s.interval
	s.tickMu.Unlock()
	if !recent {
		s.logTick(ctx, s.SampleOnce(ctx))
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.logTick(ctx, s.SampleOnce(ctx))
		}
	}
}

func (s *Sampler) logLeases(ctx context.Context, err error) {
	if err != nil && ctx.Err() == nil && !errors.Is(err, lease.ErrFenced) { // a takeover is logged already
		s.log.Warn("sampler leases: sync failed", "err", err)
	}
}

func (s *Sampler) logTick(ctx context.Context, err error) {
	if err != nil && ctx.Err() == nil {
		s.log.Warn("sampler tick failed", "err", err)
	}
}

// SampleOnce is one tick: it renews, takes or hands over leases (as Run's lease loop does) and
// samples concurrently every source this replica leads, storing each snapshot and its history
// under the source's fencing token; the leader of the first source also prunes history now and
// then. On a replica that leads nothing it only heartbeats and returns nil. The error joins the
// sources that failed (their snapshots keep the last good data and carry the error) and the leases
// lost; a write refused because another replica took the source over (lease.ErrFenced) makes
// this replica step down from that source.
func (s *Sampler) SampleOnce(ctx context.Context) error {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	s.lastTick = time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()

	errs := []error{s.syncLeases(ctx)}
	now := s.now()
	var wg sync.WaitGroup
	res := make([]error, len(s.kafka)+len(s.rmq.brokers))
	for i, st := range s.kafka {
		if l, ok := s.leaseOf(kafkaSourceName(st.name)); ok {
			wg.Go(func() { res[i] = s.sampleKafka(ctx, st, l, now) })
		}
	}
	for i, st := range s.rmq.brokers {
		if l, ok := s.leaseOf(rabbitSourceName(st.name)); ok {
			wg.Go(func() { res[len(s.kafka)+i] = s.sampleRabbit(ctx, st, l, now) })
		}
	}
	wg.Wait()
	errs = append(errs, res...)

	if l, ok := s.leaseOf(s.pruner); ok && (l.Token != s.pruneTok || now.Sub(s.lastPrune) >= pruneEvery) {
		// Pruning gets its own deadline: a large first backlog must not eat the next sample's time.
		pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
		n, err := s.store.PruneHistory(pctx, now.Add(-s.retention))
		pcancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("sampler: prune: %w", err))
		} else {
			s.lastPrune, s.pruneTok = now, l.Token
			if n > 0 {
				s.log.Info("sampler history pruned", "rows", n, "before", now.Add(-s.retention))
			}
		}
	}
	return errors.Join(errs...)
}

// write stores one sample under l. The store refuses it when another replica took the source over
// meanwhile (this one was slow, or frozen): this replica then steps down from the source. A lease
// past its local deadline that nobody took over is still current, and the write is harmless.
func (s *Sampler) write(ctx context.Context, l lease.Lease, w history.SampleWrite) error {
	err := s.store.WriteSample(ctx, l, w)
	if errors.Is(err, lease.ErrFenced) {
		s.stepDown(l)
	}
	return err
}

// Leader reports whether this replica led at least one source at its last lease round.
func (s *Sampler) Leader() bool {
	s.lead.mu.Lock()
	defer s.lead.mu.Unlock()
	return len(s.lead.held) > 0
}

// Close gives up the leases (if any) and leaves the replica list. Run does this itself on return;
// Close is for a Sampler driven only by SampleOnce.
func (s *Sampler) Close() { s.resign() }

func (s *Sampler) resign() {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	had := s.Leader()
	s.releaseAll()
	if had {
		s.log.Info("sampler leadership released")
	}
}

// Collectors returns the sampler's Prometheus metrics, for the caller's registry:
// redrive_sampler_runs_total{source,result}, redrive_sampler_duration_seconds{source} and
// redrive_sampler_leader (the number of sources led). source is "kafka/<cluster>" or "rabbitmq/<broker>"; result is "ok" or
// "error".
func (s *Sampler) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.m.runs, s.m.duration, s.m.leader, s.m.refreshes}
}

type metrics struct {
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	leader   prometheus.Gauge
	// refreshes counts on-demand samples (FreshKafka).
	refreshes prometheus.Counter
}

func newMetrics() metrics {
	return metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redrive_sampler_runs_total",
			Help: "Samples taken by this replica, by source and result (ok, error).",
		}, []string{"source", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "redrive_sampler_duration_seconds",
			Help:    "Time to sample one source and store the result.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"source"}),
		refreshes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "redrive_sampler_refreshes_total",
			Help: "On-demand samples of a Kafka cluster someone looked at whose snapshot was older than sampler.min_refresh.",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "redrive_sampler_leader",
			Help: "The number of sources (Kafka clusters, RabbitMQ brokers) this replica leads and samples.",
		}),
	}
}

func (s *Sampler) observe(source string, start time.Time, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	s.m.runs.WithLabelValues(source, result).Inc()
	s.m.duration.WithLabelValues(source).Observe(time.Since(start).Seconds())
}

// failedSample records that a source could not be read at at: the snapshot keeps its last good
// data and gains the error, in the words for a person, which pages show (remember keeps them in
// this replica's memory too); the returned error, logged, has the cause. Shutting down is not the
// source's fault: nothing is recorded then.
func (s *Sampler) failedSample(ctx context.Context, l lease.Lease, kind, name string, at time.Time, err error,
	remember func(name, text string, at time.Time)) error {
	if errors.Is(context.Cause(ctx), context.Canceled) {
		return err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	if serr := s.write(wctx, l, history.SampleWrite{Kind: kind, Name: name, Error: ops.Message(err), ErrorAt: at}); serr != nil {
		err = errors.Join(err, serr)
	} else {
		remember(name, ops.Message(err), at)
	}
	return fmt.Errorf("sampler: %w", err)
}
