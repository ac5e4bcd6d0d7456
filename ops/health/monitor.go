package health

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/replay"
)

// The sources a Monitor reads, each narrowed to what it calls. None reaches a broker: Kafka and
// RabbitMQ come from the sampler's stored snapshots.
type (
	// KafkaSnapshots returns a cluster's latest stored sample; errors are ops.ErrUnavailable or
	// ops.ErrNotFound.
	KafkaSnapshots interface {
		LatestKafka(ctx context.Context, cluster string) (lag.Snapshot, error)
	}
	// RabbitSnapshots returns a broker's latest stored sample.
	RabbitSnapshots interface {
		LatestRabbit(ctx context.Context, broker string) (queues.Snapshot, error)
	}
	// Outbox is one service's outbox table, its stats cached (outbox.StatsMaxAge).
	Outbox interface {
		Name() string
		CachedStats(ctx context.Context, maxAge time.Duration) (outbox.Stats, error)
		StaleReadyAfter() time.Duration
	}
	// Jobs lists the most recent replay jobs, newest first.
	Jobs interface {
		Jobs(ctx context.Context, limit int) ([]replay.Job, error)
	}
	// ErrorGroups lists the dead-letter error groups whose episode started since a time (the
	// sampler records them: store.RecordErrorGroups).
	ErrorGroups interface {
		ErrorGroupEpisodes(ctx context.Context, since time.Time, limit int) ([]history.ErrorGroupEpisode, error)
	}
)

// Check is one configured dependency and how to ping it.
type Check struct {
	Name string
	Ping func(ctx context.Context) error
}

// Sources are what a Monitor reads; zero fields are left out.
type Sources struct {
	Clusters []string       // Kafka cluster names, in config order
	Kafka    KafkaSnapshots // required when Clusters is not empty
	Brokers  []string       // RabbitMQ broker names, in config order
	Rabbit   RabbitSnapshots
	Outboxes []Outbox
	// OutboxSettled counts each outbox's DEAD events marked resolved or ignored, which are not
	// problems; nil: every DEAD event is.
	OutboxSettled OutboxSettled
	Replays       Jobs // nil: no replay problems
	// ErrorGroups and NewGroupWindow (notify.new_group_window; 0 means 24 h) tell new error
	// groups in the Clusters' dead-letter topics; nil: none.
	ErrorGroups    ErrorGroups
	NewGroupWindow time.Duration
	Checks         []Check // nil: no dependency problems
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log gets the internal error behind each problem and dependency row made from a failure (the
	// text a person reads is its ops.Message); nil means slog.Default().
	Log *slog.Logger
}

// OutboxSettled counts an outbox's DEAD events that are marked resolved or ignored;
// *triage.Triage implements it.
type OutboxSettled interface {
	SettledDead(ctx context.Context, outbox string) (int64, error)
}

// Report is one evaluation: every problem, worst first, and each dependency's check.
type Report struct {
	CheckedAt    time.Time
	Problems     []Problem
	Dependencies []Dependency
}

// Monitor evaluates the rules over its sources.
type Monitor struct {
	src Sources
	mu  sync.Mutex
	// logged is each failing source's internal error as last logged, by problem key, so that
	// one that stays down is logged when it starts and when its error changes, not at every
	// evaluation.
	logged map[string]string
}

// pingTimeout bounds one dependency's check, so a hung broker cannot hang an evaluation.
const pingTimeout = 3 * time.Second

// recentJobs is how many of the newest replay jobs are looked at; recentErrorGroups how many
// of the newest error-group episodes.
const (
	recentJobs        = 20
	recentErrorGroups = 100
)

// NewMonitor returns a Monitor over src.
func NewMonitor(src Sources) *Monitor {
	if src.Now == nil {
		src.Now = time.Now
	}
	if src.Log == nil {
		src.Log = slog.Default()
	}
	return &Monitor{src: src, logged: map[string]string{}}
}

// Evaluate reads every source at once, each bounded by ctx, and applies the rules. A source that
// fails is itself a problem (…_unavailable); Evaluate never fails.
func (m *Monitor) Evaluate(ctx context.Context) Report {
	now := m.src.Now()
	r := Report{CheckedAt: now.UTC(), Problems: []Problem{}}
	panels := make([][]Problem, len(m.src.Clusters)+len(m.src.Brokers)+3)
	var failed failures
	var wg sync.WaitGroup
	for i, c := range m.src.Clusters {
		wg.Go(func() {
			snap, err := m.src.Kafka.LatestKafka(ctx, c)
			failed.add(key(KindKafkaUnavailable, c), err)
			panels[i] = KafkaProblems(c, snap, err, now)
		})
	}
	for i, b := range m.src.Brokers {
		wg.Go(func() {
			snap, err := m.src.Rabbit.LatestRabbit(ctx, b)
			failed.add(key(KindRabbitUnavailable, b), err)
			panels[len(m.src.Clusters)+i] = RabbitProblems(b, snap, err, now)
		})
	}
	wg.Go(func() {
		if m.src.ErrorGroups != nil && len(m.src.Clusters) > 0 {
			window := m.src.NewGroupWindow
			if window <= 0 {
				window = 24 * time.Hour
			}
			eps, err := m.src.ErrorGroups.ErrorGroupEpisodes(ctx, now.Add(-window), recentErrorGroups)
			panels[len(panels)-3] = NewErrorGroupProblems(m.src.Clusters, eps, err, now)
		}
	})
	wg.Go(func() {
		if m.src.Replays != nil {
			jobs, err := m.src.Replays.Jobs(ctx, recentJobs)
			failed.add(key(KindReplayUnavailable), err)
			panels[len(panels)-2] = ReplayProblems(jobs, err, now)
		}
	})
	wg.Go(func() {
		out := make([][]Problem, len(m.src.Outboxes))
		var owg sync.WaitGroup
		for i, o := range m.src.Outboxes {
			owg.Go(func() {
				st, err := o.CachedStats(ctx, outbox.StatsMaxAge)
				failed.add(key(KindOutboxUnavailable, o.Name()), err)
				var settled int64
				if err == nil && m.src.OutboxSettled != nil {
					// When the store cannot say, every DEAD event counts: too many on fire rather
					// than too few.
					settled, _ = m.src.OutboxSettled.SettledDead(ctx, o.Name())
				}
				out[i] = OutboxProblems(o.Name(), st, settled, err, o.StaleReadyAfter(), now)
			})
		}
		owg.Wait()
		for _, p := range out {
			panels[len(panels)-1] = append(panels[len(panels)-1], p...)
		}
	})
	r.Dependencies = make([]Dependency, len(m.src.Checks))
	for i, ch := range m.src.Checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, pingTimeout)
			defer cancel()
			r.Dependencies[i] = Dependency{Name: ch.Name, OK: true}
			if err := ch.Ping(ctx); err != nil {
				failed.add(key(KindDependencyDown, ch.Name), err)
				r.Dependencies[i] = Dependency{Name: ch.Name, Error: reason(err)}
			}
		})
	}
	wg.Wait()
	m.logFailures(failed.errs)
	for _, p := range panels {
		r.Problems = append(r.Problems, p...)
	}
	r.Problems = append(r.Problems, DependencyProblems(r.Dependencies)...)
	Sort(r.Problems)
	return r
}

// failures collects an evaluation's source and check errors by the key of the problem each makes.
type failures struct {
	mu   sync.Mutex
	errs map[string]error
}

// add records err (nil: the source answered) under key.
func (f *failures) add(key string, err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errs == nil {
		f.errs = map[string]error{}
	}
	f.errs[key] = err
}

// logFailures logs the internal error of each failure that is new, or whose error changed, since
// the last evaluation: what a person reads of it (reason) leaves out the driver's text, which names
// the database's user, host and port, so this is where that goes.
func (m *Monitor) logFailures(errs map[string]error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := make(map[string]string, len(errs))
	for k, err := range errs {
		text := err.Error()
		now[k] = text
		if m.logged[k] != text {
			m.src.Log.Warn("health: a source failed", "problem", k, "err", text)
		}
	}
	m.logged = now
}
