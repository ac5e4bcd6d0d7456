package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/redrive/redrive/paths"
)

// SeedHistory gives the demo's replays, archive and audit pages something to show: once the
// console at base answers, it does what an operator would through the console's own API — a
// guarded replay of a few orders.DLT records (some skipped by the inbox), a discard of the
// audit.dlq messages (archived first) and a requeue of three DEAD outbox events, each with a
// reason. A step that is refused is reported with say and the rest goes on: the demo still runs.
func SeedHistory(ctx context.Context, base string, say func(string, ...any)) {
	api := &apiClient{ctx: ctx, base: base, http: &http.Client{Timeout: 30 * time.Second}}
	if !api.waitReady(2 * time.Minute) {
		say("history not seeded: the console did not become ready")
		return
	}
	steps := []struct {
		what string
		run  func() error
	}{
		{"a replay of orders.DLT[0] 0–8", func() error {
			return api.replay(map[string]any{"source": map[string]any{"kind": "kafka", "cluster": "main", "topic": "orders.DLT",
				"partition": 0, "from_offset": 0, "to_offset": 8}}, "demo: stock service fixed (INC-2231), replaying the first failures")
		}},
		{"a discard of audit.dlq", func() error {
			return api.replay(map[string]any{"source": map[string]any{"kind": "rabbitmq", "broker": "main", "vhost": "/", "queue": "audit.dlq",
				"limit": 100}, "action": "discard"}, "demo: audit events of a retired consumer, kept in the archive")
		}},
		{"a requeue of three DEAD outbox events", api.requeueDead},
	}
	for _, s := range steps {
		if err := s.run(); err != nil && ctx.Err() == nil {
			say("history: %s was not done: %v", s.what, err)
		}
	}
}

// apiClient calls the console's JSON API (auth.mode none in the demo).
type apiClient struct {
	ctx  context.Context
	base string
	http *http.Client
}

func (a *apiClient) waitReady(within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && a.ctx.Err() == nil {
		if err := a.call(http.MethodGet, paths.Readyz, nil, nil); err == nil {
			return true
		}
		select {
		case <-a.ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	return false
}

// replay plans body and starts the plan with reason, as the plan page's Start button does.
func (a *apiClient) replay(body map[string]any, reason string) error {
	var plan struct {
		PlanID string `json:"plan_id"`
	}
	if err := a.call(http.MethodPost, paths.APIPlanReplay, body, &plan); err != nil {
		return err
	}
	return a.call(http.MethodPost, paths.APIReplays, map[string]any{"plan_id": plan.PlanID, "rate_per_second": 50, "reason": reason}, nil)
}

func (a *apiClient) requeueDead() error {
	var dead struct {
		Events []struct {
			ID int64 `json:"id"`
		} `json:"events"`
	}
	if err := a.call(http.MethodGet, paths.APIOutboxEvents("orders")+"?status=DEAD&limit=3", nil, &dead); err != nil {
		return err
	}
	ids := make([]int64, 0, len(dead.Events))
	for _, e := range dead.Events {
		ids = append(ids, e.ID)
	}
	return a.call(http.MethodPost, paths.APIOutboxRequeue("orders"), map[string]any{"ids": ids,
		"reason": "demo: payment provider back (INC-2240), sending the newest dead events again"}, nil)
}

// call sends body as JSON and decodes a 2xx answer into out (when not nil); any other status is
// an error with the console's message.
func (a *apiClient) call(method, path string, body, out any) error {
	var in io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		in = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(a.ctx, method, a.base+path, in)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
