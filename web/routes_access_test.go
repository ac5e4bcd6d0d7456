package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/paths"
)

// memAudit is an audit log in memory.
type memAudit struct {
	mu      sync.Mutex
	entries []audit.Entry
}

func (m *memAudit) RecordAudit(_ context.Context, e audit.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = append(m.entries, e)
	return nil
}

func (m *memAudit) last() (audit.Entry, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) == 0 {
		return audit.Entry{}, 0
	}
	return m.entries[len(m.entries)-1], len(m.entries)
}

// reached is what every stub handler answers: the request got past the role check.
const reached = "handler reached"

// roleServer serves the route table with stub handlers behind the auth middleware and the error
// handler, in proxy mode (trusted from httptest's 192.0.2.1) with the test tokens: no store.
func roleServer(t *testing.T, h routeHandlers) (*echo.Echo, *memAudit, []Route) {
	t.Helper()
	cfg, err := configs.Parse([]byte("store: {dsn: \"postgres://x@127.0.0.1/x\"}\n"+authYAML(t, configs.AuthProxy, `
  trusted_proxies: [192.0.2.0/24]
  proxy:
    group_roles: {viewers: viewer, operators: operator, admins: admin}
`)), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	mem := &memAudit{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := newAuthenticator(cfg.Auth, false, nil, mem, log)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(log, Options{})
	e.Use(a.middleware())
	table := append(routes(h), authRoutes(nil)...)
	for _, r := range table {
		e.Add(r.Method, r.Path, func(c echo.Context) error {
			if got := handlers.ActorOf(c); r.Role != access.Public && !got.Can(r.Role) {
				t.Errorf("%s %s reached by %+v", r.Method, r.Path, got)
			}
			return c.String(http.StatusOK, reached)
		})
		a.allow(r)
	}
	return e, mem, table
}

// roleCaller is one kind of client: a bearer token or proxy headers, with the role it has.
type roleCaller struct {
	name   string
	role   access.Role // access.Public: no role granted
	anon   bool        // no identity at all
	header http.Header
}

func roleCallers() []roleCaller {
	cs := []roleCaller{
		{name: "anonymous", anon: true, header: http.Header{}},
		{name: "proxy-no-role", role: access.Public, header: http.Header{"X-Forwarded-User": {"guest"}, "X-Forwarded-Groups": {"guests"}}},
	}
	for _, r := range []access.Role{access.Viewer, access.Operator, access.Admin} {
		cs = append(cs,
			roleCaller{name: "token-" + r.String(), role: r, header: http.Header{"Authorization": {"Bearer tok-" + r.String()}}},
			roleCaller{name: "proxy-" + r.String(), role: r, header: http.Header{"X-Forwarded-User": {"u-" + r.String()},
				"X-Forwarded-Groups": {"staff, " + r.String() + "s"}}})
	}
	return cs
}

// The authorization of every route, for every kind of caller, without PostgreSQL: a public route
// needs nothing; a caller without identity is a 401; a role below the route's is a 403 naming
// the role, audited; at or above it the handler is reached. (TestAuthorizationMatrix walks the
// same table through web.New over a real store, sessions included.)
func TestRouteRolesWithoutAStore(t *testing.T) {
	e, mem, table := roleServer(t, routeHandlers{})
	if len(table) < 20 {
		t.Fatalf("route table has %d routes", len(table))
	}
	for _, r := range table {
		path := concretePath(r.Path)
		for _, cl := range roleCallers() {
			t.Run(fmt.Sprintf("%s %s/%s", r.Method, r.Path, cl.name), func(t *testing.T) {
				req := httptest.NewRequest(r.Method, path, nil)
				for k, v := range cl.header {
					req.Header[k] = v
				}
				rec := httptest.NewRecorder()
				_, before := mem.last()
				e.ServeHTTP(rec, req)
				body := rec.Body.String()
				switch {
				case r.Role == access.Public:
					if rec.Code != http.StatusOK || body != reached {
						t.Fatalf("public route: %d %.200s; want the handler", rec.Code, body)
					}
				case cl.anon:
					if rec.Code != http.StatusUnauthorized || !strings.Contains(body, "not signed in") {
						t.Fatalf("anonymous: %d %.200s; want 401", rec.Code, body)
					}
				case !(access.Actor{Role: cl.role}).Can(r.Role):
					if rec.Code != http.StatusForbidden || !strings.Contains(body, "needs the "+r.Role.String()+" role") {
						t.Fatalf("%s on a %s route: %d %.200s; want 403 naming the role", cl.role, r.Role, rec.Code, body)
					}
					got, n := mem.last()
					if n != before+1 || got.Outcome != audit.OutcomeDenied || got.Action != r.Method+" "+r.Path ||
						got.Role != cl.role.String() || got.Reason != "needs the "+r.Role.String()+" role" {
						t.Fatalf("audit of the refusal: %+v (%d rows, %d before)", got, n, before)
					}
				default:
					if rec.Code != http.StatusOK || body != reached {
						t.Fatalf("%s on a %s route: %d %.200s; want the handler", cl.role, r.Role, rec.Code, body)
					}
				}
			})
		}
	}
}

// The export routes take their role from export.min_role; every other route's role is fixed.
func TestExportRoutesFollowExportMinRole(t *testing.T) {
	for _, min := range []string{"", "viewer", "operator", "admin"} {
		want := access.Operator
		if min != "" {
			want, _ = access.ParseRole(min)
		}
		table := routes(routeHandlers{search: handlers.NewSearch(handlers.SearchOptions{ExportMinRole: min})})
		n := 0
		for _, r := range table {
			if strings.HasSuffix(r.Path, paths.ExportSuffix) {
				n++
				if r.Role != want {
					t.Errorf("export.min_role %q: %s %s needs %s, want %s", min, r.Method, r.Path, r.Role, want)
				}
			}
		}
		if n != 2 {
			t.Fatalf("%d export routes, want 2 (Kafka and RabbitMQ)", n)
		}
	}
}

// The role of every route, written out: a change to who may call what is a change to this list
// too (export routes: export.min_role, operator by default). Beside it, what the list must keep:
// mutations need an operator at least, admin paths an admin, and only health, readiness, the
// OpenAPI document and sign-in are public.
func TestRouteTableRoles(t *testing.T) {
	want := []struct {
		method, path string
		role         access.Role
	}{
		{"GET", "/healthz", access.Public},
		{"HEAD", "/healthz", access.Public},
		{"HEAD", "/readyz", access.Public},
		{"GET", "/readyz", access.Public},
		{"GET", "/api/openapi.json", access.Public},
		{"GET", "/", access.Viewer},
		{"GET", "/outboxes", access.Viewer},
		{"GET", "/outboxes/:name", access.Viewer},
		{"GET", "/outboxes/:name/panel", access.Viewer},
		{"GET", "/outboxes/:name/events/:id", access.Viewer},
		{"POST", "/outboxes/:name/release", access.Operator},
		{"POST", "/outboxes/:name/resolutions", access.Operator},
		{"POST", "/outboxes/:name/requeue", access.Operator},
		{"GET", "/audit", access.Viewer},
		{"GET", "/notifications", access.Viewer},
		{"POST", "/notifications/silences", access.Operator},
		{"POST", "/notifications/silences/:id/end", access.Operator},
		{"POST", "/notifications/channels/:name/test", access.Operator},
		{"GET", "/doctor", access.Admin},
		{"GET", "/kafka", access.Viewer},
		{"GET", "/kafka/:cluster", access.Viewer},
		{"GET", "/kafka/:cluster/groups/:group", access.Viewer},
		{"POST", "/kafka/:cluster/groups/:group/offsets/plan", access.Operator},
		{"POST", "/kafka/:cluster/groups/:group/offsets/apply", access.Operator},
		{"POST", "/kafka/:cluster/groups/:group/offsets/approve", access.Operator},
		{"GET", "/kafka/:cluster/groups/:group/offsets/:id", access.Viewer},
		{"GET", "/kafka/:cluster/topics/:topic", access.Viewer},
		{"GET", "/kafka/:cluster/topics/:topic/records/:partition/:offset", access.Viewer},
		{"GET", "/kafka/:cluster/topics/:topic/errors", access.Viewer},
		{"POST", "/kafka/:cluster/topics/:topic/resolutions", access.Operator},
		{"POST", "/kafka/:cluster/topics/:topic/notes", access.Operator},
		{"GET", "/rabbitmq", access.Viewer},
		{"GET", "/rabbitmq/:broker", access.Viewer},
		{"GET", "/rabbitmq/:broker/queues/:vhost/:queue", access.Viewer},
		{"GET", "/rabbitmq/:broker/queues/:vhost/:queue/messages", access.Viewer},
		{"POST", "/rabbitmq/:broker/queues/:vhost/:queue/notes", access.Operator},
		{"GET", "/trace", access.Viewer},
		{"GET", "/trace/stream", access.Viewer},
		{"GET", "/replays", access.Viewer},
		{"POST", "/replays/plan", access.Operator},
		{"GET", "/replays/plans/:id", access.Viewer},
		{"POST", "/replays/plans/:id/cancel", access.Operator},
		{"POST", "/replays", access.Operator},
		{"GET", "/replays/:id", access.Viewer},
		{"POST", "/replays/:id/cancel", access.Operator},
		{"POST", "/replays/:id/approve", access.Operator},
		{"GET", "/api/v1/outboxes", access.Viewer},
		{"GET", "/api/v1/outboxes/:name", access.Viewer},
		{"GET", "/api/v1/outboxes/:name/events", access.Viewer},
		{"GET", "/api/v1/outboxes/:name/events/:id", access.Viewer},
		{"POST", "/api/v1/outboxes/:name/leases/release", access.Operator},
		{"POST", "/api/v1/outboxes/:name/resolutions", access.Operator},
		{"POST", "/api/v1/outboxes/:name/events/requeue", access.Operator},
		{"GET", "/api/v1/audit", access.Viewer},
		{"GET", "/api/v1/notifications", access.Viewer},
		{"POST", "/api/v1/notifications/channels/:name/test", access.Operator},
		{"GET", "/api/v1/silences", access.Viewer},
		{"POST", "/api/v1/silences", access.Operator},
		{"DELETE", "/api/v1/silences/:id", access.Operator},
		{"GET", "/api/v1/replicas", access.Admin},
		{"GET", "/api/v1/admin/doctor", access.Admin},
		{"POST", "/api/v1/admin/reload", access.Admin},
		{"GET", "/api/v1/overview", access.Viewer},
		{"GET", "/api/v1/trace", access.Viewer},
		{"GET", "/api/v1/kafka/:cluster/groups", access.Viewer},
		{"GET", "/api/v1/kafka/:cluster/groups/:group", access.Viewer},
		{"GET", "/api/v1/kafka/:cluster/groups/:group/history", access.Viewer},
		{"POST", "/api/v1/kafka/:cluster/groups/:group/offsets/plan", access.Operator},
		{"POST", "/api/v1/kafka/:cluster/groups/:group/offsets/apply", access.Operator},
		{"POST", "/api/v1/kafka/:cluster/groups/:group/offsets/approve", access.Operator},
		{"GET", "/api/v1/kafka/:cluster/dead-letter-topics", access.Viewer},
		{"GET", "/api/v1/kafka/:cluster/topics/:topic/records", access.Viewer},
		{"GET", "/api/v1/kafka/:cluster/topics/:topic/export", access.Operator},
		{"GET", "/api/v1/kafka/:cluster/topics/:topic/error-groups", access.Viewer},
		{"POST", "/api/v1/kafka/:cluster/topics/:topic/resolutions", access.Operator},
		{"GET", "/api/v1/kafka/:cluster/topics/:topic/notes", access.Viewer},
		{"POST", "/api/v1/kafka/:cluster/topics/:topic/notes", access.Operator},
		{"GET", "/api/v1/rabbitmq/:broker/queues", access.Viewer},
		{"GET", "/api/v1/rabbitmq/:broker/queues/:vhost/:queue", access.Viewer},
		{"GET", "/api/v1/rabbitmq/:broker/queues/:vhost/:queue/history", access.Viewer},
		{"GET", "/api/v1/rabbitmq/:broker/queues/:vhost/:queue/messages", access.Viewer},
		{"GET", "/api/v1/rabbitmq/:broker/queues/:vhost/:queue/export", access.Operator},
		{"GET", "/api/v1/rabbitmq/:broker/queues/:vhost/:queue/notes", access.Viewer},
		{"POST", "/api/v1/rabbitmq/:broker/queues/:vhost/:queue/notes", access.Operator},
		{"POST", "/api/v1/replays/plan", access.Operator},
		{"GET", "/api/v1/replays/plans/:id", access.Viewer},
		{"POST", "/api/v1/replays/plans/:id/cancel", access.Operator},
		{"POST", "/api/v1/replays", access.Operator},
		{"GET", "/api/v1/replays", access.Viewer},
		{"GET", "/api/v1/replays/:id", access.Viewer},
		{"POST", "/api/v1/replays/:id/cancel", access.Operator},
		{"POST", "/api/v1/replays/:id/approve", access.Operator},
		{"GET", "/api/v1/archive", access.Viewer},
		{"POST", "/api/v1/archive/:id/restore", access.Operator},
		{"GET", "/archive", access.Viewer},
		{"POST", "/archive/:id/restore", access.Operator},
		{"GET", "/login", access.Public},
		{"POST", "/login", access.Public},
		{"POST", "/logout", access.Public},
	}
	table := append(routes(routeHandlers{}), authRoutes(nil)...)
	if len(table) != len(want) {
		t.Errorf("%d routes, %d listed", len(table), len(want))
	}
	listed := map[string]access.Role{}
	for _, w := range want {
		listed[w.method+" "+w.path] = w.role
	}
	public := map[string]bool{"GET /healthz": true, "GET /readyz": true, "HEAD /healthz": true, "HEAD /readyz": true, "GET /api/openapi.json": true,
		"GET /login": true, "POST /login": true, "POST /logout": true}
	for _, r := range table {
		key := r.Method + " " + r.Path
		if role, ok := listed[key]; !ok || role != r.Role {
			t.Errorf("%s needs %s; the list says %s (listed: %v)", key, r.Role, role, ok)
		}
		switch {
		case public[key] != (r.Role == access.Public):
			t.Errorf("%s needs %s", key, r.Role)
		case r.Method != http.MethodGet && !public[key] && r.Role < access.Operator:
			t.Errorf("%s changes something with the %s role", key, r.Role)
		case strings.Contains(r.Path, "/admin/") && r.Role != access.Admin:
			t.Errorf("%s is an admin route needing %s", key, r.Role)
		}
	}
}
