// Browser tests for static/app.js on the gallery page, served with the
// production CSP, in Debian's headless Chromium. They run in every
// `go test ./...` (so in `make test`); without chromium they are skipped, except
// under CI (CI=true), where a missing browser fails them:
//
//	go test -run 'TestAppJS|TestSparkline' ./views/components/
package components_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/redrive/redrive/ops/waittest"
)

const chromiumPath = "/usr/bin/chromium"

type browser struct {
	ctx context.Context
	t   *testing.T

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no chromium at %s: CI must run the browser tests (apt-get install chromium)", chromiumPath)
		}
		t.Skipf("no chromium at %s", chromiumPath)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })

	b := &browser{ctx: ctx, t: t}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	}()
	return b
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatal(err)
	}
}

func eval[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// wait polls js until it is truthy or 5 s pass.
func (b *browser) wait(js string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js)); err != nil {
		b.t.Fatalf("waiting for %s: %v", js, err)
	}
}

// problems returns console messages that point at a bug: exceptions, CSP
// violations and errors other than the failed requests the gallery makes on
// purpose (a 503 chart source and a 503 htmx panel).
func (b *browser) problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.console {
		s := m.String()
		switch {
		case m.IsException(), strings.Contains(s, "Content Security Policy"):
			out = append(out, s)
		case m.Type == chromedp.ConsoleError &&
			!strings.Contains(s, "Failed to load resource") && !strings.Contains(s, "Response Status Error Code 503"):
			out = append(out, s)
		}
	}
	return out
}

func TestAppJS(t *testing.T) {
	g := newGallery(t)
	b := newBrowser(t)
	b.do(chromedp.Navigate(g.srv.URL + "/"))
	b.wait(`document.readyState === "complete" && window.htmx && window.uPlot`)

	rowGroups := `Array.from(document.querySelectorAll("#groups tbody tr:not([hidden]):not(.filter-empty) td:nth-child(2)")).map(td => td.textContent.trim())`

	t.Run("RelativeTime", func(t *testing.T) {
		texts := eval[[]string](b, `Array.from(document.querySelectorAll("time[data-rel]")).map(e => e.textContent)`)
		if len(texts) == 0 {
			t.Fatal("no time[data-rel]")
		}
		re := regexp.MustCompile(`^(just now|\d+ (s|min|h|d) ago|in \d+ (s|min|h|d))$`)
		for _, s := range texts {
			if !re.MatchString(s) {
				t.Errorf("relative time %q", s)
			}
		}
	})

	t.Run("Sort", func(t *testing.T) {
		b.do(chromedp.Click(chromedp.CSS(`#groups thead th:nth-child(5)`))) // Lag
		if got := eval[[]string](b, rowGroups); got[0] != "search-indexer" || got[len(got)-1] != "email-notifier" {
			t.Errorf("ascending by lag: %v", got)
		}
		if got := eval[string](b, `document.querySelector("#groups thead th:nth-child(5)").getAttribute("aria-sort")`); got != "ascending" {
			t.Errorf("aria-sort = %q", got)
		}
		b.do(chromedp.Click(chromedp.CSS(`#groups thead th:nth-child(5)`)))
		if got := eval[[]string](b, rowGroups); got[0] != "email-notifier" || got[1] != "billing-settlement" {
			t.Errorf("descending by lag: %v", got)
		}
		b.do(chromedp.Click(chromedp.CSS(`#groups thead th:nth-child(2)`))) // Group
		if got := eval[[]string](b, rowGroups); got[0] != "audit-writer" || got[len(got)-1] != "search-indexer" {
			t.Errorf("ascending by group: %v", got)
		}
		if n := eval[int](b, `document.querySelectorAll("#groups thead th[aria-sort]").length`); n != 1 {
			t.Errorf("%d headers carry aria-sort, want 1", n)
		}
		// Last commit sorts by its data-sort (unix seconds), not by its text.
		b.do(chromedp.Click(chromedp.CSS(`#groups thead th:nth-child(7)`)))
		if got := eval[[]string](b, rowGroups); got[0] != "audit-writer" || got[len(got)-1] != "orders-projector" {
			t.Errorf("ascending by last commit: %v", got)
		}
		// Keyboard: Enter on a focused header sorts too.
		b.do(chromedp.Focus(chromedp.CSS(`#groups thead th:nth-child(7)`)), chromedp.KeyEvent(kb.Enter))
		if got := eval[string](b, `document.querySelector("#groups thead th:nth-child(7)").getAttribute("aria-sort")`); got != "descending" {
			t.Errorf("after Enter aria-sort = %q", got)
		}
	})

	t.Run("Filter", func(t *testing.T) {
		b.do(chromedp.SendKeys(chromedp.CSS(`input[data-filter-for="groups"]`), "stal"))
		if got := eval[[]string](b, rowGroups); len(got) != 1 || got[0] != "billing-settlement" {
			t.Errorf("filter 'stal': %v", got)
		}
		if got := eval[string](b, `document.querySelector('[data-filter-count-for="groups"]').textContent`); got != "1 of 7" {
			t.Errorf("count = %q", got)
		}
		b.do(chromedp.SendKeys(chromedp.CSS(`input[data-filter-for="groups"]`), "zzz"))
		if got := eval[string](b, `(document.querySelector("#groups tr.filter-empty") || {}).textContent || ""`); !strings.Contains(got, "No rows match") {
			t.Errorf("no-match row = %q", got)
		}
		b.do(chromedp.SendKeys(chromedp.CSS(`input[data-filter-for="groups"]`), kb.Escape))
		if got := eval[[]string](b, rowGroups); len(got) != 7 {
			t.Errorf("after Esc %d rows visible, want 7", len(got))
		}
		if n := eval[int](b, `document.querySelectorAll("#groups tr.filter-empty").length`); n != 0 {
			t.Error("no-match row left behind")
		}
	})

	t.Run("CheckAll", func(t *testing.T) {
		checked := `Array.from(document.querySelectorAll('input[name="group"]:checked')).map(e => e.value)`
		if !eval[bool](b, `document.querySelector('[data-requires-checked="group"]').disabled`) {
			t.Error("bulk button enabled with nothing selected")
		}
		b.do(chromedp.SendKeys(chromedp.CSS(`input[data-filter-for="groups"]`), "payments"))
		b.do(chromedp.Click(chromedp.CSS(`[data-check-all="group"]`)))
		got := eval[[]string](b, checked)
		if strings.Join(got, ",") != "billing-settlement,fraud-scoring" && strings.Join(got, ",") != "fraud-scoring,billing-settlement" {
			t.Errorf("select-all under filter checked %v, want only the visible rows", got)
		}
		if got := eval[string](b, `document.querySelector('[data-check-count="group"]').textContent`); got != "2" {
			t.Errorf("count = %q", got)
		}
		if eval[bool](b, `document.querySelector('[data-requires-checked="group"]').disabled`) {
			t.Error("bulk button still disabled")
		}
		b.do(chromedp.SendKeys(chromedp.CSS(`input[data-filter-for="groups"]`), kb.Escape))
		if !eval[bool](b, `document.querySelector('[data-check-all="group"]').indeterminate`) {
			t.Error("master not indeterminate with 2 of 7 checked")
		}
		b.do(chromedp.Click(chromedp.CSS(`[data-check-all="group"]`)))
		if n := len(eval[[]string](b, checked)); n != 7 {
			t.Errorf("select-all checked %d, want 7", n)
		}
		b.do(chromedp.Click(chromedp.CSS(`[data-check-all="group"]`)))
		if n := len(eval[[]string](b, checked)); n != 0 {
			t.Errorf("unselect-all left %d checked", n)
		}
	})

	t.Run("Copy", func(t *testing.T) {
		eval[bool](b, `navigator.clipboard.writeText = (t) => { window.__copied = t; return Promise.resolve(); }, true`)
		b.do(chromedp.Click(chromedp.CSS(`[data-testid="copy-id"] [data-copy]`)))
		b.wait(`window.__copied !== undefined`)
		want := eval[string](b, `document.querySelector('[data-testid="copy-id"] [data-copy]').getAttribute("data-copy")`)
		if got := eval[string](b, `window.__copied`); got != want || got == "" {
			t.Errorf("copied %q, want %q", got, want)
		}
		if !eval[bool](b, `document.querySelector('[data-testid="copy-id"] [data-copy]').classList.contains("is-copied")`) {
			t.Error("no copied feedback")
		}
		// Pre copies its block's text.
		b.do(chromedp.Click(chromedp.CSS(`.pre-wrap [data-copy-target]`)))
		b.wait(`window.__copied.includes("PaymentCaptured")`)
		if got := eval[string](b, `window.__copied`); !strings.Contains(got, `"note": "<script>alert(1)</script>"`) {
			t.Errorf("pre copy = %q", got)
		}
	})

	t.Run("Confirm", func(t *testing.T) {
		eval[bool](b, `window.__answer = false; window.__asked = []; window.confirm = (m) => { window.__asked.push(m); return window.__answer; }, true`)
		before := eval[string](b, `location.href`)
		b.do(chromedp.Click(chromedp.CSS(`form[data-confirm="Replay this message to payments.captured?"] button[type=submit]`)))
		if got := eval[[]string](b, `window.__asked`); len(got) != 1 || got[0] != "Replay this message to payments.captured?" {
			t.Errorf("asked %v", got)
		}
		if after := eval[string](b, `location.href`); after != before {
			t.Fatalf("declined form submitted anyway: %s", after)
		}

		// htmx button: declined → no request; accepted → request with CSRF header.
		b.do(chromedp.Click(chromedp.CSS(`[data-testid="htmx-confirm"]`)))
		waittest.Holds(t, 300*time.Millisecond, "the declined htmx request is not sent", func() bool { return g.posts() == 0 })
		eval[bool](b, `window.__answer = true`)
		b.do(chromedp.Click(chromedp.CSS(`[data-testid="htmx-confirm"]`)))
		b.wait(`document.querySelector('#swap [data-testid="echo-csrf"]')`)
		if n := g.posts(); n != 1 {
			t.Errorf("accepted htmx request sent %d times, want 1", n)
		}
		if got := eval[string](b, `document.querySelector('#swap [data-testid="echo-csrf"]').textContent`); got != "demo-csrf-token" {
			t.Errorf("X-CSRF-Token = %q, want the hx-headers token", got)
		}
		if got := eval[[]string](b, `window.__asked`); len(got) != 3 || got[2] != "Release 3 stuck leases?" {
			t.Errorf("asked %v", got)
		}

		// A submit button with its own hx-post inside a confirming form:
		// asked once, with the button's question.
		eval[bool](b, `window.__asked = []; document.querySelector("#swap").innerHTML = "", true`)
		b.do(chromedp.Click(chromedp.CSS(`[data-testid="htmx-submit-confirm"]`)))
		b.wait(`document.querySelector('#swap [data-testid="echo-csrf"]')`)
		if got := eval[[]string](b, `window.__asked`); len(got) != 1 || got[0] != "Button-level question?" {
			t.Errorf("asked %v, want only the button's question", got)
		}
		if n := g.posts(); n != 2 {
			t.Errorf("POSTs = %d, want 2", n)
		}
		if after := eval[string](b, `location.href`); after != before {
			t.Errorf("native submit happened too: %s", after)
		}
	})

	t.Run("HtmxSwap", func(t *testing.T) {
		eval[bool](b, `document.querySelector("#swap").innerHTML = "", true`)
		b.do(chromedp.Click(chromedp.CSS(`[data-testid="htmx-load"]`)))
		b.wait(`document.querySelector('#swap [data-testid="swapped-time"]') && document.querySelector('#swap [data-testid="swapped-time"]').textContent !== "stale"`)
		if got := eval[string](b, `document.querySelector('#swap [data-testid="swapped-time"]').textContent`); got != "5 min ago" {
			t.Errorf("swapped time = %q, want app.js to refresh it to %q", got, "5 min ago")
		}
		b.wait(`document.querySelector('#swap [data-chart] canvas')`)
	})

	t.Run("HtmxErrorSwap", func(t *testing.T) {
		b.do(chromedp.Click(chromedp.CSS(`[data-testid="htmx-fail"]`)))
		b.wait(`document.querySelector('#swap [data-testid="error-fragment"]')`)
		if got := eval[string](b, `document.querySelector('#swap [data-testid="error-panel-title"]').textContent`); got != "Kafka cluster main is unreachable" {
			t.Errorf("error panel title = %q", got)
		}
	})

	t.Run("Charts", func(t *testing.T) {
		b.wait(`document.querySelector('[data-src="/lag.json"] canvas')`)
		b.wait(`document.querySelector('[data-src="/broken.json"] .chart-status.is-error')`)
		if got := eval[string](b, `document.querySelector('[data-src="/broken.json"] .chart-status').textContent`); got != "Chart data unavailable: HTTP 503" {
			t.Errorf("broken chart says %q", got)
		}
		// The chart follows its container's width.
		w := eval[int](b, `(() => { const el = document.querySelector('.panel-body > [data-src="/lag.json"]'); return Math.abs(el.querySelector("canvas").getBoundingClientRect().width - el.clientWidth) })()`)
		if w > 80 {
			t.Errorf("chart canvas is %d px off its container width", w)
		}
	})

	// Give late console messages a moment, then check for problems.
	time.Sleep(200 * time.Millisecond)
	for _, p := range b.problems() {
		t.Errorf("console: %s", p)
	}
}
