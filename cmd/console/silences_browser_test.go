package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserSilenceLongCommentAndEnd: a silence's comment of one long word wraps in its cell
// instead of making /notifications scroll sideways (the QA's 5,000 characters did), and the End
// button ends the silence: it leaves the list, and the API no longer lists it.
func TestBrowserSilenceLongCommentAndEnd(t *testing.T) {
	base, _ := outboxConsole(t, "auth: {mode: none}\n")
	word := strings.Repeat("x", 1000)
	if r := do(t, nil, "POST", base+"/api/v1/silences", "application/json",
		`{"matchers":{"kind":"outbox_stuck","outbox":"`+strings.Repeat("o", 200)+`"},"duration":"7d","comment":"`+word+`"}`); r.status != http.StatusOK {
		t.Fatalf("POST /api/v1/silences: %d %s", r.status, r.body)
	}
	ctx, _ := newBrowser(t)
	must(t, ctx, chromedp.Navigate(base+"/notifications"))
	must(t, ctx, chromedp.WaitVisible(`[data-testid="silence-row"]`))
	screenshot(t, ctx, "notifications-long-comment")
	if problems := must(t, ctx, chromedp.Evaluate[string](topbarProblems)); problems != "" {
		t.Errorf("with a long comment: %s", problems)
	}

	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="silence-end"]`), chromedp.WaitVisible(`[data-testid="notify-flash"]`)); err != nil {
		t.Fatal(err)
	}
	if flash := must(t, ctx, chromedp.Text(`[data-testid="notify-flash"]`)); !strings.Contains(flash, "ended") {
		t.Errorf("after End: %q", flash)
	}
	if n := countOf(t, ctx, `[data-testid="silence-row"]`); n != 0 {
		t.Errorf("%d silence rows after End", n)
	}
	if r := do(t, nil, "GET", base+"/api/v1/silences", "", ""); !strings.Contains(r.body, `"silences":[]`) {
		t.Errorf("GET /api/v1/silences after End: %s", r.body)
	}
	if r := do(t, nil, "GET", base+"/api/v1/audit?action=notify.silence_end&outcome=ok", "", ""); !strings.Contains(r.body, `"target":"silence/`) {
		t.Errorf("the End is not audited: %.500s", r.body)
	}
}
