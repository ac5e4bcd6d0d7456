package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/paths"
)

var (
	authHashOnce sync.Once
	authHashes   map[string]string
)

// basicAuth is an auth section in basic mode: users vera (viewer), otto (operator) and ada
// (admin), whose passwords are "pw-" + name, and tokens "tok-<role>" named "<role>-bot". extra is
// appended inside the auth section.
func basicAuth(extra string) string {
	authHashOnce.Do(func() {
		authHashes = map[string]string{}
		for _, u := range []string{"vera", "otto", "ada"} {
			h, err := bcrypt.GenerateFromPassword([]byte("pw-"+u), bcrypt.MinCost)
			if err != nil {
				panic(err)
			}
			authHashes[u] = string(h)
		}
	})
	var b strings.Builder
	b.WriteString("auth:\n  mode: basic\n  users:\n")
	for u, role := range map[string]string{"vera": "viewer", "otto": "operator", "ada": "admin"} {
		fmt.Fprintf(&b, "    - {name: %s, role: %s, password_hash: %q}\n", u, role, authHashes[u])
	}
	b.WriteString("  tokens:\n")
	for _, role := range []string{"viewer", "operator", "admin"} {
		sum := sha256.Sum256([]byte("tok-" + role))
		fmt.Fprintf(&b, "    - {name: %s-bot, role: %s, sha256: %s}\n", role, role, hex.EncodeToString(sum[:]))
	}
	b.WriteString(extra)
	return b.String()
}

// authConsole is a console in basic mode over a seeded demo outbox "orders".
func authConsole(t *testing.T, extra string) (base, outboxDSN string) {
	t.Helper()
	return outboxConsole(t, basicAuth(extra))
}

// browserlike is an HTTP client with a cookie jar that does not follow redirects.
func browserlike() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// loginForm opens the login page and returns its CSRF token.
func loginForm(t *testing.T, client *http.Client, base string) string {
	t.Helper()
	page := do(t, client, "GET", base+"/login", "", "")
	m := csrfField.FindStringSubmatch(page.body)
	if page.status != http.StatusOK || m == nil || !strings.Contains(page.body, `data-testid="login-form"`) {
		t.Fatalf("login page: %d, csrf field: %v", page.status, m != nil)
	}
	return m[1]
}

func postLogin(t *testing.T, client *http.Client, base, csrf, user, password string) response {
	t.Helper()
	form := url.Values{"username": {user}, "password": {password}, "_csrf": {csrf}, "next": {"/outboxes/orders"}}
	return do(t, client, "POST", base+"/login", "application/x-www-form-urlencoded", form.Encode())
}

func sessionCookie(t *testing.T, r response) *http.Cookie {
	t.Helper()
	for _, line := range r.header.Values("Set-Cookie") {
		if ck, err := http.ParseSetCookie(line); err == nil && ck.Name == "redrive_session" {
			return ck
		}
	}
	t.Fatalf("no session cookie in %v", r.header.Values("Set-Cookie"))
	return nil
}

// signedIn signs in through the form and returns the client and its CSRF token: the session's,
// read from a page as a browser gets it (the sign-in form's token is not the session's).
func signedIn(t *testing.T, base, user string) (*http.Client, string) {
	t.Helper()
	client := browserlike()
	csrf := loginForm(t, client, base)
	if r := postLogin(t, client, base, csrf, user, "pw-"+user); r.status != http.StatusSeeOther {
		t.Fatalf("sign in as %s: %d %s", user, r.status, r.body)
	}
	page := do(t, client, "GET", base+paths.Audit+"?limit=1", "", "")
	m := csrfField.FindStringSubmatch(page.body)
	if page.status != http.StatusOK || m == nil {
		t.Fatalf("a page after signing in as %s: %d, csrf field: %v", user, page.status, m != nil)
	}
	return client, m[1]
}

// bearer sends a request with the API token token, and body (JSON) when there is one, and reads
// the answer.
func bearer(t *testing.T, method, u, token, body string) response {
	t.Helper()
	resp := bearerStream(t, method, u, token, body)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return response{resp.StatusCode, b.String(), resp.Header}
}

// bearerStream is bearer's request with the answer's body left unread, to be read as it streams;
// the caller closes it.
func bearerStream(t *testing.T, method, u, token, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// auditRow is one entry of GET /api/v1/audit.
type auditRow struct {
	At        time.Time      `json:"at"`
	Actor     string         `json:"actor"`
	Role      string         `json:"role"`
	SourceIP  string         `json:"source_ip"`
	UserAgent string         `json:"user_agent"`
	Action    string         `json:"action"`
	Target    string         `json:"target"`
	Count     *int64         `json:"count"`
	Reason    string         `json:"reason"`
	Outcome   string         `json:"outcome"`
	Detail    map[string]any `json:"detail"`
}

// auditLog reads the newest audit entries with the admin token.
func auditLog(t *testing.T, base, query string) []auditRow {
	t.Helper()
	r := bearer(t, "GET", base+"/api/v1/audit?"+query, "tok-admin", "")
	if r.status != http.StatusOK {
		t.Fatalf("audit: %d %s", r.status, r.body)
	}
	return decode[struct{ Entries []auditRow }](t, r).Entries
}

// okAudits counts the entries of action in the audit log that succeeded on target for actor; rows
// are all the entries read, for a failure message.
func okAudits(t *testing.T, base, action, target, actor string) (ok int, rows []auditRow) {
	t.Helper()
	rows = auditLog(t, base, "action="+action)
	for _, e := range rows {
		if e.Outcome == "ok" && e.Target == target && e.Actor == actor {
			ok++
		}
	}
	return ok, rows
}

func TestLoginLogout(t *testing.T) {
	t.Parallel()
	base, _ := authConsole(t, "")
	client := browserlike()

	r := do(t, client, "GET", base+"/outboxes/orders?status=DEAD", "", "")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/login?next=%2Foutboxes%2Forders%3Fstatus%3DDEAD" {
		t.Fatalf("a page before signing in: %d to %q", r.status, r.header.Get("Location"))
	}
	csrf := loginForm(t, client, base)

	t.Run("WrongPassword", func(t *testing.T) {
		r := postLogin(t, client, base, csrf, "otto", "nope")
		if r.status != http.StatusUnauthorized || !strings.Contains(r.body, "Wrong user name or password") {
			t.Fatalf("%d", r.status)
		}
		if rows := auditLog(t, base, "action=auth.login&limit=1"); len(rows) != 1 || rows[0].Actor != "otto" ||
			rows[0].Outcome != "denied" || rows[0].SourceIP != "127.0.0.1" {
			t.Fatalf("audit: %+v", rows)
		}
	})
	t.Run("UnknownUserLooksTheSame", func(t *testing.T) {
		if r := postLogin(t, client, base, csrf, "mallory", "pw-otto"); r.status != http.StatusUnauthorized ||
			!strings.Contains(r.body, "Wrong user name or password") {
			t.Fatalf("%d", r.status)
		}
	})
	t.Run("NeedsCSRF", func(t *testing.T) {
		form := url.Values{"username": {"otto"}, "password": {"pw-otto"}}
		if r := do(t, client, "POST", base+"/login", "application/x-www-form-urlencoded", form.Encode()); r.status != http.StatusForbidden {
			t.Fatalf("login without the CSRF field: %d", r.status)
		}
	})

	r = postLogin(t, client, base, csrf, "otto", "pw-otto")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/outboxes/orders" {
		t.Fatalf("sign in: %d to %q", r.status, r.header.Get("Location"))
	}
	ck := sessionCookie(t, r)
	if !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Secure || ck.Path != "/" || ck.MaxAge != 12*3600 {
		t.Errorf("session cookie attributes: %+v", ck)
	}
	page := do(t, client, "GET", base+"/outboxes/orders", "", "")
	if page.status != http.StatusOK || !strings.Contains(page.body, `data-testid="signed-in-user"`) ||
		!strings.Contains(page.body, "otto") || !strings.Contains(page.body, `data-testid="logout-form"`) {
		t.Fatalf("signed-in page: %d", page.status)
	}
	if strings.Contains(page.body, `data-testid="banner-auth-none"`) {
		t.Error("the auth-off banner shows in basic mode")
	}
	if rows := auditLog(t, base, "action=auth.login&limit=1"); rows[0].Actor != "otto" || rows[0].Outcome != "ok" || rows[0].Role != "operator" {
		t.Errorf("audit of the sign-in: %+v", rows[0])
	}
	if r := do(t, client, "GET", base+"/login", "", ""); r.status != http.StatusSeeOther || r.header.Get("Location") != "/" {
		t.Errorf("the login page when signed in: %d to %q", r.status, r.header.Get("Location"))
	}

	form := url.Values{"_csrf": {csrfField.FindStringSubmatch(page.body)[1]}}
	r = do(t, client, "POST", base+"/logout", "application/x-www-form-urlencoded", form.Encode())
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/login" {
		t.Fatalf("sign out: %d to %q", r.status, r.header.Get("Location"))
	}
	if cleared := sessionCookie(t, r); cleared.MaxAge >= 0 {
		t.Errorf("sign-out does not clear the cookie: %+v", cleared)
	}
	if r := do(t, client, "GET", base+"/outboxes/orders", "", ""); r.status != http.StatusSeeOther {
		t.Errorf("after sign-out: %d", r.status)
	}
	// The old cookie, replayed by someone who copied it, is dead on the server too.
	replay := browserlike()
	u, _ := url.Parse(base)
	replay.Jar.SetCookies(u, []*http.Cookie{{Name: "redrive_session", Value: ck.Value}})
	if r := do(t, replay, "GET", base+"/api/v1/audit", "", ""); r.status != http.StatusUnauthorized {
		t.Errorf("a signed-out session's cookie: %d, want 401", r.status)
	}
	if rows := auditLog(t, base, "action=auth.logout&limit=1"); len(rows) != 1 || rows[0].Actor != "otto" {
		t.Errorf("audit of the sign-out: %+v", rows)
	}
}

// Sessions end by the store's clock: idle_timeout after the last use, absolute_timeout after
// sign-in however busy. The timeouts are read from the rows the console wrote; the ends are
// reached by moving those rows' deadlines into the past (as the time would), not by waiting.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	storeDSN := pgtest.NewDatabase(t)
	base := startConsole(t, fmt.Sprintf("store: {dsn: %q}\n%s", storeDSN, basicAuth("  session: {idle_timeout: 2s, absolute_timeout: 5s}\n")))
	type row struct{ idleLeft, absoluteLeft, lifetime float64 } // seconds
	session := func(t *testing.T, user string) row {
		t.Helper()
		var r row
		c := pgtest.Conn(t, storeDSN)
		if err := c.QueryRow(context.Background(), `SELECT extract(epoch FROM idle_expires_at - now())::float8,
			extract(epoch FROM expires_at - now())::float8, extract(epoch FROM expires_at - created_at)::float8
			FROM `+store.Schema+`.session WHERE user_name = $1`, user).Scan(&r.idleLeft, &r.absoluteLeft, &r.lifetime); err != nil {
			t.Fatalf("%s's session row: %v", user, err)
		}
		return r
	}
	age := func(t *testing.T, user, set string) {
		t.Helper()
		pgtest.Exec(t, storeDSN, `UPDATE `+store.Schema+`.session SET `+set+` WHERE user_name = $1`, user)
	}

	t.Run("Idle", func(t *testing.T) {
		t.Parallel()
		client, _ := signedIn(t, base, "vera")
		if r := do(t, client, "GET", base+"/api/v1/audit", "", ""); r.status != http.StatusOK {
			t.Fatalf("fresh session: %d", r.status)
		}
		if r := session(t, "vera"); r.idleLeft <= 1 || r.idleLeft > 2.05 || math.Abs(r.lifetime-5) > 0.05 {
			t.Fatalf("session row %+v: want its idle end within idle_timeout (2s), its end absolute_timeout (5s) after sign-in", r)
		}
		age(t, "vera", `idle_expires_at = now() - interval '1 millisecond'`) // 2 s without use
		if r := do(t, client, "GET", base+"/api/v1/audit", "", ""); r.status != http.StatusUnauthorized {
			t.Fatalf("after idle_timeout without use: %d, want 401", r.status)
		}
		if r := do(t, client, "GET", base+"/", "", ""); r.status != http.StatusSeeOther {
			t.Fatalf("a page after the session ended: %d, want a redirect to /login", r.status)
		}
	})
	t.Run("Absolute", func(t *testing.T) {
		t.Parallel()
		client, _ := signedIn(t, base, "ada")
		// In use: each request after a while pushes the idle end to idle_timeout from now…
		age(t, "ada", `last_seen_at = now() - interval '1 minute', idle_expires_at = now() + interval '100 milliseconds'`)
		if r := do(t, client, "GET", base+"/api/v1/audit", "", ""); r.status != http.StatusOK {
			t.Fatalf("an active session: %d", r.status)
		}
		if r := session(t, "ada"); r.idleLeft <= 1.5 || r.idleLeft > 2.05 {
			t.Fatalf("session row %+v: a request should push the idle end 2 s out", r)
		}
		// …but never past absolute_timeout (1 s left now)…
		age(t, "ada", `last_seen_at = now() - interval '1 minute', idle_expires_at = now() + interval '500 milliseconds',
			expires_at = now() + interval '1 second'`)
		if r := do(t, client, "GET", base+"/api/v1/audit", "", ""); r.status != http.StatusOK {
			t.Fatalf("an active session before its end: %d", r.status)
		}
		if r := session(t, "ada"); math.Abs(r.idleLeft-r.absoluteLeft) > 0.001 {
			t.Fatalf("session row %+v: the pushed idle end should stop at the absolute one", r)
		}
		// …which ends it while it is still in use: both ends reached at once.
		age(t, "ada", `idle_expires_at = now() - interval '1 millisecond', expires_at = now() - interval '1 millisecond'`)
		if r := do(t, client, "GET", base+"/api/v1/audit", "", ""); r.status != http.StatusUnauthorized {
			t.Fatalf("past absolute_timeout while active: %d, want 401", r.status)
		}
	})
}

func TestSecureCookies(t *testing.T) {
	t.Parallel()
	for name, extra := range map[string]string{
		"Configured":         "  secure_cookies: true\n",
		"ForwardedFromProxy": "  trusted_proxies: [127.0.0.1]\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base, _ := authConsole(t, extra)
			client := browserlike()
			csrf := loginForm(t, client, base)
			form := url.Values{"username": {"otto"}, "password": {"pw-otto"}, "_csrf": {csrf}}
			req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Forwarded-Proto", "https")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if ck := sessionCookie(t, response{resp.StatusCode, "", resp.Header}); !ck.Secure {
				t.Fatalf("session cookie not Secure: %+v", ck)
			}
		})
	}
}

func TestLoginThrottle(t *testing.T) {
	t.Parallel()
	base, _ := authConsole(t, "  login_limits: {per_user: {burst: 2, every: 1m}, per_ip: {burst: 4, every: 1m}}\n")
	client := browserlike()
	csrf := loginForm(t, client, base)
	for i := range 2 {
		if r := postLogin(t, client, base, csrf, "otto", "wrong"); r.status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, r.status)
		}
	}
	r := postLogin(t, client, base, csrf, "otto", "pw-otto") // right, but too late
	retry, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != http.StatusTooManyRequests || !strings.Contains(r.body, "Too many failed sign-in attempts") ||
		retry < 1 || retry > 60 {
		t.Fatalf("third attempt: %d, Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
	// ada from the same address: the address has 2 failures left of 4, then it is throttled too.
	if r := postLogin(t, client, base, csrf, "ada", "wrong"); r.status != http.StatusUnauthorized {
		t.Fatalf("another user: %d", r.status)
	}
	if r := postLogin(t, client, base, csrf, "no-such-user", "wrong"); r.status != http.StatusUnauthorized {
		t.Fatalf("unknown user: %d", r.status)
	}
	if r := postLogin(t, client, base, csrf, "ada", "pw-ada"); r.status != http.StatusTooManyRequests {
		t.Fatalf("the address after 4 failures: %d, want 429", r.status)
	}
}

// TestRolesOnOutboxActions runs the outbox repairs through the real console with tokens and
// sessions of each role, and reads the audit log for the allowed and the refused ones.
func TestRolesOnOutboxActions(t *testing.T) {
	t.Parallel()
	base, _ := authConsole(t, "")
	const release = "/api/v1/outboxes/orders/leases/release"

	r := bearer(t, "POST", base+release, "tok-viewer", `{"all_stuck":true}`)
	if r.status != http.StatusForbidden || !strings.Contains(r.body, "needs the operator role") {
		t.Fatalf("viewer token: %d %s", r.status, r.body)
	}
	r = do(t, nil, "POST", base+release, "application/json", `{"all_stuck":true}`)
	if r.status != http.StatusUnauthorized || !strings.Contains(r.body, `"code":"unauthorized"`) {
		t.Fatalf("anonymous: %d %s", r.status, r.body)
	}
	r = bearer(t, "POST", base+release, "tok-operator", `{"all_stuck":true,"reason":"relay-2 crashed"}`)
	if r.status != http.StatusOK || decode[map[string]int64](t, r)["released"] != 5 {
		t.Fatalf("operator token: %d %s", r.status, r.body)
	}

	// A session on the JSON API must send the CSRF token.
	otto, csrf := signedIn(t, base, "otto")
	r = do(t, otto, "POST", base+"/api/v1/outboxes/orders/events/requeue", "application/json", `{"ids":[1],"reason":"x"}`)
	if r.status != http.StatusForbidden || !strings.Contains(r.body, "CSRF") {
		t.Fatalf("cookie API call without the CSRF token: %d %s", r.status, r.body)
	}
	req, _ := http.NewRequest("POST", base+"/api/v1/outboxes/orders/events/requeue", strings.NewReader(`{"ids":[1],"reason":"schema fixed"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", csrf)
	resp, err := otto.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("cookie API call with the CSRF token: %d", resp.StatusCode)
	}

	rows := auditLog(t, base, "limit=20")
	want := []struct{ actor, role, action, outcome, reason string }{ // newest first
		{"otto", "operator", "outbox.requeue", "ok", "schema fixed"},
		{"otto", "operator", "POST /api/v1/outboxes/:name/events/requeue", "denied", "CSRF token missing or wrong"},
		{"otto", "operator", "auth.login", "ok", ""},
		{"token:operator-bot", "operator", "outbox.release_leases", "ok", "relay-2 crashed"},
		{"anonymous", "", "POST /api/v1/outboxes/:name/leases/release", "denied", "not signed in"},
		{"token:viewer-bot", "viewer", "POST /api/v1/outboxes/:name/leases/release", "denied", "needs the operator role"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d audit rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		g := rows[i]
		if g.Actor != w.actor || g.Role != w.role || g.Action != w.action || g.Outcome != w.outcome || g.Reason != w.reason ||
			g.SourceIP != "127.0.0.1" || g.UserAgent == "" {
			t.Errorf("audit row %d: %+v; want %+v", i, g, w)
		}
		if w.outcome == "denied" && g.Target != release && g.Target != "/api/v1/outboxes/orders/events/requeue" {
			t.Errorf("audit row %d target %q", i, g.Target)
		}
	}
}

func TestOutboxPayloadRedaction(t *testing.T) {
	t.Parallel()
	storeDSN, outboxDSN := pgtest.NewDatabase(t), seededOutbox(t)
	pgtest.Exec(t, outboxDSN, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version,
		payload, status, attempts, available_at, created_at)
		VALUES ('evt-card', 'Order', 'ord-card', 'OrderPaid', 1, $1, 'DEAD', 10, now(), now())`,
		`{"orderId":"ord-card","card":{"number":"4111 1111 1111 1111","exp":"12/29"},"email":"ann@example.com"}`)
	base := startConsole(t, fmt.Sprintf("store: {dsn: %q}\noutboxes: [{name: orders, dsn: %q}]\n%s"+
		"redaction: {headers: [authorization], json_paths: [\"$.card.number\", \"$.email\"]}\n",
		storeDSN, outboxDSN, basicAuth("")))

	list := bearer(t, "GET", base+"/api/v1/outboxes/orders/events?aggregate_id=ord-card", "tok-viewer", "")
	id := decode[struct{ Events []struct{ ID int64 } }](t, list).Events[0].ID
	path := fmt.Sprintf("/outboxes/orders/events/%d", id)

	for _, role := range []string{"viewer", "operator"} {
		r := bearer(t, "GET", base+"/api/v1"+path, "tok-"+role, "")
		if r.status != http.StatusOK || strings.Contains(r.body, "4111") || strings.Contains(r.body, "ann@example.com") ||
			!strings.Contains(r.body, `"payload_redacted":true`) || !strings.Contains(r.body, `"exp":"12/29"`) {
			t.Errorf("%s sees: %s", role, r.body)
		}
	}
	// Admins see masked content too, until they reveal it, which is audited.
	r := bearer(t, "GET", base+"/api/v1"+path, "tok-admin", "")
	if strings.Contains(r.body, "4111") || !strings.Contains(r.body, `"payload_redacted":true`) {
		t.Errorf("admin sees without revealing: %s", r.body)
	}
	r = bearer(t, "GET", base+"/api/v1"+path+"?reveal=true", "tok-admin", "")
	if !strings.Contains(r.body, "4111 1111 1111 1111") || strings.Contains(r.body, "payload_redacted") {
		t.Errorf("admin reveal: %s", r.body)
	}
	if r := bearer(t, "GET", base+"/api/v1"+path+"?reveal=true", "tok-operator", ""); r.status != http.StatusForbidden ||
		!strings.Contains(r.body, "admin") {
		t.Errorf("an operator's reveal: %d %s", r.status, r.body)
	}
	audit := bearer(t, "GET", base+"/api/v1/audit?action=content.reveal", "tok-admin", "")
	if !strings.Contains(audit.body, fmt.Sprintf(`"target":"outbox/orders/event/%d"`, id)) || strings.Count(audit.body, `"action":"content.reveal"`) != 1 {
		t.Errorf("the reveal is not audited once: %s", audit.body)
	}
	// Every page that can reveal writes the row first: the archive and the audit log's own details
	// too (they once took rules with no log, and revealed unaudited).
	for _, p := range []string{paths.APIArchive, paths.APIAudit} {
		if r := bearer(t, "GET", base+p+"?reveal=true", "tok-admin", ""); r.status != http.StatusOK {
			t.Fatalf("%s?reveal=true: %d %s", p, r.status, r.body)
		}
	}
	audit = bearer(t, "GET", base+"/api/v1/audit?action=content.reveal", "tok-admin", "")
	for _, target := range []string{"archive", "audit"} {
		if !strings.Contains(audit.body, `"target":"`+target+`"`) {
			t.Errorf("a reveal of %s is not audited: %s", target, audit.body)
		}
	}
	vera, _ := signedIn(t, base, "vera")
	page := do(t, vera, "GET", base+path, "", "")
	if page.status != http.StatusOK || strings.Contains(page.body, "4111") || !strings.Contains(page.body, "redacted") {
		t.Errorf("the event page shows a viewer the card number (status %d)", page.status)
	}
}

func TestHashCommands(t *testing.T) {
	t.Parallel()
	t.Run("Password", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if err := hashPasswordCommand([]string{"--cost", "4"}, strings.NewReader("s3cret pass\nignored"), &out, &errOut); err != nil {
			t.Fatal(err)
		}
		hash := strings.TrimSpace(out.String())
		if err := bcrypt.CompareHashAndPassword([]byte(hash), []byte("s3cret pass")); err != nil {
			t.Fatalf("%q does not verify: %v", hash, err)
		}
		for name, in := range map[string]string{"Empty": "\n", "TooLong": strings.Repeat("x", 73)} {
			if err := hashPasswordCommand(nil, strings.NewReader(in), &out, &errOut); err == nil {
				t.Errorf("%s password accepted", name)
			}
		}
		if err := hashPasswordCommand([]string{"--cost", "99"}, strings.NewReader("x"), &out, &errOut); err == nil {
			t.Error("cost 99 accepted")
		}
	})
	t.Run("TokenWorksWhenConfigured", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if err := hashTokenCommand([]string{"--name", "deploy", "--role", "operator"}, &out, &errOut); err != nil {
			t.Fatal(err)
		}
		var token, entry string
		for line := range strings.SplitSeq(out.String(), "\n") {
			if v, ok := strings.CutPrefix(line, "token:"); ok {
				token = strings.TrimSpace(v)
			}
			if strings.HasPrefix(line, "- {name:") {
				entry = line
			}
		}
		if !strings.HasPrefix(token, "rdv_") || entry == "" {
			t.Fatalf("output: %s", out.String())
		}
		base := startConsole(t, fmt.Sprintf("store: {dsn: %q}\nauth:\n  mode: basic\n  users: [{name: u, role: viewer, password_hash: %q}]\n  tokens:\n    %s\n",
			pgtest.NewDatabase(t), authHashOnceHash(t), entry))
		if r := bearer(t, "GET", base+"/api/v1/audit", token, ""); r.status != http.StatusOK {
			t.Fatalf("the printed token: %d %s", r.status, r.body)
		}
		if r := bearer(t, "GET", base+"/api/v1/audit", token+"x", ""); r.status != http.StatusUnauthorized {
			t.Fatalf("a wrong token: %d", r.status)
		}
		if err := hashTokenCommand([]string{"--role", "root"}, &out, &errOut); err == nil {
			t.Error("role root accepted")
		}
	})
}

func authHashOnceHash(t *testing.T) string {
	t.Helper()
	basicAuth("")
	return authHashes["vera"]
}
