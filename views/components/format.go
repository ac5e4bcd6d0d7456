// Package components holds the console's shared, purely presentational UI
// pieces (badges, times, numbers, ids, empty and error states, stat cards…)
// and the small formatting helpers behind them.
//
// Nothing here imports ops or a driver: callers pass plain strings, numbers
// and times. All text is rendered through templ's escaping.
package components

import (
	"github.com/redrive/redrive/ops"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Tone names used as CSS classes (tone-<name>) on badges, stat cards and
// callouts: neutral (grey), info (blue), ok (green), warn (amber),
// alert (orange) and danger (red).
const (
	ToneNeutral = "neutral"
	ToneInfo    = "info"
	ToneOK      = "ok"
	ToneWarn    = "warn"
	ToneAlert   = "alert"
	ToneDanger  = "danger"
)

// StatusTone returns the tone for a status word, case-insensitively:
//
//	outbox:      READY info, PROCESSING warn, SENT ok, FAILED alert, DEAD danger
//	lag:         OK ok, WARN warn, STALL alert, STOP danger, EMPTY neutral, DEAD danger
//	Kafka group: STABLE ok, PREPARINGREBALANCE/COMPLETINGREBALANCE warn
//	RabbitMQ:    RUNNING ok, IDLE neutral, FLOW warn, DOWN/CRASHED danger
//	replay:      PENDING info, PUBLISHED/REPLAYED ok, SKIPPED neutral, FORCED warn, ERROR danger
//
// Anything else is neutral (grey).
func StatusTone(status string) string {
	switch strings.ToUpper(strings.TrimSpace(status)) {
	case "READY", "PENDING", "QUEUED":
		return ToneInfo
	case "PROCESSING", "WARN", "WARNING", "PREPARINGREBALANCE", "COMPLETINGREBALANCE", "FLOW", "FORCED", "AMBIGUOUS":
		return ToneWarn
	case "SENT", "OK", "STABLE", "RUNNING", "PUBLISHED", "REPLAYED", "DONE", "PROCESSED":
		return ToneOK
	case "FAILED", "STALL":
		return ToneAlert
	case "DEAD", "STOP", "ERROR", "ERR", "DOWN", "CRASHED":
		return ToneDanger
	default:
		return ToneNeutral
	}
}

// toneClass returns the CSS class for tone, falling back to neutral for an
// unknown or empty tone so a typo never produces an unstyled element.
func toneClass(tone string) string {
	switch tone {
	case ToneNeutral, ToneInfo, ToneOK, ToneWarn, ToneAlert, ToneDanger:
		return "tone-" + tone
	default:
		return "tone-" + ToneNeutral
	}
}

// FormatNum formats n with comma thousands separators: 1234567 → "1,234,567" (ops.FormatNum).
func FormatNum(n int64) string { return ops.FormatNum(n) }

// FormatAge formats a duration as its two largest units: "3 min 12 s" (ops.FormatAge).
func FormatAge(d time.Duration) string { return ops.FormatAge(d) }

// RelText describes t relative to now in the largest whole unit:
// "just now", "12 s ago", "5 min ago", "3 h ago", "2 d ago", or "in 4 min"
// for a time in the future. static/app.js computes the same text in the
// browser, so the two must stay in step.
func RelText(t, now time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	s := int64(d / time.Second)
	var txt string
	switch {
	case s < 1:
		return "just now"
	case s < 60:
		txt = strconv.FormatInt(s, 10) + " s"
	case s < 3600:
		txt = strconv.FormatInt(s/60, 10) + " min"
	case s < 86400:
		txt = strconv.FormatInt(s/3600, 10) + " h"
	default:
		txt = strconv.FormatInt(s/86400, 10) + " d"
	}
	if future {
		return "in " + txt
	}
	return txt + " ago"
}

// FormatAbs formats t as an absolute UTC time for tooltips and exports:
// "2026-11-30 06:41:35 UTC".
func FormatAbs(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
}

// OrDash is s, or "—" when it is empty: a cell or a card without a value says so rather than
// standing blank.
func OrDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// TimeSortKey is t as a table's data-sort key (Unix milliseconds); none for a zero time.
func TimeSortKey(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// Percent returns done/total as a whole percentage clamped to 0..100;
// it is 0 when total is not positive.
func Percent(done, total int64) int {
	if total <= 0 || done <= 0 {
		return 0
	}
	if done >= total {
		return 100
	}
	// 128-bit product so that done*100 cannot overflow; done < total keeps
	// the quotient below 100, so Div64 cannot panic.
	hi, lo := bits.Mul64(uint64(done), 100)
	q, _ := bits.Div64(hi, lo, uint64(total))
	return int(q)
}

// Visible makes control characters, bidirectional-text controls and invalid UTF-8 in s visible as
// escapes (\x00, \x1b, \u202e, \xff), so that message content can neither reorder the text
// around it on a page (U+202E "right-to-left override") nor hide itself; tab, newline and
// carriage return are kept. Text without them is returned as it is.
func Visible(s string) string {
	if !needsEscape(s) {
		return s
	}
	return string(appendVisible(make([]byte, 0, len(s)+16), s))
}

// VisibleHTML applies Visible to a rendered HTML document, text and attribute values alike. The
// escapes are plain ASCII without markup characters, and the templates hold no such characters
// themselves, so the document stays well formed; "\u202e" inside an embedded JSON string is even
// the same character again for the script that reads it.
func VisibleHTML(b []byte) []byte {
	if !needsEscape(b) {
		return b
	}
	return appendVisible(make([]byte, 0, len(b)+64), b)
}

func needsEscape[T string | []byte](s T) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if invisibleASCII(c) {
				return true
			}
			i++
			continue
		}
		r, n := decodeRune(s[i:])
		if r == utf8.RuneError && n == 1 || invisibleRune(r) {
			return true
		}
		i += n
	}
	return false
}

func decodeRune[T string | []byte](s T) (rune, int) {
	switch v := any(s).(type) {
	case string:
		return utf8.DecodeRuneInString(v)
	case []byte:
		return utf8.DecodeRune(v)
	}
	return utf8.RuneError, 1
}

func appendVisible[T string | []byte](out []byte, s T) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if invisibleASCII(c) {
				out = append(out, '\\', 'x', hex[c>>4], hex[c&0xf])
			} else {
				out = append(out, c)
			}
			i++
			continue
		}
		r, n := decodeRune(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, '\\', 'x', hex[c>>4], hex[c&0xf])
		case invisibleRune(r):
			out = append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return out
}

// invisibleASCII: C0 controls but tab, newline and carriage return, and DEL.
func invisibleASCII(c byte) bool {
	return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f
}

// invisibleRune: C1 controls, the bidirectional formatting characters (embeddings, overrides,
// isolates and marks), and the invisible BOM / zero-width no-break space.
func invisibleRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0xfeff:
		return true
	}
	return false
}

// ShortError keeps an error text's useful part for a narrow column: a leading qualified class
// name loses its package ("com.acme.payments.ProviderTimeoutException: no answer" →
// "ProviderTimeoutException: no answer"); anything else is left as it is. The full text belongs
// in the cell's title.
func ShortError(s string) string {
	name, rest, ok := strings.Cut(s, ": ")
	if !ok || strings.ContainsAny(name, " \t<>") || !strings.Contains(name, ".") {
		return s
	}
	return name[strings.LastIndexByte(name, '.')+1:] + ": " + rest
}

// ResolutionTone colours a dead letter's resolution state (open, resolved, ignored, replayed):
// open is still on fire.
func ResolutionTone(state string) string {
	switch state {
	case "open", "":
		return ToneDanger
	case "ignored":
		return ToneWarn
	}
	return ToneOK
}

// NoteView is a person's note on a dead letter or an error group: who, when, the text and an
// optional web link.
type NoteView struct {
	By   string
	At   time.Time
	Text string
	Link string // an http(s) URL or ""
}

// Plural is n (as FormatNum writes it) and word, in the plural unless n is 1: "1 message",
// "20 messages" ("1 messages" and "record(s)" read badly). Words whose plural is not an added s
// are written out by the caller.
func Plural(n int64, word string) string {
	if n == 1 {
		return FormatNum(n) + " " + word
	}
	return FormatNum(n) + " " + word + "s"
}
