package web

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/paths"
)

// hostPolicy says which Host headers the console answers to. A browser sends the page's own host,
// so a page whose domain an attacker re-pointed at 127.0.0.1 (DNS rebinding) is told apart by it:
// its requests are same-origin for the browser (Sec-Fetch-Site: same-origin, no CORS) and would
// otherwise reach an auth.mode none console as admin.
type hostPolicy struct {
	any   bool            // basic or proxy mode without allowed_hosts: every host
	names map[string]bool // lower-case host, any port
	exact map[string]bool // lower-case host:port
	// local (mode none): the listen host and the loopback names, on the port the connection came in on.
	local      map[string]bool
	listenPort string
}

// loopbackNames are the hosts a console in auth.mode none answers to besides its listen host.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

func newHostPolicy(cfg configs.Auth, listen string) hostPolicy {
	p := hostPolicy{names: map[string]bool{}, exact: map[string]bool{}, local: map[string]bool{}}
	for _, h := range cfg.AllowedHosts {
		host, port := splitHost(h)
		if port == "" {
			p.names[host] = true
		} else {
			p.exact[host+":"+port] = true
		}
	}
	if cfg.Mode == configs.AuthNone {
		lhost, lport := splitHost(listen)
		p.listenPort = lport
		for _, n := range append([]string{lhost}, loopbackNames...) {
			if n != "" && !isUnspecified(n) {
				p.local[n] = true
			}
		}
	} else if len(cfg.AllowedHosts) == 0 {
		p.any = true
	}
	return p
}

func isUnspecified(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// splitHost lower-cases a Host value and splits off its port ("" when there is none); the
// brackets of an IPv6 address are removed.
func splitHost(h string) (host, port string) {
	h = strings.ToLower(strings.TrimSpace(h))
	if hp, pp, err := net.SplitHostPort(h); err == nil {
		return hp, pp
	}
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), ""
}

// allows reports whether the request's Host is one the console answers to.
func (p hostPolicy) allows(r *http.Request) bool {
	if p.any {
		return true
	}
	host, port := splitHost(r.Host)
	if host == "" {
		return false
	}
	if p.names[host] || (port != "" && p.exact[host+":"+port]) {
		return true
	}
	if !p.local[host] {
		return false
	}
	// The port is the one the connection was accepted on (the listen port, also when listen
	// says :0); a Host without a port means 80.
	want := p.listenPort
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, lp, err := net.SplitHostPort(a.String()); err == nil {
			want = lp
		}
	}
	if port == "" {
		port = "80"
	}
	return port == want
}

// checkHost refuses, with 403, a request whose Host the console does not answer to. The probes
// /healthz and /readyz answer every host: they are sent to a pod's address and tell nothing.
func checkHost(p hostPolicy) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.URL.Path == paths.Healthz || r.URL.Path == paths.Readyz || p.allows(r) {
				return next(c)
			}
			return &ops.Error{Kind: ops.ErrForbidden, Message: fmt.Sprintf(
				"this console does not answer to the host %q: open it by its own address, or add the host to auth.allowed_hosts",
				capString(r.Host, 100))}
		}
	}
}
