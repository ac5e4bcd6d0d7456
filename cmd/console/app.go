package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/health"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/notify"
	"github.com/redrive/redrive/ops/offsets"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/sampler"
	"github.com/redrive/redrive/ops/search"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/trace"
	"github.com/redrive/redrive/ops/triage"
	"github.com/redrive/redrive/paths/links"
	"github.com/redrive/redrive/web"
)

// app is every adapter the console builds from its config, once.
type app struct {
	store    *store.Store
	outboxes []*outbox.Outbox
	kafka    []*kafka.Cluster
	rabbit   []*rabbit.Broker
	inboxes  []*inbox.Inbox
	sampler  *sampler.Sampler // nil when nothing is sampled
	notifier *notify.Notifier // nil when notify.channels is empty
	problems *health.Monitor  // the one health monitor: the overview, the exporter and the notifier
	engine   *replay.Engine
	offsets  *offsets.Mover // nil without Kafka clusters
	tracer   *trace.Tracer
	checks   []handlers.Check
	registry *prometheus.Registry
	lagRules map[string]lag.Rules
	// redact is the redaction in force (reloaded in place): what the sampler stores of error
	// samples, and what the overview and notifications tell of them, is masked by it.
	redact *redact.Rules
	// fourEyes is replay.four_eyes over the store's ledger of moves: direct outbox requeues are
	// counted by it as the replay engine and the offset mover count theirs.
	fourEyes foureyes.Rule
	// newGroupWindow is notify.new_group_window: the overview and the notifier tell new error
	// groups by it.
	newGroupWindow time.Duration
	closers        []func()
}

// dependency is what the app opens and keeps: closed when the app closes, pinged by /readyz.
type dependency interface {
	Close()
	Ping(ctx context.Context) error
}

// keep closes d with the app (the last opened first) and checks it in /readyz as name.
func (a *app) keep(name string, d dependency) {
	a.closers = append(a.closers, d.Close)
	a.checks = append(a.checks, handlers.Check{Name: name, Ping: d.Ping})
}

// buildApp connects nothing eagerly but the store (migrations run now): a dependency that is down
// shows in its panels and /readyz, and recovers without a restart.
func buildApp(ctx context.Context, cfg *configs.Config, log *slog.Logger) (*app, error) {
	a := &app{registry: prometheus.NewRegistry(), lagRules: map[string]lag.Rules{}, newGroupWindow: cfg.Notify.NewGroupWindow.D()}
	st, err := store.OpenWith(ctx, string(cfg.Store.DSN), store.Options{MaxConns: cfg.Store.Size(configs.DefaultStoreMaxConns), AcquireTimeout: cfg.Store.Wait()})
	if err != nil {
		return nil, fmt.Errorf("console store: %w", err)
	}
	a.store = st
	a.keep("store", st)
	a.fourEyes = foureyes.Rule{Settings: fourEyes(cfg.Replay.FourEyes), Moves: st, Turns: st}
	if a.redact, err = redact.New(cfg.Redaction.Headers, cfg.Redaction.JSONPaths); err != nil {
		a.Close()
		return nil, err
	}

	for _, oc := range cfg.Outboxes {
		o, err := openOutbox(ctx, oc)
		if err != nil {
			a.Close()
			return nil, err
		}
		a.outboxes = append(a.outboxes, o)
		a.keep("outbox/"+o.Name(), o)
	}
	var sources []sampler.KafkaSource
	for _, kc := range cfg.Kafka {
		k, err := kafka.New(kc, cfg.MessageID)
		if err != nil {
			a.Close()
			return nil, err
		}
		a.kafka = append(a.kafka, k)
		a.keep("kafka/"+k.Name(), k)
		a.lagRules[kc.Name] = lagRules(kc.Lag)
		sources = append(sources, sampler.KafkaSource{Cluster: k, Rules: a.lagRules[kc.Name]})
	}
	for _, rc := range cfg.RabbitMQ {
		r, err := rabbit.New(rc, cfg.MessageID)
		if err != nil {
			a.Close()
			return nil, err
		}
		r.SetQueueLock(st) // browses and plans of a queue take turns across replicas
		// Reads of a delivery-limited quorum queue (RabbitMQ 4.x) keep what they may not return.
		r.SetCustodian(replay.Custody{Store: st, Audit: st})
		a.rabbit = append(a.rabbit, r)
		a.keep("rabbitmq/"+r.Name(), r)
	}
	for _, c := range cfg.Consumers {
		if c.Inbox == nil {
			continue
		}
		in, err := openInbox(ctx, c.Name, *c.Inbox)
		if err != nil {
			a.Close()
			return nil, err
		}
		a.inboxes = append(a.inboxes, in)
		a.keep("inbox/"+c.Name, in)
	}
	var rabbitSources []sampler.RabbitSource
	for _, r := range a.rabbit {
		rabbitSources = append(rabbitSources, sampler.RabbitSource{Broker: r})
	}
	if len(sources) > 0 || len(rabbitSources) > 0 {
		s, err := sampler.New(sampler.Options{Store: st, Kafka: sources, Rabbit: rabbitSources, Interval: cfg.Sampler.Interval.D(),
			Retention: cfg.Sampler.Retention.D(), MinRefresh: cfg.Sampler.MinRefresh.D(), MaxServeAge: cfg.Sampler.MaxServeAge.D(), NewGroupWindow: a.newGroupWindow, Logger: log,
			ErrorSample: a.redact.StoredSample})
		if err != nil {
			a.Close()
			return nil, err
		}
		a.sampler = s
		a.registry.MustRegister(s.Collectors()...)
		// Degraded when a source's snapshot is stale: no replica sampled it for 3 intervals.
		a.keep("sampler", s)
	}

	opts := replay.Options{Store: st, Consumers: consumers(cfg.Consumers), MessageIDs: messageIDRules(cfg.MessageID),
		Replay: replaySettings(cfg.Replay), OutboxRelays: outboxRelays(cfg.Outboxes), Audit: st, Logger: log,
		Lease: cfg.Replay.Lease.D(), ShownRabbit: a.redact.Shown, Moves: st}
	opts.Kafka, opts.Rabbit = as[replay.KafkaCluster](a.kafka), as[replay.RabbitBroker](a.rabbit)
	opts.Outboxes, opts.Inboxes = as[replay.OutboxTable](a.outboxes), as[replay.Inbox](a.inboxes)
	if a.sampler != nil {
		opts.GroupsByTopic = a.groupsByTopic
		opts.Owner = a.sampler.ReplicaID() // one name per replica in leases, jobs and /api/v1/replicas
	}
	if a.engine, err = replay.New(opts); err != nil {
		a.Close()
		return nil, err
	}
	if len(a.kafka) > 0 {
		mo := offsets.Options{Store: st, FourEyes: a.fourEyes.Settings, Moves: st, Logger: log, Clusters: as[offsets.Cluster](a.kafka)}
		if a.offsets, err = offsets.New(mo); err != nil {
			a.Close()
			return nil, err
		}
	}
	a.tracer = a.buildTracer(cfg, log)
	a.problems = web.NewProblems(a.webDeps(log))
	if len(cfg.Notify.Channels) > 0 {
		if a.notifier, err = a.buildNotifier(cfg, log); err != nil {
			a.Close()
			return nil, err
		}
		a.registry.MustRegister(a.notifier.Collectors()...)
	}
	return a, nil
}

// buildTracer follows messages across every adapter built, each lookup within traceBudget.
func (a *app) buildTracer(cfg *configs.Config, log *slog.Logger) *trace.Tracer {
	o := trace.Options{Consumers: consumers(cfg.Consumers), IDs: messageIDRules(cfg.MessageID), Ledger: a.store, Audit: a.store,
		Logger: log, Budget: traceBudget(cfg)}
	o.Outboxes, o.Kafka = as[trace.Outbox](a.outboxes), as[trace.KafkaCluster](a.kafka)
	o.Rabbit, o.Inboxes = as[trace.RabbitBroker](a.rabbit), as[trace.Inbox](a.inboxes)
	return trace.New(o)
}

// buildNotifier notifies what the one health monitor finds (a.problems, which the overview and
// the exporter evaluate too).
func (a *app) buildNotifier(cfg *configs.Config, log *slog.Logger) (*notify.Notifier, error) {
	owner := "console-" + strconv.Itoa(os.Getpid())
	if host, err := os.Hostname(); err == nil {
		owner = host + "-" + strconv.Itoa(os.Getpid())
	}
	if a.sampler != nil {
		owner = a.sampler.ReplicaID()
	}
	return notify.New(notify.Options{Store: a.store, Problems: a.problems, Config: notifySettings(cfg.Notify), Owner: owner, Logger: log,
		Link: links.To})
}

// groupsByTopic reads the lag snapshot for the consumer groups of each topic.
func (a *app) groupsByTopic(ctx context.Context, cluster string) map[string][]string {
	snap, err := a.sampler.LatestKafka(ctx, cluster)
	if err != nil {
		return nil
	}
	out := map[string][]string{}
	for _, g := range snap.Groups {
		for _, t := range g.Topics {
			if !slices.Contains(out[t.Topic], g.Name) {
				out[t.Topic] = append(out[t.Topic], g.Name)
			}
		}
	}
	return out
}

// webDeps hands the adapters to the web layer.
func (a *app) webDeps(log *slog.Logger) web.Deps {
	d := web.Deps{Logger: log, Store: a.store, Checks: a.checks, Registry: a.registry, Replay: a.engine, KafkaLag: a.lagRules,
		ErrorGroups: a.redact.Episodes(a.store), NewGroupWindow: a.newGroupWindow, Tracer: a.tracer, Redaction: a.redact,
		FourEyes: a.fourEyes, Problems: a.problems}
	d.Outboxes = as[handlers.OutboxService](a.outboxes)
	d.Kafka, d.Search.Kafka = as[handlers.KafkaCluster](a.kafka), as[handlers.SearchCluster](a.kafka)
	d.Rabbit, d.Search.Rabbit = as[handlers.RabbitBroker](a.rabbit), as[handlers.SearchBroker](a.rabbit)
	if a.sampler != nil {
		d.Snapshot = a.sampler
		d.RabbitSnapshots = a.sampler
	}
	if a.offsets != nil {
		d.Offsets = a.offsets
	}
	if a.notifier != nil {
		d.Notifier = a.notifier
	}
	return d
}

// background runs the sampler and the replay worker until ctx ends; wait blocks until they have.
func (a *app) background(ctx context.Context, log *slog.Logger) (wait func()) {
	var wg sync.WaitGroup
	if a.sampler != nil {
		// A first sample before serving, so the first page has data (a no-op on a non-leader).
		if err := a.sampler.SampleOnce(ctx); err != nil {
			log.Warn("first sample failed", "err", err)
		}
		wg.Go(func() {
			if err := a.sampler.Run(ctx); err != nil {
				log.Error("sampler stopped", "err", err)
			}
		})
	}
	if a.notifier != nil {
		wg.Go(func() {
			if err := a.notifier.Run(ctx); err != nil {
				log.Error("notifier stopped", "err", err)
			}
		})
	}
	wg.Go(func() {
		if err := a.engine.Work(ctx); err != nil {
			log.Error("replay worker stopped", "err", err)
		}
	})
	wg.Go(func() { a.engine.WatchRestarts(ctx) }) // copies a RabbitMQ restart returns after a job
	return wg.Wait
}

// Close releases everything, last built first.
func (a *app) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

// The ports ops/triage and ops/offsets declare for a Kafka cluster, which the Kafka adapter
// provides: a method it loses fails the build here rather than a start (as converts at run time).
var (
	_ triage.Cluster  = (*kafka.Cluster)(nil)
	_ offsets.Cluster = (*kafka.Cluster)(nil)
)

var _ replay.KafkaCluster = (*kafka.Cluster)(nil) // and ops/replay's, likewise
var _ replay.RabbitBroker = (*rabbit.Broker)(nil) // and its RabbitMQ port

var _ search.KafkaSource = (*kafka.Cluster)(nil) // and ops/search's scans (NewScanner gives kafkamodel's Scanner)

// as hands adapters on as the interface a use case declares for what it needs of them (each
// adapter implements it: a wrong one fails every start, which the tests do); nil when there are
// none, as an option left out.
func as[I, A any](adapters []A) []I {
	if len(adapters) == 0 {
		return nil
	}
	out := make([]I, len(adapters))
	for i, a := range adapters {
		out[i] = any(a).(I)
	}
	return out
}
