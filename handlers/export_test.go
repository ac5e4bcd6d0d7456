package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/storetest"
)

// An export records its intent before the first byte: with the audit log unwritable it is refused
// (503, nothing exported); otherwise the outcome row names the intent and counts what was written.
func TestExportIntentBeforeContent(t *testing.T) {
	ctx := context.Background()
	const secret = `{"secret":"s3cr3t"}`
	k := dltCluster(t, 1, secret, secret, secret)
	st := storetest.Open(t)
	export := func() *httptest.ResponseRecorder {
		h := NewSearch(SearchOptions{Kafka: []SearchCluster{k}, Audit: st, ExportMinRole: "viewer"})
		e := echo.New()
		e.HTTPErrorHandler = func(err error, c echo.Context) {
			code := http.StatusInternalServerError
			if errors.Is(err, ops.ErrUnavailable) {
				code = http.StatusServiceUnavailable // as web's one mapping does
			}
			_ = c.String(code, err.Error())
		}
		e.GET("/x/:cluster/:topic", h.ExportKafka, func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				SetActor(c, access.Actor{Name: "otto", Role: access.Operator})
				return next(c)
			}
		})
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x/main/orders.DLT", nil))
		return rec
	}
	if rec := export(); rec.Code != http.StatusOK || strings.Count(rec.Body.String(), "s3cr3t") != 3 {
		t.Fatalf("export: %d %s", rec.Code, rec.Body.String())
	}
	list, err := st.ListAudit(ctx, audit.Filter{Action: "content.export", Intents: true})
	if err != nil {
		t.Fatal(err)
	}
	var intent, outcome *audit.Entry
	for i := range list {
		switch e := &list[i]; e.Outcome {
		case audit.OutcomeStarted:
			intent = e
		case audit.OutcomeOK:
			outcome = e
		}
	}
	if intent == nil || outcome == nil || outcome.Count == nil || *outcome.Count != 3 || outcome.Detail["intent_id"] == nil {
		t.Fatalf("audit rows %+v", list)
	}

	st.Close() // the audit log cannot be written now
	rec := export()
	if rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "s3cr3t") || !strings.Contains(rec.Body.String(), "nothing was exported") {
		t.Fatalf("with the audit log down: %d %s", rec.Code, rec.Body.String())
	}
}
