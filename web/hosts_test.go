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
