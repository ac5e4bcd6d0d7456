// Package web assembles the console's HTTP server: the middleware stack, the route table, static
// assets, health and metrics endpoints, and the one error handler that turns every error into a
// status code and a JSON body (under /api) or an error page.
package web

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/health"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/notify"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/triage"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/static"
	"github.com/redrive/redrive/views/layout"
)

// Options are the server's settings; all come from the config.
type Options struct {
	RequestTimeout time.Duration // required: the deadline of each request's context
	AuthNone       bool          // auth.mode is none: every page shows a red banner
	ReadOnly       bool          // every mutating route answers 403
	Version        string        // shown in the footer and /api/v1/version
	// Listen is the configured listen address; in auth.mode none its host is one the console
	// answers to (the port is the connection's own). "" means only the loopback names.
	Listen string
	// Auth is the config's auth section, defaults applied (configs.Parse does): who may call what.
	Auth configs.Auth
	// Reload, when set, is how SIGHUP and POST /api/v1/admin/reload put a changed config's users,
	// tokens, roles and redaction rules in force (see Reloader); nil answers that route 404.
	Reload *Reloader
	// Audit bounds the rows of refused anonymous requests and failed sign-ins (the config's audit
	// section); zero fields take its defaults.
	Audit configs.Audit
	// Silences bound the silences people set by role (notify.silences); zero: only the longest
	// any silence may last.
	Silences configs.NotifySilences
}

// Store is what the pages and the API keep in Redrive's own store: the small interfaces their
// handlers and use cases declare, together. ops/store (PostgreSQL) implements it.
type Store interface {
	handlers.Auditor
	handlers.ChangeAuditor
	handlers.AuditLog
	handlers.ReplayViews
	handlers.ReplicaDirectory
	handlers.NotificationStore
	handlers.ArchiveStore
	triage.Store
	triage.SettledStates
	sessionStore
	exporterReplays
}

// Deps are the ops adapters the handlers use, built once by cmd/console.
type Deps struct {
	Logger   *slog.Logger             // required
	Store    Store                    // required: audit log, sessions, triage, replay views
	Outboxes []handlers.OutboxService // in config order; may be empty
	Kafka    []handlers.KafkaCluster  // in config order; may be empty
	Snapshot handlers.KafkaSnapshots  // required when Kafka is not empty: the sampler's stored snapshots
	Replay   handlers.ReplayEngine    // required: guarded replays
	// ErrorGroups are the dead-letter error groups the sampler records (the store), for the
	// overview's new_error_group problems; nil leaves them out. NewGroupWindow is
	// notify.new_group_window.
	ErrorGroups    health.ErrorGroups
	NewGroupWindow time.Duration
	// KafkaLag are each cluster's status thresholds, for a group read through before it is sampled.
	KafkaLag map[string]lag.Rules
	// Offsets moves consumer groups' offsets (plan, apply); nil answers those routes 404.
	Offsets   handlers.OffsetMover
	Checks    []handlers.Check     // one per configured dependency, for /readyz
	Registry  *prometheus.Registry // required: where HTTP metrics are registered and /metrics reads
	Redaction *redact.Rules        // masks message content for non-admins; nil masks nothing
	// FourEyes is replay.four_eyes over the store's ledger of moves: a direct outbox requeue
	// above it is refused, pointing at a plan. The zero value needs nobody.
	FourEyes foureyes.Rule

	// Doctor runs the /doctor page's checks (ops/doctor); nil answers 404.
	Doctor handlers.DoctorRunner

	// Rabbit are the RabbitMQ brokers, in config order; may be empty. RabbitSnapshots is required
	// when Rabbit is not empty: the sampler's stored queue snapshots.
	Rabbit          []handlers.RabbitBroker
	RabbitSnapshots handlers.RabbitSnapshots

	// Search are the sources and settings of content search and export (search.*, export.*);
	// New fills its Redaction and Audit from Redaction and Store. Zero searches nothing.
	Search handlers.SearchOptions

	// Notifier sends test notifications to the configured channels (ops/notify); nil when
	// notify.channels is empty (the log and silences still work).
	Notifier notify.TestSender

	// Tracer follows one message across every source (ops/trace); nil answers the trace routes 404.
	Tracer handlers.Tracer

	// Problems is the one health monitor that the overview, the exporter's redrive_problems and
	// the notifier evaluate, so that a failing source is logged once and every reader applies the
	// same rules to the same sources (NewProblems builds it; cmd shares it with the notifier). nil:
	// New builds it from the other fields.
	Problems *health.Monitor
}

// NewProblems builds the health monitor over the sources in deps.
func NewProblems(deps Deps) *health.Monitor {
	return health.NewMonitor(overviewSources(deps).HealthSources())
}

// overviewSources are the adapters the one problem model (ops/health) reads: the overview and the
// exporter's redrive_problems evaluate the same rules over them.
func overviewSources(deps Deps) handlers.OverviewSources {
	src := handlers.OverviewSources{Outboxes: deps.Outboxes, Checks: deps.Checks,
		Kafka: deps.Kafka, Lag: deps.Snapshot, Rabbit: deps.Rabbit, Queues: deps.RabbitSnapshots, Replays: deps.Replay,
		ErrorGroups: deps.ErrorGroups, NewGroupWindow: deps.NewGroupWindow}
	if t := newTriage(deps); t != nil {
		src.OutboxSettled = t
	}
	return src
}

// newTriage is the triage use cases over the configured clusters and outboxes; nil without a
// store (every dead letter then reads as open).
func newTriage(deps Deps) *triage.Triage {
	if deps.Store == nil {
		return nil
	}
	clusters := make([]triage.Cluster, 0, len(deps.Search.Kafka))
	for _, k := range deps.Search.Kafka {
		clusters = append(clusters, k)
	}
	outboxes := make([]triage.OutboxTable, 0, len(deps.Outboxes))
	for _, o := range deps.Outboxes {
		outboxes = append(outboxes, o)
	}
	brokers := make([]string, 0, len(deps.Rabbit))
	for _, b := range deps.Rabbit {
		brokers = append(brokers, b.Name())
	}
	return triage.New(deps.Store, clusters).WithOutboxes(outboxes).WithBrokers(brokers...)
}

// selfCompressed are the routes whose handlers gzip their answer themselves, around a part
// compressed once for every reader (the groups of a snapshot).
var selfCompressed = map[string]bool{paths.APIKafkaGroupsPattern: true}

// New builds the echo server with every route registered.
func New(deps Deps, opts Options) (*echo.Echo, error) {
	if deps.Problems == nil {
		deps.Problems = NewProblems(deps)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// Refused anonymous requests and failed sign-ins are recorded at a bounded rate (audit.*):
	// anyone can send them, and the log keeps every row.
	bounds := opts.Audit
	bounds.AnonymousPerAddress = cmp.Or(bounds.AnonymousPerAddress, 20)
	bounds.AnonymousPerMinute = cmp.Or(bounds.AnonymousPerMinute, 120)
	auditLog := audit.NewThrottle(deps.Store, bounds.AnonymousPerAddress, bounds.AnonymousPerMinute, deps.Logger)
	auth, err := newAuthenticator(opts.Auth, opts.ReadOnly, deps.Store, auditLog, deps.Logger)
	if err != nil {
		return nil, err
	}
	if opts.Reload != nil {
		opts.Reload.Register("auth.users, auth.tokens, auth.proxy roles", func(c *configs.Config) (func(), error) {
			return auth.prepareReload(c.Auth)
		})
		if deps.Redaction != nil {
			opts.Reload.Register("redaction", func(c *configs.Config) (func(), error) {
				return deps.Redaction.PrepareReplace(c.Redaction.Headers, c.Redaction.JSONPaths)
			})
		}
	}
	e.IPExtractor = auth.ipExtractor() // X-Forwarded-For is believed from auth.trusted_proxies only
	e.HTTPErrorHandler = errorHandler(deps.Logger, opts)

	httpDuration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "redrive_http_request_duration_seconds",
		Help:    "Console HTTP requests by route, method and status code.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 15},
	}, []string{"method", "route", "code"})
	for _, c := range []prometheus.Collector{httpDuration, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newExporter(deps), audit.Collector()} {
		if err := deps.Registry.Register(c); err != nil {
			return nil, err
		}
	}

	csrf := middleware.CSRFWithConfig(middleware.CSRFConfig{
		// Bearer-token requests are exempt (and the JSON API in auth.mode none); cookie- and
		// proxy-authenticated requests are not, JSON included.
		Skipper:      auth.csrfExempt,
		CookieSecure: opts.Auth.SecureCookies,
		// Only the header: csrfFormField copies the form body's _csrf into it. echo's "form:" lookup
		// reads the query string too, and a token in a URL ends up in access logs and Referers.
		TokenLookup:    "header:" + echo.HeaderXCSRFToken,
		CookieName:     "redrive_csrf",
		CookiePath:     "/",
		CookieHTTPOnly: true,
		CookieSameSite: http.SameSiteStrictMode,
		ContextKey:     csrfKey,
	})

	e.Use(
		middleware.RequestID(),
		withClient,
		withLogger(deps.Logger),
		accessLog(deps.Logger),
		middleware.Recover(),
		metrics(httpDuration),
		// Responses are compressed when the client accepts it (the all-groups answer at 200 groups
		// × 50 partitions is ~1.4 MB as JSON, ~100 KB gzipped). Not /metrics (promhttp
		// compresses itself) nor event streams (each event must reach the client when written).
		// Nor the routes whose handlers compress their own shared answer (handlers.spliceJSON).
		compress(func(c echo.Context) bool {
			return c.Request().URL.Path == paths.Metrics || strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/event-stream") ||
				selfCompressed[c.Path()]
		}),
		middleware.SecureWithConfig(middleware.SecureConfig{
			XSSProtection:         "0",
			ContentTypeNosniff:    "nosniff",
			XFrameOptions:         "DENY",
			ReferrerPolicy:        "same-origin",
			ContentSecurityPolicy: static.ContentSecurityPolicy,
		}),
		checkHost(newHostPolicy(opts.Auth, opts.Listen)), // before anything reads or authenticates
		// The error stays context.DeadlineExceeded (echo's default makes it a bare 503), so that the
		// error handler answers 504 saying request_timeout was reached.
		middleware.ContextTimeoutWithConfig(middleware.ContextTimeoutConfig{Timeout: opts.RequestTimeout,
			// An export streams for as long as it takes, bounded by the client staying connected.
			Skipper: func(c echo.Context) bool {
				return c.Request().Method == http.MethodGet && strings.HasSuffix(c.Request().URL.Path, paths.ExportSuffix)
			},
			ErrorHandler: func(err error, _ echo.Context) error { return err }}),
		bodyLimit,
		auth.middleware(),  // identity, the route's role, read_only; audits refusals
		auth.auditRefusals, // and what handlers and use cases refuse, once
		knownMethod,        // a wrong method is a 405, not a CSRF refusal
		csrfFormField,
		auth.auditCSRF(csrf),
		validInput, // after authentication: an anonymous caller learns only that it must sign in
	)

	meta := func(c echo.Context, title, section string) layout.Meta {
		token, _ := c.Get(csrfKey).(string)
		m := layout.Meta{Title: title, Section: section, CSRFToken: token, AuthNone: opts.AuthNone,
			ReadOnly: opts.ReadOnly, Version: opts.Version}
		auth.fillMeta(c, &m)
		return m
	}
	// One set of rules for every page, recording admins' reveals in the audit log.
	red := deps.Redaction.Audited(deps.Store)
	search := newSearch(deps, red)
	h := routeHandlers{
		outboxes: handlers.NewOutboxes(deps.Outboxes, deps.Store, meta, red).GuardedBy(deps.FourEyes),
		audit:    handlers.NewAudit(deps.Store, meta).Redacting(red),
		health:   handlers.NewHealth(deps.Checks),
		overview: handlers.NewOverview(deps.Problems, meta),
		kafka:    handlers.NewKafka(deps.Kafka, deps.Snapshot, meta, red, deps.KafkaLag).ExportsBy(search),
		rabbit:   handlers.NewRabbit(deps.Rabbit, deps.RabbitSnapshots, meta, red).ExportsBy(search).ReplaysBy(deps.Replay),
		replays:  handlers.NewReplays(deps.Replay, deps.Store, meta).Redacting(red),
		replicas: handlers.NewReplicas(deps.Store),
		offsets:  handlers.NewOffsets(deps.Offsets, meta),
		doctor:   handlers.NewDoctor(deps.Doctor, meta),
		reload:   opts.Reload,
		search:   search,
		notify:   handlers.NewNotifications(deps.Store, deps.Notifier, meta).BoundingSilences(opts.Silences).Watching(deps.Kafka, deps.Snapshot, deps.Rabbit),
		trace:    handlers.NewTrace(deps.Tracer, meta, red),
	}
	publishers := make([]replay.QueuePublisher, 0, len(deps.Rabbit))
	for _, b := range deps.Rabbit {
		publishers = append(publishers, b)
	}
	h.archive = handlers.NewArchive(deps.Store, publishers, red).ReplaysBy(deps.Replay).WithPages(meta)
	if t := newTriage(deps); t != nil {
		h.kafka.SetTriage(t)
		h.outboxes.SetTriage(t)
		h.rabbit.SetTriage(t)
	}
	table := append(routes(h), authRoutes(handlers.NewLogin(auth, auditLog, meta, deps.Logger))...)
	table = append(table,
		Route{http.MethodGet, paths.Metrics, echo.WrapHandler(promhttp.HandlerFor(deps.Registry, promhttp.HandlerOpts{})), access.Public},
		Route{http.MethodGet, paths.StaticPattern, echo.WrapHandler(static.Handler()), access.Public})
	table = append(table, headRoutes(table)...)
	for _, r := range table {
		h, err := onlyDocumentedQuery(r)
		if err != nil {
			return nil, err
		}
		e.Add(r.Method, r.Path, h)
		auth.allow(r)
	}
	return e, nil
}

const csrfKey = "csrf"

// accessLog writes one structured line per request, with the request id.
func accessLog(log *slog.Logger) echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogURI: true, LogMethod: true, LogLatency: true, LogRequestID: true,
		LogRemoteIP: true, LogError: true, HandleError: true,
		Skipper: func(c echo.Context) bool { return c.Path() == paths.Healthz || strings.HasPrefix(c.Path(), "/static/") },
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelInfo
			if v.Status >= 500 {
				level = slog.LevelError
			}
			log.LogAttrs(context.Background(), level, "http",
				slog.String("method", v.Method), slog.String("uri", v.URI), slog.Int("status", v.Status),
				slog.Duration("latency", v.Latency), slog.String("request_id", v.RequestID),
				slog.String("remote_ip", v.RemoteIP))
			return nil
		},
	})
}

func metrics(h *prometheus.HistogramVec) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			// The error handler writes the response after this returns: the status an error will
			// get is the one it maps it to, not the 200 the response still holds.
			status := c.Response().Status
			if err != nil {
				status, _, _ = classify(err)
			}
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			h.WithLabelValues(c.Request().Method, route, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
			return err
		}
	}
}

// withClient carries where the request came from into the use cases' context, for their audit.
func withClient(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		c.SetRequest(r.WithContext(ops.WithClient(r.Context(), ops.Client{Addr: c.RealIP(), UserAgent: r.UserAgent()})))
		return next(c)
	}
}

// withLogger gives the handlers the logger for the errors they show in place (handlers.SetLogger).
func withLogger(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			handlers.SetLogger(c, log)
			return next(c)
		}
	}
}

// newSearch wires content search with the console's redaction and audit log.
func newSearch(deps Deps, red *redact.Rules) *handlers.Search {
	o := deps.Search
	o.Redaction = red
	if deps.Store != nil {
		o.Audit = deps.Store
		o.Resolutions = newTriage(deps).StateLookup // the marks of the topic as it is now (its ID)
	}
	return handlers.NewSearch(o)
}
