package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops/pgtest"
)

// An outbox repair is in the event's timeline: a requeue or a release records the rows it changed
// by id, not by event_id, and a trace by event_id found no audit entry for an event the console had
// requeued. Another outbox's entry for the same row id, and a row id that only starts alike, are
// not this event's.
func TestTraceShowsTheConsolesOutboxRepairs(t *testing.T) {
	w := newTraceWorld(t)
	pgtest.Exec(t, w.outboxDSN, `UPDATE outbox_event SET status = 'DEAD', attempts = 10, last_error = 'boom' WHERE event_id = 'e-9'`)
	base := w.console(t, "")
	var id string
	for _, s := range getTrace(t, base, "event_id=e-9").steps("outbox orders") {
		if s.Found {
			id = strings.TrimPrefix(s.Link, "/outboxes/orders/events/")
		}
	}
	if id == "" {
		t.Fatal("the trace did not find e-9 in the outbox")
	}
	r := do(t, nil, "POST", base+"/api/v1/outboxes/orders/events/requeue", "application/json", `{"ids":[`+id+`],"reason":"fixed the serializer"}`)
	if r.status != http.StatusOK {
		t.Fatalf("requeue: %d %s", r.status, r.body)
	}
	steps := getTrace(t, base, "event_id=e-9").steps("audit log")
	var found []string
	for _, s := range steps {
		if s.Found {
			found = append(found, s.Detail)
		}
	}
	if len(found) == 0 || !strings.Contains(strings.Join(found, " | "), "outbox.requeue on outbox/orders") ||
		!strings.Contains(strings.Join(found, " | "), "fixed the serializer") {
		t.Fatalf("audit steps of e-9 after its requeue: %+v", steps)
	}
	// e-1's trace does not pick up e-9's requeue.
	for _, s := range getTrace(t, base, "event_id=e-1").steps("audit log") {
		if s.Found {
			t.Errorf("e-1's trace shows %q", s.Detail)
		}
	}
}
