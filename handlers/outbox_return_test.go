package handlers

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// After a form action the console goes back to the page the form was on only when that is one of
// the outbox's own pages, with dot segments resolved as a browser resolves them: ../ and its
// escaped forms cannot climb out.
func TestFormActionReturnsOnlyToTheOutboxPages(t *testing.T) {
	h, _, _, _ := auditFixture(t, true)
	back := "/outboxes/orders?done=released&n=0"
	for ret, want := range map[string]string{
		"":                                                     back,
		"/outboxes/orders?status=DEAD":                         "/outboxes/orders?done=released&n=0&status=DEAD",
		"/outboxes/orders/events/1":                            "/outboxes/orders/events/1?done=released&n=0",
		"/outboxes/orders/../../admin":                         back,
		"/outboxes/orders/../payments":                         back,
		"/outboxes/orders/./events/1":                          back,
		"/outboxes/orders/%2F..%2F..%2Fadmin":                  back,
		"/outboxes/orders/..%2F..%2Fadmin":                     back,
		"/outboxes/orders/%2E%2E/%2E%2E/admin":                 back,
		"/outboxes/orders%2F..%2Fpayments":                     back,
		"/outboxes/orders//..//..//admin":                      back,
		"/outboxes/orders-archive":                             back,
		"//evil.example/outboxes/orders":                       back,
		"https://evil.example/outboxes/orders":                 back,
		"/outboxes/orders/events/1/../../../../admin?status=x": back,
	} {
		form := url.Values{"all_stuck": {"1"}, "return": {ret}}
		req := httptest.NewRequest(http.MethodPost, "/outboxes/orders/release", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec, err := asOperator(h.FormRelease, req)
		if err != nil {
			t.Fatalf("return=%s: %v", ret, err)
		}
		if got := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || got != want {
			t.Errorf("return=%s: %d to %s, want %s", ret, rec.Code, got, want)
		}
	}
}
