package handlers

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
)

// Valid JSON with a time that does not parse was "body: could not be read as JSON": a
// resolution's filter.since and an offsets plan's to.at now name the field and the forms.
func TestBodyTimesNameTheirField(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	forms := "must be RFC 3339 (2026-11-30T06:00:00Z) or a date (2026-11-30) between 1970 and 9999, or an age like 6h"
	resolution := func(body string) error {
		return decodedThen(body, func(req resolutionRequest) error { _, err := req.Filter.filter(now); return err })
	}
	plan := func(body string) error {
		return decodedThen(body, func(req offsetPlanRequest) error { _, err := req.To.target(now); return err })
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"ResolutionSince", resolution(`{"filter":{"since":"yesterday"},"state":"resolved","reason":"r"}`), "filter.since: " + forms},
		{"ResolutionUntil", resolution(`{"filter":{"until":"soon"},"state":"resolved","reason":"r"}`), "filter.until: " + forms},
		{"PlanAt", plan(`{"topic":"orders","to":{"kind":"timestamp","at":"x"}}`), "to.at: " + forms},
		// The year 1 is the zero time, which a filter reads as no bound: an until of 0001-01-01
		// matched every record instead of none.
		{"ResolutionUntilYearOne", resolution(`{"filter":{"until":"0001-01-01"},"state":"resolved","reason":"r"}`), "filter.until: " + forms},
		{"ResolutionSinceBeforeEpoch", resolution(`{"filter":{"since":"1969-12-31T23:59:59Z"},"state":"resolved","reason":"r"}`), "filter.since: " + forms},
		// The year 10000 in UTC: MySQL's DATETIME ends with 9999, and its driver refused the query
		// before it left, which answered 503 as a database that did not answer.
		{"ResolutionSincePastYear9999", resolution(`{"filter":{"since":"9999-12-31T23:59:59-12:00"},"state":"resolved","reason":"r"}`), "filter.since: " + forms},
	} {
		if !errors.Is(tc.err, ops.ErrInvalid) || tc.err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
		}
	}
	var req resolutionRequest
	if err := decodeJSON(bodyContext(`{"filter":{"since":"6h","until":"2026-11-30T11:00:00Z"}}`), &req); err != nil {
		t.Fatal(err)
	}
	if f, err := req.Filter.filter(now); err != nil || !f.Since.Equal(now.Add(-6*time.Hour)) || !f.Until.Equal(now.Add(-time.Hour)) {
		t.Errorf("since 6h until 11:00: %+v, %v", f, err)
	}
	var p offsetPlanRequest
	if err := decodeJSON(bodyContext(`{"topic":"orders","to":{"kind":"timestamp","at":"2026-11-30T06:00:00Z"}}`), &p); err != nil {
		t.Fatal(err)
	}
	if to, err := p.To.target(now); err != nil || to.At == nil || !to.At.Equal(now.Add(-6*time.Hour)) || to.Kind != "timestamp" {
		t.Errorf("to.at 06:00: %+v, %v", to, err)
	}
	for _, body := range []string{`{"to":{"kind":"timestamp","at":""}}`, `{"to":{"kind":"timestamp","at":null}}`, `{"to":{"kind":"timestamp"}}`} {
		var p offsetPlanRequest
		if err := decodeJSON(bodyContext(body), &p); err != nil {
			t.Fatal(err)
		}
		if to, err := p.To.target(now); err != nil || to.At != nil {
			t.Errorf("%s: at %v, %v; want none (to.at: required, from the plan)", body, to.At, err)
		}
	}
}

// A topic page's form goes back only to a page of that topic: dot segments (plain or escaped), a
// doubled slash, another host or another topic's prefix fall back to the topic page itself. The
// flash goes in a cookie (setFlash), never in the URL; a form's back never carries one either.
func TestBackToTopicStaysOnTheTopic(t *testing.T) {
	const topic = "/kafka/main/topics/orders.DLT"
	for back, want := range map[string]string{
		topic + "/errors?state=open":            topic + "/errors?state=open",
		topic + "?flash=Call+555-0100":          topic,
		topic:                                   topic,
		topic + "/../../../admin":               topic,
		topic + "%2F..%2F..%2F..%2Fadmin":       topic,
		topic + "/%2E%2E/%2E%2E/x":              topic,
		topic + "//evil.example/x":              topic,
		"https://evil.example" + topic:          topic,
		"/kafka/main/topics/orders.DLTx/errors": topic,
		"":                                      topic,
	} {
		e := echo.New()
		req := httptest.NewRequest(http.MethodPost, topic+"/notes", strings.NewReader(url.Values{"back": {back}}.Encode()))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationForm)
		rec := httptest.NewRecorder()
		c := e.NewContext(req, rec)
		c.SetParamNames("cluster", "topic")
		c.SetParamValues("main", "orders.DLT")
		if err := (&Kafka{}).backToTopic(c, "done"); err != nil {
			t.Fatal(err)
		}
		if got := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || got != want {
			t.Errorf("back=%q: %d to %q, want %q", back, rec.Code, got, want)
		}
	}
}
