package handlers

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// A topic page's form goes back only to a page of that topic: dot segments (plain or escaped), a
// doubled slash, another host or another topic's prefix fall back to the topic page itself.
func TestBackToTopicStaysOnTheTopic(t *testing.T) {
	const topic = "/kafka/main/topics/orders.DLT"
	for back, want := range map[string]string{
		topic + "/errors?state=open":            topic + "/errors?flash=done&state=open",
		topic:                                   topic + "?flash=done",
		topic + "/../../../admin":               topic + "?flash=done",
		topic + "%2F..%2F..%2F..%2Fadmin":       topic + "?flash=done",
		topic + "/%2E%2E/%2E%2E/x":              topic + "?flash=done",
		topic + "//evil.example/x":              topic + "?flash=done",
		"https://evil.example" + topic:          topic + "?flash=done",
		"/kafka/main/topics/orders.DLTx/errors": topic + "?flash=done",
		"":                                      topic + "?flash=done",
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
