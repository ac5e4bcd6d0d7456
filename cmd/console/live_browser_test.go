package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/rabbittest"
)

// The broker page follows the sampler without a reload: a queue declared and filled after the
// page loaded shows up with its depth, and the "updated" time moves; a quorum queue with a
// delivery limit offers no Browse button that leads to a 409, but a disabled one with the reason.
func TestBrowserLiveNumbersAndDisabledBrowse(t *testing.T) {
	base, vhost, vhostURL := rabbitConsole(t)
	_, ch := rabbittest.Channel(t, vhostURL)
	ctx, _ := newBrowser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/rabbitmq/main"), chromedp.WaitVisible(`[data-testid="queues-table"]`)); err != nil {
		t.Fatal(err)
	}
	before := must(t, ctx, chromedp.Evaluate[string](`window.__sameDocument = true; document.querySelector('[data-testid="updated"]').getAttribute('datetime')`))
	queuesBefore := must(t, ctx, chromedp.Text(chromedp.CSS(`#broker-stats [data-testid="stat-value"]`)))

	if _, err := ch.QueueDeclare("live.check", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 7; i++ {
		if err := ch.Publish("", "live.check", false, false, amqp.Publishing{Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	var ready string
	rabbittest.WaitFor(t, 45*time.Second, "the new queue's depth on the open page", func(context.Context) bool {
		ready = must(t, ctx, chromedp.Evaluate[string](`(() => { const r = document.querySelector('tr[data-queue="live.check"] td:nth-child(4)');
			return r ? r.textContent.trim() : ""; })()`))
		return ready == "7"
	})
	same := must(t, ctx, chromedp.Evaluate[bool](`window.__sameDocument === true`))
	after := must(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="updated"]').getAttribute('datetime')`))
	queuesAfter := must(t, ctx, chromedp.Text(chromedp.CSS(`#broker-stats [data-testid="stat-value"]`)))
	screenshot(t, ctx, "rabbitmq-queues-live")
	if !same || after <= before || queuesAfter == queuesBefore {
		t.Errorf("live page: same document %v, updated %s → %s, queues %s → %s", same, before, after, queuesBefore, queuesAfter)
	}

	q := base + "/rabbitmq/main/queues/" + strings.ReplaceAll(vhost, "/", "%2F")
	if err := chromedp.Do(ctx, chromedp.Navigate(q+"/invoices"), chromedp.WaitVisible(`[data-testid="browse-disabled"]`)); err != nil {
		t.Fatal(err)
	}
	disabled := must(t, ctx, chromedp.Evaluate[bool](`document.querySelector('[data-testid="browse-disabled"] button').disabled`))
	why := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="browse-why"]`)))
	links := countOf(t, ctx, `[data-testid="browse-link"]`)
	screenshot(t, ctx, "rabbitmq-quorum-browse-disabled")
	if !disabled || links != 0 || !strings.Contains(why, "delivery limit") {
		t.Errorf("invoices: browse disabled %v, %d browse links, reason %q", disabled, links, why)
	}
	// A dead-letter queue shows its inflow; its breadcrumb names the vhost only when it is not "/".
	if err := chromedp.Do(ctx, chromedp.Navigate(q+"/orders.dlq"), chromedp.WaitVisible(`#queue-stats`)); err != nil {
		t.Fatal(err)
	}
	stats := must(t, ctx, chromedp.Text(chromedp.CSS(`#queue-stats`)))
	crumbs := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="breadcrumbs"]`)))
	screenshot(t, ctx, "rabbitmq-dlq-queue")
	if !strings.Contains(stats, "INFLOW") && !strings.Contains(stats, "Inflow") || strings.Contains(crumbs, "/ ·") {
		t.Errorf("DLQ page: stats %q, breadcrumbs %q", stats, crumbs)
	}
}
