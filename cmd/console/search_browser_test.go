package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/ops/waittest"
)

// runSearch types filter into a page's search form, once open runs the steps that get there (the
// page, its partition choice), and waits for the scan to finish: its status line.
func runSearch(t *testing.T, ctx context.Context, filter string, open ...chromedp.Action[chromedp.Void]) string {
	t.Helper()
	steps := append(open, chromedp.SendKeys(`[data-testid="filter-input"]`, filter),
		chromedp.Submit(`[data-testid="filter-input"]`),
		chromedp.WaitVisible(`[data-testid="scan"]`))
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
	var status string
	waittest.Until(t, 30*time.Second, "the scan to finish", func() bool {
		status = must(t, ctx, chromedp.Text(`[data-testid="scan-status"]`))
		return strings.Contains(status, "done")
	})
	return status
}

// TestBrowserSearchTopic: a filter typed on a topic page streams its matches in with the records
// scanned and the rate, the URL keeps it, and "Plan replay of the matches" plans exactly them.
func TestBrowserSearchTopic(t *testing.T) {
	base := kafkaConsole(t)
	ctx, dialogs := newBrowser(t)
	const filter = `offset < 10 && key != "<img src=x onerror=alert(1)>"` // 10 in each of 3 partitions
	status := runSearch(t, ctx, filter, chromedp.Navigate(base+"/kafka/main/topics/orders.DLT"),
		chromedp.WaitVisible(`[data-testid="filter-input"]`),
		chromedp.SetValue(`[data-testid="partition-select"]`, "all"))
	rows := must(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="scan-row"]').length`))
	loc := must(t, ctx, chromedp.Evaluate[string](`location.search`))
	screenshot(t, ctx, "kafka-topic-search")
	if rows != 30 || !strings.Contains(status, "30 matched") || !strings.Contains(status, "records scanned") || !strings.Contains(status, "records/s") {
		t.Fatalf("scan: %d rows, status %q", rows, status)
	}
	if !strings.Contains(loc, "filter=") {
		t.Errorf("the URL does not keep the filter: %q", loc)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="plan-matches"] button`), chromedp.WaitVisible(`[data-testid="plan-counts"]`)); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, action := range []string{"publish", "skip_processed", "skip_in_progress", "skip_already_replayed", "skip_replay_limit", "skip_unresolvable"} {
		total += must(t, ctx, chromedp.Evaluate[int](`(() => { const e = document.querySelector('[data-testid="count-`+action+`"] [data-testid="stat-value"]'); return e ? parseInt(e.textContent.replace(/,/g, ''), 10) : 0; })()`))
	}
	if total != 30 || dialogs.Load() != 0 {
		t.Errorf("the plan of the matches holds %d items (want 30); %d dialogs opened", total, dialogs.Load())
	}
}

// TestBrowserSearchQueue: the same on a dead-letter queue's messages page — the 12 reminders that
// expired into orders.dlq, found by a filter over the head (a browse: the queue stays as it was).
func TestBrowserSearchQueue(t *testing.T) {
	base, vhost, _ := rabbitConsole(t)
	ctx, dialogs := newBrowser(t)
	page := base + "/rabbitmq/main/queues/" + strings.ReplaceAll(vhost, "/", "%2F") + "/orders.dlq/messages"
	status := runSearch(t, ctx, `dead_letter.reason == "expired"`, chromedp.Navigate(page),
		chromedp.WaitVisible(`[data-testid="filter-input"]`))
	reasons := must(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="scan-row"] td:nth-child(4)')).map(td => td.textContent)`))
	screenshot(t, ctx, "rabbitmq-queue-search")
	if len(reasons) != 12 || !strings.Contains(status, "12 matched") {
		t.Fatalf("scan: %d rows %v, status %q", len(reasons), reasons, status)
	}
	for _, r := range reasons {
		if r != "expired" {
			t.Fatalf("a row that does not match: %v", reasons)
		}
	}
	if n := countOf(t, ctx, `[data-testid="plan-matches"] button`); n != 1 || dialogs.Load() != 0 {
		t.Errorf("plan button %d, dialogs %d", n, dialogs.Load())
	}
}
