package handlers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/paths"
)

// The public /readyz names each dependency and says whether it is ok — not why, which may name
// a database's host, port, user or database.
func TestReadyzSaysNamesAndOKOnly(t *testing.T) {
	secret := `failed to connect to user=redrive database=orders host=10.1.2.3 port=5432: password authentication failed`
	h := NewHealth([]Check{
		{Name: "store", Ping: func(context.Context) error { return nil }},
		{Name: "outbox/orders", Ping: func(context.Context) error { return errors.New(secret) }},
	})
	e := echo.New()
	rec := httptest.NewRecorder()
	if err := h.Readyz(e.NewContext(httptest.NewRequest(http.MethodGet, "/readyz", nil), rec)); err != nil {
		t.Fatal(err)
	}
	body := rec.Body.String()
	want := `{"status":"unavailable","dependencies":[{"name":"store","ok":true},{"name":"outbox/orders","ok":false}]}`
	if rec.Code != http.StatusServiceUnavailable || strings.TrimSpace(body) != want {
		t.Fatalf("%d %s", rec.Code, body)
	}
	for _, leak := range []string{"redrive", "10.1.2.3", "5432", "orders host", "password", "error"} {
		if strings.Contains(body, leak) {
			t.Errorf("/readyz says %q", leak)
		}
	}
}

func TestDecodeJSONMessages(t *testing.T) {
	type inner struct {
		Partition *int32   `json:"partition"`
		IDs       []int64  `json:"ids"`
		Force     bool     `json:"force"`
		Names     []string `json:"names"`
	}
	type request struct {
		Source inner `json:"source"`
	}
	for _, tc := range []struct{ body, want string }{
		{`[]`, "body: the request body must be a JSON object, got an array"},
		{`"plan"`, "body: the request body must be a JSON object, got a string"},
		{`12`, "body: the request body must be a JSON object, got a number"},
		{`{"source":[]}`, "source: must be a JSON object, got an array"},
		{`{"source":{"partition":"x"}}`, "source.partition: must be an integer between -2147483648 and 2147483647, got a string"},
		{`{"source":{"partition":1e99}}`, "source.partition: must be an integer between -2147483648 and 2147483647, got the number 1e99"},
		{`{"source":{"ids":{}}}`, "source.ids: must be a JSON array, got an object"},
		{`{"source":{"force":"yes"}}`, "source.force: must be true or false, got a string"},
		{`{"source":{"names":[1]}}`, "source.names: must be a string, got a number"},
		{`{"nope":1}`, `body: unknown field "nope" (check the field name)`},
		{``, "body: empty; send a JSON object"},
		{`{"source":`, "body: could not be read as JSON"},
	} {
		e := echo.New()
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		var into request
		err := decodeJSON(e.NewContext(req, httptest.NewRecorder()), &into)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v; want %q", tc.body, err, tc.want)
		}
	}
}

// Names that are dot segments survive the links built for them: a browser would drop "." and
// ".." (escaped or not), so paths.Segment writes them with a ";" and PathParam reads them back.
func TestPathParamReadsPathSegments(t *testing.T) {
	e := echo.New()
	var got struct{ vhost, queue string }
	e.GET("/q/:vhost/:queue", func(c echo.Context) error {
		got.vhost, got.queue = PathParam(c, "vhost"), PathParam(c, "queue")
		return nil
	})
	srv := httptest.NewServer(e)
	defer srv.Close()
	for _, tc := range []struct{ vhost, queue string }{
		{"/", ".."}, {"/", "."}, {"prod", ".."}, {"prod", ".;"}, {"prod", "..;"}, {"..", "orders"},
		{"a/b", "%2E%2E"}, {"prod", "100%"}, {"prod", "%41"}, {"prod", "dlq; drop"}, {"prod", "évé\u202e"},
	} {
		u := srv.URL + "/q/" + paths.Segment(tc.vhost) + "/" + paths.Segment(tc.queue)
		for _, seg := range strings.Split(strings.TrimPrefix(u, srv.URL+"/"), "/") {
			if seg == "." || seg == ".." || strings.EqualFold(seg, "%2e%2e") || strings.EqualFold(seg, "%2e") ||
				strings.EqualFold(seg, ".%2e") || strings.EqualFold(seg, "%2e.") {
				t.Fatalf("%s has a dot segment", u)
			}
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got.vhost != tc.vhost || got.queue != tc.queue {
			t.Errorf("%s: got %q %q; want %q %q", u, got.vhost, got.queue, tc.vhost, tc.queue)
		}
	}
	// Typed by hand: ".." and an escaped "%2E%2E" as they are.
	for _, raw := range []string{"/q/%2F/..", "/q/%2F/%2E%2E"} {
		got.queue = ""
		req, _ := http.NewRequest(http.MethodGet, srv.URL+raw, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got.queue != ".." {
			t.Errorf("%s: queue %q", raw, got.queue)
		}
	}
}
