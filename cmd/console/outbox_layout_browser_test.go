package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

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
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/login")); err != nil {
		t.Fatal(err)
	}
	browserSignIn(t, ctx, "ada", `[data-testid="signed-in-user"]`) // the widest bar: a pill, the version, a user, Sign out
	for _, width := range []int64{800, 1024, 1280, 1360, 1361, 1440} {
		for _, page := range []string{"/", "/outboxes/orders", "/outboxes/orders?status=DEAD", "/kafka/main/topics/orders.DLT"} {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 1000), chromedp.Navigate(base+page),
				chromedp.WaitVisible(`[data-testid="nav-trace-input"]`)); err != nil {
				t.Fatal(err)
			}
			if p := must(t, ctx, chromedp.Evaluate[string](topbarProblems)); p != "" {
				t.Errorf("%s at %d px: %s", page, width, p)
			}
			if width == 800 {
				screenshot(t, ctx, "narrow"+strings.NewReplacer("/", "-", "?", "-", "=", "-", ".", "-").Replace(page))
			}
		}
	}
}
