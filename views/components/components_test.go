package components

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"

	"github.com/redrive/redrive/views/viewtest"
)

const xss = `<script>alert(1)</script>`

func one(t *testing.T, doc *goquery.Document, testid string) *goquery.Selection {
	t.Helper()
	s := doc.Find(`[data-testid="` + testid + `"]`)
	if s.Length() != 1 {
		t.Fatalf("want exactly one [data-testid=%q], found %d", testid, s.Length())
	}
	return s
}

func none(t *testing.T, doc *goquery.Document, testid string) {
	t.Helper()
	if n := doc.Find(`[data-testid="` + testid + `"]`).Length(); n != 0 {
		t.Errorf("want no [data-testid=%q], found %d", testid, n)
	}
}

func attr(t *testing.T, s *goquery.Selection, name string) string {
	t.Helper()
	v, ok := s.Attr(name)
	if !ok {
		t.Errorf("missing attribute %q", name)
	}
	return v
}

func text(s *goquery.Selection) string { return strings.TrimSpace(s.Text()) }

func hasClass(t *testing.T, s *goquery.Selection, class string) {
	t.Helper()
	if !s.HasClass(class) {
		c, _ := s.Attr("class")
		t.Errorf("class %q missing from %q", class, c)
	}
}

func TestStatusBadge(t *testing.T) {
	tests := []struct {
		status, class, text string
	}{
		{"READY", "tone-info", "READY"},
		{"PROCESSING", "tone-warn", "PROCESSING"},
		{"SENT", "tone-ok", "SENT"},
		{"FAILED", "tone-alert", "FAILED"},
		{"DEAD", "tone-danger", "DEAD"},
		{"STALL", "tone-alert", "STALL"},
		{"EMPTY", "tone-neutral", "EMPTY"},
		{"whatever", "tone-neutral", "whatever"},
		{"", "tone-neutral", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			doc, _ := viewtest.Render(t, StatusBadge(tt.status))
			b := one(t, doc, "status-badge")
			hasClass(t, b, "badge")
			hasClass(t, b, tt.class)
			if got := text(b); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
		})
	}
}

func TestBadge(t *testing.T) {
	doc, _ := viewtest.Render(t, Badge("quorum", ToneWarn))
	b := one(t, doc, "badge")
	hasClass(t, b, "tone-warn")
	if text(b) != "quorum" {
		t.Errorf("text = %q", text(b))
	}
}

func TestRelTime(t *testing.T) {
	t.Run("Past", func(t *testing.T) {
		at := time.Now().Add(-5*time.Minute - 3*time.Second)
		doc, _ := viewtest.Render(t, RelTime(at))
		el := one(t, doc, "rel-time")
		if goquery.NodeName(el) != "time" {
			t.Errorf("element = %s, want time", goquery.NodeName(el))
		}
		if got, want := attr(t, el, "datetime"), at.UTC().Format(time.RFC3339); got != want {
			t.Errorf("datetime = %q, want %q", got, want)
		}
		if got, want := attr(t, el, "title"), FormatAbs(at); got != want {
			t.Errorf("title = %q, want %q", got, want)
		}
		attr(t, el, "data-rel")
		if got := text(el); got != "5 min ago" {
			t.Errorf("text = %q, want server-rendered %q", got, "5 min ago")
		}
	})
	t.Run("Future", func(t *testing.T) {
		doc, _ := viewtest.Render(t, RelTime(time.Now().Add(4*time.Minute+30*time.Second)))
		if got := text(one(t, doc, "rel-time")); got != "in 4 min" {
			t.Errorf("text = %q", got)
		}
	})
	t.Run("Zero", func(t *testing.T) {
		doc, _ := viewtest.Render(t, RelTime(time.Time{}))
		none(t, doc, "rel-time")
		if got := text(one(t, doc, "rel-time-none")); got != "—" {
			t.Errorf("text = %q", got)
		}
	})
	t.Run("PtrNil", func(t *testing.T) {
		doc, _ := viewtest.Render(t, RelTimePtr(nil))
		none(t, doc, "rel-time")
		one(t, doc, "rel-time-none")
	})
	t.Run("Ptr", func(t *testing.T) {
		at := time.Date(2026, 11, 30, 6, 41, 35, 0, time.UTC)
		doc, _ := viewtest.Render(t, RelTimePtr(&at))
		el := one(t, doc, "rel-time")
		if got := attr(t, el, "title"); got != "2026-11-30 06:41:35 UTC" {
			t.Errorf("title = %q", got)
		}
		if got := attr(t, el, "datetime"); got != "2026-11-30T06:41:35Z" {
			t.Errorf("datetime = %q", got)
		}
	})
}

func TestAgeAndNum(t *testing.T) {
	doc, _ := viewtest.Render(t, Age(3*time.Minute+12*time.Second))
	if got := text(one(t, doc, "age")); got != "3 min 12 s" {
		t.Errorf("Age text = %q", got)
	}
	doc, _ = viewtest.Render(t, Num(40000))
	if got := text(one(t, doc, "num")); got != "40,000" {
		t.Errorf("Num text = %q", got)
	}
}

func TestCopyID(t *testing.T) {
	id := "evt_01JDX3V7K9"
	doc, _ := viewtest.Render(t, CopyID(id))
	one(t, doc, "copy-id")
	if got := text(one(t, doc, "copy-id-value")); got != id {
		t.Errorf("value = %q", got)
	}
	btn := one(t, doc, "copy-button")
	if got := attr(t, btn, "data-copy"); got != id {
		t.Errorf("data-copy = %q", got)
	}
	if got := attr(t, btn, "type"); got != "button" {
		t.Errorf("type = %q, want button (must not submit forms)", got)
	}

	doc, _ = viewtest.Render(t, CopyID(""))
	none(t, doc, "copy-id")
	one(t, doc, "copy-id-none")
}

// A job or plan id links to its page and has the copy button of any id beside the link.
func TestCopyLink(t *testing.T) {
	doc, _ := viewtest.Render(t, CopyLink("job_0bf16fde69e0ce37", "/replays/job_0bf16fde69e0ce37"))
	link := one(t, doc, "copy-id-value")
	if goquery.NodeName(link) != "a" || attr(t, link, "href") != "/replays/job_0bf16fde69e0ce37" || text(link) != "job_0bf16fde69e0ce37" {
		t.Errorf("link %s %q %q", goquery.NodeName(link), attr(t, link, "href"), text(link))
	}
	if got := attr(t, one(t, doc, "copy-button"), "data-copy"); got != "job_0bf16fde69e0ce37" {
		t.Errorf("data-copy = %q", got)
	}
}

func TestEmpty(t *testing.T) {
	doc, _ := viewtest.Render(t, Empty("No dead letters", "Nothing has failed on this topic. New failures show up here within 30 s."))
	one(t, doc, "empty")
	if got := text(one(t, doc, "empty-title")); got != "No dead letters" {
		t.Errorf("title = %q", got)
	}
	one(t, doc, "empty-hint")

	doc, _ = viewtest.Render(t, Empty("Nothing", ""))
	none(t, doc, "empty-hint")

	withAction := templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		return Empty("No outboxes configured", "Add one under outboxes: in the config file.").Render(
			templ.WithChildren(ctx, templ.Raw(`<a class="btn" data-testid="action" href="/docs">Docs</a>`)), w)
	})
	doc, _ = viewtest.Render(t, withAction)
	one(t, doc, "action")
}

func TestErrorPanel(t *testing.T) {
	doc, _ := viewtest.Render(t, ErrorPanel("Kafka cluster main is unreachable", "dial tcp 10.0.0.7:9092: connection refused"))
	p := one(t, doc, "error-panel")
	if got := attr(t, p, "role"); got != "alert" {
		t.Errorf("role = %q", got)
	}
	if got := text(one(t, doc, "error-panel-title")); got != "Kafka cluster main is unreachable" {
		t.Errorf("title = %q", got)
	}
	if got := text(one(t, doc, "error-panel-message")); !strings.Contains(got, "connection refused") {
		t.Errorf("message = %q", got)
	}
}

func TestCSRFField(t *testing.T) {
	doc, _ := viewtest.Render(t, CSRFField(`tok"en`))
	f := one(t, doc, "csrf-field")
	if attr(t, f, "type") != "hidden" || attr(t, f, "name") != "_csrf" || attr(t, f, "value") != `tok"en` {
		t.Errorf("unexpected field: %v", f.Nodes[0].Attr)
	}
}

func TestPre(t *testing.T) {
	payload := "{\n  \"orderId\": 42\n}"
	doc, _ := viewtest.Render(t, Pre(payload))
	if got := one(t, doc, "pre").Text(); got != payload {
		t.Errorf("text = %q, want %q", got, payload)
	}
	btn := one(t, doc, "copy-button")
	if got := attr(t, btn, "data-copy-target"); got != "pre" {
		t.Errorf("data-copy-target = %q", got)
	}
}

func TestPager(t *testing.T) {
	t.Run("Next", func(t *testing.T) {
		doc, _ := viewtest.Render(t, Pager("/kafka/main/dlt?after=41&limit=50"))
		a := one(t, doc, "pager-next")
		if got := attr(t, a, "href"); got != "/kafka/main/dlt?after=41&limit=50" {
			t.Errorf("href = %q", got)
		}
		none(t, doc, "pager-end")
	})
	t.Run("End", func(t *testing.T) {
		doc, _ := viewtest.Render(t, Pager(""))
		none(t, doc, "pager-next")
		one(t, doc, "pager-end")
	})
	t.Run("UnsafeScheme", func(t *testing.T) {
		doc, _ := viewtest.Render(t, Pager("javascript:alert(1)"))
		if got := attr(t, one(t, doc, "pager-next"), "href"); strings.HasPrefix(got, "javascript:") {
			t.Errorf("href = %q, want it neutralised", got)
		}
	})
}

func TestStatCard(t *testing.T) {
	doc, _ := viewtest.Render(t, StatCard("DEAD events", "1,204", "across 3 outboxes", ToneDanger))
	c := one(t, doc, "stat-card")
	hasClass(t, c, "tone-danger")
	if text(one(t, doc, "stat-label")) != "DEAD events" || text(one(t, doc, "stat-value")) != "1,204" || text(one(t, doc, "stat-hint")) != "across 3 outboxes" {
		t.Errorf("unexpected card text %q", text(c))
	}
	doc, _ = viewtest.Render(t, StatCard("Lag", "0", "", ""))
	none(t, doc, "stat-hint")
	hasClass(t, one(t, doc, "stat-card"), "tone-neutral")
}

func TestPageHeader(t *testing.T) {
	doc, _ := viewtest.Render(t, PageHeader("Outboxes", "3 databases"))
	if got := text(one(t, doc, "page-title")); got != "Outboxes" {
		t.Errorf("title = %q", got)
	}
}

func TestProgress(t *testing.T) {
	tests := []struct {
		name        string
		done, total int64
		value, max  string
		label       string
		complete    bool
	}{
		{"Part", 1234, 5000, "1234", "5000", "1,234 / 5,000 · 24%", false},
		{"Done", 10, 10, "10", "10", "10 / 10 · 100%", true},
		{"Over", 12, 10, "10", "10", "12 / 10 · 100%", true},
		{"ZeroTotal", 0, 0, "0", "1", "0 / 0 · 0%", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, _ := viewtest.Render(t, Progress(tt.done, tt.total))
			p := one(t, doc, "progress")
			bar := p.Find("progress")
			if attr(t, bar, "value") != tt.value || attr(t, bar, "max") != tt.max {
				t.Errorf("progress value/max = %s/%s, want %s/%s", bar.AttrOr("value", ""), bar.AttrOr("max", ""), tt.value, tt.max)
			}
			if got := text(one(t, doc, "progress-label")); got != tt.label {
				t.Errorf("label = %q, want %q", got, tt.label)
			}
			if p.HasClass("is-complete") != tt.complete {
				t.Errorf("is-complete = %v, want %v", p.HasClass("is-complete"), tt.complete)
			}
		})
	}
}

func TestChart(t *testing.T) {
	doc, _ := viewtest.Render(t, Chart(ChartProps{
		Src:            "/kafka/main/groups/billing/lag.json",
		Series:         []string{"total_lag", "max_lag"},
		Labels:         []string{"Total lag", "Max partition lag"},
		Height:         160,
		RefreshSeconds: 30,
	}))
	c := one(t, doc, "chart")
	attr(t, c, "data-chart")
	for name, want := range map[string]string{
		"data-src":     "/kafka/main/groups/billing/lag.json",
		"data-series":  "total_lag,max_lag",
		"data-labels":  "Total lag,Max partition lag",
		"data-height":  "160",
		"data-refresh": "30",
	} {
		if got := attr(t, c, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	doc, _ = viewtest.Render(t, Chart(ChartProps{Src: "/x.json", Series: []string{"depth"}}))
	c = one(t, doc, "chart")
	for _, name := range []string{"data-labels", "data-height", "data-refresh", "data-empty", "data-sparkline", "role"} {
		if _, ok := c.Attr(name); ok {
			t.Errorf("unexpected %s", name)
		}
	}

	t.Run("Sparkline", func(t *testing.T) {
		doc, _ := viewtest.Render(t, Chart(ChartProps{Src: "/x.json", Series: []string{"total_lag", "depth"}, Labels: []string{"lag, last hour"}, Height: 48, Sparkline: true}))
		c := one(t, doc, "chart")
		attr(t, c, "data-sparkline")
		if got := attr(t, c, "class"); got != "chart chart-spark" {
			t.Errorf("class = %q, want a sparkline's, not chart-sm", got)
		}
		if got := attr(t, c, "role"); got != "img" {
			t.Errorf("role = %q", got)
		}
		// A sparkline has no legend: its labels name it, a missing label by its key.
		if got := attr(t, c, "aria-label"); got != "lag, last hour, depth" {
			t.Errorf("aria-label = %q", got)
		}
	})
}

func TestFilterAndCheckAll(t *testing.T) {
	doc, _ := viewtest.Render(t, Filter("groups", "Filter groups…"))
	if got := attr(t, one(t, doc, "filter"), "data-filter-for"); got != "groups" {
		t.Errorf("data-filter-for = %q", got)
	}
	doc, _ = viewtest.Render(t, CheckAll("id"))
	if got := attr(t, one(t, doc, "check-all"), "data-check-all"); got != "id" {
		t.Errorf("data-check-all = %q", got)
	}
}

// TestEscaping proves that message content reaches the page as text: every
// component that shows caller-supplied text renders <script> escaped.
func TestEscaping(t *testing.T) {
	tests := []struct {
		name   string
		c      templ.Component
		testid string
	}{
		{"StatusBadge", StatusBadge(xss), "status-badge"},
		{"Badge", Badge(xss, ToneInfo), "badge"},
		{"CopyID", CopyID(xss), "copy-id-value"},
		{"CopyLink", CopyLink(xss, "/x"), "copy-id-value"},
		{"EmptyTitle", Empty(xss, "hint"), "empty-title"},
		{"EmptyHint", Empty("t", xss), "empty-hint"},
		{"ErrorPanelTitle", ErrorPanel(xss, "m"), "error-panel-title"},
		{"ErrorPanelMessage", ErrorPanel("t", xss), "error-panel-message"},
		{"Pre", Pre(xss), "pre"},
		{"StatCardValue", StatCard("l", xss, "", ""), "stat-value"},
		{"StatCardHint", StatCard("l", "v", xss, ""), "stat-hint"},
		{"PageHeader", PageHeader(xss, ""), "page-title"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, html := viewtest.Render(t, tt.c)
			if strings.Contains(html, "<script") {
				t.Fatalf("raw <script> in output: %s", html)
			}
			if !strings.Contains(html, "&lt;script&gt;") {
				t.Errorf("escaped text missing from output: %s", html)
			}
			if doc.Find("script").Length() != 0 {
				t.Error("parsed document contains a script element")
			}
			if got := text(one(t, doc, tt.testid)); got != xss {
				t.Errorf("visible text = %q, want the literal %q", got, xss)
			}
		})
	}
	t.Run("Attributes", func(t *testing.T) {
		for _, c := range []templ.Component{CopyID(`"><script>alert(1)</script>`), CopyLink(`"><script>alert(1)</script>`, "/x"), CSRFField(`"><script>alert(1)</script>`), Filter(`"><script>`, `"><script>`)} {
			doc, html := viewtest.Render(t, c)
			if strings.Contains(html, "<script") || doc.Find("script").Length() != 0 {
				t.Errorf("attribute value broke out: %s", html)
			}
		}
	})
}

func TestScanPanel(t *testing.T) {
	props := ScanProps{URL: "/api/v1/x?cel=a", API: "records API", Attrs: templ.Attributes{"data-scan-record": "/kafka/main/topics/t"},
		Filter: `value.id == "` + xss + `"`, CSRFToken: "tok",
		PlanFields: []Field{{Name: "kind", Value: "kafka"}, {Name: "topic", Value: "t"}},
		Columns:    []Column{{Label: "Offset", Num: true}, {Label: "Key"}}}
	t.Run("Viewer", func(t *testing.T) {
		doc, html := viewtest.Render(t, ScanPanel(props))
		panel := doc.Find("[data-scan]")
		if attr(t, panel, "data-scan") != props.URL || attr(t, panel, "data-scan-record") != "/kafka/main/topics/t" || attr(t, panel, "data-scan-limit") != "500" {
			t.Errorf("panel attributes: %s", html)
		}
		if got := text(one(t, doc, "scan-status")); !strings.Contains(got, props.Filter) || !strings.Contains(got, "the records API answers the same scan") {
			t.Errorf("status %q", got)
		}
		if strings.Contains(html, xss) {
			t.Error("the filter is not escaped")
		}
		none(t, doc, "plan-matches")
		none(t, doc, "export-matches")
		heads := one(t, doc, "scan-table").Find("th")
		if heads.Length() != 2 || text(heads.Eq(0)) != "Offset" || !heads.Eq(0).HasClass("num") || text(heads.Eq(1)) != "Key" || heads.Eq(1).HasClass("num") {
			t.Errorf("columns: %s", html)
		}
	})
	t.Run("Operator", func(t *testing.T) {
		p := props
		p.CanOperate, p.ExportURL = true, "/export?x"
		doc, html := viewtest.Render(t, ScanPanel(p))
		if attr(t, one(t, doc, "export-matches"), "href") != "/export?x" {
			t.Errorf("export: %s", html)
		}
		form := one(t, doc, "plan-matches")
		var fields []string
		form.Find("input[type=hidden]").Each(func(_ int, s *goquery.Selection) {
			fields = append(fields, attr(t, s, "name")+"="+attr(t, s, "value"))
		})
		want := []string{"_csrf=tok", "kind=kafka", "topic=t", "cel=" + p.Filter}
		if strings.Join(fields, "&") != strings.Join(want, "&") {
			t.Errorf("plan fields %q, want %q", fields, want)
		}
	})
}
