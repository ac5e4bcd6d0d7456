package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/cmd/internal/demo"
	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/pgtest"
)

// startConsole runs the real serve() on a free port with cfgText and returns its base URL.
func startConsole(t *testing.T, cfgText string) string {
	t.Helper()
	cfg, err := configs.Parse([]byte(cfgText), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = "127.0.0.1:0"
	return serveInTest(t, cfg, nil)
}

// serveInTest runs serveReloadable (load nil: no reload) in this process until the test ends and
// returns the console's base URL once it listens.
func serveInTest(t *testing.T, cfg *configs.Config, load func() (*configs.Config, error)) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- serveReloadable(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), ready, load) }()
	ended := false // serve returned before it listened: the cleanup has nothing to wait for
	t.Cleanup(func() {
		cancel()
		if ended {
			return
		}
		if err := <-errc; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case addr := <-ready:
		return "http://" + addr
	case err := <-errc:
		ended = true
		t.Fatalf("serve: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("console did not start")
	}
	return ""
}

// demoConsole is a console over a seeded demo outbox in fresh databases.
func demoConsole(t *testing.T) (base, outboxDSN string) {
	t.Helper()
	return demoConsoleWith(t, "")
}

// seededOutbox is a database of the test's own holding the demo outbox (demo.SeedOutbox): its DSN.
func seededOutbox(t *testing.T) string {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := demo.SeedOutbox(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	return dsn
}

// outboxConsole is a console over a store and a seeded demo outbox "orders" of their own, the
// rest of its config (auth, extra sections) from rest: what demoConsole, demoConsoleWith and
// authConsole start.
func outboxConsole(t *testing.T, rest string) (base, outboxDSN string) {
	t.Helper()
	storeDSN := pgtest.NewDatabase(t)
	outboxDSN = seededOutbox(t)
	return startConsole(t, fmt.Sprintf("store: {dsn: %q}\noutboxes: [{name: orders, dsn: %q}]\n%s", storeDSN, outboxDSN, rest)), outboxDSN
}

type response struct {
	status int
	body   string
	header http.Header
}

func do(t *testing.T, client *http.Client, method, u, contentType, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, string(b), resp.Header}
}

func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
	return v
}

func TestOutboxAPI(t *testing.T) {
	base, _ := demoConsole(t)

	t.Run("List", func(t *testing.T) {
		r := do(t, nil, "GET", base+"/api/v1/outboxes", "", "")
		v := decode[apiOutboxes](t, r)
		if r.status != 200 || len(v.Outboxes) != 1 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		o := v.Outboxes[0]
		want := map[string]int64{"READY": 40, "PROCESSING": 12, "SENT": 5000, "FAILED": 15, "DEAD": 25}
		for k, n := range want {
			if o.Counts[k] != n {
				t.Errorf("%s = %d, want %d", k, o.Counts[k], n)
			}
		}
		if o.Stuck != 5 || o.Age < 300 {
			t.Errorf("stuck %d, age %v", o.Stuck, o.Age)
		}
	})

	t.Run("EventsKeyset", func(t *testing.T) {
		seen := map[float64]bool{}
		cursor := ""
		for pages := 0; pages < 10; pages++ {
			r := do(t, nil, "GET", base+"/api/v1/outboxes/orders/events?status=DEAD&limit=10"+cursor, "", "")
			v := decode[struct {
				Events []map[string]any `json:"events"`
				Next   *string          `json:"next_cursor"`
			}](t, r)
			for _, e := range v.Events {
				for _, k := range []string{"id", "event_id", "aggregate_type", "aggregate_id", "event_type", "status",
					"attempts", "available_at", "locked_until", "last_error", "created_at", "sent_at"} {
					if _, ok := e[k]; !ok {
						t.Fatalf("event lacks %q: %v", k, e)
					}
				}
				if e["status"] != "DEAD" {
					t.Fatalf("status filter: %v", e)
				}
				seen[e["id"].(float64)] = true
			}
			if v.Next == nil {
				break
			}
			cursor = "&cursor=" + *v.Next
		}
		if len(seen) != 25 {
			t.Fatalf("paged through %d DEAD events, want 25", len(seen))
		}
	})

	t.Run("StuckFilter", func(t *testing.T) {
		r := do(t, nil, "GET", base+"/api/v1/outboxes/orders/events?stuck=true", "", "")
		v := decode[struct{ Events []map[string]any }](t, r)
		if len(v.Events) != 5 {
			t.Fatalf("%d stuck events, want 5", len(v.Events))
		}
	})

	t.Run("DetailPayload", func(t *testing.T) {
		r := do(t, nil, "GET", base+"/api/v1/outboxes/orders/events?event_type=OrderCancelled&status=DEAD&limit=1", "", "")
		v := decode[struct{ Events []struct{ ID int64 } }](t, r)
		r = do(t, nil, "GET", fmt.Sprintf("%s/api/v1/outboxes/orders/events/%d", base, v.Events[0].ID), "", "")
		d := decode[map[string]any](t, r)
		if _, isObject := d["payload"].(map[string]any); !isObject {
			t.Fatalf("a JSON payload must come back as a JSON value: %s", r.body)
		}
	})

	bad := []struct {
		name, method, path, ctype, body string
		status                          int
		mentions                        string
	}{
		{"UnknownOutbox", "GET", "/api/v1/outboxes/nope/events", "", "", 404, "nope"},
		{"BadStatus", "GET", "/api/v1/outboxes/orders/events?status=LOST", "", "", 400, "status"},
		{"BadLimit", "GET", "/api/v1/outboxes/orders/events?limit=0", "", "", 400, "limit"},
		{"BadCursor", "GET", "/api/v1/outboxes/orders/events?cursor=abc", "", "", 400, "cursor"},
		{"BadStuck", "GET", "/api/v1/outboxes/orders/events?stuck=maybe", "", "", 400, "stuck"},
		{"BadTime", "GET", "/api/v1/outboxes/orders/events?created_from=yesterday", "", "", 400, "created_from"},
		{"BadID", "GET", "/api/v1/outboxes/orders/events/x", "", "", 400, "id"},
		{"MissingEvent", "GET", "/api/v1/outboxes/orders/events/99999999", "", "", 404, "not found"},
		{"NotJSON", "POST", "/api/v1/outboxes/orders/leases/release", "text/plain", `{"all_stuck":true}`, 415, "application/json"},
		{"MalformedJSON", "POST", "/api/v1/outboxes/orders/leases/release", "application/json", `{"ids":[1,`, 400, "JSON"},
		{"UnknownField", "POST", "/api/v1/outboxes/orders/leases/release", "application/json", `{"idz":[1]}`, 400, "idz"},
		{"WrongType", "POST", "/api/v1/outboxes/orders/leases/release", "application/json", `{"ids":["a"]}`, 400, "ids"},
		{"NothingToRelease", "POST", "/api/v1/outboxes/orders/leases/release", "application/json", `{}`, 400, "ids"},
		{"RequeueNoReason", "POST", "/api/v1/outboxes/orders/events/requeue", "application/json", `{"ids":[1]}`, 400, "reason"},
		{"RequeueNoIDs", "POST", "/api/v1/outboxes/orders/events/requeue", "application/json", `{"reason":"x"}`, 400, "ids"},
		{"AuditBadLimit", "GET", "/api/v1/audit?limit=-1", "", "", 400, "limit"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, nil, tc.method, base+tc.path, tc.ctype, tc.body)
			e := decode[struct {
				Error struct{ Code, Message string } `json:"error"`
			}](t, r)
			if r.status != tc.status || !strings.Contains(e.Error.Message, tc.mentions) {
				t.Fatalf("got %d %s; want %d mentioning %q", r.status, r.body, tc.status, tc.mentions)
			}
		})
	}
}

func TestOutboxActionsAreAudited(t *testing.T) {
	base, _ := demoConsole(t)
	r := do(t, nil, "POST", base+"/api/v1/outboxes/orders/leases/release", "application/json", `{"all_stuck":true,"reason":"relay-2 crashed"}`)
	if r.status != 200 || decode[map[string]int64](t, r)["released"] != 5 {
		t.Fatalf("release: %d %s", r.status, r.body)
	}

	r = do(t, nil, "GET", base+"/api/v1/outboxes/orders/events?status=DEAD&limit=3", "", "")
	dead := decode[struct{ Events []struct{ ID int64 } }](t, r).Events
	r = do(t, nil, "GET", base+"/api/v1/outboxes/orders/events?status=SENT&limit=2", "", "")
	sent := decode[struct{ Events []struct{ ID int64 } }](t, r).Events
	body := fmt.Sprintf(`{"ids":[%d,%d,%d,%d,%d],"reason":"schema fixed in v2.3"}`, dead[0].ID, dead[1].ID, dead[2].ID, sent[0].ID, sent[1].ID)
	r = do(t, nil, "POST", base+"/api/v1/outboxes/orders/events/requeue", "application/json", body)
	if r.status != 200 || decode[map[string]int64](t, r)["requeued"] != 3 {
		t.Fatalf("requeue: %d %s (SENT rows must not count)", r.status, r.body)
	}

	r = do(t, nil, "GET", base+"/api/v1/audit?limit=10", "", "")
	entries := decode[struct{ Entries []auditRow }](t, r).Entries
	if len(entries) != 2 {
		t.Fatalf("audit entries: %s", r.body)
	}
	req, rel := entries[0], entries[1] // newest first
	if req.Action != "outbox.requeue" || *req.Count != 3 || req.Reason != "schema fixed in v2.3" || req.Target != "outbox/orders" ||
		req.Outcome != "ok" || req.Actor == "" || time.Since(req.At) > time.Minute {
		t.Errorf("requeue entry: %+v", req)
	}
	if rel.Action != "outbox.release_leases" || *rel.Count != 5 || rel.Detail["all_stuck"] != true {
		t.Errorf("release entry: %+v", rel)
	}
	r = do(t, nil, "GET", base+"/api/v1/audit?action=outbox.requeue", "", "")
	if n := len(decode[struct{ Entries []any }](t, r).Entries); n != 1 {
		t.Errorf("action filter: %d entries", n)
	}
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func TestFormsNeedCSRF(t *testing.T) {
	base, _ := demoConsole(t)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	page := do(t, client, "GET", base+"/outboxes/orders?stuck=true", "", "")
	m := csrfField.FindStringSubmatch(page.body)
	if page.status != 200 || m == nil {
		t.Fatalf("outbox page: %d, csrf field found: %v", page.status, m != nil)
	}
	form := url.Values{"all_stuck": {"1"}}

	r := do(t, client, "POST", base+"/outboxes/orders/release", "application/x-www-form-urlencoded", form.Encode())
	if r.status != http.StatusBadRequest && r.status != http.StatusForbidden {
		t.Fatalf("missing token: %d, want 400/403", r.status)
	}
	form.Set("_csrf", "wrong")
	if r = do(t, client, "POST", base+"/outboxes/orders/release", "application/x-www-form-urlencoded", form.Encode()); r.status != http.StatusForbidden {
		t.Fatalf("wrong token: %d, want 403", r.status)
	}
	form.Set("_csrf", m[1])
	r = do(t, client, "POST", base+"/outboxes/orders/release", "application/x-www-form-urlencoded", form.Encode())
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/outboxes/orders" { // the notice is a flash, not in the URL
		t.Fatalf("with token: %d %v", r.status, r.header)
	}
	after := do(t, client, "GET", base+r.header.Get("Location"), "", "")
	if !strings.Contains(after.body, "Released 5 stuck lease(s)") {
		t.Error("no notice after the release")
	}
}

func TestPagesRender(t *testing.T) {
	base, _ := demoConsole(t)
	for _, p := range []string{"/", "/outboxes", "/outboxes/orders", "/outboxes/orders?status=DEAD", "/outboxes/orders/panel",
		"/outboxes/orders/events/1", "/audit", "/healthz", "/readyz", "/metrics"} {
		if r := do(t, nil, "GET", base+p, "", ""); r.status != 200 {
			t.Errorf("GET %s = %d", p, r.status)
		}
	}
	r := do(t, nil, "GET", base+"/outboxes/nope", "", "")
	if r.status != 404 || !strings.Contains(r.body, "not configured") {
		t.Errorf("unknown outbox page: %d", r.status)
	}
	r = do(t, nil, "GET", base+"/outboxes/orders?status=LOST", "", "")
	if r.status != 400 || !strings.Contains(r.body, "status") {
		t.Errorf("bad filter page: %d", r.status)
	}
	r = do(t, nil, "GET", base+"/", "", "")
	for _, h := range []string{"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "X-Request-Id"} {
		if r.header.Get(h) == "" {
			t.Errorf("missing header %s", h)
		}
	}
	if csp := r.header.Get("Content-Security-Policy"); strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP allows inline: %s", csp)
	}
	if r := do(t, nil, "GET", base+"/metrics", "", ""); !strings.Contains(r.body, "redrive_http_request_duration_seconds") {
		t.Error("metrics lack the HTTP histogram")
	}
}
