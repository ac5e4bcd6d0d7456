package components_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a-h/templ"

	"github.com/redrive/redrive/static"
	c "github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
	"github.com/redrive/redrive/views/pages/errorpage"
)

// The gallery page shows the layout and every component as a page author
// would use them; gallery_test.go screenshots it and browser_test.go drives
// app.js on it.

// csp is the console's own, so that what the browser tests see blocked is what the console blocks.
const csp = static.ContentSecurityPolicy

func galleryMeta() layout.Meta {
	return layout.Meta{
		Title:     "Kafka · main",
		Section:   "kafka",
		CSRFToken: "demo-csrf-token",
		AuthNone:  true,
		Version:   "v0.1.0-dev",
		Breadcrumbs: []layout.Crumb{
			{Label: "Kafka", Href: "/kafka"},
			{Label: "main", Href: "/kafka/main"},
			{Label: "Consumer groups"},
		},
	}
}

type row struct {
	group, topic, status string
	lag                  int64
	members              int
	seen                 time.Duration
}

func galleryBody(now time.Time) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		r := func(cs ...templ.Component) error {
			for _, x := range cs {
				if err := x.Render(ctx, w); err != nil {
					return err
				}
			}
			return nil
		}
		s := func(html string) templ.Component { return templ.Raw(html) }

		rows := []row{
			{"billing-settlement", "payments.captured", "STALL", 48211, 3, 40 * time.Second},
			{"orders-projector", "orders.events", "OK", 12, 6, 3 * time.Second},
			{"inventory-sync", "inventory.changed", "WARN", 3904, 2, 95 * time.Second},
			{"email-notifier", "notifications.email", "STOP", 120443, 0, 26 * time.Minute},
			{"search-indexer", "catalog.updated", "OK", 0, 4, 8 * time.Second},
			{"fraud-scoring", "payments.authorized", "EMPTY", 931, 0, 3 * time.Hour},
			{"audit-writer", "audit.log", "DEAD", 7, 0, 49 * time.Hour},
		}

		header := templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
			return c.PageHeader("Consumer groups", "Cluster main · 3 brokers · refreshed every 30 s").Render(
				templ.WithChildren(ctx, s(`<a class="btn" href="/kafka/main/dlt">Dead-letter topics</a><button type="button" class="btn btn-primary">Refresh</button>`)), w)
		})
		if err := r(header); err != nil {
			return err
		}

		if err := r(s(`<div class="stats">`),
			c.StatCard("Total lag", c.FormatNum(173508), "↑ 12,044 in 5 min", c.ToneWarn),
			c.StatCard("Groups stalled", "2", "billing-settlement, email-notifier", c.ToneDanger),
			c.StatCard("DLT messages (1 h)", c.FormatNum(1204), "across 4 topics", c.ToneAlert),
			c.StatCard("Stuck leases", "0", "PROCESSING past locked_until", c.ToneOK),
			c.StatCard("Outbox READY", c.FormatNum(38), "oldest 2 min 10 s", ""),
			s(`</div>`)); err != nil {
			return err
		}

		// Table panel with toolbar.
		if err := r(s(`<section class="panel"><div class="panel-header"><h2>Groups</h2><span class="muted">7 groups</span><div class="panel-actions"><span class="htmx-indicator spinner" aria-hidden="true"></span></div></div>`),
			s(`<form class="toolbar" id="groups-form" method="post" action="/replays" data-confirm="Replay the selected groups' dead letters?">`),
			c.Filter("groups", "Filter groups, topics, states…"),
			s(`<span class="count"><span data-filter-count-for="groups">7</span> shown</span><span class="spacer"></span><span class="count"><span data-check-count="group">0</span> selected</span>`),
			c.CSRFField("demo-csrf-token"),
			s(`<button class="btn btn-sm" type="submit" data-requires-checked="group" disabled>Replay selected</button><button class="btn btn-sm btn-danger" type="submit" data-requires-checked="group" data-confirm="Reset offsets of the selected groups to latest? Messages in between are skipped." disabled>Reset offsets</button>`),
			s(`</form><table class="table" id="groups" data-sortable><thead><tr><th class="col-check" data-nosort>`), c.CheckAll("group"),
			s(`</th><th>Group</th><th>Topic</th><th>State</th><th class="num">Lag</th><th class="num">Members</th><th>Last commit</th><th>Coordinator id</th><th class="actions" data-nosort></th></tr></thead><tbody>`)); err != nil {
			return err
		}
		for _, x := range rows {
			at := now.Add(-x.seen)
			if err := r(s(`<tr><td class="col-check"><input type="checkbox" name="group" form="groups-form" value="`+x.group+`"></td><td><a href="#">`+x.group+`</a></td><td class="mono">`+x.topic+`</td><td>`),
				c.StatusBadge(x.status), s(fmt.Sprintf(`</td><td class="num" data-sort="%d">`, x.lag)), c.Num(x.lag),
				s(fmt.Sprintf(`</td><td class="num">%d</td><td data-sort="%d">`, x.members, at.Unix())), c.RelTime(at),
				s(`</td><td>`), c.CopyID("consumer-"+x.group+"-7f3a9c2e-1b4d"), s(`</td><td class="actions"><a class="btn btn-sm btn-ghost" href="#">Details</a></td></tr>`)); err != nil {
				return err
			}
		}
		if err := r(s(`</tbody></table>`), c.Pager("/kafka/main/groups?after=audit-writer"), s(`</section>`)); err != nil {
			return err
		}

		// Chart + error panel.
		if err := r(s(`<div class="grid-2"><section class="panel"><div class="panel-header"><h2>Lag, last hour</h2><span class="muted">billing-settlement</span></div><div class="panel-body">`),
			c.Chart(c.ChartProps{Src: "/lag.json", Series: []string{"total_lag", "max_partition_lag"}, Labels: []string{"Total lag", "Max partition lag"}, RefreshSeconds: 30}),
			s(`</div></section><section class="panel"><div class="panel-header"><h2>RabbitMQ · eu-1</h2></div><div class="panel-body stack">`)); err != nil {
			return err
		}
		retry := templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
			return c.ErrorPanel("RabbitMQ cluster eu-1 is unreachable", "GET http://rabbit-eu-1:15672/api/queues: dial tcp 10.0.4.17:15672: connect: connection refused").Render(
				templ.WithChildren(ctx, s(`<button type="button" class="btn btn-sm">Retry</button><span class="muted small">Other panels are unaffected. Last good data: 2 min ago.</span>`)), w)
		})
		if err := r(retry, c.Chart(c.ChartProps{Src: "/broken.json", Series: []string{"depth"}, Height: 140}),
			s(`<div class="callout tone-warn"><strong>Quorum queue with a delivery limit.</strong> Browsing would count as a delivery, so the console refuses to peek at <code>orders.dlq</code>.</div>`),
			s(`</div></section></div>`)); err != nil {
			return err
		}

		// Dead letter detail.
		payload := `{"messageId":"01JDX3V7K9QY3ZJ4M1T5W8E2HC","eventType":"PaymentCaptured","aggregateId":"order-884213","occurredAt":"2026-11-30T06:39:58Z","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","schemaVersion":3,"payload":{"amount":"129.90","currency":"EUR","note":"<script>alert(1)</script>"}}`
		var pretty bytes.Buffer
		_ = json.Indent(&pretty, []byte(payload), "", "  ")
		first := now.Add(-2*time.Hour - 14*time.Minute)
		if err := r(s(`<div class="grid-2-1"><section class="panel"><div class="panel-header"><h2>Dead letter</h2>`), c.StatusBadge("DEAD"),
			s(`<div class="panel-actions"><form method="post" action="/replay" data-confirm="Replay this message to payments.captured?">`), c.CSRFField("t"),
			s(`<button class="btn btn-sm btn-primary" type="submit">Replay</button></form><button class="btn btn-sm btn-danger-outline" type="button" data-confirm="Discard?">Discard</button></div></div><div class="panel-body stack"><dl class="kv"><dt>Message id</dt><dd>`),
			c.CopyID("01JDX3V7K9QY3ZJ4M1T5W8E2HC"), s(`</dd><dt>Original topic</dt><dd class="mono">payments.captured [2] @ 1884213</dd><dt>Error</dt><dd><span class="mono">java.lang.IllegalStateException</span>: Settlement account missing for merchant 4411</dd><dt>First failed</dt><dd>`),
			c.RelTime(first), s(`</dd><dt>Retries</dt><dd>`), c.Num(5), s(`</dd><dt>Time in DLT</dt><dd>`), c.Age(2*time.Hour+14*time.Minute+9*time.Second), s(`</dd><dt>Lease until</dt><dd>`), c.RelTime(now.Add(4*time.Minute+20*time.Second)), s(`</dd><dt>Sent at</dt><dd>`), c.RelTimePtr(nil), s(`</dd></dl>`),
			c.Pre(pretty.String()), s(`</div></section>`)); err != nil {
			return err
		}
		if err := r(s(`<section class="panel"><div class="panel-header"><h2>Replay #42</h2>`), c.StatusBadge("RUNNING"), s(`</div><div class="panel-body stack">`),
			c.Progress(1234, 5000), c.Progress(40, 40),
			s(`<div class="swatches">`), c.StatusBadge("READY"), c.StatusBadge("PROCESSING"), c.StatusBadge("SENT"), c.StatusBadge("FAILED"), c.StatusBadge("DEAD"), c.StatusBadge("OK"), c.StatusBadge("WARN"), c.StatusBadge("STALL"), c.StatusBadge("STOP"), c.StatusBadge("EMPTY"), c.StatusBadge("SKIPPED"), c.Badge("quorum", c.ToneInfo), s(`</div>`),
			s(`<form class="form" method="post" action="/replays"><div class="field"><label for="reason">Reason (required to force)</label><input id="reason" name="reason" type="text" placeholder="INC-2291: consumer fixed in 4.18.2"><div class="field-hint">Written to the audit log with your name.</div></div><div class="field has-error"><label for="limit">Limit</label><input id="limit" name="limit" value="-3"><div class="field-error">Limit must be between 1 and 10,000.</div></div><label class="col-check"><input type="checkbox" name="force"> Force already-processed messages</label><div class="form-actions"><button class="btn btn-primary" type="submit">Start replay</button><a class="btn btn-ghost" href="#">Cancel</a></div></form>`),
			s(`</div></section></div>`)); err != nil {
			return err
		}

		empty := templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
			return c.Empty("No dead letters on payments.captured.dlt", "Nothing has failed here in the retention window. New failures appear within 30 s; check the consumer group's lag if you expected some.").Render(
				templ.WithChildren(ctx, s(`<a class="btn btn-sm" href="/kafka/main/dlt">All dead-letter topics</a>`)), w)
		})
		return r(s(`<div class="grid-2"><section class="panel"><div class="panel-header"><h2>payments.captured.dlt</h2></div><div class="panel-body">`), empty,
			s(`</div></section><section class="panel"><div class="panel-header"><h2>htmx error fragment</h2></div><div class="panel-body">`),
			errorpage.Fragment(503, "Outbox orders-db is unavailable", "The database did not answer within 5 s.", "req-01JDX4A9"), s(`</div></section></div>`),
			s(`<section class="panel" data-testid="htmx-panel"><div class="toolbar"><button type="button" class="btn btn-sm" hx-get="/fragment" hx-target="#swap" data-testid="htmx-load">Load fragment</button>`+
				`<button type="button" class="btn btn-sm btn-danger" hx-post="/echo" hx-target="#swap" data-confirm="Release 3 stuck leases?" data-testid="htmx-confirm">Release leases</button>`+
				`<button type="button" class="btn btn-sm" hx-get="/fail" hx-target="#swap" data-testid="htmx-fail">Load failing panel</button>`+
				`<form class="row" data-confirm="Form-level question?"><button type="submit" class="btn btn-sm" hx-post="/echo" hx-target="#swap" data-confirm="Button-level question?" data-testid="htmx-submit-confirm">Submit via htmx</button></form><span class="htmx-indicator spinner"></span></div>`+
				`<div class="panel-body" id="swap" data-testid="swap"><p class="muted">htmx swaps land here.</p></div></section>`))
	})
}

func points(now time.Time) []byte {
	type pt map[string]any
	var ps []pt
	for i := 60; i >= 0; i-- {
		v := 40000 + (60-i)*150 + (i%7)*900
		ps = append(ps, pt{"at": now.Add(-time.Duration(i) * time.Minute).UTC().Format(time.RFC3339), "total_lag": v, "max_partition_lag": v / 3})
	}
	b, _ := json.Marshal(map[string]any{"points": ps})
	return b
}

func renderTo(t *testing.T, page templ.Component, body templ.Component) []byte {
	t.Helper()
	var buf bytes.Buffer
	ctx := templ.WithChildren(context.Background(), body)
	if err := page.Render(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gallery is the gallery page served with the production CSP.
type gallery struct {
	srv   *httptest.Server
	page  []byte
	posts func() int // number of POST /echo requests seen
}

func newGallery(t *testing.T) gallery {
	t.Helper()
	now := time.Now()
	page := renderTo(t, layout.Page(galleryMeta()), galleryBody(now))
	var errBuf bytes.Buffer
	if err := errorpage.Page(layout.Meta{Version: "v0.1.0-dev"}, 404, "", "", "req-01JDX4A9Q2").Render(context.Background(), &errBuf); err != nil {
		t.Fatal(err)
	}
	posts := make(chan struct{}, 100)

	html := func(w http.ResponseWriter, status int, b []byte) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		w.Write(b)
	}
	fragment := func(r *http.Request) []byte {
		var buf bytes.Buffer
		at := time.Now().Add(-5*time.Minute - 10*time.Second).UTC().Format(time.RFC3339)
		fmt.Fprintf(&buf, `<p>Swapped at the server. CSRF header: <code data-testid="echo-csrf">%s</code></p>`, templ.EscapeString(r.Header.Get("X-CSRF-Token")))
		fmt.Fprintf(&buf, `<p>Stale server text refreshed by app.js: <time datetime="%s" data-rel data-testid="swapped-time">stale</time></p>`, at)
		if err := c.Chart(c.ChartProps{Src: "/lag.json", Series: []string{"total_lag"}, Height: 120}).Render(context.Background(), &buf); err != nil {
			t.Error(err)
		}
		return buf.Bytes()
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/lag.json", serveJSON(points(now)))
	mux.HandleFunc("/broken.json", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("GET /fragment", func(w http.ResponseWriter, r *http.Request) { html(w, http.StatusOK, fragment(r)) })
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		posts <- struct{}{}
		html(w, http.StatusOK, fragment(r))
	})
	mux.HandleFunc("GET /fail", func(w http.ResponseWriter, _ *http.Request) {
		var buf bytes.Buffer
		if err := errorpage.Fragment(http.StatusServiceUnavailable, "Kafka cluster main is unreachable", "kadm: describe groups: i/o timeout", "req-9").Render(context.Background(), &buf); err != nil {
			t.Error(err)
		}
		html(w, http.StatusServiceUnavailable, buf.Bytes())
	})
	mux.HandleFunc("/error", func(w http.ResponseWriter, _ *http.Request) { html(w, http.StatusNotFound, errBuf.Bytes()) })
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { html(w, http.StatusOK, page) })

	return gallery{srv: serveUnderCSP(t, mux), page: page, posts: func() int { return len(posts) }}
}

// serveUnderCSP serves mux, and the static assets under /static/, with the production CSP;
// closed when t ends.
func serveUnderCSP(t *testing.T, mux *http.ServeMux) *httptest.Server {
	t.Helper()
	mux.Handle("/static/", static.Handler())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// serveJSON answers with b as JSON.
func serveJSON(b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
}
