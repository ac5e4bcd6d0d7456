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
	"github.com/redrive/redrive/ops/store"
)

// Defaults for the zero values of Options.
const (
	DefaultInterval  = 15 * time.Second
	DefaultRetention = 7 * 24 * time.Hour
	DefaultCacheTTL  = time.Second
)

// LeaderLockKey is the PostgreSQL advisory lock key whose holder is the sampling replica ("rdsampl"
// in ASCII). It differs from the store's migration lock.
const LeaderLockKey int64 = 0x726473616d706c

// pruneEvery is how often (on the sampler's clock) the leader deletes history past retention; it
// also prunes when it becomes leader.
const pruneEvery = time.Hour

// readTimeout bounds the store read shared by concurrent LatestKafka callers.
const readTimeout = 5 * time.Second

// Options configure a Sampler.
type Options struct {
	// Store is the console's database: snapshots, history and the leader lock. Required.
	Store *store.Store
	// Kafka lists the clusters to sample, in the order pages list them. Names must be unique.
	Kafka []KafkaSource
	// Rabbit lists the RabbitMQ brokers to sample, in config order. Names must be unique. Either
	// list may be empty.
	Rabbit []RabbitSource
	// Interval between samples; 0 means DefaultInterval (15 s). One sample of all clusters must
	// finish within four fifths of it, or the clusters still running are reported as failed.
	Interval time.Duration
	// Retention is how long history is kept; 0 means DefaultRetention (7 days).
	Retention time.Duration
	// Logger receives leadership changes and failed samples; nil discards them.
	Logger *slog.Logger
	// Now is the clock samples are stamped and judged with; nil means time.Now. Tests step it.
	Now func() time.Time
	// CacheTTL is how long LatestKafka serves a snapshot from memory before reading the store
	// again; 0 means DefaultCacheTTL (1 s), negative disables the cache. KafkaGroupHistory keeps
	// an answer for one Interval (a new sample arrives no sooner); a negative CacheTTL disables
	// that too.
	CacheTTL time.Duration
}

// Sampler samples the configured sources on one replica at a time and serves their snapshots and
// history to every replica. Create it with New; it is safe for concurrent use.
type Sampler struct {
	store     *store.Store
	lock      *store.SessionLock
	log       *slog.Logger
	now       func() time.Time
	interval  time.Duration
	timeout   time.Duration
	retention time.Duration
	cacheTTL  time.Duration

	kafka       []*kafkaState // config order
	kafkaByName map[string]*kafkaState
	rmq         rabbitPart

	running atomic.Bool
	// tickMu serializes ticks (Run's and SampleOnce's); it guards the fields below and the
	// kafkaStates' windows.
	tickMu    sync.Mutex
	leader    atomic.Bool
	lastTick  time.Time // wall clock, for Run's first tick
	lastPrune time.Time // sampler clock; zero after becoming leader

	cacheMu sync.Mutex
	cache   map[string]cachedKafka
	history map[historyKey]cachedHistory
	reads   singleflight.Group

	m metrics
}

type cachedKafka struct {
	snap    KafkaSnapshot
	fetched time.Time // wall clock
}

// historyKey identifies a chart: the range is its length, which is what a page asks for ("the
// last 24 h"), rounded to the second.
type historyKey struct {
	cluster, group string
	span           time.Duration
	maxPoints      int
}

type cachedHistory struct {
	points  []GroupPoint
	fetched time.Time // wall clock
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
		lock:        opts.Store.SessionLock(LeaderLockKey),
		log:         opts.Logger,
		now:         opts.Now,
		interval:    opts.Interval,
		retention:   opts.Retention,
		cacheTTL:    opts.CacheTTL,
		kafkaByName: map[string]*kafkaState{},
		cache:       map[string]cachedKafka{},
		history:     map[historyKey]cachedHistory{},
		m:           newMetrics(),
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
	s.timeout = s.interval - s.interval/5
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
	return s, nil
}

// Run samples every Interval until ctx is done, then gives up leadership (so another replica takes
// over on its next tick) and returns nil. The first tick is immediate unless SampleOnce ran less
// than an interval ago. Failures are logged, counted and stored in the snapshots; they never stop
// the loop. Run may be called once.
func (s *Sampler) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return fmt.Errorf("sampler: %w: Run called twice", ops.ErrConflict)
	}
	defer s.resign()
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

func (s *Sampler) logTick(ctx context.Context, err error) {
	if err != nil && ctx.Err() == nil {
		s.log.Warn("sampler tick failed", "err", err)
	}
}

// SampleOnce is one tick: it takes or confirms leadership and, as the leader, samples every source
// concurrently and stores the snapshots and history (and prunes history now and then). On a replica
// that is not the leader it does nothing and returns nil. The error joins the sources that failed;
// their snapshots keep the last good data and carry the error.
func (s *Sampler) SampleOnce(ctx context.Context) error {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	s.lastTick = time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()

	held, lockErr := s.lock.TryHold(ctx)
	was := s.leader.Swap(held)
	s.m.leader.Set(b2f(held))
	switch {
	case !held && was:
		s.log.Warn("sampler leadership lost", "err", lockErr)
		return lockErr
	case !held:
		return lockErr // nil when another replica simply holds the lock
	case !was:
		s.log.Info("sampler leadership taken")
		s.lastPrune = time.Time{}
		for _, st := range s.kafka {
			st.warm = false
		}
		for _, st := range s.rmq.brokers {
			st.warm = false
		}
	}

	now := s.now()
	var (
		wg   sync.WaitGroup
		errs = make([]error, len(s.kafka)+len(s.rmq.brokers))
	)
	for i, st := range s.kafka {
		wg.Go(func() { errs[i] = s.sampleKafka(ctx, st, now) })
	}
	for i, st := range s.rmq.brokers {
		wg.Go(func() { errs[len(s.kafka)+i] = s.sampleRabbit(ctx, st, now) })
	}
	wg.Wait()

	if now.Sub(s.lastPrune) >= pruneEvery {
		// Pruning gets its own deadline: a large first backlog must not eat the next sample's time.
		pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
		n, err := s.store.PruneHistory(pctx, now.Add(-s.retention))
		pcancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("sampler: prune: %w", err))
		} else {
			s.lastPrune = now
			if n > 0 {
				s.log.Info("sampler history pruned", "rows", n, "before", now.Add(-s.retention))
			}
		}
	}
	return errors.Join(errs...)
}

// Leader reports whether this replica held the sampling lock at its last tick.
func (s *Sampler) Leader() bool { return s.leader.Load() }

// Close gives up leadership (if held) and closes the lock's connection. Run does this itself on
// return; Close is for a Sampler driven only by SampleOnce.
func (s *Sampler) Close() { s.resign() }

func (s *Sampler) resign() {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	s.lock.Release()
	if s.leader.Swap(false) {
		s.log.Info("sampler leadership released")
	}
	s.m.leader.Set(0)
}

// Collectors returns the sampler's Prometheus metrics, for the caller's registry:
// redrive_sampler_runs_total{source,result}, redrive_sampler_duration_seconds{source} and
// redrive_sampler_leader. source is "kafka/<cluster>" or "rabbitmq/<broker>"; result is "ok" or
// "error".
func (s *Sampler) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.m.runs, s.m.duration, s.m.leader}
}

type metrics struct {
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	leader   prometheus.Gauge
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
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "redrive_sampler_leader",
			Help: "1 when this replica holds the sampling lock and samples, else 0.",
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

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
