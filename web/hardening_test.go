package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/redrive/redrive/configs"
)

// hostCaller sends requests to s with another Host header, the way a browser on a page whose
// domain was rebound to the console's address does.
func hostCaller(host string, header http.Header) caller {
	cl := anonymousCaller()
	cl.header = header
	cl.client.Transport = hostTransport(host)
	return cl
}

type hostTransport string

func (h hostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = string(h)
	return http.DefaultTransport.RoundTrip(r)
}

func TestHostChecking(t *testing.T) {
	t.Run("ModeNone", func(t *testing.T) {
		s := startServer(t, authYAML(t, configs.AuthNone, ""))
		u, _ := url.Parse(s.url)
		port := u.Port()
		for _, tc := range []struct {
			host string
			ok   bool
		}{
			{"127.0.0.1:" + port, true},
			{"localhost:" + port, true},
			{"LOCALHOST:" + port, true},
			{"[::1]:" + port, true},
			{"rebind.attacker.example:" + port, false},
			{"rebind.attacker.example", false},
			{"127.0.0.1:1", false}, // the right name on another port is another origin
			{"localhost.attacker.example:" + port, false},
		} {
			t.Run(tc.host, func(t *testing.T) {
				status, _, body := hostCaller(tc.host, http.Header{}).do(t, http.MethodGet, s.url+"/api/v1/audit", "", "")
				if tc.ok && status != http.StatusOK {
					t.Fatalf("%d %s; want 200", status, body)
				}
				if !tc.ok && (status != http.StatusForbidden || !strings.Contains(body, "does not answer to the host")) {
					t.Fatalf("%d %s; want 403 naming the host", status, body)
				}
			})
		}
		// DNS rebinding: for the browser the attacker's page and the console are one origin, so a
		// form post says Sec-Fetch-Site: same-origin and carries no CSRF token.
		rebind := hostCaller("rebind.attacker.example:"+port, http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {"http://rebind.attacker.example:" + port}})
		status, _, body := rebind.do(t, http.MethodPost, s.url+"/outboxes/nope/release", "application/x-www-form-urlencoded", "")
		if status != http.StatusForbidden || !strings.Contains(body, "does not answer to the host") {
			t.Fatalf("rebound form post: %d %s; want 403", status, body)
		}
		status, _, body = rebind.do(t, http.MethodPost, s.url+"/api/v1/outboxes/nope/leases/release", "application/json", "{}")
		if status != http.StatusForbidden {
			t.Fatalf("rebound JSON post: %d %s; want 403", status, body)
		}
		// The same post from the console's own origin reaches the handler (the outbox "nope" is not configured).
		own := hostCaller("127.0.0.1:"+port, http.Header{"Sec-Fetch-Site": {"same-origin"}})
		if status, _, body := own.do(t, http.MethodPost, s.url+"/outboxes/nope/release", "application/x-www-form-urlencoded", ""); status != http.StatusNotFound {
			t.Fatalf("own form post: %d %s; want the handler's 404", status, body)
		}
		// Probes answer any host.
		if status, _, body := hostCaller("10.1.2.3:"+port, http.Header{}).do(t, http.MethodGet, s.url+"/readyz", "", ""); status != http.StatusOK {
			t.Fatalf("readyz by address: %d %s", status, body)
		}
	})
	t.Run("AllowedHosts", func(t *testing.T) {
		s := startServer(t, authYAML(t, configs.AuthBasic, "  allowed_hosts: [console.example.com, \"10.0.0.5:8443\"]\n"))
		tok := tokenCaller("viewer")
		for _, tc := range []struct {
			host string
			ok   bool
		}{
			{"console.example.com", true},
			{"Console.Example.com:8080", true}, // a name without a port allows every port
			{"10.0.0.5:8443", true},
			{"10.0.0.5:8080", false},
			{"evil.example.com", false},
			{"127.0.0.1", false},
		} {
			cl := hostCaller(tc.host, tok.header)
			status, _, body := cl.do(t, http.MethodGet, s.url+"/api/v1/audit", "", "")
			if tc.ok != (status == http.StatusOK) || (!tc.ok && status != http.StatusForbidden) {
				t.Errorf("Host %s: %d %s; want ok=%v", tc.host, status, body, tc.ok)
			}
		}
	})
	t.Run("BasicWithoutAllowedHosts", func(t *testing.T) {
		s := startServer(t, authYAML(t, configs.AuthBasic, ""))
		cl := hostCaller("console.internal:8080", tokenCaller("viewer").header)
		if status, _, body := cl.do(t, http.MethodGet, s.url+"/api/v1/audit", "", ""); status != http.StatusOK {
			t.Fatalf("%d %s; basic mode without allowed_hosts answers every host", status, body)
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

// Control and bidi characters reach a page only as visible escapes.
func TestPagesShowControlCharactersVisibly(t *testing.T) {
	s := startServer(t, authYAML(t, configs.AuthNone, ""))
	// The 404 page names the outbox it did not find.
	status, _, body := anonymousCaller().do(t, "GET", s.url+"/outboxes/evil%E2%80%AEtxt.exe%1B%5B2J%7F", "", "")
	if status != http.StatusNotFound {
		t.Fatalf("%d", status)
	}
	if strings.ContainsAny(body, "\u202e\x1b\x7f") {
		t.Fatal("raw control characters in the page")
	}
	if !strings.Contains(body, `evil\u202etxt.exe\x1b[2J\x7f`) {
		t.Fatalf("the name is not shown with visible escapes: %s", body)
	}
}
