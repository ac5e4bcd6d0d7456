package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/ops/pgtest"
)

// hostile is content that runs script, and says so in window.__pwned, wherever a page puts it in
// unescaped; the outbox and RabbitMQ browser tests store it where an operator will look.
const hostile = `<script>window.__pwned=1;alert(1)</script><img src=x onerror="window.__pwned=2;alert(2)">`

// TestBrowserOutboxPageIsSafeAndShowsCounts: the outbox page shows the counts of the demo outbox
// and a hostile event's last error and payload as text, never run; the ticked events, and all DEAD
// ones matching, are planned for a guarded replay.
func TestBrowserOutboxPageIsSafeAndShowsCounts(t *testing.T) {
	storeDSN, outboxDSN := pgtest.NewDatabase(t), seededOutbox(t)
	pgtest.Exec(t, outboxDSN, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version,
		payload, status, attempts, available_at, last_error, created_at)
		VALUES ('evt-hostile', 'Order', $1, 'OrderCreated', 1, $2, 'DEAD', 10, now(), $3, now())`,
		hostile, `{"note":"`+strings.ReplaceAll(hostile, `"`, `\"`)+`"}`, "relay: "+hostile)
	base := startConsole(t, fmt.Sprintf("auth: {mode: none}\nstore: {dsn: %q}\noutboxes: [{name: orders, dsn: %q}]\n", storeDSN, outboxDSN))

	ctx, dialogs := newBrowser(t)
	act(t, ctx, chromedp.Navigate(base+"/outboxes/orders"), chromedp.WaitVisible(`[data-testid="events-table"]`))
	dead := must(t, ctx, chromedp.Text(`[data-testid="count-DEAD"] [data-testid="stat-value"]`))
	stuck := must(t, ctx, chromedp.Text(`[data-testid="count-stuck"] [data-testid="stat-value"]`))
	lastError := must(t, ctx, chromedp.Text(`[data-testid="event-row"] [data-testid="last-error"]`))
	screenshot(t, ctx, "outbox")
	if dead != "26" || stuck != "5" {
		t.Errorf("counts on the page: DEAD %q, stuck %q; want 26 and 5", dead, stuck)
	}
	if !strings.Contains(lastError, "<script>") {
		t.Errorf("the hostile last_error must show as text, got %q", lastError)
	}

	act(t, ctx, chromedp.Click(`[data-testid="event-row"] a`), chromedp.WaitVisible(`[data-testid="payload"]`))
	payload := must(t, ctx, chromedp.Text(`[data-testid="payload"]`))
	imgs := must(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('main img, main script').length`))
	pwned := must(t, ctx, chromedp.Evaluate[bool](`window.__pwned !== undefined`))
	screenshot(t, ctx, "outbox-event")
	if !strings.Contains(payload, `<img src=x onerror=`) {
		t.Errorf("payload not shown as text: %q", payload)
	}
	if pwned || imgs != 0 || dialogs.Load() != 0 {
		t.Fatalf("hostile content executed: pwned=%v, injected elements=%d, dialogs=%d", pwned, imgs, dialogs.Load())
	}

	// Guarded replay from the outbox page: of the ticked events, and of all DEAD ones matching.
	act(t, ctx,
		chromedp.Navigate(base+"/outboxes/orders?status=DEAD"),
		chromedp.WaitVisible(`[data-testid="plan-matching"]`),
	)
	ticked := must(t, ctx, chromedp.Evaluate[int](`[...document.querySelectorAll('[data-testid="event-row"] input[name="id"]')]
		.filter((b, i) => { b.checked = i < 3; b.dispatchEvent(new Event('change', {bubbles: true})); return b.checked; }).length`))
	act(t, ctx,
		chromedp.Click(`[data-testid="plan-selected"]`),
		chromedp.WaitVisible(`[data-testid="plan-counts"]`),
	)
	if header := must(t, ctx, chromedp.Text(`[data-testid="page-header"]`)); ticked != 3 || !strings.Contains(header, "Outbox orders, 3 event(s)") {
		t.Errorf("plan of the %d ticked events: %q", ticked, header)
	}
	act(t, ctx,
		chromedp.Navigate(base+"/outboxes/orders?status=DEAD"),
		chromedp.WaitVisible(`[data-testid="plan-matching"]`),
		chromedp.Click(`[data-testid="plan-matching"] button`),
		chromedp.WaitVisible(`[data-testid="plan-counts"]`),
	)
	if publish := must(t, ctx, chromedp.Text(`[data-testid="count-publish"] [data-testid="stat-value"]`)); publish != dead {
		t.Errorf("plan of the matching DEAD events publishes %q, the outbox holds %q DEAD", publish, dead)
	}
}

// The outbox page's repairs of ticked events are disabled until a row is ticked, the requeue asks
// for its reason before it submits, and a filter shows only the repairs that can apply to what it
// lists: no requeue of stuck leases, no release of DEAD events, none at all for SENT ones.
func TestBrowserOutboxSelectedActions(t *testing.T) {
	base, _ := outboxConsole(t, "auth: {mode: none}\n")
	ctx, dialogs := newBrowser(t)
	const (
		release = `[data-testid="release-selected"]`
		requeue = `[data-testid="requeue-selected"]`
		plan    = `[data-testid="plan-selected"]`
		resolve = `[data-testid="resolve-selected"]`
		reason  = `[data-testid="requeue-reason"]`
		box     = `tr[data-testid="event-row"]:nth-of-type(1) input[name="id"]`
	)
	disabled := func(sel string) bool {
		return must(t, ctx, chromedp.Evaluate[bool](`document.querySelector(`+"`"+sel+"`"+`).disabled`))
	}
	open := func(query string) {
		t.Helper()
		act(t, ctx, chromedp.Navigate(base+"/outboxes/orders"+query), chromedp.WaitVisible(`[data-testid="events-table"]`))
	}

	open("")
	for _, sel := range []string{release, requeue, plan, resolve} {
		if countOf(t, ctx, sel) != 1 || !disabled(sel) {
			t.Errorf("with nothing ticked, %s is missing or enabled", sel)
		}
	}
	if !must(t, ctx, chromedp.Evaluate[bool](`document.querySelector('`+reason+`').required`)) {
		t.Error("the requeue's reason is not required")
	}
	must(t, ctx, chromedp.Click(box))
	for _, sel := range []string{release, requeue, plan, resolve} {
		if disabled(sel) {
			t.Errorf("with a row ticked, %s is disabled", sel)
		}
	}
	screenshot(t, ctx, "outbox-selected-actions")
	// Without a reason the browser asks for it instead of sending a requeue the console refuses.
	must(t, ctx, chromedp.Click(requeue))
	if at := must(t, ctx, chromedp.Location()); at != base+"/outboxes/orders" ||
		!must(t, ctx, chromedp.Evaluate[bool](`document.querySelector('`+reason+`').validity.valueMissing`)) {
		t.Errorf("a requeue without a reason went to %s", at)
	}
	must(t, ctx, chromedp.Click(box))
	if !disabled(requeue) {
		t.Error("with the row unticked again, the requeue is enabled")
	}

	for query, want := range map[string][]string{
		"?stuck=true":                   {release},
		"?stuck=true&status=PROCESSING": {release},
		"?status=PROCESSING":            {release},
		"?status=DEAD":                  {requeue, plan, resolve, reason},
		"?status=FAILED":                {requeue, plan, reason},
		"?status=READY":                 {},
		"?status=SENT":                  {},
	} {
		open(query)
		for _, sel := range []string{release, requeue, plan, resolve, reason} {
			if shown, wanted := countOf(t, ctx, sel) == 1, strings.Contains(strings.Join(want, " "), sel); shown != wanted {
				t.Errorf("%s: %s shown %v, want %v", query, sel, shown, wanted)
			}
		}
		if boxes := countOf(t, ctx, `input[name="id"]`); (boxes > 0) != (len(want) > 0) {
			t.Errorf("%s: %d boxes to tick, with repairs %v", query, boxes, want)
		}
	}

	// Ticked, with a reason: the requeue is done.
	open("?status=DEAD")
	act(t, ctx, chromedp.Click(box), chromedp.SendKeys(reason, "consumer fixed"), chromedp.Click(requeue),
		chromedp.WaitVisible(`[data-testid="notice"]`))
	if n := must(t, ctx, chromedp.Text(`[data-testid="notice"]`)); !strings.Contains(n, "Requeued 1 event") || dialogs.Load() != 0 {
		t.Errorf("notice %q, %d dialogs", n, dialogs.Load())
	}
}

// topbarProblems is what a page's layout gets wrong at the browser's width: the page scrolling
// sideways, or a part of the top bar (a section, the trace box, who is signed in) not wholly on
// screen.
const topbarProblems = `(() => {
  const vw = document.documentElement.clientWidth, out = [];
  if (document.documentElement.scrollWidth > vw) out.push("the page is " + document.documentElement.scrollWidth + " px wide");
  for (const el of document.querySelectorAll('[data-testid="topbar"] :is(a, input:not([type="hidden"]), button, [data-testid="version"], .pill)')) {
    const r = el.getBoundingClientRect();
    if (r.left < 0 || r.right > vw + 0.5 || r.width === 0) out.push((el.textContent.trim() || el.getAttribute("placeholder")) + " at " + Math.round(r.left) + "–" + Math.round(r.right));
  }
  const bar = document.querySelector(".topbar-inner");
  if (bar.scrollWidth > bar.clientWidth) out.push("the top bar overflows by " + (bar.scrollWidth - bar.clientWidth) + " px");
  return out.join("; ");
})()`

// The top bar fits narrow windows: down to 800 px every section, the trace box and who is signed
// in stay on screen (the sections take a row of their own), and no page scrolls sideways. At
// 800 px "Doctor" was cut off and the trace box was off screen.
func TestBrowserOutboxLayoutNarrowWidths(t *testing.T) {
	k := startKafka(t, map[string]int32{"orders.DLT": 1})
	base, _ := authConsole(t, fmt.Sprintf("read_only: true\nkafka: [{name: main, brokers: [%q]}]\n", k.Addrs()[0]))
	ctx, _ := newBrowser(t)
	act(t, ctx, chromedp.Navigate(base+"/login"))
	browserSignIn(t, ctx, "ada", `[data-testid="signed-in-user"]`) // the widest bar: a pill, the version, a user, Sign out
	for _, width := range []int64{800, 1024, 1280, 1360, 1361, 1440} {
		for _, page := range []string{"/", "/outboxes/orders", "/outboxes/orders?status=DEAD", "/kafka/main/topics/orders.DLT"} {
			act(t, ctx, chromedp.EmulateViewport(width, 1000), chromedp.Navigate(base+page),
				chromedp.WaitVisible(`[data-testid="nav-trace-input"]`))
			if p := must(t, ctx, chromedp.Evaluate[string](topbarProblems)); p != "" {
				t.Errorf("%s at %d px: %s", page, width, p)
			}
			if width == 800 {
				screenshot(t, ctx, "narrow"+strings.NewReplacer("/", "-", "?", "-", "=", "-", ".", "-").Replace(page))
			}
		}
	}
}
