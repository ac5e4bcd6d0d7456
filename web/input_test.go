package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/redrive/redrive/configs"
)

// Bad input is a 400 naming the parameter the way the caller wrote it, never a 5xx.
func TestBadInputIs400(t *testing.T) {
	s := startServer(t, authYAML(t, configs.AuthNone, ""))
	cl := anonymousCaller()
	for _, tc := range []struct {
		name, method, path, body string
		want                     string // in the message
		status                   int
	}{
		{"NULInQuery", "GET", "/api/v1/audit?actor=%00", "", "actor: must not contain NUL", 400},
		{"InvalidUTF8InQuery", "GET", "/api/v1/audit?actor=%FF", "", "actor: must be valid UTF-8", 400},
		{"NULInQueryName", "GET", "/api/v1/audit?a%00=1", "", "a query parameter name", 400},
		{"MalformedQuery", "GET", "/api/v1/audit?actor=%zz", "", "query string: malformed", 400},
		{"NULAggregateID", "GET", "/api/v1/outboxes/nope/events?aggregate_id=%00", "", "aggregate_id: must not contain NUL", 400},
		{"NULReplayID", "GET", "/api/v1/replays/%00", "", "replay id: must not contain NUL", 400},
		{"InvalidUTF8ReplayID", "GET", "/api/v1/replays/%C3", "", "replay id: must be valid UTF-8", 400},
		{"NULPlanID", "GET", "/replays/plans/%00", "", "plan id: must not contain NUL", 400},
		{"NULOutboxName", "GET", "/outboxes/%00", "", "outbox name: must not contain NUL", 400},
		{"NULChannelName", "POST", "/api/v1/notifications/channels/%00/test", "", "channel name: must not contain NUL", 400},
		{"NULSilenceID", "DELETE", "/api/v1/silences/%00", "", "silence id: must not contain NUL", 400},
		{"NULArchivedID", "POST", "/api/v1/archive/%00/restore", "", "archived message id: must not contain NUL", 400},
		{"NULSilenceMatcher", "POST", "/api/v1/silences", `{"matchers":{"kind":"kafka_group","group":"a\u0000b"},"duration":"1h"}`,
			"matchers.group: must not contain NUL bytes", 400},
		{"NULQueue", "GET", "/api/v1/rabbitmq/main/queues/%2F/a%00b/messages", "", "queue: must not contain NUL", 400},
		{"EmptyVhost", "GET", "/api/v1/rabbitmq/main/queues//nope", "", "vhost: required", 400},
		{"ArrayBody", "POST", "/api/v1/replays/plan", `[{"source":{}}]`, "the request body must be a JSON object, got an array", 400},
		{"StringBody", "POST", "/api/v1/replays/plan", `"x"`, "the request body must be a JSON object, got a string", 400},
		{"MissingCluster", "POST", "/api/v1/replays/plan", `{"source":{"kind":"kafka","topic":"orders.DLT"}}`, "source.cluster: required", 400},
		{"MissingBroker", "POST", "/api/v1/replays/plan", `{"source":{"kind":"rabbitmq","queue":"q"}}`, "source.broker: required", 400},
		{"MissingOutbox", "POST", "/api/v1/replays/plan", `{"source":{"kind":"outbox","ids":[1]}}`, "source.outbox: required", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctype := ""
			if tc.method == "POST" {
				ctype = "application/json"
			}
			status, _, body := cl.do(t, tc.method, s.url+tc.path, ctype, tc.body)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %s; want %d with %q", status, body, tc.status, tc.want)
			}
			if strings.Contains(body, "handlers.") || strings.Contains(body, "replay.") {
				t.Fatalf("a Go type name in the message: %s", body)
			}
		})
	}
	t.Run("WrongFieldType", func(t *testing.T) {
		status, _, body := cl.do(t, "POST", s.url+"/api/v1/replays/plan", "application/json", `{"source":{"kind":"kafka","cluster":"c","topic":"t","partition":"x"}}`)
		if status != 400 || !strings.Contains(body, "source.partition: must be an integer between") || strings.Contains(body, "int32") {
			t.Fatalf("%d %s", status, body)
		}
	})
}

// The CSRF token is read from the header or the form body, never from the query string.
func TestCSRFNotFromQuery(t *testing.T) {
	s := startServer(t, authYAML(t, configs.AuthBasic, ""))
	otto := signIn(t, s.url, "otto", "pw-otto")
	token := otto.header.Get("X-CSRF-Token")
	cl := otto
	cl.header = http.Header{}
	const form = "/outboxes/nope/release"
	status, _, body := cl.do(t, http.MethodPost, s.url+form+"?_csrf="+url.QueryEscape(token), "application/x-www-form-urlencoded", "")
	if status != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Fatalf("token in the query: %d; want 403", status)
	}
	status, _, _ = cl.do(t, http.MethodPost, s.url+"/api/v1/outboxes/nope/leases/release?_csrf="+url.QueryEscape(token), "application/json", "{}")
	if status != http.StatusForbidden {
		t.Fatalf("token in the query of a JSON call: %d; want 403", status)
	}
	if status, _, body := cl.do(t, http.MethodPost, s.url+form, "application/x-www-form-urlencoded", "_csrf="+url.QueryEscape(token)); status != http.StatusNotFound {
		t.Fatalf("token in the body: %d %s; want the handler's 404", status, body)
	}
}

// Load balancers probe with HEAD: /healthz and /readyz answer it as GET, without a body. A method
// a path has no route for is a 405 naming the allowed ones, not the CSRF check's 403 ("missing
// CSRF token" sent the QA looking for a token on a GET-only probe).
func TestProbesAnswerHEADAndWrongMethodsAre405(t *testing.T) {
	s := startServer(t, authYAML(t, configs.AuthNone, ""))
	cl := anonymousCaller()
	for _, p := range []string{"/healthz", "/readyz"} {
		status, _, body := cl.do(t, http.MethodHead, s.url+p, "", "")
		if status != http.StatusOK || body != "" {
			t.Errorf("HEAD %s: %d %q; want 200 without a body", p, status, body)
		}
		status, h, body := cl.do(t, http.MethodPut, s.url+p, "application/x-www-form-urlencoded", "")
		if status != http.StatusMethodNotAllowed || !strings.Contains(h.Get("Allow"), "GET") || strings.Contains(body, "CSRF") {
			t.Errorf("PUT %s: %d %q, Allow %q; want 405 allowing GET", p, status, body, h.Get("Allow"))
		}
	}
	// A route's own method still meets the CSRF check.
	if status, _, body := cl.do(t, http.MethodPost, s.url+"/outboxes/nope/release", "application/x-www-form-urlencoded", ""); status != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Errorf("a form post without a token: %d %s; want the CSRF 403", status, body)
	}
}
