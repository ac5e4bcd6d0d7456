package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/storetest"
	"github.com/redrive/redrive/paths"
)

// The test users: each one's password is "pw-" + name.
var testUsers = []struct{ name, role string }{{"vera", "viewer"}, {"otto", "operator"}, {"ada", "admin"}}

// The test API tokens: the token is "tok-" + role, its name role + "-bot".
var testRoles = []string{"viewer", "operator", "admin"}

var (
	hashesOnce sync.Once
	hashes     map[string]string
)

// authYAML is an auth section with the test users and tokens; extra is appended inside auth.
func authYAML(t testing.TB, mode, extra string) string {
	t.Helper()
	hashesOnce.Do(func() {
		hashes = map[string]string{}
		for _, u := range testUsers {
			h, err := bcrypt.GenerateFromPassword([]byte("pw-"+u.name), bcrypt.MinCost)
			if err != nil {
				panic(err)
			}
			hashes[u.name] = string(h)
		}
	})
	var b strings.Builder
	fmt.Fprintf(&b, "auth:\n  mode: %s\n", mode)
	if mode == configs.AuthBasic {
		b.WriteString("  users:\n")
		for _, u := range testUsers {
			fmt.Fprintf(&b, "    - {name: %s, role: %s, password_hash: %q}\n", u.name, u.role, hashes[u.name])
		}
	}
	b.WriteString("  tokens:\n")
	for _, r := range testRoles {
		sum := sha256.Sum256([]byte("tok-" + r))
		fmt.Fprintf(&b, "    - {name: %s-bot, role: %s, sha256: %s}\n", r, r, hex.EncodeToString(sum[:]))
	}
	b.WriteString(extra)
	return b.String()
}

type testServer struct {
	url   string
	store *store.Store
}

func newTestStore(t testing.TB) *store.Store {
	t.Helper()
	return storetest.Open(t)
}

// testDeps reads yaml as the config's top level (auth, read_only; the store's DSN a placeholder)
// and gives the dependencies of a console over a fresh store with a real replay engine with
// nothing configured: allowed replay requests fail in it (404, 400), not on a nil dependency.
func testDeps(t testing.TB, yaml string) (*configs.Config, Deps, *store.Store) {
	t.Helper()
	cfg, err := configs.Parse([]byte("store: {dsn: \"postgres://x@127.0.0.1/x\"}\n"+yaml), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st := newTestStore(t)
	engine, err := replay.New(replay.Options{Store: st, Audit: st})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Store: st, Registry: prometheus.NewRegistry(), Replay: engine}, st
}

// startServer serves web.New over a fresh store with the given top-level YAML (auth, read_only).
func startServer(t *testing.T, yaml string) testServer {
	t.Helper()
	cfg, deps, st := testDeps(t, yaml)
	// The matrix reads each refusal's row: the bound on anonymous ones (audit.*, see
	// TestAnonymousRequestsAreRecordedAtABoundedRate in cmd/console) is lifted here.
	e, err := New(deps, Options{RequestTimeout: 10 * time.Second, AuthNone: cfg.Auth.Mode == configs.AuthNone, ReadOnly: cfg.ReadOnly,
		Version: "test", Auth: cfg.Auth, Audit: configs.Audit{AnonymousPerAddress: 1 << 20, AnonymousPerMinute: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return testServer{url: srv.URL, store: st}
}

// caller is one kind of client of the matrix.
type caller struct {
	name   string      // for the test name
	actor  string      // what the audit log must record
	role   access.Role // access.Public: not signed in
	client *http.Client
	header http.Header // sent with every request: bearer token, CSRF token
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func (cl caller) do(t *testing.T, method, u, contentType, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range cl.header {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := cl.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func anonymousCaller() caller {
	return caller{name: "anonymous", actor: "anonymous", client: &http.Client{CheckRedirect: noRedirects}, header: http.Header{}}
}

func tokenCaller(role string) caller {
	return caller{name: "token-" + role, actor: "token:" + role + "-bot", role: parseRole(role),
		client: &http.Client{CheckRedirect: noRedirects}, header: http.Header{"Authorization": {"Bearer tok-" + role}}}
}

// csrfToken makes a request so that the CSRF middleware sets its cookie, and returns the token.
func csrfToken(t *testing.T, client *http.Client, base string) string {
	t.Helper()
	resp, err := client.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse(base)
	for _, ck := range client.Jar.Cookies(u) {
		if ck.Name == "redrive_csrf" {
			return ck.Value
		}
	}
	t.Fatal("no CSRF cookie")
	return ""
}

// pageCSRF is the CSRF token a page gives client (the hidden _csrf field of its sign-out form).
func pageCSRF(t *testing.T, client *http.Client, base string) string {
	t.Helper()
	resp, err := client.Get(base + "/audit?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no CSRF field on a signed-in page (%d)", resp.StatusCode)
	}
	return string(m[1])
}

// signIn logs in through the form and returns a caller carrying the session and CSRF token.
func signIn(t *testing.T, base, user, password string) caller {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: noRedirects}
	token := csrfToken(t, client, base)
	form := url.Values{"username": {user}, "password": {password}, "_csrf": {token}}
	resp, err := client.PostForm(base+"/login", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in as %s: %d", user, resp.StatusCode)
	}
	// The session has a CSRF token of its own (bound to it), which its pages carry.
	return caller{name: user, actor: user, client: client, header: http.Header{"X-Csrf-Token": {pageCSRF(t, client, base)}}}
}

// concretePath fills a route's parameters with values that name nothing, so that an allowed
// request reaches its handler and fails there (404, 400) without changing anything.
func concretePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		switch {
		case strings.HasPrefix(s, ":"):
			parts[i] = "nope"
		case s == "*":
			parts[i] = "nope"
		}
	}
	return strings.Join(parts, "/")
}

func latestAudit(t *testing.T, st *store.Store) audit.Entry {
	t.Helper()
	entries, err := st.ListAudit(context.Background(), audit.Filter{Limit: 1})
	if err != nil || len(entries) == 0 {
		t.Fatalf("audit log: %v, %d entries", err, len(entries))
	}
	return entries[0]
}

// TestAuthorizationMatrix walks the route table: every route, called by every kind of caller,
// answers 401, 403 or reaches its handler exactly as the route's role says, and every refused
// mutation is in the audit log.
func TestAuthorizationMatrix(t *testing.T) {
	basic := startServer(t, authYAML(t, configs.AuthBasic, ""))
	none := startServer(t, authYAML(t, configs.AuthNone, ""))

	callers := []caller{anonymousCaller()}
	for _, u := range testUsers {
		c := signIn(t, basic.url, u.name, "pw-"+u.name)
		c.role = parseRole(u.role)
		callers = append(callers, c)
	}
	for _, r := range testRoles {
		callers = append(callers, tokenCaller(r))
	}

	table := routes(routeHandlers{})
	if len(table) < 20 {
		t.Fatalf("route table has %d routes", len(table))
	}
	for _, r := range table {
		path := concretePath(r.Path)
		body, ctype := "", ""
		if r.Method != http.MethodGet {
			body, ctype = "", "application/x-www-form-urlencoded"
			if strings.HasPrefix(r.Path, "/api/") {
				body, ctype = "{}", "application/json"
			}
		}
		for _, cl := range callers {
			t.Run(fmt.Sprintf("%s %s/%s", r.Method, r.Path, cl.name), func(t *testing.T) {
				status, header, resp := cl.do(t, r.Method, basic.url+path, ctype, body)
				switch {
				case r.Role == access.Public:
					if status == http.StatusUnauthorized || status == http.StatusForbidden {
						t.Fatalf("public route refused: %d %s", status, resp)
					}
					return
				case cl.role == access.Public && strings.HasPrefix(r.Path, "/api/"):
					var e apiError
					if status != http.StatusUnauthorized || json.Unmarshal([]byte(resp), &e) != nil || e.Error.Code != "unauthorized" {
						t.Fatalf("anonymous API call: %d %s; want 401 with code unauthorized", status, resp)
					}
				case cl.role == access.Public && r.Method == http.MethodGet:
					if loc := header.Get("Location"); status != http.StatusSeeOther || !strings.HasPrefix(loc, "/login?next=") {
						t.Fatalf("anonymous page: %d to %q; want a redirect to /login", status, loc)
					}
				case cl.role == access.Public:
					if status != http.StatusUnauthorized {
						t.Fatalf("anonymous form post: %d; want 401", status)
					}
				case cl.role < r.Role:
					if status != http.StatusForbidden || !strings.Contains(resp, "needs the "+r.Role.String()+" role") {
						t.Fatalf("%s calling a %s route: %d %.300s; want 403 naming the role", cl.role, r.Role, status, resp)
					}
				default:
					if status == http.StatusUnauthorized || status == http.StatusForbidden ||
						strings.HasPrefix(header.Get("Location"), "/login") {
						t.Fatalf("%s refused a %s route: %d %.300s", cl.role, r.Role, status, resp)
					}
					return
				}
				if r.Method == http.MethodGet {
					return
				}
				got := latestAudit(t, basic.store)
				if got.Outcome != audit.OutcomeDenied || got.Actor != cl.actor || got.Action != r.Method+" "+r.Path ||
					got.Target != path || got.SourceIP != "127.0.0.1" || got.Reason == "" || got.UserAgent == "" {
					t.Fatalf("audit entry of the refusal: %+v", got)
				}
				if cl.role != access.Public && got.Role != cl.role.String() {
					t.Fatalf("audit role %q, want %q", got.Role, cl.role)
				}
			})
		}
		// auth.mode none: the anonymous caller is an admin; forms still need the CSRF token.
		t.Run(fmt.Sprintf("%s %s/none", r.Method, r.Path), func(t *testing.T) {
			jar, _ := cookiejar.New(nil)
			cl := caller{client: &http.Client{Jar: jar, CheckRedirect: noRedirects}, header: http.Header{}}
			cl.header.Set("X-CSRF-Token", csrfToken(t, cl.client, none.url))
			if status, _, resp := cl.do(t, r.Method, none.url+path, ctype, body); status == http.StatusUnauthorized ||
				status == http.StatusForbidden {
				t.Fatalf("auth.mode none refused: %d %s", status, resp)
			}
		})
	}
}

// Everything the server answers is in the table the matrix walks (plus the auth routes, metrics
// and static assets): no route is registered beside it, unprotected.
func TestEveryRouteIsInTheTable(t *testing.T) {
	cfg, err := configs.Parse([]byte("store: {dsn: \"postgres://x@127.0.0.1/x\"}\n"+authYAML(t, configs.AuthBasic, "")),
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Store: &store.Store{},
		Registry: prometheus.NewRegistry()}, Options{RequestTimeout: time.Second, Auth: cfg.Auth})
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"GET /metrics": true, "GET /static/*": true}
	table := append(routes(routeHandlers{}), authRoutes(nil)...)
	table = append(table, Route{http.MethodGet, paths.Metrics, nil, access.Public})
	for _, r := range append(table, headRoutes(table)...) {
		known[r.Method+" "+r.Path] = true
	}
	for _, r := range e.Routes() {
		if !known[r.Method+" "+r.Path] {
			t.Errorf("%s %s is registered outside the route table", r.Method, r.Path)
		}
	}
}

func TestCSRF(t *testing.T) {
	s := startServer(t, authYAML(t, configs.AuthBasic, ""))
	otto := signIn(t, s.url, "otto", "pw-otto")
	const api = "/api/v1/outboxes/nope/leases/release"
	const form = "/outboxes/nope/release"
	cases := []struct {
		name, path, ctype, body, csrf string
		bearer                        bool
		denied                        bool
	}{
		{"CookieAPIWithout", api, "application/json", "{}", "", false, true},
		{"CookieAPIWrong", api, "application/json", "{}", "wrong", false, true},
		{"CookieAPIRight", api, "application/json", "{}", "right", false, false},
		{"FormWithout", form, "application/x-www-form-urlencoded", "", "", false, true},
		{"FormWrongField", form, "application/x-www-form-urlencoded", "_csrf=wrong", "", false, true},
		{"FormRightField", form, "application/x-www-form-urlencoded", "_csrf=right", "", false, false},
		{"BearerAPIWithout", api, "application/json", "{}", "", true, false},
		{"BearerFormWithout", form, "application/x-www-form-urlencoded", "", "", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl := otto
			cl.header = http.Header{}
			if tc.bearer {
				cl = tokenCaller("operator")
			}
			token := otto.header.Get("X-CSRF-Token")
			switch tc.csrf {
			case "right":
				cl.header.Set("X-CSRF-Token", token)
			case "wrong":
				cl.header.Set("X-CSRF-Token", "wrong")
			}
			body := strings.Replace(tc.body, "_csrf=right", "_csrf="+url.QueryEscape(token), 1)
			status, _, resp := cl.do(t, http.MethodPost, s.url+tc.path, tc.ctype, body)
			if tc.denied {
				if status != http.StatusForbidden || !strings.Contains(resp, "CSRF") {
					t.Fatalf("%d %s; want 403 about CSRF", status, resp)
				}
				if got := latestAudit(t, s.store); got.Outcome != audit.OutcomeDenied || got.Actor != "otto" ||
					!strings.Contains(got.Reason, "CSRF") {
					t.Fatalf("audit: %+v", got)
				}
				return
			}
			if status != http.StatusNotFound { // the outbox "nope" is not configured: the handler ran
				t.Fatalf("%d %s; want the handler's 404", status, resp)
			}
		})
	}
	// The token is bound to the session: a token planted in the browser's CSRF cookie (from a
	// sibling subdomain, say) with the same value sent along, another session's token, or the
	// sign-in form's token, does not pass. It was a double-submit cookie: the planted pair passed.
	t.Run("BoundToTheSession", func(t *testing.T) {
		u, _ := url.Parse(s.url)
		vera := signIn(t, s.url, "vera", "pw-vera")
		ada := signIn(t, s.url, "ada", "pw-ada")
		attempt := func(cl caller, token string) int {
			cl.header = http.Header{"X-Csrf-Token": {token}}
			status, _, _ := cl.do(t, http.MethodPost, s.url+form, "application/x-www-form-urlencoded", "")
			return status
		}
		ada.client.Jar.SetCookies(u, []*http.Cookie{{Name: "redrive_csrf", Value: "planted-by-attacker", Path: "/"}})
		for name, token := range map[string]string{"PlantedCookiePair": "planted-by-attacker",
			"AnotherSessionsToken": vera.header.Get("X-Csrf-Token"), "SignInFormToken": csrfToken(t, ada.client, s.url)} {
			if status := attempt(ada, token); status != http.StatusForbidden {
				t.Errorf("%s: %d, want 403", name, status)
			}
		}
		if status := attempt(ada, ada.header.Get("X-Csrf-Token")); status != http.StatusNotFound {
			t.Errorf("ada's own token: %d, want the handler's 404", status)
		}
		// Signed in again, a new session: the old session's token no longer passes.
		again := signIn(t, s.url, "ada", "pw-ada")
		if again.header.Get("X-Csrf-Token") == ada.header.Get("X-Csrf-Token") {
			t.Error("two sessions share a CSRF token")
		}
	})
	t.Run("CrossSiteBrowserPost", func(t *testing.T) {
		cl := otto
		cl.header = http.Header{"Sec-Fetch-Site": {"cross-site"}}
		if status, _, _ := cl.do(t, http.MethodPost, s.url+form, "application/x-www-form-urlencoded", ""); status != http.StatusForbidden {
			t.Fatalf("a cross-site form post: %d, want 403", status)
		}
	})
}

func TestBearerTokens(t *testing.T) {
	s := startServer(t, authYAML(t, configs.AuthBasic, ""))
	const api = "/api/v1/outboxes/nope/leases/release"
	t.Run("Valid", func(t *testing.T) {
		if status, _, resp := tokenCaller("viewer").do(t, http.MethodGet, s.url+"/api/v1/audit", "", ""); status != http.StatusOK {
			t.Fatalf("%d %s", status, resp)
		}
	})
	t.Run("Wrong", func(t *testing.T) {
		cl := tokenCaller("viewer")
		cl.header.Set("Authorization", "Bearer tok-nobody")
		status, header, resp := cl.do(t, http.MethodPost, s.url+api, "application/json", "{}")
		if status != http.StatusUnauthorized || !strings.Contains(resp, "invalid API token") ||
			!strings.Contains(header.Get("WWW-Authenticate"), "invalid_token") {
			t.Fatalf("%d %v %s", status, header, resp)
		}
		if got := latestAudit(t, s.store); got.Outcome != audit.OutcomeDenied || got.Reason != "invalid API token" {
			t.Fatalf("audit: %+v", got)
		}
	})
	t.Run("WrongOnAPage", func(t *testing.T) {
		cl := tokenCaller("viewer")
		cl.header.Set("Authorization", "bearer ") // empty token
		if status, _, _ := cl.do(t, http.MethodGet, s.url+"/", "", ""); status != http.StatusUnauthorized {
			t.Fatalf("%d, want 401", status)
		}
	})
	t.Run("WrongRole", func(t *testing.T) {
		status, _, resp := tokenCaller("viewer").do(t, http.MethodPost, s.url+api, "application/json", "{}")
		if status != http.StatusForbidden || !strings.Contains(resp, "needs the operator role") ||
			!strings.Contains(resp, "token:viewer-bot") {
			t.Fatalf("%d %s", status, resp)
		}
	})
	t.Run("OtherSchemesAreNotTokens", func(t *testing.T) {
		cl := anonymousCaller()
		cl.header.Set("Authorization", "Basic b3R0bzpwdy1vdHRv")
		if status, _, _ := cl.do(t, http.MethodGet, s.url+"/api/v1/audit", "", ""); status != http.StatusUnauthorized {
			t.Fatalf("%d, want 401", status)
		}
	})
}

func TestProxyMode(t *testing.T) {
	const groups = `
  proxy:
    group_roles: {sre: operator, sre-leads: admin, eng: viewer}
`
	t.Run("UntrustedAddressWithHeaders", func(t *testing.T) {
		s := startServer(t, authYAML(t, configs.AuthProxy, "  trusted_proxies: [10.0.0.0/8]\n"+groups))
		for _, h := range []string{"X-Forwarded-User", "X-Forwarded-Email", "X-Forwarded-Groups"} {
			cl := anonymousCaller()
			cl.header.Set(h, "mallory")
			status, _, resp := cl.do(t, http.MethodGet, s.url+"/api/v1/audit", "", "")
			if status != http.StatusForbidden || !strings.Contains(resp, "trusted_proxies") || !strings.Contains(resp, "127.0.0.1") {
				t.Fatalf("%s from 127.0.0.1: %d %s; want 403", h, status, resp)
			}
			got := latestAudit(t, s.store)
			if got.Outcome != audit.OutcomeDenied || got.SourceIP != "127.0.0.1" || !strings.Contains(got.Reason, h) ||
				got.Action != "GET /api/v1/audit" {
				t.Fatalf("audit: %+v", got)
			}
		}
		// Even a bearer token does not excuse forged identity headers.
		cl := tokenCaller("admin")
		cl.header.Set("X-Forwarded-User", "mallory")
		if status, _, _ := cl.do(t, http.MethodGet, s.url+"/api/v1/audit", "", ""); status != http.StatusForbidden {
			t.Fatalf("token with forged headers: %d", status)
		}
		// Without the headers the request is simply not signed in; tokens work.
		if status, _, _ := anonymousCaller().do(t, http.MethodGet, s.url+"/api/v1/audit", "", ""); status != http.StatusUnauthorized {
			t.Fatalf("no headers: %d, want 401", status)
		}
		if status, _, _ := tokenCaller("viewer").do(t, http.MethodGet, s.url+"/api/v1/audit", "", ""); status != http.StatusOK {
			t.Fatalf("token: %d", status)
		}
	})

	t.Run("TrustedProxy", func(t *testing.T) {
		s := startServer(t, authYAML(t, configs.AuthProxy, "  trusted_proxies: [127.0.0.1/32]\n"+groups))
		as := func(user, email, groups string) caller {
			cl := anonymousCaller()
			if user != "" {
				cl.header.Set("X-Forwarded-User", user)
			}
			if email != "" {
				cl.header.Set("X-Forwarded-Email", email)
			}
			if groups != "" {
				cl.header.Set("X-Forwarded-Groups", groups)
			}
			return cl
		}
		const api = "/api/v1/outboxes/nope/leases/release"
		cases := []struct {
			name                 string
			cl                   caller
			readStatus, opStatus int
		}{
			{"Viewer", as("erin", "", "eng"), 200, 403},
			{"Operator", as("sam", "sam@example.com", "eng, sre"), 200, 404},
			{"HighestGroupWins", as("lee", "", "sre-leads,eng"), 200, 404},
			{"EmailOnly", as("", "eve@example.com", "sre"), 200, 404},
			{"NoMappedGroup", as("nobody", "", "marketing"), 403, 403},
			{"NoIdentity", as("", "", "sre"), 401, 401},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if status, _, resp := tc.cl.do(t, http.MethodGet, s.url+"/api/v1/audit", "", ""); status != tc.readStatus {
					t.Fatalf("read: %d %s; want %d", status, resp, tc.readStatus)
				}
				// Proxy-authenticated requests carry the proxy's cookie: they need the CSRF token.
				jar, _ := cookiejar.New(nil)
				tc.cl.client.Jar = jar
				tc.cl.header.Set("X-CSRF-Token", csrfToken(t, tc.cl.client, s.url))
				if status, _, resp := tc.cl.do(t, http.MethodPost, s.url+api, "application/json", "{}"); status != tc.opStatus {
					t.Fatalf("operate: %d %s; want %d", status, resp, tc.opStatus)
				}
			})
		}
		t.Run("AuditNamesTheProxyUser", func(t *testing.T) {
			cl := as("erin", "erin@example.com", "eng")
			cl.do(t, http.MethodPost, s.url+api, "application/json", "{}")
			got := latestAudit(t, s.store)
			if got.Actor != "erin" || got.Role != "viewer" || got.Detail["email"] != "erin@example.com" || got.Detail["via"] != "proxy" {
				t.Fatalf("audit: %+v", got)
			}
		})
		t.Run("DefaultRole", func(t *testing.T) {
			s := startServer(t, authYAML(t, configs.AuthProxy, "  trusted_proxies: [127.0.0.1]\n  proxy: {default_role: viewer}\n"))
			if status, _, _ := as("nobody", "", "").do(t, http.MethodGet, s.url+"/api/v1/audit", "", ""); status != http.StatusOK {
				t.Fatalf("default role: %d", status)
			}
		})
		t.Run("SourceIPFromForwardedFor", func(t *testing.T) {
			cl := as("erin", "", "eng")
			cl.header.Set("X-Forwarded-For", "203.0.113.9")
			cl.do(t, http.MethodPost, s.url+api, "application/json", "{}")
			if got := latestAudit(t, s.store); got.SourceIP != "203.0.113.9" {
				t.Fatalf("source ip %q, want the client's behind the trusted proxy", got.SourceIP)
			}
		})
	})
}

func TestReadOnly(t *testing.T) {
	s := startServer(t, "read_only: true\n"+authYAML(t, configs.AuthBasic, ""))
	ada := signIn(t, s.url, "ada", "pw-ada") // sign-in still works: it is not a change to anything
	status, _, resp := ada.do(t, http.MethodPost, s.url+"/api/v1/outboxes/nope/leases/release", "application/json", "{}")
	if status != http.StatusForbidden || !strings.Contains(resp, "read-only mode (read_only: true") {
		t.Fatalf("%d %s", status, resp)
	}
	if got := latestAudit(t, s.store); got.Outcome != audit.OutcomeDenied || got.Actor != "ada" || got.Reason != "read-only mode" {
		t.Fatalf("audit: %+v", got)
	}
	if status, _, _ := ada.do(t, http.MethodGet, s.url+"/api/v1/audit", "", ""); status != http.StatusOK {
		t.Fatalf("reading in read-only mode: %d", status)
	}
	if status, _, _ := tokenCaller("admin").do(t, http.MethodPost, s.url+"/api/v1/outboxes/nope/leases/release",
		"application/json", "{}"); status != http.StatusForbidden {
		t.Fatalf("token in read-only mode: %d", status)
	}
}

// TestLoginLimiter: only failures count — a correct password costs nothing, however often, and
// clears its user's failures from its address; a user's failures from one address do not
// throttle the same user elsewhere (nobody locks a person out from afar); one address spraying
// users is throttled; many addresses guessing one user are throttled together, except the
// addresses the user signed in from.
func TestLoginLimiter(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := newLoginLimiter(rateLimit{2, time.Minute}, rateLimit{3, 10 * time.Second}, rateLimit{4, time.Hour})
	l.now = func() time.Time { return now }
	attempt := func(user, ip string, ok bool) time.Duration {
		end, wait := l.begin(user, ip)
		if wait == 0 {
			// The password check takes time (bcrypt): the outcome is reported later.
			now = now.Add(50 * time.Millisecond)
			end(ok)
		}
		return wait
	}

	for i := range 20 { // successes cost nothing
		if w := attempt("otto", "192.0.2.1", true); w != 0 {
			t.Fatalf("sign-in %d: wait %v", i+1, w)
		}
	}
	attempt("otto", "192.0.2.1", false)
	attempt("otto", "192.0.2.1", false)
	if w := attempt("otto", "192.0.2.1", true); w < 59*time.Second || w > time.Minute {
		t.Fatalf("otto's bucket at 192.0.2.1 empty: wait %v, want about 1m", w)
	}
	// Someone guessing otto's password from elsewhere does not lock otto out of his own address.
	for range 10 {
		attempt("otto", "203.0.113.9", false)
	}
	now = now.Add(time.Minute)
	if w := attempt("otto", "192.0.2.1", true); w != 0 {
		t.Fatalf("otto at his own address after a minute, while guessed at from elsewhere: wait %v", w)
	}
	// A correct password clears his failures from that address.
	attempt("otto", "192.0.2.1", false)
	attempt("otto", "192.0.2.1", true)
	attempt("otto", "192.0.2.1", false)
	if w := attempt("otto", "192.0.2.1", false); w != 0 {
		t.Fatalf("after a correct password, the failures before it still count: wait %v", w)
	}

	// One address spraying users: its bucket (3) throttles it, for every user.
	now = now.Add(time.Hour)
	attempt("", "198.51.100.7", false) // an unknown user name costs the address
	attempt("ada", "198.51.100.7", false)
	attempt("vera", "198.51.100.7", false)
	if w := attempt("ada", "198.51.100.7", true); w < 9*time.Second || w > 10*time.Second {
		t.Fatalf("address bucket empty (3 failures): wait %v, want about 10s", w)
	}

	// Many addresses guessing ada: together throttled (4), but not where ada signed in before.
	now = now.Add(time.Hour)
	attempt("ada", "192.0.2.50", true) // ada's own address
	for i := range 4 {
		attempt("ada", fmt.Sprintf("203.0.113.%d", 100+i), false)
	}
	if w := attempt("ada", "203.0.113.200", false); w == 0 {
		t.Fatal("a fifth new address guessing ada was not throttled")
	}
	if w := attempt("ada", "192.0.2.50", true); w != 0 {
		t.Fatalf("ada at an address she signed in from, while guessed at from many: wait %v", w)
	}

	t.Run("ParallelAttemptsStayWithinTheBurst", func(t *testing.T) {
		l := newLoginLimiter(rateLimit{5, time.Hour}, rateLimit{100, time.Hour}, rateLimit{100, time.Hour})
		var wg sync.WaitGroup
		var mu sync.Mutex
		admitted := 0
		for range 50 {
			wg.Go(func() {
				end, wait := l.begin("otto", "198.51.100.1")
				if wait == 0 {
					mu.Lock()
					admitted++
					mu.Unlock()
					end(false)
				}
			})
		}
		wg.Wait()
		if admitted != 5 {
			t.Fatalf("%d of 50 parallel attempts admitted, want 5 (the burst)", admitted)
		}
	})

	for _, c := range []struct{ a, b string }{{"2001:db8::1", "2001:db8::ffff"}, {"::ffff:192.0.2.7", "192.0.2.7"}} {
		if audit.AddressKey(c.a) != audit.AddressKey(c.b) {
			t.Errorf("audit.AddressKey(%s) = %s, audit.AddressKey(%s) = %s; want one bucket", c.a, audit.AddressKey(c.a), c.b, audit.AddressKey(c.b))
		}
	}
	if audit.AddressKey("2001:db8:0:1::1") == audit.AddressKey("2001:db8:0:2::1") {
		t.Error("two /64s share a bucket")
	}
}

// auth.mode none leaves the JSON API without CSRF tokens for scripts, but a browser's request from
// a page of another origin (another port of the same host included) is refused: the API's
// mutations that read no body — reload, cancel, approve — could be posted by any page the operator
// visits, as the anonymous admin. The same request from the console's own origin, or from a
// client that is no browser, goes through.
func TestNoneRefusesCrossOriginAPIPosts(t *testing.T) {
	none := startServer(t, authYAML(t, configs.AuthNone, ""))
	host := strings.TrimPrefix(none.url, "http://")
	post := func(header map[string]string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, none.url+"/api/v1/admin/reload", nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, h := range map[string]map[string]string{
		"CrossSite":        {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
		"AnotherPort":      {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:3000"},
		"ForeignOriginOld": {"Origin": "http://evil.example"},
		"NullOrigin":       {"Origin": "null"},
	} {
		if got := post(h); got != http.StatusForbidden {
			t.Errorf("%s: %d; want 403", name, got)
		}
	}
	for name, h := range map[string]map[string]string{
		"SameOrigin": {"Sec-Fetch-Site": "same-origin", "Origin": "http://" + host},
		"NoBrowser":  {},
	} {
		if got := post(h); got == http.StatusForbidden || got == http.StatusUnauthorized {
			t.Errorf("%s: %d; want it through", name, got)
		}
	}
}
