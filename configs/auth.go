package configs

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/jsonpath"
)

// Auth modes.
const (
	AuthNone  = "none"  // no authentication: loopback only, a red banner on every page
	AuthBasic = "basic" // users and bcrypt hashes in this file, a login form and a session cookie
	AuthProxy = "proxy" // identity from the headers of an authenticating reverse proxy
)

// validRole reports whether r is one of the role names (access.ParseRole: viewer, operator, admin).
func validRole(r string) bool {
	_, err := access.ParseRole(r)
	return err == nil
}

// Auth selects how people and scripts are identified and what each may do.
type Auth struct {
	// Mode is none, basic or proxy. Required: running without authentication must be a choice.
	Mode string `yaml:"mode"`
	// TrustedProxies are the reverse proxies in front of the console, as CIDRs or single
	// addresses. Only from them is X-Forwarded-For believed for the client address (audit log,
	// login throttling) and X-Forwarded-Proto for Secure cookies; in proxy mode only from them are
	// the identity headers accepted. Empty: no proxy is trusted.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// AllowedHosts are the Host header values the console answers to, as host or host:port
	// (case-insensitive); other hosts get 403, which defeats DNS rebinding. In mode none the listen
	// address, localhost, 127.0.0.1 and [::1] on the listen port are allowed besides them; in the
	// other modes an empty list allows any host. /healthz and /readyz answer every host (probes
	// use the pod's address).
	AllowedHosts []string `yaml:"allowed_hosts"`
	// SecureCookies marks the session and CSRF cookies Secure even though the console serves plain
	// HTTP (TLS ends at a proxy that does not send X-Forwarded-Proto). They are Secure anyway when
	// the request came over TLS.
	SecureCookies bool `yaml:"secure_cookies"`
	// Session sets the lifetime of a basic-mode session.
	Session Session `yaml:"session"`
	// Users sign in with the login form (basic mode only).
	Users []User `yaml:"users"`
	// LoginLimits throttle failed sign-ins (basic mode).
	LoginLimits LoginLimits `yaml:"login_limits"`
	// Proxy reads the identity set by an authenticating reverse proxy (proxy mode only).
	Proxy Proxy `yaml:"proxy"`
	// Tokens are API tokens for scripts (Authorization: Bearer …), in every mode.
	Tokens []APIToken `yaml:"tokens"`
}

// Session is the lifetime of a signed-in session.
type Session struct {
	// IdleTimeout ends a session nobody used for this long; default 30m.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// AbsoluteTimeout ends a session this long after sign-in, used or not; default 12h.
	AbsoluteTimeout Duration `yaml:"absolute_timeout"`
}

// User is one basic-mode user.
type User struct {
	Name string `yaml:"name"` // required, unique; recorded as the actor in the audit log
	// PasswordHash is a bcrypt hash, as printed by `console hash-password`.
	PasswordHash Secret `yaml:"password_hash"`
	Role         string `yaml:"role"` // viewer, operator or admin
}

// LoginLimits throttle failed sign-ins with token buckets: Burst failures at once, then one more
// per Every. Only failures count: a correct password costs nothing and clears its user's failures
// from its address. A throttled sign-in answers 429 without checking the password.
type LoginLimits struct {
	// PerUser counts one user's failures from one client address (an IPv6 /64): someone guessing
	// from elsewhere does not throttle the person's own address. Default burst 5, every 1m.
	PerUser RateLimit `yaml:"per_user"`
	// PerIP counts one address's failures, whatever the user. Default burst 20, every 10s.
	PerIP RateLimit `yaml:"per_ip"`
	// PerUserNewAddresses counts one user's failures from every address the user has not signed
	// in from in the last 30 days, together (many addresses guessing one password); the addresses
	// the person signed in from are not throttled by it. Default burst 20, every 1m.
	PerUserNewAddresses RateLimit `yaml:"per_user_new_addresses"`
}

// RateLimit is one token bucket.
type RateLimit struct {
	Burst int      `yaml:"burst"`
	Every Duration `yaml:"every"`
}

// Proxy names the headers an authenticating reverse proxy (oauth2-proxy, …) sets, and maps its
// groups to roles.
type Proxy struct {
	UserHeader   string `yaml:"user_header"`   // default X-Forwarded-User
	EmailHeader  string `yaml:"email_header"`  // default X-Forwarded-Email; the actor when the user header is empty
	GroupsHeader string `yaml:"groups_header"` // default X-Forwarded-Groups; comma-separated
	// GroupRoles maps a group to a role; a user gets the highest role of their groups.
	GroupRoles map[string]string `yaml:"group_roles"`
	// DefaultRole is the role of a user none of whose groups is mapped; "" means no role (403).
	DefaultRole string `yaml:"default_role"`
	// LogoutURL is where "Sign out" sends the browser; default /oauth2/sign_out (oauth2-proxy).
	LogoutURL string `yaml:"logout_url"`
}

// APIToken is a script's bearer token, stored as the SHA-256 of the token (`console hash-token`).
type APIToken struct {
	Name   string `yaml:"name"`   // required, unique; the audit log's actor is "token:<name>"
	SHA256 Secret `yaml:"sha256"` // 64 hex digits
	Role   string `yaml:"role"`   // viewer, operator or admin
	// Owner is the person the token acts for (a user's name, as auth.users or the proxy names
	// them): the two-person rule counts people, so a token cannot approve its owner's jobs, nor its
	// owner its jobs, and two tokens of one owner are one person. Empty: the token is a person
	// of its own.
	Owner string `yaml:"owner"`
}

// Redaction hides message content from viewers and operators (admins see everything).
type Redaction struct {
	// Headers are message header names whose values are masked, case-insensitive.
	Headers []string `yaml:"headers"`
	// JSONPaths are paths into JSON payloads whose values are masked: $.card.number,
	// $.items[*].iban, $.customer.*, $['odd.key'].
	JSONPaths []string `yaml:"json_paths"`
}

func (a *Auth) applyDefaults() {
	a.Session.IdleTimeout = cmp.Or(a.Session.IdleTimeout, Duration(30*time.Minute))
	a.Session.AbsoluteTimeout = cmp.Or(a.Session.AbsoluteTimeout, Duration(12*time.Hour))
	a.LoginLimits.PerUser = cmp.Or(a.LoginLimits.PerUser, RateLimit{Burst: 5, Every: Duration(time.Minute)})
	a.LoginLimits.PerIP = cmp.Or(a.LoginLimits.PerIP, RateLimit{Burst: 20, Every: Duration(10 * time.Second)})
	a.LoginLimits.PerUserNewAddresses = cmp.Or(a.LoginLimits.PerUserNewAddresses, RateLimit{Burst: 20, Every: Duration(time.Minute)})
	p := &a.Proxy
	p.UserHeader = cmp.Or(p.UserHeader, "X-Forwarded-User")
	p.EmailHeader = cmp.Or(p.EmailHeader, "X-Forwarded-Email")
	p.GroupsHeader = cmp.Or(p.GroupsHeader, "X-Forwarded-Groups")
	p.LogoutURL = cmp.Or(p.LogoutURL, "/oauth2/sign_out")
}

var (
	headerNameRe = regexp.MustCompile(`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`)
	hostNameRe   = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_.-]{0,252})$`)
	tokenNameRe  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,62}$`)
)

// validAllowedHost accepts a host name, an IPv4 address or a bracketed IPv6 address, optionally
// followed by :port — what a Host header holds, without a scheme or a path.
func validAllowedHost(h string) bool {
	if h == "" || strings.ContainsAny(h, "/ @?#") {
		return false
	}
	host := h
	if hp, port, err := net.SplitHostPort(h); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return false
		}
		host = hp
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		host = h[1 : len(h)-1]
	} else if strings.Contains(h, ":") {
		return false // an IPv6 address needs brackets, a port needs a host
	}
	if strings.Contains(host, ":") || strings.HasPrefix(h, "[") { // IPv6, in brackets
		_, err := netip.ParseAddr(host)
		return err == nil
	}
	return hostNameRe.MatchString(host)
}

// TrustedPrefixes parses TrustedProxies (validated by Validate); a single address is a /32 or /128.
func (a *Auth) TrustedPrefixes() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range a.TrustedProxies {
		p, err := parsePrefix(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR like 10.0.0.0/8 or an address", s)
		}
		return p.Masked(), nil
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a CIDR like 10.0.0.0/8 or an address", s)
	}
	ip = ip.Unmap()
	return netip.PrefixFrom(ip, ip.BitLen()), nil
}

// validate checks the auth section; listen is the console's listen address.
func (a *Auth) validate(listen string, bad func(key, format string, args ...any)) {
	switch a.Mode {
	case AuthNone:
		host, _, _ := net.SplitHostPort(listen)
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			bad("auth.mode", "none is only allowed when listen is a loopback address, got %q", listen)
		}
	case AuthBasic:
		if len(a.Users) == 0 {
			bad("auth.users", "required in basic mode: at least one user (hash passwords with `console hash-password`)")
		}
	case AuthProxy:
		if len(a.TrustedProxies) == 0 {
			bad("auth.trusted_proxies", "required in proxy mode: the addresses of the proxy that sets the identity headers")
		}
	case "":
		bad("auth.mode", "required; set it to none explicitly to run without authentication on loopback")
	default:
		bad("auth.mode", "unknown mode %q (supported: none, basic, proxy)", a.Mode)
	}
	for i, s := range a.TrustedProxies {
		if _, err := parsePrefix(s); err != nil {
			bad(fmt.Sprintf("auth.trusted_proxies[%d]", i), "%v", err)
		}
	}
	for i, h := range a.AllowedHosts {
		if !validAllowedHost(h) {
			bad(fmt.Sprintf("auth.allowed_hosts[%d]", i), "%q must be a host name or address, optionally with :port (console.example.com, 10.0.0.5:8080, [::1]:8080)", h)
		}
	}
	s := a.Session
	if s.IdleTimeout <= 0 {
		bad("auth.session.idle_timeout", "must be positive")
	}
	if s.AbsoluteTimeout <= 0 {
		bad("auth.session.absolute_timeout", "must be positive")
	} else if s.IdleTimeout > s.AbsoluteTimeout {
		bad("auth.session.idle_timeout", "must not be longer than absolute_timeout (%s)", s.AbsoluteTimeout.D())
	}
	for _, l := range []struct {
		key string
		RateLimit
	}{{"auth.login_limits.per_user", a.LoginLimits.PerUser}, {"auth.login_limits.per_ip", a.LoginLimits.PerIP},
		{"auth.login_limits.per_user_new_addresses", a.LoginLimits.PerUserNewAddresses}} {
		if l.Burst < 1 {
			bad(l.key+".burst", "must be at least 1")
		}
		if l.Every <= 0 {
			bad(l.key+".every", "must be a positive duration")
		}
	}

	if len(a.Users) > 0 && a.Mode != AuthBasic {
		bad("auth.users", "only used in basic mode (auth.mode is %q)", a.Mode)
	}
	users := map[string]bool{}
	for i, u := range a.Users {
		p := fmt.Sprintf("auth.users[%d]", i)
		switch {
		case u.Name == "":
			bad(p+".name", "required")
		case len(u.Name) > 128 || strings.TrimSpace(u.Name) != u.Name:
			bad(p+".name", "%q must be at most 128 characters without leading or trailing spaces", u.Name)
		case users[u.Name]:
			bad(p+".name", "%q is used twice", u.Name)
		}
		users[u.Name] = true
		if _, err := bcrypt.Cost([]byte(u.PasswordHash)); err != nil {
			bad(p+".password_hash", "must be a bcrypt hash ($2a$…, $2b$…); make one with `console hash-password`")
		}
		if !validRole(u.Role) {
			bad(p+".role", "must be viewer, operator or admin, got %q", u.Role)
		}
	}

	px := a.Proxy
	for _, h := range [][2]string{{"user_header", px.UserHeader}, {"email_header", px.EmailHeader},
		{"groups_header", px.GroupsHeader}} {
		if !headerNameRe.MatchString(h[1]) {
			bad("auth.proxy."+h[0], "%q is not an HTTP header name", h[1])
		}
	}
	for _, g := range slices.Sorted(maps.Keys(px.GroupRoles)) {
		if r := px.GroupRoles[g]; !validRole(r) {
			bad("auth.proxy.group_roles."+g, "must be viewer, operator or admin, got %q", r)
		}
	}
	if px.DefaultRole != "" && !validRole(px.DefaultRole) {
		bad("auth.proxy.default_role", "must be empty (no role), viewer, operator or admin, got %q", px.DefaultRole)
	}

	tokens, hashes := map[string]bool{}, map[string]bool{}
	for i, t := range a.Tokens {
		p := fmt.Sprintf("auth.tokens[%d]", i)
		switch {
		case t.Name == "":
			bad(p+".name", "required")
		case !tokenNameRe.MatchString(t.Name):
			bad(p+".name", "%q must be letters, digits, '.', '_', '@' or '-'", t.Name)
		case tokens[t.Name]:
			bad(p+".name", "%q is used twice", t.Name)
		}
		tokens[t.Name] = true
		h := strings.ToLower(string(t.SHA256))
		if b, err := hex.DecodeString(h); err != nil || len(b) != 32 {
			bad(p+".sha256", "must be 64 hex digits: the SHA-256 of the token, as printed by `console hash-token`")
		} else if hashes[h] {
			bad(p+".sha256", "the same token is configured twice")
		}
		hashes[h] = true
		if !validRole(t.Role) {
			bad(p+".role", "must be viewer, operator or admin, got %q", t.Role)
		}
		if t.Owner != "" && (strings.TrimSpace(t.Owner) != t.Owner || strings.HasPrefix(t.Owner, "token:") || len(t.Owner) > 200) {
			bad(p+".owner", "%q must be the name of a person (a user), without surrounding spaces", t.Owner)
		}
	}
}

func (r *Redaction) validate(bad func(key, format string, args ...any)) {
	for i, h := range r.Headers {
		if strings.TrimSpace(h) == "" {
			bad(fmt.Sprintf("redaction.headers[%d]", i), "must not be empty")
		}
	}
	for i, p := range r.JSONPaths {
		if _, err := jsonpath.Parse(p); err != nil {
			bad(fmt.Sprintf("redaction.json_paths[%d]", i),
				"%q must be a path like $.card.number, $.items[*].iban or $['odd.key']", p)
		}
	}
}
