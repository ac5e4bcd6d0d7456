package main

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// browserSignIn fills the login form the browser is on and waits for the page it leads to.
func browserSignIn(t *testing.T, ctx context.Context, user, waitFor string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(`[data-testid="login-form"]`),
		chromedp.SendKeys(`[data-testid="login-user"]`, user),
		chromedp.SendKeys(`[data-testid="login-password"]`, "pw-"+user),
		chromedp.Click(`[data-testid="login-submit"]`),
		chromedp.WaitVisible(waitFor),
	); err != nil {
		t.Fatalf("sign in as %s: %v", user, err)
	}
}

// An operator sees the outbox repairs; after signing out, a viewer sees the same page without them.
func TestBrowserRolesShowOrHideActions(t *testing.T) {
	base, _ := authConsole(t, "")
	ctx, dialogs := newBrowser(t)
	const table = `[data-testid="events-table"]`
	actions := []string{`[data-testid="release-all"]`, `[data-testid="release-selected"]`,
		`[data-testid="requeue-selected"]`, `input[name="id"]`}

	// Not signed in: the page sends the browser to the login form, and back after signing in.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/outboxes/orders?stuck=true"),
		chromedp.WaitVisible(`[data-testid="login-form"]`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "login")
	browserSignIn(t, ctx, "otto", table)
	if u := must(t, ctx, chromedp.Location()); !strings.HasSuffix(u, "/outboxes/orders?stuck=true") {
		t.Errorf("after signing in the browser is at %s", u)
	}
	if who := must(t, ctx, chromedp.Text(`[data-testid="signed-in-user"]`)); !strings.Contains(who, "otto") || !strings.Contains(who, "operator") {
		t.Errorf("top bar shows %q", who)
	}
	// The unfiltered list, which may hold stuck and DEAD events alike: every repair applies (a
	// stuck-only list shows no requeue).
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/outboxes/orders"), chromedp.WaitVisible(table)); err != nil {
		t.Fatal(err)
	}
	for _, sel := range actions {
		if countOf(t, ctx, sel) == 0 {
			t.Errorf("the operator does not see %s", sel)
		}
	}
	screenshot(t, ctx, "outbox-operator")

	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="logout"]`), chromedp.WaitVisible(`[data-testid="login-form"]`),
		chromedp.Navigate(base+"/outboxes/orders?stuck=true"), chromedp.WaitVisible(`[data-testid="login-form"]`)); err != nil {
		t.Fatalf("sign out: %v", err)
	}
	browserSignIn(t, ctx, "vera", table)
	if who := must(t, ctx, chromedp.Text(`[data-testid="signed-in-user"]`)); !strings.Contains(who, "vera") || !strings.Contains(who, "viewer") {
		t.Errorf("top bar shows %q", who)
	}
	if rows := countOf(t, ctx, `[data-testid="event-row"]`); rows != 5 {
		t.Errorf("the viewer sees %d stuck events, want 5", rows)
	}
	for _, sel := range actions {
		if n := countOf(t, ctx, sel); n != 0 {
			t.Errorf("the viewer sees %d × %s", n, sel)
		}
	}
	screenshot(t, ctx, "outbox-viewer")

	// The event page has no requeue or release form for a viewer either.
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="event-row"] a`), chromedp.WaitVisible(`[data-testid="payload"]`)); err != nil {
		t.Fatal(err)
	}
	if n := countOf(t, ctx, `[data-testid="requeue-form"], [data-testid="release-form"]`); n != 0 {
		t.Errorf("the viewer's event page has %d action forms", n)
	}
	if dialogs.Load() != 0 {
		t.Errorf("%d JavaScript dialogs opened", dialogs.Load())
	}
}
