package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/crypto/bcrypt"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/layout"
)

// rateOf is a configured token bucket as the login limiter takes it.
func rateOf(r configs.RateLimit) rateLimit { return rateLimit{burst: r.Burst, every: r.Every.D()} }

// parseRole reads a config role name; "" and unknown names (configs.Load refuses those) are
// access.Public: no role.
func parseRole(s string) access.Role {
	r, _ := access.ParseRole(s)
	return r
}

// How a request was authenticated.
const (
	viaNone    = "none"    // auth.mode none: everyone is the anonymous admin
	viaSession = "session" // the basic-mode session cookie
	viaProxy   = "proxy"   // headers from a trusted reverse proxy
	viaToken   = "token"   // Authorization: Bearer
)

// identity is who a request comes from: the actor the use cases see (its role access.Public when
// authenticated but granted no role) and how it was authenticated.
type identity struct {
	access.Actor
	via string
}

const (
	identityKey   = "redrive.identity"
	sessionCookie = "redrive_session"
)

func identityOf(c echo.Context) (identity, bool) {
	id, ok := c.Get(identityKey).(identity)
	return id, ok
}

// sessionStore keeps basic-mode sessions; *store.Store implements it, in PostgreSQL, so that every
// replica knows every session.
type sessionStore interface {
	CreateSession(ctx context.Context, tokenSHA256 []byte, user, role string, idle, absolute time.Duration) (access.Session, error)
	TouchSession(ctx context.Context, tokenSHA256 []byte, idle, touchAfter time.Duration) (access.Session, error)
	DeleteSession(ctx context.Context, tokenSHA256 []byte) error
}

type basicUser struct {
	hash []byte
	role access.Role
}

type apiToken struct {
	name  string
	sum   []byte
	role  access.Role
	owner string // the person it acts for (auth.tokens[].owner); "" for none
}

// authenticator identifies every request (session cookie, proxy headers, bearer token), enforces
// the route table's roles and the read-only switch, audits what it refuses, and signs people in
// and out (it implements handlers.Sessions).
type authenticator struct {
	mode     string
	readOnly bool
	log      *slog.Logger
	audit    handlers.Auditor
	sessions sessionStore
	// creds are the users, tokens and group roles: what a config reload replaces (see reload).
	creds         atomic.Pointer[credentials]
	trusted       []netip.Prefix
	proxy         configs.Proxy
	idle          time.Duration
	absolute      time.Duration
	secureCookies bool
	limits        *loginLimiter
	// roles is "METHOD /path" → the least role, filled from the route table as routes are added.
	roles map[string]access.Role
}

func newAuthenticator(cfg configs.Auth, readOnly bool, sessions sessionStore, audit handlers.Auditor, log *slog.Logger) (*authenticator, error) {
	trusted, err := cfg.TrustedPrefixes()
	if err != nil {
		return nil, fmt.Errorf("auth.trusted_proxies: %w", err)
	}
	a := &authenticator{mode: cfg.Mode, readOnly: readOnly, log: log, audit: audit, sessions: sessions,
		trusted: trusted, proxy: cfg.Proxy, idle: cfg.Session.IdleTimeout.D(),
		absolute: cfg.Session.AbsoluteTimeout.D(), secureCookies: cfg.SecureCookies, roles: map[string]access.Role{},
		limits: newLoginLimiter(rateOf(cfg.LoginLimits.PerUser), rateOf(cfg.LoginLimits.PerIP), rateOf(cfg.LoginLimits.PerUserNewAddresses))}
	switch cfg.Mode {
	case configs.AuthNone, configs.AuthProxy:
	case configs.AuthBasic:
		if sessions == nil {
			return nil, errors.New("auth.mode basic needs the store for sessions")
		}
		if a.idle <= 0 || a.absolute <= 0 {
			return nil, errors.New("auth.session: timeouts must be positive")
		}
	default:
		return nil, fmt.Errorf("auth.mode %q is not supported", cfg.Mode)
	}
	creds, err := newCredentials(cfg)
	if err != nil {
		return nil, err
	}
	a.creds.Store(creds)
	return a, nil
}

// credentials are the parts of the auth config that a reload may change while the console runs:
// who may sign in, with which role, and the API tokens. A request reads them once, whole.
type credentials struct {
	users       map[string]basicUser
	tokens      []apiToken
	groupRoles  map[string]access.Role
	defaultRole access.Role
	// dummyHash is checked when the user name is unknown, so that a wrong name takes as long as a
	// wrong password: its cost is the highest of the configured hashes.
	dummyHash []byte
}

func newCredentials(cfg configs.Auth) (*credentials, error) {
	c := &credentials{users: map[string]basicUser{}, groupRoles: map[string]access.Role{}, defaultRole: parseRole(cfg.Proxy.DefaultRole)}
	cost := bcrypt.MinCost
	for _, u := range cfg.Users {
		c.users[u.Name] = basicUser{hash: []byte(u.PasswordHash), role: parseRole(u.Role)}
		if n, err := bcrypt.Cost([]byte(u.PasswordHash)); err == nil {
			cost = max(cost, n)
		}
	}
	if cfg.Mode == configs.AuthBasic {
		var err error
		if c.dummyHash, err = bcrypt.GenerateFromPassword([]byte(rand.Text()), cost); err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
	}
	for _, t := range cfg.Tokens {
		sum, err := hex.DecodeString(strings.ToLower(string(t.SHA256)))
		if err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("auth.tokens %q: sha256 must be 64 hex digits", t.Name)
		}
		c.tokens = append(c.tokens, apiToken{name: t.Name, sum: sum, role: parseRole(t.Role), owner: t.Owner})
	}
	for g, r := range cfg.Proxy.GroupRoles {
		c.groupRoles[g] = parseRole(r)
	}
	return c, nil
}

// prepareReload builds the credentials of cfg and returns the function that puts them in place.
// What cannot change at run time (the mode, the proxy headers) is refused here, so that nothing
// is swapped when something is wrong.
func (a *authenticator) prepareReload(cfg configs.Auth) (commit func(), err error) {
	if cfg.Mode != a.mode {
		return nil, fmt.Errorf("auth.mode: changing it from %s to %s needs a restart", a.mode, cfg.Mode)
	}
	creds, err := newCredentials(cfg)
	if err != nil {
		return nil, err
	}
	return func() { a.creds.Store(creds) }, nil
}

// allow records a route's least role.
func (a *authenticator) allow(r Route) { a.roles[r.Method+" "+r.Path] = r.Role }

// required is the least role for the request's route. Requests that match no route (404, 405)
// need a viewer, so that an anonymous caller learns nothing from them.
func (a *authenticator) required(c echo.Context) access.Role {
	if r, ok := a.roles[c.Request().Method+" "+c.Path()]; ok {
		return r
	}
	return access.Viewer
}

func mutating(c echo.Context) bool {
	switch c.Request().Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// middleware authenticates the request and enforces its route's role, then the read-only switch.
// Public routes are not authenticated (no session lookup for static assets and health checks);
// the login handlers identify the caller themselves.
func (a *authenticator) middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := a.rejectUntrustedProxyHeaders(c); err != nil {
				return err
			}
			need := a.required(c)
			if need == access.Public {
				return next(c)
			}
			id, err := a.identify(c)
			if err != nil {
				return err
			}
			if id == nil {
				return a.unauthenticated(c)
			}
			if !id.Can(need) {
				msg := fmt.Sprintf("this needs the %s role; you are signed in as %s with the %s role", need, id.Name, id.Role)
				if id.Role == access.Public {
					msg = fmt.Sprintf("this needs the %s role; you are signed in as %s, but no role is granted to you", need, id.Name)
				}
				a.auditDenied(c, id, http.StatusForbidden, fmt.Sprintf("needs the %s role", need))
				return deniedHere(msg)
			}
			if a.readOnly && mutating(c) {
				a.auditDenied(c, id, http.StatusForbidden, "read-only mode")
				return deniedHere(
					"the console is in read-only mode (read_only: true in its config): browsing works, but no changes are allowed")
			}
			return next(c)
		}
	}
}

// identify finds who the request comes from and records it for the handlers (handlers.ActorOf).
// It returns nil without an error when the request carries no identity; a bearer token that
// matches no configured token is a 401.
func (a *authenticator) identify(c echo.Context) (*identity, error) {
	if id, ok := identityOf(c); ok {
		return &id, nil
	}
	id, err := a.lookup(c)
	if err != nil || id == nil {
		return nil, err
	}
	c.Set(identityKey, *id)
	handlers.SetActor(c, id.Actor)
	return id, nil
}

func (a *authenticator) lookup(c echo.Context) (*identity, error) {
	r := c.Request()
	authz := strings.TrimSpace(r.Header.Get(echo.HeaderAuthorization))
	if scheme, token, _ := strings.Cut(authz, " "); strings.EqualFold(scheme, "Bearer") {
		if id := a.token(strings.TrimSpace(token)); id != nil {
			return id, nil
		}
		if mutating(c) {
			a.auditDenied(c, nil, http.StatusUnauthorized, "invalid API token")
		}
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="redrive", error="invalid_token"`)
		return nil, echo.NewHTTPError(http.StatusUnauthorized, "invalid API token: it matches none of auth.tokens")
	}
	switch a.mode {
	case configs.AuthNone:
		return &identity{Actor: access.Actor{Name: "anonymous", Role: access.Admin}, via: viaNone}, nil
	case configs.AuthBasic:
		return a.session(c)
	case configs.AuthProxy:
		if a.trustedPeer(r) {
			return a.proxyIdentity(r), nil
		}
	}
	return nil, nil
}

// token finds the configured token; every configured hash is compared, in constant time.
func (a *authenticator) token(tok string) *identity {
	if tok == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(tok))
	var found *apiToken
	tokens := a.creds.Load().tokens
	for i := range tokens {
		if subtle.ConstantTimeCompare(sum[:], tokens[i].sum) == 1 {
			found = &tokens[i]
		}
	}
	if found == nil {
		return nil
	}
	return &identity{Actor: access.Actor{Name: "token:" + found.name, Role: found.role, Owner: found.owner}, via: viaToken}
}

// session reads the session cookie. The role is the user's role in the config now, so a changed
// role applies at once and a removed user is signed out.
func (a *authenticator) session(c echo.Context) (*identity, error) {
	ck, err := c.Cookie(sessionCookie)
	if err != nil || ck.Value == "" || len(ck.Value) > 128 {
		return nil, nil
	}
	sum := sha256.Sum256([]byte(ck.Value))
	s, err := a.sessions.TouchSession(c.Request().Context(), sum[:], a.idle, min(a.idle/4, time.Minute))
	if errors.Is(err, ops.ErrNotFound) {
		a.clearSessionCookie(c)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	u, ok := a.creds.Load().users[s.User]
	if !ok {
		return nil, nil
	}
	return &identity{Actor: access.Actor{Name: s.User, Role: u.role}, via: viaSession}, nil
}

// proxyIdentity reads the identity headers of a trusted proxy; the role is the highest one of the
// user's mapped groups, or auth.proxy.default_role.
func (a *authenticator) proxyIdentity(r *http.Request) *identity {
	user := strings.TrimSpace(r.Header.Get(a.proxy.UserHeader))
	email := strings.TrimSpace(r.Header.Get(a.proxy.EmailHeader))
	if user == "" {
		user = email
	}
	if user == "" {
		return nil
	}
	user = capString(user, 256)
	creds := a.creds.Load()
	role, mapped := access.Public, false
	for _, h := range r.Header.Values(a.proxy.GroupsHeader) {
		for g := range strings.SplitSeq(h, ",") {
			if gr, ok := creds.groupRoles[strings.TrimSpace(g)]; ok {
				role, mapped = max(role, gr), true
			}
		}
	}
	if !mapped {
		role = creds.defaultRole
	}
	return &identity{Actor: access.Actor{Name: user, Email: email, Role: role}, via: viaProxy}
}

// peer is the address the TCP connection comes from: the proxy, when there is one.
func peer(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return ip.Unmap().WithZone("")
}

func (a *authenticator) trustedPeer(r *http.Request) bool {
	ip := peer(r)
	return ip.IsValid() && slices.ContainsFunc(a.trusted, func(p netip.Prefix) bool { return p.Contains(ip) })
}

// rejectUntrustedProxyHeaders refuses, in proxy mode, identity headers that do not come from a
// trusted proxy: someone is trying to pass as someone else, or the proxy list is wrong. Either
// way it is audited.
func (a *authenticator) rejectUntrustedProxyHeaders(c echo.Context) error {
	r := c.Request()
	if a.mode != configs.AuthProxy || a.trustedPeer(r) {
		return nil
	}
	var sent []string
	for _, h := range []string{a.proxy.UserHeader, a.proxy.EmailHeader, a.proxy.GroupsHeader} {
		if _, ok := r.Header[http.CanonicalHeaderKey(h)]; ok {
			sent = append(sent, h)
		}
	}
	if len(sent) == 0 {
		return nil
	}
	a.auditDenied(c, nil, http.StatusForbidden, fmt.Sprintf("identity headers (%s) from %s, which is not in auth.trusted_proxies",
		strings.Join(sent, ", "), peer(r)))
	return deniedHere(fmt.Sprintf(
		"identity headers (%s) are accepted only from the proxies in auth.trusted_proxies; this request came from %s",
		strings.Join(sent, ", "), peer(r)))
}

// unauthenticated answers a request without an identity: 401 JSON under /api, a redirect to the
// login form for a page in basic mode (HX-Redirect for htmx), else a 401 page.
func (a *authenticator) unauthenticated(c echo.Context) error {
	if mutating(c) {
		a.auditDenied(c, nil, http.StatusUnauthorized, "not signed in")
	}
	r := c.Request()
	how := "send an API token as Authorization: Bearer <token>"
	switch a.mode {
	case configs.AuthBasic:
		how = "sign in at /login, or " + how
	case configs.AuthProxy:
		how = "sign in through the proxy, or " + how
	}
	if strings.HasPrefix(r.URL.Path, paths.APIPrefix) {
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="redrive"`)
		return echo.NewHTTPError(http.StatusUnauthorized, "not signed in: "+how)
	}
	if a.mode == configs.AuthBasic {
		if r.Header.Get("HX-Request") == "true" {
			next := paths.Overview
			if u, err := url.Parse(r.Header.Get("HX-Current-URL")); err == nil && u.Path != "" {
				next = u.RequestURI()
			}
			c.Response().Header().Set("HX-Redirect", paths.LoginNext(next))
		} else if !mutating(c) {
			return c.Redirect(http.StatusSeeOther, paths.LoginNext(r.URL.RequestURI()))
		}
	}
	return echo.NewHTTPError(http.StatusUnauthorized, "not signed in: "+how)
}

// auditRefusals audits, as a denied request, each refusal a handler or a use case decided — a
// reveal asked by a non-admin, a force or a job above replay.operator_max_messages by an operator,
// a redirect outside replay.allowed_destinations, another person's job cancelled, a self-approval,
// an export below export.min_role — with the reason it gave, unless the code that decided it wrote
// its row already (ops.RefusalAudited). The route-level refusals are audited by middleware, before.
func (a *authenticator) auditRefusals(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err != nil && ops.IsUnauditedRefusal(err) {
			var id *identity
			if v, ok := identityOf(c); ok {
				id = &v
			}
			a.auditDenied(c, id, http.StatusForbidden, capString(ops.Message(err), 1000))
			err = ops.RefusalAudited(err)
		}
		return err
	}
}

// auditDenied writes a refused request to the audit log. The refusal stands even when the audit
// log cannot be written; that failure is logged.
func (a *authenticator) auditDenied(c echo.Context, id *identity, status int, reason string) {
	r := c.Request()
	e := audit.Entry{Actor: "anonymous", SourceIP: c.RealIP(), UserAgent: capString(r.UserAgent(), 512),
		Action: r.Method + " " + routePath(c), Target: capString(r.URL.Path, 512), Reason: reason,
		Outcome: audit.OutcomeDenied, Detail: map[string]any{"status": status}}
	if id != nil {
		e.Actor, e.Role = id.Name, id.Role.String()
		e.Detail["via"] = id.via
		if id.Email != "" {
			e.Detail["email"] = id.Email
		}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if err := a.audit.RecordAudit(ctx, e); err != nil {
		a.log.Error("audit of a denied request failed", "err", err, "action", e.Action, "actor", e.Actor,
			"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
	}
}

func routePath(c echo.Context) string {
	if p := c.Path(); p != "" {
		return p
	}
	return capString(c.Request().URL.Path, 512)
}

// capString cuts s, which a client sent, to at most n bytes on a character boundary.
func capString(s string, n int) string {
	s, _ = payload.Cut(s, n)
	return s
}

// csrfExempt: requests authenticated with a bearer token carry no ambient credential a forged
// cross-site request could use, so they need no CSRF token. In auth.mode none the JSON API stays
// exempt too for scripts and API clients, but not for a request a browser says comes from another
// origin: the API's mutations that read no body (reload, cancel, approve, a test notification)
// could be posted by any page the operator visits, as the anonymous admin. Everything else,
// cookie- or proxy-authenticated JSON included, must send the token.
func (a *authenticator) csrfExempt(c echo.Context) bool {
	if id, ok := identityOf(c); ok && id.via == viaToken {
		return true
	}
	return a.mode == configs.AuthNone && strings.HasPrefix(c.Path(), paths.APIPrefix) && !fromAnotherOrigin(c.Request())
}

// fromAnotherOrigin tells whether a browser sent r from a page of another origin (another port
// of the same host included): its Fetch metadata says so, or its Origin is not this host.
func fromAnotherOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	return err != nil || u.Host != r.Host
}

// auditCSRF wraps the CSRF middleware so that the requests it refuses are audited, and answered
// in words for a person: every error the middleware returns before the handler is reached is a
// refusal (a missing token is echo's 400; a wrong one, or a cross-site form, its 403), and all
// of them are a 403.
func (a *authenticator) auditCSRF(csrf echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if token, ok := a.sessionCSRF(c); ok {
				return a.checkSessionCSRF(c, token, next)
			}
			reached := false
			err := csrf(func(c echo.Context) error {
				reached = true
				return next(c)
			})(c)
			if err == nil || reached {
				return err
			}
			var id *identity
			if v, ok := identityOf(c); ok {
				id = &v
			}
			a.auditDenied(c, id, http.StatusForbidden, "CSRF token missing or wrong")
			return csrfRefusal(err)
		}
	}
}

// sessionCSRF is the CSRF token of a request signed in with a session cookie: derived from the
// session's secret token (HMAC-SHA256 keyed with it), so it is bound to that session — a token
// planted in the browser's CSRF cookie (from a sibling subdomain, say), or another session's,
// does not pass — and any replica derives the same from the cookie alone. ok is false for every
// other request, which keeps the CSRF cookie's token (the sign-in form, proxy mode).
func (a *authenticator) sessionCSRF(c echo.Context) (token string, ok bool) {
	id, signedIn := identityOf(c)
	if !signedIn && mutating(c) {
		// A public route (POST /logout) is not identified by the middleware: a change is.
		if found, err := a.identify(c); err == nil && found != nil {
			id, signedIn = *found, true
		}
	}
	if !signedIn || id.via != viaSession {
		return "", false
	}
	ck, err := c.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return "", false
	}
	m := hmac.New(sha256.New, []byte(ck.Value))
	m.Write([]byte("redrive csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)), true
}

// checkSessionCSRF is the CSRF check of a session's request: the page gets the session's token
// (csrfKey), and a change must send it (X-CSRF-Token, or the form's _csrf) unless the browser
// says it comes from this origin (Sec-Fetch-Site: same-origin), as for the CSRF cookie's token.
// A refusal is audited and answered as the middleware's.
func (a *authenticator) checkSessionCSRF(c echo.Context, token string, next echo.HandlerFunc) error {
	c.Set(csrfKey, token)
	r := c.Request()
	if !mutating(c) || a.csrfExempt(c) || r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return next(c)
	}
	sent := r.Header.Get(echo.HeaderXCSRFToken)
	if sent != "" && subtle.ConstantTimeCompare([]byte(sent), []byte(token)) == 1 {
		return next(c)
	}
	id, _ := identityOf(c)
	a.auditDenied(c, &id, http.StatusForbidden, "CSRF token missing or wrong")
	if sent == "" {
		return csrfRefusal(echo.NewHTTPError(http.StatusBadRequest, "missing csrf token in request header"))
	}
	return csrfRefusal(echo.NewHTTPError(http.StatusForbidden, "invalid csrf token"))
}

// deniedHere is a 403 that the middleware refusing the request audited itself: an ops.ErrForbidden
// with msg for the person, not marked a rule's refusal (ops.Forbidden), which the error path would
// audit a second time.
func deniedHere(msg string) error { return &ops.Error{Kind: ops.ErrForbidden, Message: msg} }

// csrfRefusal is the CSRF middleware's refusal as an ops.ErrForbidden saying what to do.
func csrfRefusal(err error) error {
	msg := "missing or invalid CSRF token: reload the page and try again"
	if he := (*echo.HTTPError)(nil); errors.As(err, &he) && he.Code == http.StatusBadRequest {
		msg = "missing CSRF token: reload the page and try again"
	}
	return &ops.Error{Kind: ops.ErrForbidden, Message: msg, Err: err}
}

// ipExtractor believes X-Forwarded-For only from the trusted proxies.
func (a *authenticator) ipExtractor() echo.IPExtractor {
	if len(a.trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range a.trusted {
		_, n, err := net.ParseCIDR(p.String())
		if err == nil {
			opts = append(opts, echo.TrustIPRange(n))
		}
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// secure reports whether cookies set on this request must be Secure.
func (a *authenticator) secure(c echo.Context) bool {
	r := c.Request()
	return a.secureCookies || r.TLS != nil ||
		(a.trustedPeer(r) && strings.EqualFold(r.Header.Get(echo.HeaderXForwardedProto), "https"))
}

// fillMeta puts the signed-in user and what they may do into a page's layout data.
func (a *authenticator) fillMeta(c echo.Context, m *layout.Meta) {
	id, ok := identityOf(c)
	if !ok {
		return
	}
	if a.mode != configs.AuthNone || id.via == viaToken {
		m.User, m.Role = id.Name, id.Role.String()
	}
	m.CanOperate = id.Can(access.Operator) && !a.readOnly
	m.CanAdmin = id.Can(access.Admin)
}

// ---- handlers.Sessions ----

// FormLogin reports whether the login form is used (basic mode).
func (a *authenticator) FormLogin() bool { return a.mode == configs.AuthBasic }

// SignedIn reports whether the request carries a valid identity with a role.
func (a *authenticator) SignedIn(c echo.Context) bool {
	id, err := a.identify(c)
	return err == nil && id != nil && id.Can(access.Viewer)
}

// SignIn checks the password (throttled per user and address) and starts a new session: a session
// the browser already had is ended, so a planted cookie cannot be signed in (session fixation).
func (a *authenticator) SignIn(c echo.Context, user, password string) error {
	creds := a.creds.Load()
	u, known := creds.users[user]
	limitUser := ""
	if known {
		limitUser = user
	}
	ip := c.RealIP()
	end, wait := a.limits.begin(limitUser, ip)
	if wait > 0 {
		a.log.Warn("sign-in throttled", "user", user, "ip", ip, "retry_after", wait)
		return &handlers.ThrottledError{RetryAfter: wait}
	}
	hash := creds.dummyHash
	if known {
		hash = u.hash
	}
	if err := bcrypt.CompareHashAndPassword(hash, []byte(password)); err != nil || !known {
		end(false)
		return handlers.ErrBadCredentials
	}
	end(true)
	ctx := c.Request().Context()
	if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
		old := sha256.Sum256([]byte(ck.Value))
		if err := a.sessions.DeleteSession(ctx, old[:]); err != nil {
			return err
		}
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("session token: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	sum := sha256.Sum256([]byte(token))
	if _, err := a.sessions.CreateSession(ctx, sum[:], user, u.role.String(), a.idle, a.absolute); err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: a.secure(c), MaxAge: int(a.absolute / time.Second)})
	id := identity{Actor: access.Actor{Name: user, Role: u.role}, via: viaSession}
	c.Set(identityKey, id)
	handlers.SetActor(c, id.Actor)
	return nil
}

// SignOut ends the request's session and says where the browser goes next.
func (a *authenticator) SignOut(c echo.Context) (string, error) {
	_, _ = a.identify(c) // for the audit log's actor; an expired session signs out all the same
	if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" && a.sessions != nil {
		sum := sha256.Sum256([]byte(ck.Value))
		if err := a.sessions.DeleteSession(c.Request().Context(), sum[:]); err != nil {
			return "", err
		}
		a.clearSessionCookie(c)
	}
	switch a.mode {
	case configs.AuthBasic:
		return paths.Login, nil
	case configs.AuthProxy:
		return a.proxy.LogoutURL, nil
	}
	return paths.Overview, nil
}

func (a *authenticator) clearSessionCookie(c echo.Context) {
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: a.secure(c), MaxAge: -1})
}

// authRoutes are the sign-in and sign-out routes; they are public, and CSRF-protected like every
// other form.
func authRoutes(h *handlers.Login) []Route {
	return []Route{
		{http.MethodGet, paths.Login, h.Page, access.Public},
		{http.MethodPost, paths.Login, h.Submit, access.Public},
		{http.MethodPost, paths.Logout, h.Logout, access.Public},
	}
}
