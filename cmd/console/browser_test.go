package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/cmd/internal/demo"
	"github.com/redrive/redrive/ops/pgtest"
)

// newBrowser starts Debian's headless chromium (installed by .ci/run) for one test. The counter
// tells how many JavaScript dialogs (alert, confirm) pages opened; confirmations are accepted.
func newBrowser(t *testing.T) (context.Context, *atomic.Int32) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath("/usr/bin/chromium"),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1400, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })

	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var dialogs atomic.Int32
	opened := make(chan bool, 16) // true: a confirm() the page asks before a form submits
	if err := chromedp.Listen(ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			select {
			case opened <- d.Type == page.DialogTypeConfirm:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	go func() { // dismiss dialogs outside the event loop, so the page does not hang on one
		for {
			select {
			case <-ctx.Done():
				return
			case confirm := <-opened:
				// Accept the console's own confirmations; dismiss anything else.
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: confirm})
			}
		}
	}()
	return ctx, &dialogs
}

// must runs one browser action, failing the test on error.
func must[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// screenshot takes a full-page PNG. `make screenshots` (REDRIVE_SCREENSHOTS=docs) keeps them under
// docs/screenshots for the README; an absolute REDRIVE_SCREENSHOTS is a folder to write them to
// instead; a plain test run writes them to its temporary folder, so that `make test` leaves the
// tracked files alone.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := must(t, ctx, chromedp.FullScreenshot(100))
	dir := t.TempDir()
	switch d := os.Getenv("REDRIVE_SCREENSHOTS"); {
	case d == "docs":
		dir = filepath.Join("..", "..", "docs", "screenshots")
	case filepath.IsAbs(d): // a folder of one's own, to look at the pages while working on them
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

const hostile = `<script>window.__pwned=1;alert(1)</script><img src=x onerror="window.__pwned=2;alert(2)">`

func TestBrowserOutboxPageIsSafeAndShowsCounts(t *testing.T) {
	storeDSN, outboxDSN := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	if err := demo.SeedOutbox(context.Background(), outboxDSN); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, outboxDSN, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version,
		payload, status, attempts, available_at, last_error, created_at)
		VALUES ('evt-hostile', 'Order', $1, 'OrderCreated', 1, $2, 'DEAD', 10, now(), $3, now())`,
		hostile, `{"note":"`+strings.ReplaceAll(hostile, `"`, `\"`)+`"}`, "relay: "+hostile)
	base := startConsole(t, fmt.Sprintf("auth: {mode: none}\nstore: {dsn: %q}\noutboxes: [{name: orders, dsn: %q}]\n", storeDSN, outboxDSN))

	ctx, dialogs := newBrowser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/outboxes/orders"), chromedp.WaitVisible(`[data-testid="events-table"]`)); err != nil {
		t.Fatal(err)
	}
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

	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="event-row"] a`), chromedp.WaitVisible(`[data-testid="payload"]`)); err != nil {
		t.Fatal(err)
	}
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
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/outboxes/orders?status=DEAD"),
		chromedp.WaitVisible(`[data-testid="plan-matching"]`),
	); err != nil {
		t.Fatal(err)
	}
	ticked := must(t, ctx, chromedp.Evaluate[int](`[...document.querySelectorAll('[data-testid="event-row"] input[name="id"]')]
		.filter((b, i) => { b.checked = i < 3; b.dispatchEvent(new Event('change', {bubbles: true})); return b.checked; }).length`))
	if err := chromedp.Do(ctx,
		chromedp.Click(`[data-testid="plan-selected"]`),
		chromedp.WaitVisible(`[data-testid="plan-counts"]`),
	); err != nil {
		t.Fatal(err)
	}
	if header := must(t, ctx, chromedp.Text(`[data-testid="page-header"]`)); ticked != 3 || !strings.Contains(header, "Outbox orders, 3 event(s)") {
		t.Errorf("plan of the %d ticked events: %q", ticked, header)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/outboxes/orders?status=DEAD"),
		chromedp.WaitVisible(`[data-testid="plan-matching"]`),
		chromedp.Click(`[data-testid="plan-matching"] button`),
		chromedp.WaitVisible(`[data-testid="plan-counts"]`),
	); err != nil {
		t.Fatal(err)
	}
	if publish := must(t, ctx, chromedp.Text(`[data-testid="count-publish"] [data-testid="stat-value"]`)); publish != dead {
		t.Errorf("plan of the matching DEAD events publishes %q, the outbox holds %q DEAD", publish, dead)
	}
}
