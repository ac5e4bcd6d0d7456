package handlers

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
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

func FuzzCapText(f *testing.F) {
	f.Add("héllo wörld", 3)
	f.Add("日本語テキスト", 4)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > len(s)+4 || !utf8.ValidString(s) {
			return
		}
		got, cut := capText(s, n)
		if len(got) > n || cut != (len(s) > n) || !utf8.ValidString(got) || !strings.HasPrefix(s, got) {
			t.Fatalf("capText(%q, %d) = %q, %v", s, n, got, cut)
		}
	})
}

// FuzzDecodeJSON feeds arbitrary request bodies to the strict JSON decoder used by every POST:
// it must answer with an ops error or a value, never panic.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"ids":[1,2]}`, `{"all_stuck":true}`, `{"ids":["x"]}`, `{`, `[]`, `{"ids":[1]}{"ids":[2]}`, ""} {
		f.Add(s)
	}
	e := echo.New()
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		c := e.NewContext(req, httptest.NewRecorder())
		var into requeueRequest
		_ = decodeJSON(c, &into)
	})
}
