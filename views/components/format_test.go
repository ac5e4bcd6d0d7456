package components

import (
	"math"
	"testing"
	"time"
)

func TestRelText(t *testing.T) {
	now := time.Date(2026, 11, 30, 6, 41, 35, 0, time.UTC)
	tests := []struct {
		name string
		ago  time.Duration // now - t
		want string
	}{
		{"Same", 0, "just now"},
		{"SubSecond", 400 * time.Millisecond, "just now"},
		{"Seconds", 12 * time.Second, "12 s ago"},
		{"59s", 59 * time.Second, "59 s ago"},
		{"Minute", 60 * time.Second, "1 min ago"},
		{"Minutes", 5*time.Minute + 59*time.Second, "5 min ago"},
		{"Hours", 3*time.Hour + 59*time.Minute, "3 h ago"},
		{"23h", 23*time.Hour + 59*time.Minute, "23 h ago"},
		{"Days", 2*24*time.Hour + 5*time.Hour, "2 d ago"},
		{"Year", 400 * 24 * time.Hour, "400 d ago"},
		{"FutureMinutes", -4*time.Minute - 10*time.Second, "in 4 min"},
		{"FutureSeconds", -30 * time.Second, "in 30 s"},
		{"FutureDays", -49 * time.Hour, "in 2 d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RelText(now.Add(-tt.ago), now); got != tt.want {
				t.Errorf("RelText(now-%v) = %q, want %q", tt.ago, got, tt.want)
			}
		})
	}
}

func TestFormatAbs(t *testing.T) {
	loc := time.FixedZone("CET", 3600)
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 30, 6, 41, 35, 999, time.UTC), "2026-11-30 06:41:35 UTC"},
		{time.Date(2026, 11, 30, 7, 41, 35, 0, loc), "2026-11-30 06:41:35 UTC"},
	}
	for _, tt := range tests {
		if got := FormatAbs(tt.in); got != tt.want {
			t.Errorf("FormatAbs(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStatusTone(t *testing.T) {
	tests := []struct{ status, want string }{
		{"READY", ToneInfo},
		{"PROCESSING", ToneWarn},
		{"SENT", ToneOK},
		{"FAILED", ToneAlert},
		{"DEAD", ToneDanger},
		{"OK", ToneOK},
		{"WARN", ToneWarn},
		{"STALL", ToneAlert},
		{"STOP", ToneDanger},
		{"EMPTY", ToneNeutral},
		{"ready", ToneInfo},
		{" Sent ", ToneOK},
		{"Stable", ToneOK},
		{"", ToneNeutral},
		{"SOMETHING_NEW", ToneNeutral},
	}
	for _, tt := range tests {
		if got := StatusTone(tt.status); got != tt.want {
			t.Errorf("StatusTone(%q) = %q, want %q", tt.status, got, tt.want)
		}
	}
}

func TestToneClass(t *testing.T) {
	tests := []struct{ tone, want string }{
		{ToneDanger, "tone-danger"},
		{"", "tone-neutral"},
		{"purple", "tone-neutral"},
		{`x" onclick="y`, "tone-neutral"},
	}
	for _, tt := range tests {
		if got := toneClass(tt.tone); got != tt.want {
			t.Errorf("toneClass(%q) = %q, want %q", tt.tone, got, tt.want)
		}
	}
}

func TestPercent(t *testing.T) {
	tests := []struct {
		done, total int64
		want        int
	}{
		{0, 0, 0},
		{5, 0, 0},
		{0, 10, 0},
		{1, 3, 33},
		{2, 3, 66},
		{10, 10, 100},
		{11, 10, 100},
		{-1, 10, 0},
		{math.MaxInt64 - 1, math.MaxInt64, 99},
	}
	for _, tt := range tests {
		if got := Percent(tt.done, tt.total); got != tt.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", tt.done, tt.total, got, tt.want)
		}
	}
}

func TestVisible(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, ünïcödé — ok", "plain text, ünïcödé — ok"},
		{"tab\tnewline\ncr\r", "tab\tnewline\ncr\r"},
		{"nul\x00esc\x1b[31mdel\x7f", `nul\x00esc\x1b[31mdel\x7f`},
		{"invalid \xff\xfe bytes \xc3", `invalid \xff\xfe bytes \xc3`},
		{"evil\u202etxt.exe", `evil\u202etxt.exe`},
		{"\u2066isolate\u2069 \u200emark\u200f \u061c \ufeffbom \u0085c1", `\u2066isolate\u2069 \u200emark\u200f \u061c \ufeffbom \u0085c1`},
		{"emoji 👩\u200d💻 stays", "emoji 👩\u200d💻 stays"},
	} {
		if got := Visible(tc.in); got != tc.want {
			t.Errorf("Visible(%q) = %q; want %q", tc.in, got, tc.want)
		}
		if got := string(VisibleHTML([]byte(tc.in))); got != tc.want {
			t.Errorf("VisibleHTML(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestShortError(t *testing.T) {
	for in, want := range map[string]string{
		"com.acme.payments.ProviderTimeoutException: no answer in 30000 ms": "ProviderTimeoutException: no answer in 30000 ms",
		"java.lang.IllegalStateException: boom: twice":                      "IllegalStateException: boom: twice",
		"TimeoutException: plain":                                           "TimeoutException: plain",
		"<script>a.b: c</script>":                                           "<script>a.b: c</script>",
		"connection refused":                                                "connection refused",
	} {
		if got := ShortError(in); got != want {
			t.Errorf("ShortError(%q) = %q, want %q", in, got, want)
		}
	}
}

// An empty value reads as a dash; a time sorts by its milliseconds, and a missing one gives no key.
func TestOrDashAndTimeSortKey(t *testing.T) {
	if got := OrDash(""); got != "—" {
		t.Errorf(`OrDash("") = %q, want "—"`, got)
	}
	if got := OrDash("3 s"); got != "3 s" {
		t.Errorf(`OrDash("3 s") = %q`, got)
	}
	if got := TimeSortKey(time.UnixMilli(1764576000123)); got != "1764576000123" {
		t.Errorf("TimeSortKey = %q, want 1764576000123", got)
	}
	if got := TimeSortKey(time.Time{}); got != "" {
		t.Errorf("TimeSortKey(zero) = %q, want none", got)
	}
}
