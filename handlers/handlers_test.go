package handlers

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/triage"
	"github.com/redrive/redrive/paths"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-11-30T06:00:00Z", time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC), true},
		{"2026-11-30T06:00", time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC), true},
		{"2026-11-30", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), true},
		{"15m", now.Add(-15 * time.Minute), true},
		{"7d", now.Add(-7 * 24 * time.Hour), true},
		{"-5m", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"99999d", time.Time{}, false},
	}
	for _, tc := range cases {
		got, ok := parseTime(tc.in, now)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("parseTime(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-11-30", "15m", "7d", "2026-11-30T06:00:00.123+02:00", "1h30m", ""} {
		f.Add(s)
	}
	now := time.Now()
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseTime(s, now)
		if _, isAge := parseAge(s); ok && isAge && got.After(now) {
			t.Fatalf("age %q resolved to the future: %v", s, got)
		}
	})
}

// POST /api/v1/replays {"rate_per_second":1.5} (or 1e12) said "must be an integer between
// -9223372036854775808 and 9223372036854775807", int64's range, not the field's 1..1000000: a
// number an integer field cannot take is now "must be a whole number", saying why, and the
// field's own check names its range once the number is whole.
func TestDecodeJSONWholeNumbers(t *testing.T) {
	type request struct {
		Rate  int     `json:"rate_per_second"`
		Small int8    `json:"small"`
		Count uint32  `json:"count"`
		IDs   []int64 `json:"ids"`
	}
	digits := "must be a whole number written in digits (1000000, not 1e6 or 1000000.0), got the number "
	for body, want := range map[string]string{
		`{"rate_per_second":1.5}`:                  "rate_per_second: must be a whole number, got the number 1.5",
		`{"rate_per_second":-0.25}`:                "rate_per_second: must be a whole number, got the number -0.25",
		`{"rate_per_second":1e12}`:                 "rate_per_second: " + digits + "1e12",
		`{"rate_per_second":2.0}`:                  "rate_per_second: " + digits + "2.0",
		`{"rate_per_second":1e30}`:                 "rate_per_second: must be a whole number, got the number 1e30, which is far too large",
		`{"rate_per_second":9223372036854775808}`:  "rate_per_second: must be a whole number, got the number 9223372036854775808, which is far too large",
		`{"rate_per_second":-9223372036854775809}`: "rate_per_second: must be a whole number, got the number -9223372036854775809, which is far too small",
		`{"rate_per_second":1e400}`:                "rate_per_second: must be a whole number, got the number 1e400, which is far too large",
		`{"small":300}`:                            "small: must be a whole number, got the number 300, which is far too large",
		`{"count":-5}`:                             "count: must not be negative, got the number -5",
		`{"count":2.5}`:                            "count: must be a whole number, got the number 2.5",
		`{"rate_per_second":"5"}`:                  "rate_per_second: must be a whole number, got a string",
		// An id field: its range was int64's, which named the Go type to whoever sent ["a"].
		`{"ids":["a"]}`: "ids: must be a whole number, got a string",
	} {
		var into request
		err := decodeJSON(bodyContext(body), &into)
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(want, "whole") && strings.Contains(err.Error(), "9223372036854775807") {
			t.Errorf("%s: %v; want %q", body, err, want)
		}
	}
	var start startRequest // POST /api/v1/replays's own body
	if err := decodeJSON(bodyContext(`{"plan_id":"p","rate_per_second":1.5}`), &start); err == nil ||
		err.Error() != "rate_per_second: must be a whole number, got the number 1.5" {
		t.Errorf("replay start at 1.5 a second: %v", err)
	}
	var into request
	if err := decodeJSON(bodyContext(`{"rate_per_second":-5,"count":7}`), &into); err != nil || into.Rate != -5 || into.Count != 7 {
		t.Errorf("whole numbers in range: %+v, %v; want them read (the field's check judges -5)", into, err)
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
		{`{"source":{"partition":1e99}}`, "source.partition: must be a whole number, got the number 1e99, which is far too large"},
		{`{"source":{"ids":{}}}`, "source.ids: must be a JSON array, got an object"},
		{`{"source":{"force":"yes"}}`, "source.force: must be true or false, got a string"},
		{`{"source":{"names":[1]}}`, "source.names: must be a string, got a number"},
		{`{"nope":1}`, `body: unknown field "nope" (check the field name)`},
		{"{\"a\\u001bb\":1}", `body: unknown field "a\x1bb" (check the field name)`},
		{``, "body: empty; send a JSON object"},
		{`{"source":`, "body: could not be read as JSON"},
		{`{}}`, "body: one JSON object expected, found more"},
		{"{} ]\n", "body: one JSON object expected, found more"},
	} {
		var into request
		err := decodeJSON(bodyContext(tc.body), &into)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v; want %q", tc.body, err, tc.want)
		}
	}
	var into request
	if err := decodeJSON(bodyContext("{}  \r\n"), &into); err != nil { // white space after the object is no second value
		t.Errorf("an object and white space: %v", err)
	}
}

// FuzzDecodeJSON feeds arbitrary request bodies to the strict JSON decoder used by every POST:
// it must answer with an ops error or a value, never panic.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"ids":[1,2]}`, `{"all_stuck":true}`, `{"ids":["x"]}`, `{`, `[]`, `{"ids":[1]}{"ids":[2]}`, ""} {
		f.Add(s)
	}
	// What a body decodes to is what encoding/json reads of it; what it is refused with is a 400
	// (or 413) in the user's words: the field or "body", never a Go type or the decoder's text.
	goWords := regexp.MustCompile(`int64|uint|float64|\[\]|struct|map\[|json:|handlers\.|requeueRequest|Go value`)
	unknownField := regexp.MustCompile(`unknown field ".*" \(check the field name\)$`)
	f.Fuzz(func(t *testing.T, body string) {
		var into requeueRequest
		err := decodeJSON(bodyContext(body), &into)
		if err == nil {
			var plain requeueRequest
			if jerr := json.Unmarshal([]byte(body), &plain); jerr != nil || !reflect.DeepEqual(plain, into) {
				t.Fatalf("%q decoded to %+v; encoding/json reads %+v (%v)", body, into, plain, jerr)
			}
			if !utf8.ValidString(into.Reason) {
				t.Fatalf("%q decoded to a reason that is not UTF-8: %q", body, into.Reason)
			}
			return
		}
		var he *echo.HTTPError
		if errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge {
			return
		}
		if !errors.Is(err, ops.ErrInvalid) {
			t.Fatalf("%q refused with %v, not a 400", body, err)
		}
		// An unknown field is named back as the client wrote it (quoted and escaped by encoding/json): its name is theirs, not
		// Go's, whatever it looks like ("[]", "int64").
		msg := ops.Message(err)
		if echoed := unknownField.ReplaceAllString(msg, "unknown field (check the field name)"); msg == "" || goWords.MatchString(echoed) {
			t.Fatalf("%q refused with %q: not in the user's words", body, msg)
		}
	})
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

// Every action that needs a reason judges it with requiredReason too, as an outbox requeue does
// (TestRequeueReasonJudgedAsAudited).
func TestRequiredReasonEverywhere(t *testing.T) {
	blank := "\x00 \u200b"
	ctx := func() echo.Context {
		c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/", nil), httptest.NewRecorder())
		c.SetParamNames("id")
		c.SetParamValues("7")
		SetActor(c, access.Actor{Name: "root", Role: access.Admin})
		return c
	}
	restore := func(reason string) error {
		_, _, err := restoreInput(ctx(), func() (restoreRequest, error) { return restoreRequest{To: "dlq", Reason: reason}, nil })
		return err
	}
	resolve := func(reason string) error {
		_, err := resolutionInput(triage.StateIgnored, reason, "events")
		return err
	}
	offsetsApply := func(reason string) error {
		_, err := (&Offsets{}).apply(ctx(), offsetApplyRequest{PlanID: "plan_1", Reason: reason})
		return err
	}
	forcedReplay := func(reason string) error {
		_, err := (&Replays{}).start(ctx(), startRequest{PlanID: "plan_1", Force: true, Reason: reason})
		return err
	}
	for name, act := range map[string]func(string) error{
		"ArchiveRestore": restore, "Resolution": resolve, "OffsetsApply": offsetsApply, "ForcedReplay": forcedReplay,
	} {
		t.Run(name, func(t *testing.T) {
			if err := act(blank); !errors.Is(err, ops.ErrInvalid) || !strings.HasPrefix(err.Error(), "reason: required") {
				t.Errorf("a reason of a NUL and spaces: %v; want reason: required", err)
			}
			if err := act(strings.Repeat("因", maxReason+1)); !errors.Is(err, ops.ErrInvalid) || err.Error() != "reason: at most 1000 characters" {
				t.Errorf("1001 characters: %v", err)
			}
		})
	}
	if err := restore(strings.Repeat("因", 400)); err != nil {
		t.Errorf("a restore with 400 Chinese characters: %v", err)
	}
	if reason, err := resolutionInput(triage.StateOpen, blank, "events"); err != nil || reason != "" {
		t.Errorf("opening again needs no reason: %q, %v", reason, err)
	}
}

// A string no handler can use is a 400 naming it by its path: a NUL (\u0000) reached PostgreSQL
// and came back as a 503 blaming the store (SQLSTATE 22021), and invalid UTF-8 was quietly turned
// into U+FFFD. The top-level reason keeps its rule: NULs dropped, as the audit log keeps it.
func TestDecodeJSONRefusesUnusableStrings(t *testing.T) {
	type filter struct {
		EventType string   `json:"event_type"`
		Reason    string   `json:"reason"`
		IDs       []string `json:"ids"`
	}
	type request struct {
		Filter   *filter           `json:"filter"`
		Matchers map[string]string `json:"matchers"`
		Items    []filter          `json:"items"`
		PlanID   string            `json:"plan_id"`
		Reason   string            `json:"reason"`
	}
	for _, tc := range []struct{ body, want string }{
		{`{"filter":{"event_type":"a\u0000b"},"reason":"x"}`, "filter.event_type: must not contain NUL bytes"},
		{`{"plan_id":"a\u0000b"}`, "plan_id: must not contain NUL bytes"},
		{`{"filter":{"ids":["1","2","3","\u0000"]}}`, "filter.ids[3]: must not contain NUL bytes"},
		{`{"items":[{"ids":["x"]},{"event_type":"ok","ids":["y","z\u0000"]}]}`, "items[1].ids[1]: must not contain NUL bytes"},
		{`{"filter":{"reason":"a\u0000"}}`, "filter.reason: must not contain NUL bytes"}, // a filter, not the audit's reason
		{`{"matchers":{"group":"g\u0000"}}`, "matchers.group: must not contain NUL bytes"},
		{`{"matchers":{"g\u0000":"x"}}`, "a field name in matchers: must not contain NUL bytes"},
		{"{\"reason\":\"\xff\xfe\"}", "reason: must be valid UTF-8 text"},
		{"{\"filter\":{\"event_type\":\"ok\"},\"plan_id\":\"a\xc3\"}", "plan_id: must be valid UTF-8 text"},
		{`{"reason":"fix\u0000 deployed \udcff","plan_id":"p"}`, ""}, // NULs of a reason are dropped; \udcff is an escape, valid text
		{`{"filter":{"event_type":"é\u00e9 \u202e","ids":[]},"items":[],"matchers":{}}`, ""},
	} {
		var into request
		err := decodeJSON(bodyContext(tc.body), &into)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v; want it accepted", tc.body, err)
		case tc.want != "" && (!errors.Is(err, ops.ErrInvalid) || err.Error() != tc.want):
			t.Errorf("%q: %v; want a 400 %q", tc.body, err, tc.want)
		}
	}
}

// A body over MaxJSONBody is a 413 naming the limit and what to do: 100,000 ids of 10 digits (1.1
// MB) were cut at 1 MiB and read as "body: could not be read as JSON".
func TestDecodeJSONBodyOverTheLimit(t *testing.T) {
	ids := make([]string, 100_000)
	for i := range ids {
		ids[i] = strconv.Itoa(1_000_000_000 + i)
	}
	body := `{"ids":[` + strings.Join(ids, ",") + `],"reason":"x"}`
	var into requeueRequest
	err := decodeJSON(bodyContext(body), &into)
	var he *echo.HTTPError
	if !errors.As(err, &he) || he.Code != http.StatusRequestEntityTooLarge ||
		he.Message != "body: larger than 1 MiB, the most the console reads; send fewer ids per request (at most 10000)" {
		t.Fatalf("%d bytes: %v; want a 413 naming the limit", len(body), err)
	}
}

// A reason that is not UTF-8 text says so: %ff%fe was cleaned to nothing and refused as
// "reason: required" although one was sent.
func TestReasonNotUTF8(t *testing.T) {
	for _, raw := range []string{"\xff\xfe", "fix \xc3"} {
		if _, err := requiredReason(raw, "say why"); !errors.Is(err, ops.ErrInvalid) || err.Error() != "reason: must be valid UTF-8 text" {
			t.Errorf("%q: %v", raw, err)
		}
	}
}

// A resolution's filter holds its texts to the event list's 256 characters: a 100,000-character
// aggregate_id was taken.
func TestOutboxResolutionFilterLength(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		fields filterFields
		f      outboxFilterRef
		want   string
	}{
		{apiFilterFields, outboxFilterRef{AggregateID: strings.Repeat("a", 100_000)}, "filter.aggregate_id: must be at most 256 characters (it has 100000)"},
		{apiFilterFields, outboxFilterRef{EventType: strings.Repeat("a", 257)}, "filter.event_type: must be at most 256 characters (it has 257)"},
		{formFilterFields, outboxFilterRef{EventType: strings.Repeat("é", 257)}, "event_type: must be at most 256 characters (it has 257)"},
		{formFilterFields, outboxFilterRef{EventType: strings.Repeat("修", 256), AggregateID: strings.Repeat("a", 256)}, ""},
	} {
		_, err := tc.f.toFilter(tc.fields, now)
		if (tc.want == "" && err != nil) || (tc.want != "" && (!errors.Is(err, ops.ErrInvalid) || err.Error() != tc.want)) {
			t.Errorf("%.20q: %v; want %q", tc.f.EventType+tc.f.AggregateID, err, tc.want)
		}
	}
}
