package handlers

import "testing"

// After signing in, the browser goes back only to a page of this console.
func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/outboxes/orders?status=DEAD": "/outboxes/orders?status=DEAD",
		"/":                            "/",
		"":                             "",
		"//evil.example/":              "",
		`/\evil.example`:               "",
		"https://evil.example/":        "",
		"javascript:alert(1)":          "",
		"outboxes":                     "",
		"/login?next=/":                "",
		"/a\r\nSet-Cookie: x=y":        "",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}
