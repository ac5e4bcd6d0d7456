package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
)

// The release and requeue APIs refuse an id that cannot be an event's (0, a negative, null) as the
// forms do, with nothing changed or audited; they answered 200, count 0, with an audit row.
func TestRepairsRefuseNonPositiveIDs(t *testing.T) {
	h, st, dsn, id := auditFixture(t, true)
	const want = "ids: each id must be a positive integer"
	for _, ids := range []string{"[0]", "[-1]", "[null]", "[1,0]", "[1,-9223372036854775808]"} {
		if _, err := postOutboxJSON(h.APIRequeue, "/api/v1/outboxes/orders/events/requeue", `{"ids":`+ids+`,"reason":"fixed"}`, "curl/8"); !errors.Is(err, ops.ErrInvalid) || err.Error() != want {
			t.Errorf("requeue %s: %v; want %q", ids, err, want)
		}
		if _, err := postOutboxJSON(h.APIRelease, "/api/v1/outboxes/orders/leases/release", `{"ids":`+ids+`}`, "curl/8"); !errors.Is(err, ops.ErrInvalid) || err.Error() != want {
			t.Errorf("release %s: %v; want %q", ids, err, want)
		}
	}
	if s := status(t, dsn, id); s != "DEAD" {
		t.Fatalf("status %s: a refused requeue changed the event", s)
	}
	if entries, err := st.ListAudit(context.Background(), audit.Filter{Intents: true}); err != nil || len(entries) != 0 {
		t.Fatalf("refused repairs were audited: %+v, %v", entries, err)
	}
}

// An event id past int64 is said to be too large, in the path and in a form, rather than not a
// positive integer.
func TestEventIDTooLarge(t *testing.T) {
	h, _, _, _ := auditFixture(t, true)
	for raw, want := range map[string]string{
		"9223372036854775808":  "id: 9223372036854775808 is too large for an event id (at most 9223372036854775807)",
		"99999999999999999999": "id: 99999999999999999999 is too large for an event id (at most 9223372036854775807)",
		"0":                    `id: "0" is not an event id (a positive integer)`,
		"-1":                   `id: "-1" is not an event id (a positive integer)`,
		"-9223372036854775809": `id: "-9223372036854775809" is not an event id (a positive integer)`,
		"1e3":                  `id: "1e3" is not an event id (a positive integer)`,
	} {
		rec := httptest.NewRecorder()
		c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/api/v1/outboxes/orders/events/"+raw, nil), rec)
		c.SetParamNames("name", "id")
		c.SetParamValues("orders", raw)
		if err := h.APIEvent(c); !errors.Is(err, ops.ErrInvalid) || err.Error() != want {
			t.Errorf("GET …/events/%s: %v; want %q", raw, err, want)
		}
		form := url.Values{"id": {raw}, "reason": {"fixed"}}
		req := httptest.NewRequest(http.MethodPost, "/outboxes/orders/requeue", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if _, err := asOperator(h.FormRequeue, req); !errors.Is(err, ops.ErrInvalid) || err.Error() != want {
			t.Errorf("form id=%s: %v; want %q", raw, err, want)
		}
	}
}
