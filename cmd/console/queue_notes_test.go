package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/waittest"
)

// TestQueueNotes: notes on a DLQ's error group and on one of its messages (by message id) are
// shown where each appears on the messages page, escaped; the API lists them; bad input is a
// 400 in words; a viewer is refused; each note is audited with its text; the queue is left as
// it was.
func TestQueueNotes(t *testing.T) {
	ctx := waittest.Context(t, 2*time.Minute)
	base, vhost, ch := dlqConsole(t, ctx, 2, `{"n":%d}`, basicAuth(""))
	api := base + "/api/v1/rabbitmq/main/queues/" + url.PathEscape(vhost) + "/orders.dlq/notes"
	groupNote := `{"error_group":{"reason":"rejected","exception_message":""},"text":"investigating: INC-2231 <script>alert(1)</script>","link":"https://tracker.example/INC-2231"}`
	if r := bearer(t, "POST", api, "tok-viewer", groupNote); r.status != http.StatusForbidden {
		t.Fatalf("viewer: %d %s", r.status, r.body)
	}
	for body, want := range map[string]string{
		`{"message_id":"m-0","text":"  "}`:                                    "text",
		`{"message_id":"m-0","text":"t","link":"javascript:alert(1)"}`:        "must be an http or https URL",
		`{"error_group":{"reason":"rejected"},"message_id":"m-0","text":"t"}`: "exactly one of error_group or message_id",
		`{"text":"t"}`: "exactly one of error_group or message_id",
		`{"message_id":"m-0","text":"` + strings.Repeat("x", 2001) + `"}`:     "at most 2000 characters",
		`{"message_id":"m-0","text":"t","record":{"partition":0,"offset":0}}`: "unknown field",
	} {
		if r := bearer(t, "POST", api, "tok-operator", body); r.status != http.StatusBadRequest || !strings.Contains(r.body, want) {
			t.Errorf("%.80s: %d %s, want 400 saying %q", body, r.status, r.body, want)
		}
	}
	if r := bearer(t, "POST", base+"/api/v1/rabbitmq/nope/queues/x/y/notes", "tok-operator", `{"message_id":"m-0","text":"t"}`); r.status != http.StatusNotFound {
		t.Fatalf("an unknown broker: %d %s", r.status, r.body)
	}
	r := bearer(t, "POST", api, "tok-operator", groupNote)
	if r.status != http.StatusOK || !strings.Contains(r.body, `"error_group":{"reason":"rejected","exception_message":""}`) ||
		!strings.Contains(r.body, `"by":"token:operator-bot"`) {
		t.Fatalf("group note: %d %s", r.status, r.body)
	}
	if r := bearer(t, "POST", api, "tok-operator", `{"message_id":"m-1","text":"this one has a bad customer id"}`); r.status != http.StatusOK ||
		!strings.Contains(r.body, `"message_id":"m-1"`) {
		t.Fatalf("message note: %d %s", r.status, r.body)
	}
	list := bearer(t, "GET", api, "tok-viewer", "")
	if !strings.Contains(list.body, "INC-2231") || !strings.Contains(list.body, `"message_id":"m-1"`) {
		t.Fatalf("notes: %s", list.body)
	}
	client, _ := signedIn(t, base, "vera")
	page := do(t, client, "GET", base+"/rabbitmq/main/queues/"+url.PathEscape(vhost)+"/orders.dlq/messages", "", "")
	if !strings.Contains(page.body, `data-testid="note-text">investigating: INC-2231 &lt;script&gt;`) || strings.Contains(page.body, "<script>alert(1)") ||
		!strings.Contains(page.body, `href="https://tracker.example/INC-2231"`) || !strings.Contains(page.body, "this one has a bad customer id") {
		t.Fatalf("the messages page does not show the notes escaped:\n%.3000s", page.body)
	}
	if strings.Count(page.body, "this one has a bad customer id") != 1 {
		t.Fatal("the message note shows on more than its message")
	}
	a := decode[struct{ Entries []auditRow }](t, bearer(t, "GET", base+"/api/v1/audit?action=rabbitmq.note", "tok-admin", ""))
	if len(a.Entries) != 2 || a.Entries[0].Outcome != "ok" || a.Entries[1].Detail["text"] != "investigating: INC-2231 <script>alert(1)</script>" {
		t.Fatalf("the notes' audit: %+v", a.Entries)
	}
	rabbittest.WaitDepth(t, ch, "orders.dlq", 2, 10*time.Second)
}

// TestBrowserQueueNote: on a DLQ's messages page an operator opens a message and adds a note to
// it, and one to its error group; the page shows both where they belong.
func TestBrowserQueueNote(t *testing.T) {
	ctx0 := waittest.Context(t, 2*time.Minute)
	base, vhost, _ := dlqConsole(t, ctx0, 2, `{"n":%d}`, "auth: {mode: none}\n")
	ctx, _ := newBrowser(t)
	first := `tr[data-record-row]:nth-of-type(1)`
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/rabbitmq/main/queues/"+url.PathEscape(vhost)+"/orders.dlq/messages"),
		chromedp.Click(first+` [data-testid="expand-message"]`),
		chromedp.SendKeys(first+` + tr [data-testid="note-form"] input[name="text"]`, "customer c-42 is a test account"),
		chromedp.Submit(first+` + tr [data-testid="note-form"] input[name="text"]`),
		chromedp.WaitVisible(`[data-testid="error-groups"] [data-testid="note-form"]`),
		chromedp.SendKeys(`[data-testid="error-groups"] [data-testid="note-form"] input[name="text"]`, "investigating: INC-2231"),
		chromedp.Submit(`[data-testid="error-groups"] [data-testid="note-form"] input[name="text"]`),
		chromedp.WaitVisible(`[data-testid="error-groups"] [data-testid="note-text"]`),
		chromedp.Click(first+` [data-testid="expand-message"]`),
		chromedp.WaitVisible(first+` + tr [data-testid="note-text"]`)); err != nil {
		t.Fatalf("%v\n%.2000s", err, must(t, ctx, chromedp.Text(`body`)))
	}
	screenshot(t, ctx, "queue-notes")
	if g := must(t, ctx, chromedp.Text(`[data-testid="error-groups"] [data-testid="note-text"]`)); g != "investigating: INC-2231" {
		t.Fatalf("the group's note: %q", g)
	}
	if m := must(t, ctx, chromedp.Text(first+` + tr [data-testid="note-text"]`)); m != "customer c-42 is a test account" ||
		countOf(t, ctx, `tr[data-row-detail] [data-testid="note-text"]`) != 1 {
		t.Fatalf("the message's note: %q", m)
	}
}
