package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/cmd/internal/demo"
	"github.com/redrive/redrive/ops/pgtest"
)

// The outbox page's repairs of ticked events are disabled until a row is ticked, the requeue asks
// for its reason before it submits, and a filter shows only the repairs that can apply to what it
// lists: no requeue of stuck leases, no release of DEAD events, none at all for SENT ones.
func TestBrowserOutboxSelectedActions(t *testing.T) {
	storeDSN, outboxDSN := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	if err := demo.SeedOutbox(context.Background(), outboxDSN); err != nil {
		t.Fatal(err)
	}
	base := startConsole(t, fmt.Sprintf("auth: {mode: none}\nstore: {dsn: %q}\noutboxes: [{name: orders, dsn: %q}]\n", storeDSN, outboxDSN))
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
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/outboxes/orders"+query), chromedp.WaitVisible(`[data-testid="events-table"]`)); err != nil {
			t.Fatal(err)
		}
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
	if err := chromedp.Do(ctx, chromedp.Click(box), chromedp.SendKeys(reason, "consumer fixed"), chromedp.Click(requeue),
		chromedp.WaitVisible(`[data-testid="notice"]`)); err != nil {
		t.Fatal(err)
	}
	if n := must(t, ctx, chromedp.Text(`[data-testid="notice"]`)); !strings.Contains(n, "Requeued 1 event(s)") || dialogs.Load() != 0 {
		t.Errorf("notice %q, %d dialogs", n, dialogs.Load())
	}
}
