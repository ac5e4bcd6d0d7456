package ops

import (
	"errors"
	"testing"

	"github.com/redrive/redrive/configs"
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
	}
	if got := MessageIDFromJSON([]byte(`{"messageId":"m"}`), nil); got != "" {
		t.Errorf("no paths: %q", got)
	}
}

func TestTLSConfig(t *testing.T) {
	tc, err := TLSConfig(&configs.TLS{Enabled: true, InsecureSkipVerify: true})
	if err != nil || !tc.InsecureSkipVerify {
		t.Fatalf("%+v %v", tc, err)
	}
	if _, err := TLSConfig(&configs.TLS{CAFile: "/nonexistent/ca.pem"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("missing CA file: %v", err)
	}
}
