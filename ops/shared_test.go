package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"
)

func TestMessageIDFromJSON(t *testing.T) {
	paths := []string{"messageId", "meta.id", "items.1.id"}
	cases := map[string]string{
		`{"messageId":"m-1"}`:                    "m-1",
		`{"messageId":"","meta":{"id":42}}`:      "42",
		`{"items":[{"id":"a"},{"id":"b"}]}`:      "b",
		`{"messageId":{"nested":true}}`:          "",
		`["messageId"]`:                          "",
		`not json`:                               "",
		`  {"meta":{"id":12345678901234567890}}`: "12345678901234567890",
	}
	for body, want := range cases {
		if got := MessageIDFromJSON([]byte(body), paths); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
		if body == `not json` {
			continue
		}
		if got := MessageIDFromValidJSON([]byte(body), paths); got != want {
			t.Errorf("%s (known valid): %q, want %q", body, got, want)
		}
	}
	// Only the check is skipped: a body that is not valid JSON yields no id unless it is said
	// to be valid.
	broken := []byte(`{"messageId":"m-2", oops`)
	if got := MessageIDFromJSON(broken, paths); got != "" {
		t.Errorf("invalid body: %q", got)
	}
	if got := MessageIDFromValidJSON(broken, paths); got != "m-2" {
		t.Errorf("invalid body said to be valid: %q", got)
	}
	if got := MessageIDFromJSON([]byte(`{"messageId":"m"}`), nil); got != "" {
		t.Errorf("no paths: %q", got)
	}
}

// An id with bytes that are not UTF-8 is read as encoding/json reads it (each bad byte a U+FFFD),
// so that what the page shows, a plan matches and the inbox is asked for is the consumer's id.
func TestMessageIDFromJSONInvalidUTF8(t *testing.T) {
	for _, body := range []string{"{\"messageId\":\"\x8a\"}", "{\"messageId\":\"a\xff\xfeb\\u00e9\"}", "{\"messageId\":\"\xe2\x82\"}"} {
		var want struct {
			MessageID string `json:"messageId"`
		}
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		got := MessageIDFromJSON([]byte(body), []string{"messageId"})
		if got != want.MessageID || !utf8.ValidString(got) {
			t.Errorf("%q: %q, encoding/json reads %q", body, got, want.MessageID)
		}
	}
}

// The parsed paths are kept for every caller: twenty at once read the same ids, and paths past
// what is kept are still read.
func TestMessageIDPathsShared(t *testing.T) {
	var callers errgroup.Group
	for g := range 20 {
		callers.Go(func() error {
			for i := range 400 {
				p := fmt.Sprintf("$.k%d", (g*400+i)%300) // 300 paths: more than are kept
				body := fmt.Sprintf(`{"k%d":"v%d"}`, (g*400+i)%300, i)
				if got := MessageIDFromJSON([]byte(body), []string{"$.missing", p}); got != fmt.Sprint("v", i) {
					return fmt.Errorf("%s in %s: %q", p, body, got)
				}
			}
			return nil
		})
	}
	if err := callers.Wait(); err != nil {
		t.Error(err)
	}
}

// The grammar of redaction.json_paths reads the same ids as the old bare form, and can name keys
// the bare form cannot.
func TestMessageIDFromJSONPathForms(t *testing.T) {
	bare := []string{"messageId", "meta.id", "items.1.id"}
	dollar := []string{"$.messageId", "$.meta.id", "$.items[1].id"}
	for _, body := range []string{`{"messageId":"m-1"}`, `{"messageId":"","meta":{"id":42}}`, `{"items":[{"id":"a"},{"id":"b"}]}`,
		`{"messageId":{"nested":true}}`, `{"items":{"1":{"id":"in an object"}}}`, `{}`} {
		if b, d := MessageIDFromJSON([]byte(body), bare), MessageIDFromJSON([]byte(body), dollar); b != d && body != `{"items":{"1":{"id":"in an object"}}}` {
			t.Errorf("%s: bare %q, $ %q", body, b, d)
		}
	}
	for body, want := range map[string]string{
		`{"items":{"1":{"id":"in an object"}}}`: "", // [1] is an index; the bare "1" was either
		`{"a.b":{"id":"quoted"}}`:               "quoted",
		`{"items":[{"id":"first"}]}`:            "first",
	} {
		if got := MessageIDFromJSON([]byte(body), []string{"$.items[1].id", "$['a.b'].id", "$.items[0]['id']"}); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
	if got := MessageIDFromJSON([]byte(`{"items":{"1":{"id":"x"}}}`), []string{"$.items['1'].id"}); got != "x" {
		t.Errorf("a quoted number is a key: %q", got)
	}
}

// Bound shortens a call's context to d, and never lengthens one that ends sooner.
func TestBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		parent time.Duration // 0: no deadline
		d      time.Duration
		want   time.Duration
	}{
		{"NoDeadline", 0, time.Minute, time.Minute},
		{"LaterDeadline", time.Hour, time.Minute, time.Minute},
		{"SoonerDeadline", time.Second, time.Minute, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := context.Background()
			if tc.parent > 0 {
				var cancel context.CancelFunc
				parent, cancel = context.WithTimeout(parent, tc.parent)
				defer cancel()
			}
			ctx, cancel := Bound(parent, tc.d)
			dl, ok := ctx.Deadline()
			if left := time.Until(dl); !ok || left > tc.want || left < tc.want-5*time.Second {
				t.Errorf("deadline in %v (set %v), want %v", left, ok, tc.want)
			}
			cancel()
			if ctx.Err() == nil || parent.Err() != nil {
				t.Errorf("cancel ends the bounded context only: %v, parent %v", ctx.Err(), parent.Err())
			}
		})
	}
}

// Within gives up when its context ends, with the context's error, while f is still running; f
// finishes later without blocking on the caller that left. A quick f's answer comes through.
func TestWithin(t *testing.T) {
	release, finished := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // f cannot answer before it is released: only the context can end the wait
	_, err := Within(ctx, func() (int, error) {
		defer close(finished)
		<-release
		return 1, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Within = %v, want context.Canceled while f runs", err)
	}
	close(release)
	<-finished // f's send goes to the buffered channel: it does not block
	if v, err := Within(context.Background(), func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Fatalf("Within = %v, %v; want 7, nil", v, err)
	}
}
