package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/ops/waittest"
)

// browser is the one headless chromium (Debian's, installed by .ci/run) that the package's
// browser tests share: starting one per test cost about a second each, 33 times. Each test gets a
// browser context of its own (newBrowser), so no cookie, session or storage crosses tests.
var browser struct {
	once   sync.Once
	ctx    context.Context // the browser's first tab, which started it; new contexts derive from it
	cancel context.CancelFunc
	err    error
}

// sharedBrowser starts the package's chromium on first use.
func sharedBrowser() (context.Context, error) {
	browser.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath("/usr/bin/chromium"),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-quic", true),
			chromedp.WindowSize(1400, 1000),
		)
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, cancelBrowser := chromedp.NewContext(actx)
		browser.ctx, browser.cancel = bctx, func() { cancelBrowser(); cancelAlloc() }
		browser.err = chromedp.Do(bctx)
	})
	return browser.ctx, browser.err
}

// closeBrowser ends the shared chromium, if a test started it (TestMain, after the tests).
func closeBrowser() {
	if browser.cancel != nil {
		browser.cancel()
	}
}

// newBrowser opens a tab for one test in a browser context of its own (an incognito profile:
// cookies and storage start empty and end with the test), 1400 × 1000 px as the window was when
// each test started its own chromium. The counter tells how many JavaScript dialogs (alert,
// confirm) pages opened; confirmations are accepted.
func newBrowser(t *testing.T) (context.Context, *atomic.Int32) {
	t.Helper()
	bctx, err := sharedBrowser()
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancelCtx := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	ctx, cancelTimeout := context.WithTimeout(ctx, 150*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx() })
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(1400, 1000)); err != nil {
		t.Fatalf("open a tab: %v", err)
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

// countOf is how many elements of the open page selector matches.
func countOf(t *testing.T, ctx context.Context, selector string) int {
	t.Helper()
	return must(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+"`"+selector+"`"+`).length`))
}

// act runs browser actions that give no value, failing the test on error.
func act(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// submit submits the form of the element sel and waits for the page the server answers with: a
// selector waited for right after a submit may still match the page the form was on, and what a
// test then types there is lost with it when the answer arrives.
func submit(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	must(t, ctx, chromedp.Evaluate[bool](`window.__beforeSubmit = true`))
	act(t, ctx, chromedp.Submit(sel))
	waittest.Until(t, 20*time.Second, "the page the form answers with", func() bool {
		loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__beforeSubmit === undefined && document.readyState === "complete"`))
		return err == nil && loaded
	})
}

// waitText waits until the page's text contains want, and returns the text.
func waitText(t *testing.T, ctx context.Context, want string) string {
	t.Helper()
	return waittest.For(t, 20*time.Second, fmt.Sprintf("the page says %q", want), func() (string, bool) {
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		return text, err == nil && strings.Contains(text, want)
	})
}
