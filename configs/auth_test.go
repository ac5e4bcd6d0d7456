package configs

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// A bcrypt hash of "pw" (cost 4) and the SHA-256 of "tok".
const (
	testHash   = "$2a$04$DPVJ5kX3HB1OOpLj8PWUaOOFA2Uzl6q2KcH2hPOh4q0btWNr0inqW"
	testSHA256 = "1a7674eb4ee78df7e1ac439a93c3fa8e3c945784d4dec9fd8e3011738b2f1d62"
)

const store = "store: {dsn: \"postgres://u:p@127.0.0.1/redrive\"}\n"

// basicAuth is an auth section in basic mode with one user (alice, operator) and one API token
// (ci, viewer).
var basicAuth = fmt.Sprintf(`
auth:
  mode: basic
  users: [{name: alice, role: operator, password_hash: %q}]
  tokens: [{name: ci, role: viewer, sha256: %s}]
`, testHash, testSHA256)

func TestAuthModes(t *testing.T) {
	t.Run("Basic", func(t *testing.T) {
		cfg, err := Parse([]byte(store+"listen: 0.0.0.0:8080\n"+basicAuth), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		a := cfg.Auth
		if a.Session.IdleTimeout.D() != 30*time.Minute || a.Session.AbsoluteTimeout.D() != 12*time.Hour ||
			a.LoginLimits.PerUser != (RateLimit{5, Duration(time.Minute)}) || a.LoginLimits.PerIP.Burst != 20 ||
			a.Proxy.UserHeader != "X-Forwarded-User" || a.Proxy.LogoutURL != "/oauth2/sign_out" {
			t.Errorf("defaults: %+v", a)
		}
	})
	t.Run("Proxy", func(t *testing.T) {
		cfg, err := Parse([]byte(store+`
listen: 0.0.0.0:8080
auth:
  mode: proxy
  trusted_proxies: [10.0.0.0/8, 192.168.1.7, "::1"]
  proxy: {user_header: X-Auth-Request-User, group_roles: {sre: operator}, default_role: viewer}
`), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		p, err := cfg.Auth.TrustedPrefixes()
		want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"), netip.MustParsePrefix("::1/128")}
		if err != nil || fmt.Sprint(p) != fmt.Sprint(want) {
			t.Errorf("trusted prefixes %v %v, want %v", p, err, want)
		}
	})
	t.Run("Redaction", func(t *testing.T) {
		if _, err := Parse([]byte(minimal+`redaction: {headers: [authorization], json_paths: ["$.card.number", "$.items[*].iban", "$['a.b']", "$.*"]}`), env(nil)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAuthInvalid(t *testing.T) {
	user := fmt.Sprintf("{name: alice, role: operator, password_hash: %q}", testHash)
	cases := []struct{ name, yaml, want string }{
		{"BasicWithoutUsers", "auth: {mode: basic}", "auth.users: required in basic mode"},
		{"ProxyWithoutTrusted", "auth: {mode: proxy}", "auth.trusted_proxies: required in proxy mode"},
		{"UnknownMode", "auth: {mode: ldap}", "auth.mode: unknown mode \"ldap\" (supported: none, basic, proxy)"},
		{"BadHash", "auth: {mode: basic, users: [{name: a, role: viewer, password_hash: hunter2}]}", "auth.users[0].password_hash: must be a bcrypt hash"},
		{"BadRole", fmt.Sprintf("auth: {mode: basic, users: [{name: a, role: root, password_hash: %q}]}", testHash), "auth.users[0].role"},
		{"DuplicateUser", "auth: {mode: basic, users: [" + user + ", " + user + "]}", "auth.users[1].name: \"alice\" is used twice"},
		{"UsersOutsideBasic", "auth: {mode: none, users: [" + user + "]}", "auth.users: only used in basic mode"},
		{"BadCIDR", "auth: {mode: proxy, trusted_proxies: [10.0.0.0/33]}", "auth.trusted_proxies[0]"},
		{"BadHeader", "auth: {mode: proxy, trusted_proxies: [10.0.0.1], proxy: {user_header: \"X User\"}}", "auth.proxy.user_header"},
		{"BadGroupRole", "auth: {mode: proxy, trusted_proxies: [10.0.0.1], proxy: {group_roles: {sre: boss}}}", "auth.proxy.group_roles.sre"},
		{"BadDefaultRole", "auth: {mode: proxy, trusted_proxies: [10.0.0.1], proxy: {default_role: boss}}", "auth.proxy.default_role"},
		{"IdleLongerThanAbsolute", "auth: {mode: none, session: {idle_timeout: 2h, absolute_timeout: 1h}}", "auth.session.idle_timeout: must not be longer"},
		{"ZeroBurst", "auth: {mode: none, login_limits: {per_ip: {burst: -1, every: 1s}}}", "auth.login_limits.per_ip.burst"},
		{"TokenBadHash", "auth: {mode: none, tokens: [{name: ci, role: viewer, sha256: abc}]}", "auth.tokens[0].sha256: must be 64 hex digits"},
		{"TokenTwice", fmt.Sprintf("auth: {mode: none, tokens: [{name: a, role: viewer, sha256: %s}, {name: b, role: admin, sha256: %s}]}",
			testSHA256, strings.ToUpper(testSHA256)), "auth.tokens[1].sha256: the same token is configured twice"},
		{"TokenBadName", fmt.Sprintf("auth: {mode: none, tokens: [{name: \"a b\", role: viewer, sha256: %s}]}", testSHA256), "auth.tokens[0].name"},
		{"RedactionBadPath", "auth: {mode: none}\nredaction: {json_paths: [card.number]}", "redaction.json_paths[0]"},
		{"UnknownAuthKey", "auth: {mode: none, pasword_hash: x}", "pasword_hash"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { refused(t, store+tc.yaml, tc.want) })
	}
}

func TestAuthSecretsAreRedacted(t *testing.T) {
	cfg, err := Parse([]byte(store+basicAuth), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(cfg)
	for _, s := range []string{fmt.Sprintf("%+v", cfg.Auth), fmt.Sprintf("%#v", cfg.Auth), string(j)} {
		if strings.Contains(s, testHash[10:]) || strings.Contains(s, testSHA256) {
			t.Errorf("a hash is printed: %s", s)
		}
	}
}

func TestAllowedHostsValidated(t *testing.T) {
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"console.example.com", true}, {"console.example.com:8443", true}, {"10.0.0.5", true},
		{"[::1]:8080", true}, {"[::1]", true}, {"localhost", true},
		{"http://console.example.com", false}, {"console.example.com/", false}, {"::1", false},
		{"host:0", false}, {"host:99999", false}, {"", false}, {"a b", false}, {"[nope]:80", false},
	} {
		if got := validAllowedHost(tc.host); got != tc.ok {
			t.Errorf("validAllowedHost(%q) = %v; want %v", tc.host, got, tc.ok)
		}
	}
}
