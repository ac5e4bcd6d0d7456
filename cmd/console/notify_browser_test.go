package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/cmd/internal/demo"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// TestBrowserNotificationsLogAndSilence: the delivery log shows the notification the receiver
// got, the test button sends one to the channel, and a silence set with the page's form is listed
// with its matchers and comment, and is audited.
func TestBrowserNotificationsLogAndSilence(t *testing.T) {
	storeDSN, outboxDSN := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	if err := demo.SeedOutbox(context.Background(), outboxDSN); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var kinds []string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		kinds = append(kinds, string(b))
		mu.Unlock()
	}))
	t.Cleanup(receiver.Close)
	got := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range kinds {
			if strings.Contains(k, s) {
				return true
			}
		}
		return false
	}
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q}]
notify:
  interval: 1s
  channels: [{name: ops-hook, type: webhook, url: %q}]
  rules: [{match: {kind: outbox_dead}, channels: [ops-hook]}]
`, storeDSN, outboxDSN, receiver.URL))
	waittest.Until(t, 30*time.Second, "the outbox_dead notification at the receiver", func() bool { return got(`"kind":"outbox_dead"`) })

	ctx, dialogs := newBrowser(t)
	var log string
	waittest.Until(t, 30*time.Second, "the delivery log row", func() bool {
		must(t, ctx, chromedp.Navigate(base+"/notifications"))
		log = must(t, ctx, chromedp.Text(`[data-testid="notify-log"]`))
		return strings.Contains(log, "delivered") && strings.Contains(log, "ops-hook") && strings.Contains(log, "outbox_dead")
	})

	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="notify-test"]`), chromedp.WaitVisible(`[data-testid="notify-flash"]`)); err != nil {
		t.Fatal(err)
	}
	if flash := must(t, ctx, chromedp.Text(`[data-testid="notify-flash"]`)); !strings.Contains(flash, "ops-hook") {
		t.Errorf("after the test button: %q", flash)
	}
	waittest.Until(t, 10*time.Second, "the test notification at the receiver", func() bool { return got(`"kind":"test"`) })

	form := `[data-testid="silence-form"] `
	if err := chromedp.Do(ctx,
		chromedp.SetValue(form+`input[name="kind"]`, "outbox_stuck"),
		chromedp.SetValue(form+`input[name="duration"]`, "90m"),
		chromedp.SetValue(form+`input[name="comment"]`, "relay redeploy <b>now</b>"),
		chromedp.Submit(form+`button`),
		chromedp.WaitVisible(`[data-testid="silence-row"]`)); err != nil {
		t.Fatal(err)
	}
	row := must(t, ctx, chromedp.Text(`[data-testid="silence-row"]`))
	screenshot(t, ctx, "notifications")
	if !strings.Contains(row, "outbox_stuck") || !strings.Contains(row, "relay redeploy <b>now</b>") {
		t.Errorf("the silence row: %q", row)
	}
	if dialogs.Load() != 0 {
		t.Errorf("%d dialogs opened", dialogs.Load())
	}
	api := do(t, nil, "GET", base+"/api/v1/silences", "", "")
	if api.status != http.StatusOK || !strings.Contains(api.body, `"matchers":{"kind":"outbox_stuck"}`) || !strings.Contains(api.body, `"comment":"relay redeploy \u003cb\u003enow\u003c/b\u003e"`) {
		t.Errorf("GET /api/v1/silences: %d %s", api.status, api.body)
	}
	audit := do(t, nil, "GET", base+"/api/v1/audit", "", "")
	if !strings.Contains(audit.body, "silence") || !strings.Contains(audit.body, "outbox_stuck") {
		t.Errorf("the silence is not audited: %.500s", audit.body)
	}
}
