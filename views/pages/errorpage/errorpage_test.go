package errorpage

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/redrive/redrive/views/layout"
	"github.com/redrive/redrive/views/viewtest"
)

func find(doc *goquery.Document, testid string) *goquery.Selection {
	return doc.Find(`[data-testid="` + testid + `"]`)
}

func TestPage(t *testing.T) {
	t.Run("NotFound", func(t *testing.T) {
		doc, _ := viewtest.Render(t, Page(layout.Meta{}, 404, "", "", "req-7f3a"))
		if got := find(doc, "error-status").Text(); got != "404" {
			t.Errorf("status = %q", got)
		}
		if got := find(doc, "error-title").Text(); got != "Not Found" {
			t.Errorf("title = %q", got)
		}
		if got := doc.Find("title").Text(); got != "Not Found · Redrive" {
			t.Errorf("<title> = %q", got)
		}
		if find(doc, "error-message").Text() == "" {
			t.Error("no default message")
		}
		if got := find(doc, "copy-id-value").Text(); got != "req-7f3a" {
			t.Errorf("request id = %q", got)
		}
		if got := find(doc, "error-home").AttrOr("href", ""); got != "/" {
			t.Errorf("home link = %q", got)
		}
		if find(doc, "topbar").Length() != 1 {
			t.Error("not rendered inside the layout")
		}
	})
	t.Run("Custom", func(t *testing.T) {
		doc, html := viewtest.Render(t, Page(layout.Meta{Title: "Oops", AuthNone: true}, 422, "Bad filter", `<script>alert(1)</script>`, ""))
		if strings.Contains(html, "<script>alert") {
			t.Fatal("message not escaped")
		}
		if got := find(doc, "error-message").Text(); got != `<script>alert(1)</script>` {
			t.Errorf("message = %q", got)
		}
		if got := find(doc, "error-title").Text(); got != "Bad filter" {
			t.Errorf("title = %q", got)
		}
		if got := doc.Find("title").Text(); got != "Oops · Redrive" {
			t.Errorf("<title> = %q", got)
		}
		if find(doc, "error-request-id").Length() != 0 {
			t.Error("request id block without an id")
		}
		if find(doc, "banner-auth-none").Length() != 1 {
			t.Error("meta not passed to the layout")
		}
	})
	t.Run("ServerError", func(t *testing.T) {
		doc, _ := viewtest.Render(t, Page(layout.Meta{}, 500, "", "", "r1"))
		if got := find(doc, "error-title").Text(); got != "Internal Server Error" {
			t.Errorf("title = %q", got)
		}
		if got := find(doc, "error-message").Text(); !strings.Contains(got, "request ID") {
			t.Errorf("message = %q", got)
		}
	})
}

func TestFragment(t *testing.T) {
	doc, html := viewtest.Render(t, Fragment(503, "RabbitMQ is unreachable", "management API: connection refused", "req-1"))
	if strings.Contains(strings.ToLower(html), "<html") {
		t.Error("fragment renders a whole document")
	}
	if got := find(doc, "error-fragment").AttrOr("data-status", ""); got != "503" {
		t.Errorf("data-status = %q", got)
	}
	if got := find(doc, "error-panel-title").Text(); got != "RabbitMQ is unreachable" {
		t.Errorf("title = %q", got)
	}
	if got := find(doc, "copy-id-value").Text(); got != "req-1" {
		t.Errorf("request id = %q", got)
	}
	doc, _ = viewtest.Render(t, Fragment(404, "", "", ""))
	if got := find(doc, "error-panel-title").Text(); got != "Not Found" {
		t.Errorf("default title = %q", got)
	}
	if find(doc, "error-request-id").Length() != 0 {
		t.Error("request id block without an id")
	}
}

// A message naming a job or a plan links it (issue 37, item 14); other text stays text.
func TestMessageParts(t *testing.T) {
	parts := messageParts("replay job job_0123456789abcdef is already running; plan plan_fedcba9876543210 waits; job_x is no id")
	var links []string
	var text strings.Builder
	for _, p := range parts {
		if p.Href != "" {
			links = append(links, p.Text+"="+p.Href)
		}
		text.WriteString(p.Text)
	}
	if strings.Join(links, " ") != "job_0123456789abcdef=/replays/job_0123456789abcdef plan_fedcba9876543210=/replays/plans/plan_fedcba9876543210" {
		t.Errorf("links %v", links)
	}
	if text.String() != "replay job job_0123456789abcdef is already running; plan plan_fedcba9876543210 waits; job_x is no id" {
		t.Errorf("text %q", text.String())
	}
}
