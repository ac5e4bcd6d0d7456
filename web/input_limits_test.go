package web

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/redrive/redrive/configs"
)

// A NUL or invalid UTF-8 in a JSON body's string or a form field, and a RabbitMQ name longer than
// RabbitMQ allows, are a 400 naming the field: they reached PostgreSQL (a 503 "its database
// refused the query (SQLSTATE 22021)") or the management API (a 414, read as "rabbitmq broker
// "main" did not answer", with the 100,000-character name quoted back whole).
func TestUnusableInputIs400(t *testing.T) {
	s := startServer(t, authYAML(t, configs.AuthNone, ""))
	cl := anonymousCaller()
	long := strings.Repeat("a", 100_000)
	for _, tc := range []struct {
		name, method, path, body string
		want                     string
	}{
		{"NULFilterEventType", "POST", "/api/v1/outboxes/nope/resolutions", `{"filter":{"event_type":"a\u0000b"},"state":"resolved","reason":"x"}`,
			"filter.event_type: must not contain NUL"},
		{"NULFilterAggregateID", "POST", "/api/v1/outboxes/nope/resolutions", `{"filter":{"aggregate_id":"\u0000"},"state":"resolved","reason":"x"}`,
			"filter.aggregate_id: must not contain NUL"},
		{"NULPlanID", "POST", "/api/v1/replays", `{"plan_id":"a\u0000b"}`, "plan_id: must not contain NUL"},
		{"InvalidUTF8Reason", "POST", "/api/v1/outboxes/nope/resolutions", "{\"events\":[1],\"state\":\"resolved\",\"reason\":\"\xff\xfe\"}",
			"reason: must be valid UTF-8 text"},
		{"LongQueue", "GET", "/api/v1/rabbitmq/main/queues/%2F/" + long + "/messages", "", "queue: must be at most 255 bytes (it has 100000)"},
		{"LongQueueExport", "GET", "/api/v1/rabbitmq/main/queues/%2F/" + long + "/export", "", "queue: must be at most 255 bytes"},
		{"LongQueuePage", "GET", "/rabbitmq/main/queues/%2F/" + long, "", "queue: must be at most 255 bytes"},
		{"LongVhost", "GET", "/api/v1/rabbitmq/main/queues/" + strings.Repeat("v", 256) + "/q", "", "vhost: must be at most 255 bytes (it has 256)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctype := ""
			if tc.method == "POST" {
				ctype = "application/json"
			}
			status, _, body := cl.do(t, tc.method, s.url+tc.path, ctype, tc.body)
			if status != http.StatusBadRequest || !strings.Contains(body, tc.want) || len(body) > 8192 { // an error page, never the 100,000 bytes echoed
				t.Fatalf("%d %.300s (%d bytes); want 400 with %q", status, body, len(body), tc.want)
			}
		})
	}
	// A RabbitMQ name of 255 bytes is one it may have: not refused as too long.
	if status, _, body := cl.do(t, "GET", s.url+"/api/v1/rabbitmq/main/queues/%2F/"+strings.Repeat("q", 255)+"/messages", "", ""); strings.Contains(body, "at most 255") {
		t.Fatalf("255 bytes: %d %s", status, body)
	}

	// Forms: the page's, with its CSRF token (in the body, and in the header).
	jar, _ := cookiejar.New(nil)
	browser := caller{client: &http.Client{Jar: jar, CheckRedirect: noRedirects}, header: http.Header{}}
	token := csrfToken(t, browser.client, s.url)
	for _, tc := range []struct{ name, form, want string }{
		{"NULEventType", "filter=1&event_type=a%00b&state=resolved&reason=x", "event_type: must not contain NUL"},
		{"NULAggregateID", "filter=1&aggregate_id=%00&state=resolved&reason=x", "aggregate_id: must not contain NUL"},
		{"InvalidUTF8Reason", "id=1&state=resolved&reason=%ff%fe", "reason: must be valid UTF-8 text"},
		{"NULFieldName", "id=1&state=resolved&reason=x&a%00=1", "a form field name: must not contain NUL"},
		{"Malformed", "id=1&state=resolved&reason=%zz", "form: could not be read"},
	} {
		t.Run("Form"+tc.name, func(t *testing.T) {
			status, _, body := browser.do(t, "POST", s.url+"/outboxes/nope/resolutions", "application/x-www-form-urlencoded", tc.form+"&_csrf="+url.QueryEscape(token))
			if status != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %.500s; want 400 with %q", status, body, tc.want)
			}
			withHeader := browser
			withHeader.header = http.Header{"X-Csrf-Token": {token}}
			status, _, body = withHeader.do(t, "POST", s.url+"/outboxes/nope/resolutions", "application/x-www-form-urlencoded", tc.form)
			if status != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Fatalf("token in the header: %d %.500s; want 400 with %q", status, body, tc.want)
			}
		})
	}
}

// A body over the limit is a 413 in the API's error shape naming the limit and what to do: 1.1 MB
// of ids was cut at 1 MiB and read as "body: could not be read as JSON", and 3 MB was "Request
// Entity Too Large".
func TestBodyOverTheLimitNamesIt(t *testing.T) {
	s := startServer(t, authYAML(t, configs.AuthNone, ""))
	cl := anonymousCaller()
	ids := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"reason":"x","ids":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(1_000_000_000 + i))
		}
		b.WriteString(`]}`)
		return b.String()
	}
	for _, tc := range []struct {
		name, path, ctype, body, want string
	}{
		{"JSON1.1MB", "/api/v1/outboxes/nope/resolutions", "application/json", ids(100_000), "body: larger than 1 MiB, the most the console reads; send fewer ids per request (at most 10000)"},
		{"JSON3MB", "/api/v1/replays/plan", "application/json", ids(300_000), "body: larger than 1 MiB"},
		{"Form3MB", "/outboxes/nope/requeue", "application/x-www-form-urlencoded", "reason=x&id=" + strings.Repeat("1", 3<<20), "body: larger than 2 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := cl.do(t, "POST", s.url+tc.path, tc.ctype, tc.body)
			if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %.500s; want 413 with %q", status, body, tc.want)
			}
			if tc.ctype == "application/json" && !strings.HasPrefix(body, `{"error":{"code":"too_large","message":"body: larger than`) {
				t.Fatalf("not the API's error shape: %.300s", body)
			}
		})
	}
	// Sent without a length (chunked), the form is cut as it is read: the same 413.
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: noRedirects}
	token := csrfToken(t, client, s.url)
	body := io.MultiReader(strings.NewReader("_csrf="+url.QueryEscape(token)+"&reason=x&id="), strings.NewReader(strings.Repeat("1", 3<<20)))
	req, err := http.NewRequest(http.MethodPost, s.url+"/outboxes/nope/requeue", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if req.ContentLength != 0 || resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "body: larger than 2 MiB") {
		t.Fatalf("chunked 3 MB form: %d %.300s", resp.StatusCode, b)
	}
}
