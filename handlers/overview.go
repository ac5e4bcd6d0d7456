package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops/health"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/paths/links"
	overviewpages "github.com/redrive/redrive/views/pages/overview"
)

// Overview answers "what is on fire?" across everything the console watches: the problems of
// ops/health, as the exporter and notifications see them.
type Overview struct {
	monitor *health.Monitor
	meta    MetaFunc
}

// OverviewSources are the adapters the overview reads; zero fields are left out.
type OverviewSources struct {
	Outboxes []OutboxService
	Checks   []Check
	Kafka    []KafkaCluster
	Lag      KafkaSnapshots // required when Kafka is not empty
	Rabbit   []RabbitBroker
	Queues   RabbitSnapshots // required when Rabbit is not empty
	Replays  ReplayEngine
	// ErrorGroups are the store's dead-letter error groups, for new_error_group problems, told
	// new after NewGroupWindow (notify.new_group_window) without a record; nil: none.
	ErrorGroups    health.ErrorGroups
	NewGroupWindow time.Duration
	// OutboxSettled counts the DEAD events marked resolved or ignored, which the overview leaves
	// out; nil: every DEAD event counts.
	OutboxSettled health.OutboxSettled
}

// HealthSources are src as ops/health reads them.
func (src OverviewSources) HealthSources() health.Sources {
	hs := health.Sources{Kafka: src.Lag, Rabbit: src.Queues, ErrorGroups: src.ErrorGroups, NewGroupWindow: src.NewGroupWindow,
		OutboxSettled: src.OutboxSettled}
	for _, k := range src.Kafka {
		hs.Clusters = append(hs.Clusters, k.Name())
	}
	for _, r := range src.Rabbit {
		hs.Brokers = append(hs.Brokers, r.Name())
	}
	for _, o := range src.Outboxes {
		hs.Outboxes = append(hs.Outboxes, o)
	}
	if src.Replays != nil {
		hs.Replays = src.Replays
	}
	for _, c := range src.Checks {
		hs.Checks = append(hs.Checks, health.Check{Name: c.Name, Ping: c.Ping})
	}
	return hs
}

// NewOverview lists what monitor finds: the one health monitor, which the exporter and the
// notifier evaluate too (web.Deps.Problems).
func NewOverview(monitor *health.Monitor, meta MetaFunc) *Overview {
	return &Overview{monitor: monitor, meta: meta}
}

// Problem is one thing on fire, as GET /api/v1/overview lists it (health.Problem).
type Problem struct {
	Key      string            `json:"key"`
	Kind     string            `json:"kind"`     // kafka_group, kafka_transaction, dead_letters, dead_letters_lost, outbox_stuck, outbox_dead, outbox_backlog, replay_running, …_unavailable
	Severity string            `json:"severity"` // critical, warning, info
	Title    string            `json:"title"`
	Summary  string            `json:"summary,omitempty"`
	Link     string            `json:"link"`
	Labels   map[string]string `json:"labels"`
	// Since is when the problem started as far as the data says; null when it does not (a DLQ's
	// depth, an unreachable dependency): the problem was seen at checked_at, and may be older.
	Since *time.Time `json:"since"`
}

// panelContext bounds one panel of the overview short of the request's deadline: a panel whose
// dependency hangs fails on its own, at the same time as any other, and leaves the page the time
// to render the rest.
func panelContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	left := time.Until(dl)
	return context.WithTimeout(ctx, left-min(left/5, 2*time.Second))
}

type overviewJSON struct {
	CheckedAt    time.Time          `json:"checked_at"`
	Problems     []Problem          `json:"problems"`
	Dependencies []DependencyStatus `json:"dependencies"`
}

func (h *Overview) collect(ctx context.Context) overviewJSON {
	ctx, cancel := panelContext(ctx)
	defer cancel()
	r := h.monitor.Evaluate(ctx)
	o := overviewJSON{CheckedAt: r.CheckedAt, Problems: []Problem{}, Dependencies: []DependencyStatus{}}
	for _, p := range r.Problems {
		if p.Notice() {
			continue // a job's outcome is for notifications, not for what is on fire
		}
		o.Problems = append(o.Problems, Problem{Key: p.Key, Kind: p.Kind, Severity: p.Severity, Title: p.Title,
			Summary: p.Summary, Link: links.To(p.Page, p.Labels), Labels: p.Labels, Since: knownUTC(p.Since)})
	}
	for _, d := range r.Dependencies {
		o.Dependencies = append(o.Dependencies, DependencyStatus{Name: d.Name, OK: d.OK, Error: d.Error})
	}
	return o
}

// API: GET /api/v1/overview.
func (h *Overview) API(c echo.Context) error {
	return c.JSON(http.StatusOK, h.collect(c.Request().Context()))
}

// Page: GET / — and its htmx-refreshed body, GET /overview/panel.
func (h *Overview) Page(c echo.Context) error {
	o := h.collect(c.Request().Context())
	v := overviewpages.Data{CheckedAt: o.CheckedAt}
	for _, p := range o.Problems {
		row := overviewpages.Problem{Severity: p.Severity, Title: p.Title, Link: p.Link, Since: p.Since}
		if p.Kind == "kafka_group" { // a lag trend: the group page's history, last hour
			row.Trend = paths.Since(paths.APIKafkaGroupHistory(p.Labels["cluster"], p.Labels["group"]), "1h")
		}
		v.Problems = append(v.Problems, row)
	}
	for _, d := range o.Dependencies {
		v.Dependencies = append(v.Dependencies, overviewpages.Dependency{Name: d.Name, OK: d.OK, Error: d.Error})
	}
	if c.Request().Header.Get("HX-Request") == "true" {
		return render(c, http.StatusOK, overviewpages.Body(v))
	}
	return render(c, http.StatusOK, overviewpages.Page(h.meta(c, "Overview", "overview"), v))
}
