package handlers

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/views/layout"
)

// stuck=true lists PROCESSING events with an expired lease: with status=DEAD the list and the page
// answer a 400 saying so (the list used to ignore the status, and the page kept DEAD selected);
// with status=PROCESSING they agree.
func TestStuckWithAnotherStatusIsRefused(t *testing.T) {
	h, _, dsn, _ := auditFixture(t, true)
	h.meta = func(echo.Context, string, string) layout.Meta { return layout.Meta{} }
	pgtest.Exec(t, dsn, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, locked_until, created_at) VALUES ('e-2', 'Order', 'o-2', 'OrderCreated', 1, '{}', 'PROCESSING', 1,
		now(), now() - interval '1 minute', now())`)
	const want = "status: stuck=true lists PROCESSING events with an expired lease; it cannot be combined with status=DEAD"
	for _, handler := range []echo.HandlerFunc{h.APIEvents, h.Show} {
		for _, q := range []string{"stuck=true&status=DEAD", "status=dead&stuck=1"} {
			if _, err := asOperator(handler, httptest.NewRequest(http.MethodGet, "/outboxes/orders?"+q, nil)); !errors.Is(err, ops.ErrInvalid) || err.Error() != want {
				t.Errorf("?%s: %v; want %q", q, err, want)
			}
		}
		for _, q := range []string{"stuck=true&status=PROCESSING", "stuck=true", "status=DEAD&stuck=false"} {
			if rec, err := asOperator(handler, httptest.NewRequest(http.MethodGet, "/outboxes/orders?"+q, nil)); err != nil || rec.Code != http.StatusOK {
				t.Errorf("?%s: %d, %v", q, rec.Code, err)
			}
		}
	}
}

// A value the outbox pages refuse is quoted back cut to 64 bytes, "…" marking the cut: a 100 KB
// status was a 100 KB answer.
func TestOutboxEchoesAtMost64Bytes(t *testing.T) {
	h, _, _, _ := auditFixture(t, true)
	h.meta = func(echo.Context, string, string) layout.Meta { return layout.Meta{} }
	long := strings.Repeat("a", 100_000)
	wantStatus := `status: "` + strings.Repeat("a", 64) + `…" is not one of READY, PROCESSING, SENT, FAILED, DEAD`
	for _, handler := range []echo.HandlerFunc{h.APIEvents, h.Show} {
		if _, err := asOperator(handler, httptest.NewRequest(http.MethodGet, "/outboxes/orders?status="+long, nil)); err == nil || err.Error() != wantStatus {
			t.Errorf("a long status: %.200v", err)
		}
		for _, name := range []string{"created_from", "created_to"} {
			_, err := asOperator(handler, httptest.NewRequest(http.MethodGet, "/outboxes/orders?"+name+"="+strings.Repeat("0", 1000)+"1h", nil))
			if !errors.Is(err, ops.ErrInvalid) || err.Error() != name+": must be at most 64 characters" {
				t.Errorf("a long %s: %.200v", name, err)
			}
		}
	}
	form := url.Values{"id": {"1", long}, "reason": {"x"}}
	req := httptest.NewRequest(http.MethodPost, "/outboxes/orders/requeue", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if _, err := asOperator(h.FormRequeue, req); err == nil || err.Error() != `id: "`+strings.Repeat("a", 64)+`…" is not an event id (a positive integer)` {
		t.Errorf("a long form id: %.200v", err)
	}
}
