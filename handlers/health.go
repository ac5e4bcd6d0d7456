package handlers

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// Check is one configured dependency (the store, an outbox database, a broker) for /readyz.
type Check struct {
	Name string // e.g. "store", "outbox/orders", "kafka/main"
	Ping func(ctx context.Context) error
}

// DependencyStatus is one dependency's health.
type DependencyStatus struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// pingTimeout bounds one dependency's check so a hung broker cannot hang /readyz.
const pingTimeout = 3 * time.Second

// runChecks pings every dependency concurrently.
func runChecks(ctx context.Context, checks []Check) []DependencyStatus {
	out := make([]DependencyStatus, len(checks))
	var wg sync.WaitGroup
	for i, ch := range checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, pingTimeout)
			defer cancel()
			out[i] = DependencyStatus{Name: ch.Name, OK: true}
			if err := ch.Ping(ctx); err != nil {
				out[i] = DependencyStatus{Name: ch.Name, Error: err.Error()}
			}
		})
	}
	wg.Wait()
	return out
}

// Health serves /healthz and /readyz.
type Health struct {
	checks []Check
}

// NewHealth takes the dependencies to report on.
func NewHealth(checks []Check) *Health { return &Health{checks: checks} }

// Healthz: the process is alive; it checks nothing outside.
func (h *Health) Healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, aliveJSON{Status: "ok"})
}

// readyDependency is what the public /readyz says of a dependency: its name and whether it
// answers. Its error, which may name a database host, user or port, is for signed-in users only
// (the overview shows it).
type readyDependency struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
}

// Readyz: one entry per configured dependency, names and ok only; 503 when any is down.
func (h *Health) Readyz(c echo.Context) error {
	deps := runChecks(c.Request().Context(), h.checks)
	status, code := "ok", http.StatusOK
	out := make([]readyDependency, len(deps))
	for i, d := range deps {
		out[i] = readyDependency{Name: d.Name, OK: d.OK}
		if !d.OK {
			status, code = "unavailable", http.StatusServiceUnavailable
		}
	}
	return c.JSON(code, readyJSON{Status: status, Dependencies: out})
}

// readyJSON is /readyz's answer; /healthz's is its status alone (aliveJSON).
type readyJSON struct {
	Status       string            `json:"status"`
	Dependencies []readyDependency `json:"dependencies"`
}

type aliveJSON struct {
	Status string `json:"status"`
}
