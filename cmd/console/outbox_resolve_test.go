package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// TestResolveOutboxDead: DEAD outbox events marked resolved or ignored — by event and by filter —
// stop counting on the overview and in redrive_problems while the service's table is left as it
// was; a replay job marks what it requeued replayed, and a requeue opens the marks of what it
// moved, so an event that dies again is open again;
// bad input is a 400 in words, a viewer is refused, every change is audited, and the page shows
// each event's state.
func TestResolveOutboxDead(t *testing.T) {
	outboxDSN := pgtest.NewDatabase(t)
	pgtest.Exec(t, outboxDSN, pgoutbox.SeedDDL)
	pgtest.Exec(t, outboxDSN, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload, status,
			attempts, available_at, last_error, created_at)
		SELECT 'evt-' || i, 'Order', 'o-' || i, CASE WHEN i <= 3 THEN 'OrderCreated' ELSE 'PaymentFailed' END, 1, '{}', 'DEAD', 10, now(),
			'boom', now() FROM generate_series(1, 5) i`)
	pgtest.Exec(t, outboxDSN, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload, status,
			available_at, created_at)
		VALUES ('evt-ready', 'Order', 'o-9', 'OrderCreated', 1, '{}', 'READY', now() + interval '1 hour', now())`)
	base := startConsole(t, fmt.Sprintf("store: {dsn: %q}\noutboxes: [{name: orders, dsn: %q}]\n%s", pgtest.NewDatabase(t), outboxDSN, basicAuth("")))
	api := base + "/api/v1/outboxes/orders/resolutions"
	resolve := func(token, body string) response {
		t.Helper()
		return bearer(t, "POST", api, token, body)
	}
	overview := func() string { return bearer(t, "GET", base+"/api/v1/overview", "tok-viewer", "").body }
	deadProblems := func() float64 {
		return scrape(t, base)[series("redrive_problems", "kind", "outbox_dead", "severity", "warning")]
	}
	if o := overview(); !strings.Contains(o, "Outbox orders: 5 DEAD event(s) waiting for an operator") || deadProblems() != 1 {
		t.Fatalf("before any resolution: %.600s", o)
	}
	ready := queryInt(t, outboxDSN, `SELECT id FROM outbox_event WHERE status = 'READY'`)

	if r := resolve("tok-viewer", `{"events":[1],"state":"resolved","reason":"x"}`); r.status != http.StatusForbidden {
		t.Fatalf("viewer: %d %s", r.status, r.body)
	}
	for body, want := range map[string]string{
		`{"state":"resolved","reason":"x"}`:                                          "exactly one of events or filter",
		`{"events":[1],"filter":{"event_type":"x"},"state":"resolved","reason":"x"}`: "exactly one of events or filter",
		fmt.Sprintf(`{"events":[%d],"state":"resolved","reason":"x"}`, ready):        "only DEAD events are resolved",
		`{"events":[999999],"state":"resolved","reason":"x"}`:                        "is not in outbox orders",
		`{"events":[1],"state":"replayed","reason":"x"}`:                             "set by a replay job",
		`{"events":[1],"state":"resolved"}`:                                          "reason",
		`{"filter":{},"state":"resolved","reason":"x"}`:                              "empty",
		`{"events":[],"state":"resolved","reason":"x"}`:                              "name at least one event",
		`{"events":["one"],"state":"resolved","reason":"x"}`:                         "events",
		`{"filter":{"since":"yesterday-ish"},"state":"resolved","reason":"x"}`:       "filter.since: must be RFC 3339",
	} {
		if r := resolve("tok-operator", body); r.status != http.StatusBadRequest || !strings.Contains(r.body, want) {
			t.Errorf("%s: %d %s, want 400 saying %q", body, r.status, r.body, want)
		}
	}

	// By event: two of the OrderCreated ones; again changes nothing.
	if r := resolve("tok-operator", `{"events":[1,2],"state":"resolved","reason":"fixed in 4.2.1"}`); r.status != http.StatusOK || !strings.Contains(r.body, `"updated":2`) {
		t.Fatalf("by event: %d %s", r.status, r.body)
	}
	if r := resolve("tok-operator", `{"events":[1,2],"state":"resolved","reason":"fixed in 4.2.1"}`); !strings.Contains(r.body, `"updated":0`) {
		t.Fatalf("again: %d %s", r.status, r.body)
	}
	if o := overview(); !strings.Contains(o, "Outbox orders: 3 open DEAD event(s) (of 5) waiting for an operator") {
		t.Fatalf("after two: %.800s", o)
	}
	// By filter: the payment failures ignored; its times read as a Kafka resolution's (an age, a
	// date or RFC 3339), where a JSON time alone was once understood.
	if r := resolve("tok-operator", `{"filter":{"event_type":"PaymentFailed","since":"6h","until":"2999-01-01"},"state":"ignored","reason":"test tenant"}`); r.status != http.StatusOK ||
		!strings.Contains(r.body, `"updated":2`) || !strings.Contains(r.body, `"matched":2`) {
		t.Fatalf("by filter: %d %s", r.status, r.body)
	}
	if r := resolve("tok-operator", `{"events":[3],"state":"resolved","reason":"fixed in 4.2.1"}`); r.status != http.StatusOK {
		t.Fatalf("the last one: %d %s", r.status, r.body)
	}
	if o := overview(); strings.Contains(o, "outbox_dead/orders") || deadProblems() != 0 {
		t.Fatalf("every DEAD event settled, still a problem: %.800s", o)
	}
	if dead := queryInt(t, outboxDSN, `SELECT count(*) FROM outbox_event WHERE status = 'DEAD'`); dead != 5 {
		t.Fatalf("the service's table changed: %d DEAD rows", dead)
	}

	// The page shows each DEAD event's state.
	client, _ := signedIn(t, base, "vera")
	page := do(t, client, "GET", base+"/outboxes/orders?status=DEAD", "", "")
	if n := strings.Count(page.body, `data-testid="event-resolution"`); page.status != http.StatusOK || n != 5 ||
		strings.Count(page.body, ">ignored<") != 2 || !strings.Contains(page.body, "test tenant") {
		t.Fatalf("the outbox page: %d, %d states shown", page.status, n)
	}

	// A replay requeues event 1; the relay fails it again: it is open again.
	plan := decode[struct {
		PlanID string `json:"plan_id"`
	}](t, bearer(t, "POST", base+"/api/v1/replays/plan", "tok-operator", `{"source":{"kind":"outbox","outbox":"orders","ids":[1]}}`))
	job := decode[struct{ ID string }](t, bearer(t, "POST", base+"/api/v1/replays", "tok-operator", fmt.Sprintf(`{"plan_id":%q,"reason":"retry"}`, plan.PlanID)))
	waittest.Until(t, 30*time.Second, "the requeue job finishes", func() bool {
		return strings.Contains(bearer(t, "GET", base+"/api/v1/replays/"+job.ID, "tok-viewer", "").body, `"status":"done"`)
	})
	pgtest.Exec(t, outboxDSN, `UPDATE outbox_event SET status = 'DEAD' WHERE id = 1`)
	if o := overview(); !strings.Contains(o, "Outbox orders: 1 open DEAD event(s) (of 5)") {
		t.Fatalf("a replayed event that died again is open: %.800s", o)
	}
	// An operator requeues the resolved event 2 and the ignored event 4 (the API's requeue, not a
	// replay job); the relay fails them again: they are open again, not hidden by the decisions
	// about their earlier deaths. Event 3, not requeued, stays resolved.
	if r := bearer(t, "POST", base+"/api/v1/outboxes/orders/events/requeue", "tok-operator", `{"ids":[2,4],"reason":"fix deployed"}`); r.status != http.StatusOK ||
		!strings.Contains(r.body, `"requeued":2`) {
		t.Fatalf("requeue: %d %s", r.status, r.body)
	}
	pgtest.Exec(t, outboxDSN, `UPDATE outbox_event SET status = 'DEAD' WHERE id IN (2, 4)`)
	if o := overview(); !strings.Contains(o, "Outbox orders: 3 open DEAD event(s) (of 5)") {
		t.Fatalf("requeued events that died again are open: %.800s", o)
	}
	// The service's own tooling requeues the resolved event 3, outside Redrive, and its relay
	// fails it again: another death (the relay's new available_at), which the decision about the
	// earlier one does not hide — on the overview and on the page.
	pgtest.Exec(t, outboxDSN, `UPDATE outbox_event SET status = 'READY', available_at = now() WHERE id = 3`)
	pgtest.Exec(t, outboxDSN, `UPDATE outbox_event SET status = 'DEAD', available_at = now() + interval '30 seconds' WHERE id = 3`)
	if o := overview(); !strings.Contains(o, "Outbox orders: 4 open DEAD event(s) (of 5)") {
		t.Fatalf("a resolved event requeued elsewhere that died again is open: %.800s", o)
	}
	page = do(t, client, "GET", base+"/outboxes/orders?status=DEAD&aggregate_id=o-3", "", "")
	if page.status != http.StatusOK || strings.Contains(page.body, "fixed in 4.2.1") {
		t.Fatalf("the page still shows event 3 resolved for its earlier death: %d", page.status)
	}

	if ok, rows := okAudits(t, base, "outbox.resolve", "outbox/orders", "token:operator-bot"); ok != 4 {
		t.Fatalf("%d ok outbox.resolve entries, want 4: %+v", ok, rows)
	}
}

// queryInt reads one integer from dsn with a connection of the test's own.
func queryInt(t *testing.T, dsn, sql string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	mustDo(t, err)
	defer c.Close(ctx)
	var n int64
	mustDo(t, c.QueryRow(ctx, sql).Scan(&n))
	return n
}

// TestBrowserResolveOutboxDead: on the outbox page an operator ticks a DEAD event and marks it
// ignored with a reason; the page says so and shows the event's state, and the overview's count
// of DEAD events waiting drops by one.
func TestBrowserResolveOutboxDead(t *testing.T) {
	outboxDSN := pgtest.NewDatabase(t)
	pgtest.Exec(t, outboxDSN, pgoutbox.SeedDDL)
	pgtest.Exec(t, outboxDSN, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload, status,
			attempts, available_at, last_error, created_at)
		SELECT 'evt-' || i, 'Order', 'o-' || i, 'OrderCreated', 1, '{}', 'DEAD', 10, now(), 'boom', now() FROM generate_series(1, 3) i`)
	base := startConsole(t, fmt.Sprintf("auth: {mode: none}\nstore: {dsn: %q}\noutboxes: [{name: orders, dsn: %q}]\n", pgtest.NewDatabase(t), outboxDSN))
	ctx, dialogs := newBrowser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/outboxes/orders?status=DEAD"),
		chromedp.Click(`tr[data-testid="event-row"]:nth-of-type(1) input[name="id"]`),
		chromedp.SetValue(`[data-testid="event-actions"] select[name="state"]`, "ignored"),
		chromedp.SendKeys(`[data-testid="requeue-reason"]`, "test tenant"),
		chromedp.Click(`[data-testid="resolve-selected"]`),
		chromedp.WaitVisible(`[data-testid="event-resolution"]`)); err != nil {
		t.Fatalf("%v\n%.2000s", err, must(t, ctx, chromedp.Text(`body`)))
	}
	screenshot(t, ctx, "outbox-resolved")
	if at := must(t, ctx, chromedp.Location()); !strings.Contains(at, "status=DEAD") {
		t.Fatalf("after marking, the page lost its filter: %s", at)
	}
	if body := must(t, ctx, chromedp.Text(`body`)); !strings.Contains(body, "Changed the resolution of 1 DEAD event;") ||
		countOf(t, ctx, `[data-testid="event-resolution"]`) != 1 || dialogs.Load() != 0 {
		t.Fatalf("after marking one: %.2000s", body)
	}
	if o := doRaw("GET", base+"/api/v1/overview", "", "").body; !strings.Contains(o, "Outbox orders: 2 open DEAD event(s) (of 3)") {
		t.Fatalf("the overview: %.800s", o)
	}
}
