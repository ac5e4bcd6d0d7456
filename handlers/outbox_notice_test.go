package handlers

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/views/layout"
)

// The outbox page's notice ("Requeued N events") was read from the URL: ?done=requeued&n=500
// showed it though nothing had happened. It is the flash of the action that did it — a signed,
// one-time cookie of the browser's session — on the page it goes back to, the outbox's or the
// event's, once; a URL shows none.
func TestOutboxNoticeComesFromTheAction(t *testing.T) {
	h, _, dsn, id := auditFixture(t, true)
	h.meta = func(echo.Context, string, string) layout.Meta { return layout.Meta{} }
	const csrf = "browser-1"
	call := func(handler echo.HandlerFunc, req *http.Request, params ...string) *httptest.ResponseRecorder {
		t.Helper()
		rec := httptest.NewRecorder()
		c := echo.New().NewContext(req, rec)
		c.SetParamNames(append([]string{"name"}, params...)...)
		c.SetParamValues([]string{"orders", "1"}[:1+len(params)]...) // params: none, or the event's id
		c.Set("csrf", csrf)
		SetActor(c, access.Actor{Name: "ops-1", Role: access.Operator})
		if err := handler(c); err != nil {
			t.Fatalf("%s %s: %v", req.Method, req.URL, err)
		}
		return rec
	}
	get := func(handler echo.HandlerFunc, target string, cookies []*http.Cookie, params ...string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, target, nil)
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		return call(handler, req, params...).Body.String()
	}
	notice := func(body string) string {
		i := strings.Index(body, `data-testid="notice">`)
		if i < 0 {
			return ""
		}
		rest := body[i+len(`data-testid="notice">`):]
		return rest[:strings.Index(rest, "<")]
	}

	for _, target := range []string{"/outboxes/orders?done=requeued&n=500", "/outboxes/orders?done=released&n=7&status=DEAD"} {
		if n := notice(get(h.Show, target, nil)); n != "" {
			t.Errorf("%s shows the notice %q though nothing was done", target, n)
		}
	}

	for _, tc := range []struct {
		name, back string
		page       echo.HandlerFunc
		params     []string
	}{{"OutboxPage", "/outboxes/orders?status=DEAD", h.Show, nil}, {"EventPage", "/outboxes/orders/events/1", h.EventPage, []string{"id"}}} {
		t.Run(tc.name, func(t *testing.T) {
			pgtest.Exec(t, dsn, `UPDATE outbox_event SET status = 'DEAD' WHERE id = $1`, id) // to requeue again
			form := url.Values{"id": {"1"}, "reason": {"consumer fixed"}, "return": {tc.back}}
			req := httptest.NewRequest(http.MethodPost, "/outboxes/orders/requeue", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := call(h.FormRequeue, req)
			if loc := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || loc != tc.back {
				t.Fatalf("requeue: %d to %s, want 303 to %s", rec.Code, loc, tc.back)
			}
			flash := rec.Result().Cookies()
			if n := notice(get(tc.page, tc.back, flash, tc.params...)); n != "Requeued 1 event to READY. Rows that were not DEAD or FAILED were left alone." {
				t.Errorf("after the requeue the page says %q", n)
			}
			if n := notice(get(tc.page, tc.back, nil, tc.params...)); n != "" {
				t.Errorf("a reload says %q again", n)
			}
		})
	}
}
