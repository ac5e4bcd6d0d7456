package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/views/components"
	overviewpages "github.com/redrive/redrive/views/pages/overview"
)

// Overview answers "what is on fire?" across everything the console watches.
type Overview struct {
	outboxes *Outboxes
	checks   []Check
	meta     MetaFunc
}

// NewOverview wires the overview from the same adapters the other pages use.
func NewOverview(outboxes []OutboxService, checks []Check, meta MetaFunc) *Overview {
	return &Overview{outboxes: NewOutboxes(outboxes, nil, meta, nil), checks: checks, meta: meta}
}

// Problem is one thing on fire.
type Problem struct {
	Kind     string `json:"kind"`     // outbox_stuck, outbox_dead, outbox_backlog, outbox_unavailable
	Severity string `json:"severity"` // critical, warning
	Title    string `json:"title"`
	Link     string `json:"link"`
}

func (h *Overview) problems(ctx context.Context) []Problem {
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
	go func() { defer close(done); o.Dependencies = runChecks(ctx, h.checks) }()
	o.Problems = append(o.Problems, h.problems(ctx)...)
	<-done
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
		v.Problems = append(v.Problems, overviewpages.Problem{Severity: p.Severity, Title: p.Title, Link: p.Link})
	}
	for _, d := range o.Dependencies {
		v.Dependencies = append(v.Dependencies, overviewpages.Dependency{Name: d.Name, OK: d.OK, Error: d.Error})
	}
	if c.Request().Header.Get("HX-Request") == "true" {
		return render(c, http.StatusOK, overviewpages.Body(v))
	}
	return render(c, http.StatusOK, overviewpages.Page(h.meta(c, "Overview", "overview"), v))
}
