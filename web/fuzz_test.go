package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
)

// fuzzServer is the console over a fresh store with nothing else configured, for an admin token:
// every route's handler is reached, and fails on what it is given (400, 404, 409), never 5xx.
func fuzzServer(t testing.TB) http.Handler {
	t.Helper()
	cfg, deps, _ := testDeps(t, authYAML(t, configs.AuthBasic, ""))
	e, err := New(deps, Options{RequestTimeout: 10 * time.Second, Version: "test", Auth: cfg.Auth})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// apiRoutes are the JSON API's routes, in table order.
func apiRoutes() []Route {
	var out []Route
	for _, r := range routes(routeHandlers{}) {
		if strings.HasPrefix(r.Path, "/api/v1/") {
			out = append(out, r)
		}
	}
	return out
}

// FuzzAPIInput sends the API's routes any path parameter, query string and JSON body: the answer
// is never a 5xx (a panic is one, from the recover middleware).
func FuzzAPIInput(f *testing.F) {
	table := apiRoutes()
	index := func(path, method string) uint8 {
		for i, r := range table {
			if r.Path == path && r.Method == method {
				return uint8(i)
			}
		}
		f.Fatalf("no route %s %s", method, path)
		return 0
	}
	audit := index("/api/v1/audit", http.MethodGet)
	events := index("/api/v1/outboxes/:name/events", http.MethodGet)
	job := index("/api/v1/replays/:id", http.MethodGet)
	plan := index("/api/v1/replays/plan", http.MethodPost)
	start := index("/api/v1/replays", http.MethodPost)
	records := index("/api/v1/kafka/:cluster/topics/:topic/records", http.MethodGet)
	messages := index("/api/v1/rabbitmq/:broker/queues/:vhost/:queue/messages", http.MethodGet)
	for _, s := range []struct {
		route              uint8
		param, query, body string
	}{
		{audit, "", "actor=%00", ""},
		{audit, "", "actor=%FF&since=7d&limit=-1", ""},
		{audit, "", "since=9999999d&until=2026-13-40&cursor=%00", ""},
		{audit, "", "limit=99999999999999999999", ""},
		{events, "orders", "aggregate_id=%00&status=DEAD", ""},
		{events, "..", "status=%E2%80%AE&limit=0", ""},
		{job, "\x00", "", ""},
		{job, "job_\xff", "", ""},
		{plan, "", "", `[]`},
		{plan, "", "", `{"source":{"kind":"kafka","topic":"t"}}`},
		{plan, "", "", `{"source":{"kind":"kafka","cluster":"c","topic":"t","to_offset":9223372036854775807}}`},
		{plan, "", "", `{"source":{"kind":"rabbitmq","broker":"","queue":"\u0000"}}`},
		{plan, "", "", `{"source":{"kind":"outbox","outbox":"o","ids":[1e30]}}`},
		{plan, "", "", `{"source":{"kind":"nope"},"filter":{"since":"x"}}`},
		{start, "", "", `{"plan_id":"plan_\u0000","rate_per_second":-1,"reason":"\u202e"}`},
		{start, "", "", `{"plan_id":"` + strings.Repeat("a", 300) + `","force":true}`},
		{records, "orders.DLT", "partition=-1&offset=9223372036854775807", ""},
		{messages, "/", "limit=0&reason=%00", ""},
	} {
		f.Add(s.route, s.param, s.query, s.body)
	}
	h := fuzzServer(f)
	f.Fuzz(func(t *testing.T, route uint8, param, query, body string) {
		r := table[int(route)%len(table)]
		if param == "" {
			param = "nope"
		}
		var path, raw strings.Builder
		for i, seg := range strings.Split(r.Path, "/") {
			if i > 0 {
				path.WriteByte('/')
				raw.WriteByte('/')
			}
			if strings.HasPrefix(seg, ":") {
				path.WriteString(param)
				raw.WriteString(url.PathEscape(param))
				continue
			}
			path.WriteString(seg)
			raw.WriteString(seg)
		}
		req := httptest.NewRequest(r.Method, "/", strings.NewReader(body))
		req.URL = &url.URL{Path: path.String(), RawPath: raw.String(), RawQuery: query}
		req.RequestURI = req.URL.RequestURI()
		req.Header.Set("Authorization", "Bearer tok-admin")
		if r.Method == http.MethodPost {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s?%s %q: %d %s", r.Method, req.URL.EscapedPath(), query, body, rec.Code, rec.Body)
		}
	})
}
