package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/views/components"
	overviewpages "github.com/redrive/redrive/views/pages/overview"
)

// Overview answers "what is on fire?" across everything the console watches.
type Overview struct {
	outboxes *Outboxes
	checks   []Check
	kafka    []KafkaCluster
	lag      KafkaSnapshots
	rabbit   []RabbitBroker
	queues   RabbitSnapshots
	replays  ReplayEngine
	meta     MetaFunc
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
}

// NewOverview wires the overview from the same adapters the other pages use.
func NewOverview(src OverviewSources, meta MetaFunc) *Overview {
	return &Overview{outboxes: NewOutboxes(src.Outboxes, nil, meta, nil), checks: src.Checks, kafka: src.Kafka,
		lag: src.Lag, rabbit: src.Rabbit, queues: src.Queues, replays: src.Replays, meta: meta}
}

// Problem is one thing on fire.
type Problem struct {
	Kind     string `json:"kind"`     // kafka_group, dead_letters, outbox_stuck, outbox_dead, outbox_backlog, replay_running, …_unavailable
	Severity string `json:"severity"` // critical, warning, info
	Title    string `json:"title"`
	Link     string `json:"link"`
}

// recent is how new a dead letter must be to count as "arriving now".
const recent = time.Hour

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

// problems reads every panel at once, each within its own bound, and lists them in a fixed order.
func (h *Overview) problems(ctx context.Context) []Problem {
	ctx, cancel := panelContext(ctx)
	defer cancel()
	panels := make([][]Problem, len(h.kafka)+len(h.rabbit)+2)
	var wg sync.WaitGroup
	for i, k := range h.kafka {
		wg.Go(func() { panels[i] = h.kafkaProblems(ctx, k.Name()) })
	}
	for i, r := range h.rabbit {
		wg.Go(func() { panels[len(h.kafka)+i] = h.rabbitProblems(ctx, r.Name()) })
	}
	wg.Go(func() { panels[len(panels)-2] = h.replayProblems(ctx) })
	wg.Go(func() { panels[len(panels)-1] = h.outboxProblems(ctx) })
	wg.Wait()
	var out []Problem
	for _, p := range panels {
		out = append(out, p...)
	}
	return out
}

func (h *Overview) outboxProblems(ctx context.Context) []Problem {
	var out []Problem
	for _, s := range h.outboxes.summaries(ctx) {
		name := s.outbox.Name()
		link := "/outboxes/" + url.PathEscape(name)
		if s.err != nil {
			out = append(out, Problem{"outbox_unavailable", "critical", fmt.Sprintf("Outbox %s cannot be read: %v", name, s.err), link})
			continue
		}
		if n := s.stats.StuckLeases; n > 0 {
			out = append(out, Problem{"outbox_stuck", "critical",
				fmt.Sprintf("Outbox %s: %s PROCESSING event(s) with an expired lease", name, components.FormatNum(n)), link + "?stuck=true"})
		}
		if n := s.stats.Counts[outbox.Dead]; n > 0 {
			out = append(out, Problem{"outbox_dead", "warning",
				fmt.Sprintf("Outbox %s: %s DEAD event(s) waiting for an operator", name, components.FormatNum(n)), link + "?status=DEAD"})
		}
		if age := s.stats.OldestReadyAge; age != nil && *age > s.outbox.StaleReadyAfter() {
			out = append(out, Problem{"outbox_backlog", "warning",
				fmt.Sprintf("Outbox %s: the oldest due READY event has waited %s", name, components.FormatAge(*age)), link + "?status=READY"})
		}
	}
	return out
}

type overviewJSON struct {
	CheckedAt    time.Time          `json:"checked_at"`
	Problems     []Problem          `json:"problems"`
	Dependencies []DependencyStatus `json:"dependencies"`
}

func (h *Overview) collect(ctx context.Context) overviewJSON {
	o := overviewJSON{CheckedAt: time.Now().UTC(), Problems: []Problem{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := panelContext(ctx)
		defer cancel()
		o.Dependencies = runChecks(ctx, h.checks)
	}()
	o.Problems = append(o.Problems, h.problems(ctx)...)
	<-done
	for _, d := range o.Dependencies {
		if !d.OK {
			o.Problems = append(o.Problems, Problem{"dependency_down", "critical", d.Name + " is unreachable: " + d.Error, "/readyz"})
		}
	}
	rank := map[string]int{"critical": 0, "warning": 1, "info": 2}
	sort.SliceStable(o.Problems, func(i, j int) bool { return rank[o.Problems[i].Severity] < rank[o.Problems[j].Severity] })
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
		row := overviewpages.Problem{Severity: p.Severity, Title: p.Title, Link: p.Link}
		if p.Kind == "kafka_group" { // a lag trend: the group page's history, last hour
			row.Trend = "/api/v1" + p.Link + "/history?since=1h"
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

func (h *Overview) kafkaProblems(ctx context.Context, cluster string) []Problem {
	snap, err := h.lag.LatestKafka(ctx, cluster)
	link := "/kafka/" + url.PathEscape(cluster)
	if err != nil {
		return []Problem{{"kafka_unavailable", "critical", fmt.Sprintf("Lag of %s unavailable: %v", cluster, err), link}}
	}
	var out []Problem
	if snap.Error != "" {
		out = append(out, Problem{"kafka_unavailable", "critical", fmt.Sprintf("Kafka %s: the last sample failed: %s", cluster, snap.Error), link})
	}
	for _, g := range snap.Groups {
		code := g.Status.Code
		if code == kafka.StatusOK || (code == kafka.StatusEmpty && g.TotalLag == 0) {
			continue
		}
		severity := "warning"
		if code == kafka.StatusStop || code == kafka.StatusStall || code == kafka.StatusDead || code == kafka.StatusErr {
			severity = "critical"
		}
		// The reason names the partitions it is about, with their lag; the total tells them apart.
		behind := ""
		if g.MaxTimeLag > 0 {
			behind = ", " + components.FormatAge(g.MaxTimeLag.Truncate(time.Second)) + " behind"
		}
		out = append(out, Problem{"kafka_group", severity, fmt.Sprintf("%s/%s is %s (total lag %s%s): %s", cluster, g.Name, code,
			components.FormatNum(g.TotalLag), behind, g.Status.Reason), link + "/groups/" + url.PathEscape(g.Name)})
	}
	// Dead-letter topics that received something recently, from the same snapshot.
	for _, t := range snap.DeadLetterTopics {
		if t.Retry || t.Records == 0 || time.Since(t.NewestAt) > recent {
			continue
		}
		out = append(out, Problem{"dead_letters", "warning", fmt.Sprintf("%s (%s) holds %s dead letters; the newest arrived %s ago",
			t.Topic, cluster, components.FormatNum(t.Records), components.FormatAge(time.Since(t.NewestAt).Round(time.Second))),
			link + "/topics/" + url.PathEscape(t.Topic) + "/errors"})
	}
	return out
}

// rabbitProblems reports dead-letter queues holding messages and queues whose backlog grows, from
// the sampler's snapshot (no management call per viewer).
func (h *Overview) rabbitProblems(ctx context.Context, broker string) []Problem {
	snap, err := h.queues.LatestRabbit(ctx, broker)
	link := "/rabbitmq/" + url.PathEscape(broker)
	if err != nil {
		return []Problem{{"rabbitmq_unavailable", "critical", fmt.Sprintf("Queues of %s unavailable: %v", broker, err), link}}
	}
	var out []Problem
	if snap.Error != "" {
		out = append(out, Problem{"rabbitmq_unavailable", "critical", fmt.Sprintf("RabbitMQ %s: the last sample failed: %s", broker, snap.Error), link})
	}
	for _, q := range snap.Queues {
		qlink := link + "/queues/" + components.PathSegment(q.Vhost) + "/" + components.PathSegment(q.Name)
		switch {
		case q.IsDeadLetterQueue && q.Ready > 0:
			title := fmt.Sprintf("%s holds %s dead letters", q.Name, components.FormatNum(q.Ready))
			if q.Growing {
				title += " and keeps growing (" + q.Growth + ")"
			}
			out = append(out, Problem{"dead_letters", "warning", title, qlink + "/messages"})
		case q.Growing && !q.Retry:
			out = append(out, Problem{"queue_growing", "warning", fmt.Sprintf("%s (%s) keeps growing: %s", q.Name, broker, q.Growth), qlink})
		}
	}
	return out
}

func (h *Overview) replayProblems(ctx context.Context) []Problem {
	if h.replays == nil {
		return nil
	}
	jobs, err := h.replays.Jobs(ctx, 20)
	if err != nil {
		return []Problem{{"replay_unavailable", "warning", "Replay jobs cannot be read: " + err.Error(), "/replays"}}
	}
	var out []Problem
	for _, j := range jobs {
		link := "/replays/" + url.PathEscape(j.ID)
		done := j.Published + j.Skipped + j.Failed
		switch {
		case j.Status == "running" || j.Status == "pending":
			out = append(out, Problem{"replay_running", "info", fmt.Sprintf("Replay %s by %s is %s: %d of %d settled",
				j.ID, j.Actor, j.Status, done, j.Total), link})
		case j.Failed > 0 && time.Since(j.CreatedAt) < 24*time.Hour:
			out = append(out, Problem{"replay_failures", "warning", fmt.Sprintf("Replay %s left %d message(s) where they were (failed)",
				j.ID, j.Failed), link})
		}
	}
	return out
}
