package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
)

// TestConcurrentOutboxResolve: twenty operators (or a script with -P 20) ignoring the same 50
// DEAD events at once, half naming them in reverse, are all answered 200 on the default store
// pool — once each was 503 after up to 10 s, the store deadlocked or out of connections — and the
// updated counts add up to the 50 events, each changed once.
func TestConcurrentOutboxResolve(t *testing.T) {
	outboxDSN := pgtest.NewDatabase(t)
	pgtest.Exec(t, outboxDSN, pgoutbox.SeedDDL)
	pgtest.Exec(t, outboxDSN, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload, status,
			attempts, available_at, last_error, created_at)
		SELECT 'evt-' || i, 'Order', 'o-' || i, 'PaymentFailed', 1, '{}', 'DEAD', 10, now(), 'boom', now() FROM generate_series(1, 100) i`)
	base := startConsole(t, fmt.Sprintf("store: {dsn: %q}\noutboxes: [{name: orders, dsn: %q}]\n%s", pgtest.NewDatabase(t), outboxDSN, basicAuth("")))
	ids := make([]int64, 0, 50)
	for id := int64(51); id <= 100; id++ {
		ids = append(ids, id)
	}
	const callers = 20
	type answer struct {
		status  int
		body    string
		took    time.Duration
		updated int64
	}
	answers := make([]answer, callers)
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for i := range callers {
		events := slices.Clone(ids)
		if i%2 == 1 {
			slices.Reverse(events)
		}
		body, _ := json.Marshal(map[string]any{"events": events, "state": "ignored", "reason": "known: the payment provider's outage"})
		wg.Go(func() {
			req, err := http.NewRequest("POST", base+"/api/v1/outboxes/orders/resolutions", bytes.NewReader(body))
			if err != nil {
				answers[i].body = err.Error()
				return
			}
			req.Header.Set("Authorization", "Bearer tok-operator")
			req.Header.Set("Content-Type", "application/json")
			<-ready
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers[i].body = err.Error()
				return
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			var res struct{ Updated int64 }
			_ = json.Unmarshal(b.Bytes(), &res)
			answers[i] = answer{resp.StatusCode, b.String(), time.Since(start), res.Updated}
		})
	}
	close(ready)
	wg.Wait()
	var updated int64
	var slowest time.Duration
	for i, a := range answers {
		if a.status != http.StatusOK {
			t.Errorf("caller %d: %d %s", i, a.status, a.body)
		}
		updated += a.updated
		slowest = max(slowest, a.took)
	}
	t.Logf("%d resolutions of %d events at once: the slowest answered in %s", callers, len(ids), slowest)
	if updated != int64(len(ids)) {
		t.Errorf("the answers updated %d events in all, want %d (each once)", updated, len(ids))
	}
	got := bearer(t, "GET", base+"/api/v1/overview", "tok-viewer", "").body
	if !strings.Contains(got, "Outbox orders: 50 open DEAD event(s) (of 100) waiting for an operator") {
		t.Errorf("overview after the resolutions: %.800s", got)
	}
}
