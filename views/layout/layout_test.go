package layout

import (
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"

	"github.com/redrive/redrive/static"
	"github.com/redrive/redrive/views/viewtest"
)

func renderPage(t *testing.T, m Meta) (*goquery.Document, string) {
	t.Helper()
	body := templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, `<p data-testid="content">hello</p>`)
		return err
	})
	return viewtest.Render(t, templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		return Page(m).Render(templ.WithChildren(ctx, body), w)
	}))
}

func count(doc *goquery.Document, testid string) int {
	return doc.Find(`[data-testid="` + testid + `"]`).Length()
}

func TestPage(t *testing.T) {
	t.Run("Frame", func(t *testing.T) {
		doc, html := renderPage(t, Meta{Title: "Kafka", Section: "kafka", CSRFToken: "tok", Version: "v1.2.3"})
		if !strings.HasPrefix(html, "<!doctype html>") && !strings.HasPrefix(strings.ToLower(html), "<!doctype html>") {
			t.Errorf("no doctype: %.40s", html)
		}
		if got := doc.Find("title").Text(); got != "Kafka · Redrive" {
			t.Errorf("title = %q", got)
		}
		if count(doc, "content") != 1 {
			t.Error("children not rendered")
		}
		if got := doc.Find(`[data-testid="version"]`).Text(); got != "v1.2.3" {
			t.Errorf("version = %q", got)
		}
		if count(doc, "banner-auth-none") != 0 || count(doc, "banner-read-only") != 0 {
			t.Error("banners shown without their flags")
		}
		if count(doc, "breadcrumbs") != 0 {
			t.Error("breadcrumb bar without crumbs")
		}
	})

	t.Run("Nav", func(t *testing.T) {
		doc, _ := renderPage(t, Meta{Section: "rabbitmq"})
		want := map[string]string{"overview": "/", "outboxes": "/outboxes", "kafka": "/kafka", "rabbitmq": "/rabbitmq", "replays": "/replays", "audit": "/audit"}
		for section, href := range want {
			a := doc.Find(`[data-testid="nav-` + section + `"]`)
			if a.Length() != 1 || a.AttrOr("href", "") != href {
				t.Errorf("nav %s: found %d, href %q", section, a.Length(), a.AttrOr("href", ""))
			}
			_, current := a.Attr("aria-current")
			if current != (section == "rabbitmq") {
				t.Errorf("nav %s: aria-current = %v", section, current)
			}
		}
	})

	t.Run("Assets", func(t *testing.T) {
		doc, _ := renderPage(t, Meta{})
		var css, js []string
		doc.Find(`link[rel="stylesheet"]`).Each(func(_ int, s *goquery.Selection) { css = append(css, s.AttrOr("href", "")) })
		doc.Find(`script`).Each(func(_ int, s *goquery.Selection) {
			src, ok := s.Attr("src")
			if !ok || strings.TrimSpace(s.Text()) != "" {
				t.Errorf("inline script: %q", s.Text())
			}
			if _, ok := s.Attr("defer"); !ok {
				t.Errorf("script %s not deferred", src)
			}
			js = append(js, src)
		})
		wantCSS := []string{static.Path("vendor/uPlot.min.css"), static.Path("app.css")}
		wantJS := []string{static.Path("vendor/htmx.min.js"), static.Path("vendor/uPlot.iife.min.js"), static.Path("app.js")}
		if strings.Join(css, " ") != strings.Join(wantCSS, " ") {
			t.Errorf("stylesheets = %v, want %v", css, wantCSS)
		}
		if strings.Join(js, " ") != strings.Join(wantJS, " ") {
			t.Errorf("scripts = %v, want %v", js, wantJS)
		}
		hashed := regexp.MustCompile(`^/static/[\w./-]+\.[0-9a-f]{8}\.(css|js)$`)
		for _, p := range append(css, js...) {
			if !hashed.MatchString(p) {
				t.Errorf("asset %s is not content-hashed", p)
			}
		}
		if doc.Find("[style]").Length() != 0 || doc.Find("style").Length() != 0 {
			t.Error("inline style found; the CSP forbids it")
		}
		if doc.Find("[onclick],[onload],[onsubmit],[onchange],[hx-on]").Length() != 0 {
			t.Error("inline event handler found")
		}
		cfg := doc.Find(`meta[name="htmx-config"]`).AttrOr("content", "")
		var parsed map[string]any
		if err := json.Unmarshal([]byte(cfg), &parsed); err != nil {
			t.Fatalf("htmx-config is not JSON: %v (%s)", err, cfg)
		}
		if parsed["includeIndicatorStyles"] != false || parsed["allowEval"] != false {
			t.Errorf("htmx-config = %s", cfg)
		}
	})

	t.Run("CSRFHeaders", func(t *testing.T) {
		token := `a"b</script><script>alert(1)</script>\`
		doc, html := renderPage(t, Meta{CSRFToken: token})
		if strings.Contains(html, "<script>alert") {
			t.Fatalf("token broke out of the attribute: %s", html)
		}
		raw, ok := doc.Find("body").Attr("hx-headers")
		if !ok {
			t.Fatal("no hx-headers on body")
		}
		var h map[string]string
		if err := json.Unmarshal([]byte(raw), &h); err != nil {
			t.Fatalf("hx-headers is not JSON: %v (%s)", err, raw)
		}
		if len(h) != 1 || h["X-CSRF-Token"] != token {
			t.Errorf("hx-headers = %v", h)
		}

		doc, _ = renderPage(t, Meta{})
		if _, ok := doc.Find("body").Attr("hx-headers"); ok {
			t.Error("hx-headers set without a token")
		}
	})

	t.Run("Banners", func(t *testing.T) {
		doc, _ := renderPage(t, Meta{AuthNone: true, ReadOnly: true})
		auth := doc.Find(`[data-testid="banner-auth-none"]`)
		if got := strings.Join(strings.Fields(auth.Text()), " "); got != "Authentication is off (auth.mode: none) — anyone who can reach this address can act" {
			t.Errorf("auth banner = %q", got)
		}
		if got := doc.Find(`[data-testid="banner-read-only"]`).Text(); !strings.Contains(got, "Read-only mode") {
			t.Errorf("read-only banner = %q", got)
		}
	})

	t.Run("Breadcrumbs", func(t *testing.T) {
		doc, _ := renderPage(t, Meta{Breadcrumbs: []Crumb{
			{Label: "Kafka", Href: "/kafka"},
			{Label: "<main>", Href: "/kafka/main"},
			{Label: "billing-dlt"},
		}})
		items := doc.Find(`[data-testid="breadcrumbs"] li`)
		if items.Length() != 3 {
			t.Fatalf("crumbs = %d", items.Length())
		}
		if got := items.Eq(1).Find("a").AttrOr("href", ""); got != "/kafka/main" {
			t.Errorf("crumb href = %q", got)
		}
		if got := items.Eq(1).Text(); got != "<main>" {
			t.Errorf("crumb text = %q", got)
		}
		last := items.Eq(2)
		if last.Find("a").Length() != 0 || last.Find(`[aria-current="page"]`).Text() != "billing-dlt" {
			t.Errorf("last crumb should be plain text, got %q", last.Text())
		}
	})

	t.Run("EmptyTitle", func(t *testing.T) {
		doc, _ := renderPage(t, Meta{})
		if got := doc.Find("title").Text(); got != "Redrive" {
			t.Errorf("title = %q", got)
		}
	})
}

func TestSignedInUser(t *testing.T) {
	doc, _ := renderPage(t, Meta{User: "otto", Role: "operator", CSRFToken: "tok"})
	if got := doc.Find(`[data-testid="signed-in-user"]`).Text(); got != "otto (operator)" {
		t.Errorf("user = %q", got)
	}
	form := doc.Find(`form[data-testid="logout-form"]`)
	if m, _ := form.Attr("method"); m != "post" || form.AttrOr("action", "") != "/logout" ||
		form.Find(`input[name="_csrf"]`).AttrOr("value", "") != "tok" {
		t.Errorf("logout form: method %q action %q", m, form.AttrOr("action", ""))
	}
	doc, _ = renderPage(t, Meta{AuthNone: true})
	if count(doc, "signed-in-user") != 0 || count(doc, "logout-form") != 0 {
		t.Error("a user and sign-out shown without a user")
	}
}

// The Doctor link is for those the route lets in: admins, or everyone when auth is off.
func TestDoctorLinkForAdminsOnly(t *testing.T) {
	has := func(m Meta) bool {
		for _, it := range navItems(m) {
			if it.section == "doctor" {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		name string
		m    Meta
		want bool
	}{
		{"admin", Meta{User: "ada", Role: "admin", CanAdmin: true, CanOperate: true}, true},
		{"operator", Meta{User: "oz", Role: "operator", CanOperate: true}, false},
		{"viewer", Meta{User: "vi", Role: "viewer"}, false},
		{"auth off", Meta{AuthNone: true}, true},
	} {
		if got := has(tc.m); got != tc.want {
			t.Errorf("%s: doctor link %v, want %v", tc.name, got, tc.want)
		}
	}
}
