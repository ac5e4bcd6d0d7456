package main

import (
	"context"
	"html"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redrive/redrive/paths"
)

// selectedForm is a page's "plan a replay of the selected" form as a browser would post it: its
// action (a form's or a button's), with the page's CSRF token and the session it belongs to.
type selectedForm struct {
	t      *testing.T
	client *http.Client
	base   string
	action string
	csrf   string
}

var (
	formAction   = regexp.MustCompile(`<form id="replay-selected" method="post" action="([^"]+)"`)
	buttonAction = regexp.MustCompile(`formaction="([^"]+)"[^>]*data-testid="plan-selected"`)
)

func openSelectedForm(t *testing.T, base, page string, action *regexp.Regexp) selectedForm {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r := do(t, client, "GET", base+page, "", "")
	a, csrf := action.FindStringSubmatch(r.body), csrfField.FindStringSubmatch(r.body)
	if r.status != 200 || a == nil || csrf == nil {
		t.Fatalf("%s: %d, plan-selected form found: %v, csrf: %v", page, r.status, a != nil, csrf != nil)
	}
	return selectedForm{t, client, base, html.UnescapeString(a[1]), csrf[1]}
}

func (f selectedForm) post(form url.Values) response {
	f.t.Helper()
	form.Set("_csrf", f.csrf)
	return do(f.t, f.client, "POST", f.base+f.action, "application/x-www-form-urlencoded", form.Encode())
}

// planned is the plan a post was redirected to; the test fails when there is none.
func (f selectedForm) planned(r response, want string) {
	f.t.Helper()
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/replays/plans/") {
		f.t.Fatalf("ticked: %d %v %.300s", r.status, r.header, r.body)
	}
	if plan := do(f.t, f.client, "GET", f.base+r.header.Get("Location"), "", ""); plan.status != 200 || !strings.Contains(plan.body, want) {
		f.t.Errorf("the plan of the ticked rows: %d, %q in it: %v", plan.status, want, strings.Contains(plan.body, want))
	}
}

// "Plan replay of selected" posted with nothing ticked (the page's script did not run, or the
// rows went away) is refused with what to do. The same form names the queue and the page's
// limit, and without ticks it used to plan the first 20 messages of the DLQ. With one message
// ticked, it plans that one.
func TestPlanOfSelectedNeedsATick(t *testing.T) {
	base, vhost, _ := dlqConsole(t, context.Background(), 5, `{"n":%d}`, "auth: {mode: none}")
	f := openSelectedForm(t, base, paths.QueueMessages("main", vhost, "orders.dlq"), formAction)
	form := url.Values{"kind": {"rabbitmq"}, "broker": {"main"}, "vhost": {vhost}, "queue": {"orders.dlq"}, "limit": {"20"}}
	if r := f.post(form); r.status != http.StatusBadRequest || !strings.Contains(r.body, "tick at least one message") {
		t.Fatalf("nothing ticked: %d %.300s; want 400 asking for a tick", r.status, r.body)
	}
	form["message_ids"] = []string{" "}
	if r := f.post(form); r.status != http.StatusBadRequest {
		t.Fatalf("a blank tick: %d; want 400", r.status)
	}
	form.Set("message_ids", "m-3")
	f.planned(f.post(form), "1 message")
	// Its title names that message, not "first 20 messages" of the queue (issue 37, item 16).
	f.planned(f.post(form), "message m-3 (looked for in the first 20)")
}

// The outbox page's "Plan guarded replay of selected" button answers the same.
func TestPlanOfSelectedOutboxEventsNeedsATick(t *testing.T) {
	base, _ := demoConsole(t)
	f := openSelectedForm(t, base, "/outboxes/orders?status=DEAD", buttonAction)
	form := url.Values{"kind": {"outbox"}, "outbox": {"orders"}}
	if r := f.post(form); r.status != http.StatusBadRequest || !strings.Contains(r.body, "tick at least one event") {
		t.Fatalf("nothing ticked: %d %.300s; want 400 asking for a tick", r.status, r.body)
	}
	dead := decode[struct{ Events []struct{ ID int64 } }](t, do(t, nil, "GET", base+"/api/v1/outboxes/orders/events?status=DEAD&limit=1", "", "")).Events
	if len(dead) != 1 {
		t.Fatal("the demo outbox has no DEAD event")
	}
	form.Set("id", strconv.FormatInt(dead[0].ID, 10))
	f.planned(f.post(form), "1 message")
}
