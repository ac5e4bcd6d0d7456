package handlers

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops/trace"
)

// queryContext is a GET of target on the records of topic orders.DLT.
func queryContext(target string) echo.Context {
	c := echo.New().NewContext(httptest.NewRequest("GET", target, nil), httptest.NewRecorder())
	c.SetParamNames("cluster", "topic")
	c.SetParamValues("main", "orders.DLT")
	return c
}

type noTracer struct{}

func (noTracer) Trace(context.Context, trace.Query) (trace.Result, error) { return trace.Result{}, nil }

// A time is given or not by its presence: at=0001-01-01T00:00:00Z (time.Time's zero) was read as
// no at, and since=0001-01-01 as no since.
func TestYearOneIsATime(t *testing.T) {
	q, err := parseRecordQuery(queryContext("/records?at=0001-01-01T00:00:00Z"))
	if err != nil || q.At == nil || !q.At.IsZero() {
		t.Errorf("at=0001-01-01T00:00:00Z: at %v, %v; want the time 0001-01-01", q.At, err)
	}
	if q, err := parseRecordQuery(queryContext("/records?at=")); err != nil || q.At != nil {
		t.Errorf("at= (blank): at %v, %v; want none", q.At, err)
	}
	h := &Trace{t: noTracer{}}
	tq, err := h.parseTraceQuery(queryContext("/trace?message_id=m&since=0001-01-01&until=0001-01-01T00:00:00Z"))
	if err != nil || tq.Since == nil || !tq.Since.IsZero() || tq.Until == nil || !tq.Until.Equal(time.Time{}) {
		t.Errorf("since and until 0001-01-01: %v %v, %v; want both given", tq.Since, tq.Until, err)
	}
	if tq, err := h.parseTraceQuery(queryContext("/trace?message_id=m")); err != nil || tq.Since != nil || tq.Until != nil {
		t.Errorf("no since nor until: %v %v, %v; want neither", tq.Since, tq.Until, err)
	}
}
