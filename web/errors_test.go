package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/views/layout"
)

// driverText is what pgx says when it cannot connect: user, database, host and port.
const driverText = `failed to connect to user=redrive database=orders host=10.1.2.3 port=5432: ` +
	`dial tcp 10.1.2.3:5432: connect: connection refused`

// leaks are the parts of driverText no response may carry.
var leaks = []string{"redrive database", "user=", "database=", "orders host", "10.1.2.3", "5432", "dial tcp", "connection refused"}

// logLines is a JSON slog handler's output, safe for the server's goroutines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// with returns the decoded lines whose request_id is id.
func (l *logLines) with(t *testing.T, id string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		var m map[string]any
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["request_id"] == id {
			out = append(out, m)
		}
	}
	return out
}

// errorServer answers every path with the error fails returns, through the console's error
// handler and request IDs.
func errorServer(fails func(c echo.Context) error) (*echo.Echo, *logLines) {
	lines := &logLines{}
	log := slog.New(slog.NewJSONHandler(lines, nil))
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(log, Options{Version: "test"})
	e.Use(middleware.RequestID(), withLogger(log))
	e.Any("/*", fails)
	return e, lines
}

// A handler error whose cause is a driver's: the client reads the safe message (JSON, page and
// htmx fragment alike), with the request ID; the log has the internal error under that ID.
func TestErrorsAnswerTheSafeMessageAndLogTheCause(t *testing.T) {
	cause := errors.New(driverText)
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
		want   string // the message the client reads
		level  string // of the log line with the internal error
	}{
		{"SafeUnavailable", ops.Unavailable(fmt.Errorf("outbox orders: stats: %w", cause),
			"the database of outbox %q did not answer (stats); try again, or see whether it is up", "orders"),
			503, "unavailable", `the database of outbox "orders" did not answer (stats); try again, or see whether it is up`, "WARN"},
		{"BareUnavailable", fmt.Errorf("save plan: %w: %w", ops.ErrUnavailable, cause),
			503, "unavailable", "a service Redrive depends on did not answer", "WARN"},
		{"Unclassified", fmt.Errorf("render: %w", cause), 500, "internal", "internal error", "ERROR"},
		{"ConflictWithCause", &ops.Error{Kind: ops.ErrConflict, Message: "the queue is exclusive to another connection", Err: cause},
			409, "conflict", "the queue is exclusive to another connection", "INFO"},
		{"WrappedNotFound", fmt.Errorf("rabbitmq main: browse /x: %w", ops.NotFound("vhost %q is not watched", "/x")),
			404, "not_found", `vhost "/x" is not watched`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, lines := errorServer(func(echo.Context) error { return tc.err })
			for _, kind := range []string{"api", "page", "htmx"} {
				path := "/outboxes/orders"
				req := httptest.NewRequest(http.MethodGet, path, nil)
				switch kind {
				case "api":
					req = httptest.NewRequest(http.MethodGet, "/api/v1"+path, nil)
				case "htmx":
					req.Header.Set("HX-Request", "true")
				}
				rec := httptest.NewRecorder()
				e.ServeHTTP(rec, req)
				body, id := rec.Body.String(), rec.Header().Get(echo.HeaderXRequestID)
				if rec.Code != tc.status || id == "" {
					t.Fatalf("%s: %d (request id %q) %s", kind, rec.Code, id, body)
				}
				for _, leak := range leaks {
					if strings.Contains(body, leak) {
						t.Errorf("%s: the response carries %q: %s", kind, leak, body)
					}
				}
				if kind == "api" {
					var got apiError
					if err := json.Unmarshal([]byte(body), &got); err != nil {
						t.Fatal(err)
					}
					if got.Error.Code != tc.code || !strings.HasPrefix(got.Error.Message, tc.want) || got.Error.RequestID != id {
						t.Errorf("api: %+v; want code %s, message %q…, request id %s", got.Error, tc.code, tc.want, id)
					}
				} else if !strings.Contains(body, htmlEscape(tc.want)) || !strings.Contains(body, id) {
					t.Errorf("%s: the page does not say %q with the request id %s: %s", kind, tc.want, id, body)
				}
				logged := lines.with(t, id)
				if tc.level == "" {
					if len(logged) != 0 {
						t.Errorf("%s: the response says it all, yet it was logged: %v", kind, logged)
					}
					continue
				}
				if len(logged) != 1 || logged[0]["level"] != tc.level || logged[0]["err"] != tc.err.Error() ||
					logged[0]["status"] != float64(tc.status) {
					t.Errorf("%s: log lines with request id %s: %v; want one %s line with the internal error", kind, id, logged, tc.level)
				}
			}
		})
	}
}

func htmlEscape(s string) string { return strings.ReplaceAll(s, `"`, "&#34;") }

// A handler that shows an error in place (a panel, an "error" field) shows the safe message too,
// and logs the internal error with the request ID.
func TestErrorShownInPlaceIsLogged(t *testing.T) {
	audit := failingAudit{err: ops.Unavailable(errors.New(driverText), "Redrive's database did not answer (audit log)")}
	lines := &logLines{}
	log := slog.New(slog.NewJSONHandler(lines, nil))
	h := handlers.NewAudit(audit, func(_ echo.Context, title, _ string) layout.Meta { return layout.Meta{Title: title} })
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(log, Options{})
	e.Use(middleware.RequestID(), withLogger(log))
	e.GET("/audit", h.Page)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/audit", nil))
	body, id := rec.Body.String(), rec.Header().Get(echo.HeaderXRequestID)
	if rec.Code != http.StatusOK || !strings.Contains(body, "did not answer (audit log)") {
		t.Fatalf("%d %s", rec.Code, body)
	}
	for _, leak := range leaks {
		if strings.Contains(body, leak) {
			t.Errorf("the page carries %q", leak)
		}
	}
	if logged := lines.with(t, id); len(logged) != 1 || !strings.Contains(fmt.Sprint(logged[0]["err"]), driverText) {
		t.Fatalf("log lines with request id %s: %v", id, logged)
	}
}

type failingAudit struct{ err error }

func (f failingAudit) ListAudit(context.Context, audit.Filter) ([]audit.Entry, error) {
	return nil, f.err
}

// The public /readyz, asked by an anonymous client while a dependency cannot be reached, names
// the dependencies and says ok or not: no host, user, database or driver text.
func TestReadyzToAnonymousNamesAndOKOnly(t *testing.T) {
	cfg, err := configs.Parse([]byte("store: {dsn: \"postgres://x@127.0.0.1/x\"}\n"+authYAML(t, configs.AuthBasic, "")),
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	checks := []handlers.Check{
		{Name: "store", Ping: func(context.Context) error { return nil }},
		{Name: "outbox/orders", Ping: func(context.Context) error {
			return fmt.Errorf("outbox orders: ping: %w: %w", ops.ErrUnavailable, errors.New(driverText))
		}},
		{Name: "kafka/main", Ping: func(context.Context) error {
			return ops.Unavailable(errors.New("unable to dial: dial tcp 10.1.2.3:9092: i/o timeout"), "kafka cluster \"main\" did not answer")
		}},
	}
	e, err := New(Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Store: &store.Store{}, Checks: checks,
		Registry: prometheus.NewRegistry()}, Options{RequestTimeout: 5 * time.Second, Auth: cfg.Auth})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	body := strings.TrimSpace(rec.Body.String())
	want := `{"status":"unavailable","dependencies":[{"name":"store","ok":true},{"name":"outbox/orders","ok":false},{"name":"kafka/main","ok":false}]}`
	if rec.Code != http.StatusServiceUnavailable || body != want {
		t.Fatalf("%d %s\nwant 503 %s", rec.Code, body, want)
	}
	for _, leak := range append(leaks, "9092", "dial", "timeout", "did not answer", "pgx", "error") {
		if strings.Contains(body, leak) {
			t.Errorf("/readyz says %q", leak)
		}
	}
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

// An address the router does not know, or a method it does not take, says what to do instead of
// repeating its title ("Not Found"), on a page and in the API alike.
func TestRouterErrorsSayWhatToDo(t *testing.T) {
	srv := startServer(t, "auth: {mode: none}\n")
	for _, tc := range []struct {
		method, path string
		status       int
		says         string
	}{
		{http.MethodGet, "/kafka/main/groups", http.StatusNotFound, "check it for a typo"},
		{http.MethodGet, "/api/v1/kafka/main/nope", http.StatusNotFound, "/api/openapi.json"},
		{http.MethodDelete, "/api/v1/replays", http.StatusMethodNotAllowed, "does not take that method"},
	} {
		req, _ := http.NewRequest(tc.method, srv.url+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.says) {
			t.Errorf("%s %s: %d %.300s; want %d saying %q", tc.method, tc.path, resp.StatusCode, body, tc.status, tc.says)
		}
		if strings.Count(string(body), "Not Found") > 2 { // the title and the page's <title>, not the message
			t.Errorf("%s %s repeats its title: %.300s", tc.method, tc.path, body)
		}
	}
}
