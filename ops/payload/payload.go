// Package payload turns message bytes — a Kafka key or value, a RabbitMQ body, an outbox payload —
// into text: for the JSON API (Encode) and for people (Render). Both read JSON by one rule, IsJSON,
// so that "json" means the same on every kind of source.
package payload

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"unicode"
	"unicode/utf8"
)

// Encodings: the API gives empty, json, text or base64 (Encode); a page shows empty, json, text
// or binary (Render).
const (
	Empty  = "empty"  // no bytes
	JSON   = "json"   // IsJSON: the text as it is in the API; a page lays out objects and arrays
	Text   = "text"   // other valid UTF-8, as it is
	Base64 = "base64" // API only: bytes that are not valid UTF-8, in standard base64
	Binary = "binary" // pages only: not printable text, as a hex dump (offset, hex bytes, ASCII)
)

// IsJSON is the one rule for "json": valid UTF-8 that is exactly one JSON value — an object, an
// array or a scalar (string, number, true, false, null) — with white space around it allowed.
// This is what the OpenAPI document promises ("text that parses as JSON"). encoding/json alone
// accepts invalid UTF-8 inside strings; such bytes are not JSON text, so they go out as base64.
func IsJSON(b []byte) bool {
	return utf8.Valid(b) && json.Valid(b)
}

// Encode gives b to the JSON API as a string and its encoding: Empty for no bytes (""), JSON
// when IsJSON and Text for other UTF-8 (the text as it is; JSON escaping keeps control
// characters such as NUL readable), else Base64. It never fails and never changes valid text.
func Encode(b []byte) (string, string) {
	switch {
	case len(b) == 0:
		return "", Empty
	case !utf8.Valid(b):
		return base64.StdEncoding.EncodeToString(b), Base64
	case json.Valid(b):
		return string(b), JSON
	}
	return string(b), Text
}

// Value gives b to the API as a value of its own, as an outbox event's payload field is: the
// JSON itself when IsJSON, else the text as a JSON string (invalid UTF-8 replaced).
func Value(b []byte) any {
	if IsJSON(b) {
		return json.RawMessage(b)
	}
	return string(b)
}

// Shown is the most of a laid-out value that a page shows: the Kafka topic page and the RabbitMQ
// queue page cut a value or body at 64 KiB. The layout of JSON can be far longer than the JSON (a
// 20,000-byte array nested 10,000 deep lays out at 200,000,000 bytes), so Render stops laying out
// once it passes Shown: its cost is the input's and the shown text's, never the whole layout's.
const Shown = 64 << 10

// maxIndent bounds the layout Indent makes: sixteen times the 256 KiB of an outbox payload its
// page shows, where real documents lay out at one to three times their size.
const maxIndent = 4 << 20

// Render turns b into text for people and says how it was read. It never fails: bytes that are
// neither JSON nor printable text become a hex dump. JSON is read by IsJSON; an object or an array
// is laid out with a two-space indent and labelled JSON, while a scalar (a number, a string) shows
// as the Text it already is, since there is nothing to lay out. A layout longer than Shown is not
// made whole: Render gives its head, more than Shown bytes of it cut on a character boundary, then
// "…" — so a page cutting at Shown (Cut) shows, and marks as cut, what it would have of the whole.
// The text is not escaped for HTML; the view does that.
func Render(b []byte) (text string, encoding string) {
	if len(b) == 0 {
		return "", Empty
	}
	if trimmed := bytes.TrimSpace(b); len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && IsJSON(trimmed) {
		s, stopped := layout(trimmed, Shown)
		if stopped {
			s += "…"
		}
		return s, JSON
	}
	if printable(b) {
		return string(b), Text
	}
	return hex.Dump(b), Binary
}

// Indent lays out b with a two-space indent when IsJSON; false (and b as it is) otherwise, and
// also when the layout would pass maxIndent (a document nested thousands deep), which is then
// shown as it is rather than as megabytes of indentation.
func Indent(b []byte) (string, bool) {
	if !IsJSON(b) {
		return string(b), false
	}
	s, stopped := layout(bytes.TrimSpace(b), maxIndent)
	if stopped {
		return string(b), false
	}
	return s, true
}

// layout is json.Indent(b, "", "  ") for b that IsJSON with no white space around it, byte for
// byte, but it stops once the layout passes n bytes by more than a character can take: it then
// gives the layout's head, longer than n and cut on a character boundary, and stopped. So
// Cut(s, n) is always Cut of the whole layout, and the work is O(len(b) + n).
func layout(b []byte, n int) (s string, stopped bool) {
	limit := n + utf8.UTFMax
	out := make([]byte, 0, min(2*len(b), limit)+1)
	depth, open, inString, escaped := 0, false, false, false
	newline := func() { // no further than the limit: nothing past it is given
		out = append(out, '\n')
		for i := 0; i < depth && len(out) <= limit; i++ {
			out = append(out, ' ', ' ')
		}
	}
	for _, c := range b {
		if len(out) > limit {
			break
		}
		if inString { // copied as it is; only an unescaped quote ends it
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		if open && c != '}' && c != ']' { // an open object or array that is not empty: indent its first member
			open = false
			depth++
			newline()
		}
		switch c {
		case '"':
			inString = true
			out = append(out, c)
		case '{', '[':
			open = true // its first member indents it; {} and [] stay whole
			out = append(out, c)
		case ',':
			out = append(out, c)
			newline()
		case ':':
			out = append(out, c, ' ')
		case '}', ']':
			if open {
				open = false
			} else {
				depth--
				newline()
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	if len(out) > limit {
		s, _ = Cut(string(out[:limit+1]), limit)
		return s, true
	}
	return string(out), false
}

// Cut shortens s to at most n bytes, on a character boundary so the result stays valid UTF-8
// when s was, and reports whether it cut. Message content is untrusted and unbounded: every
// place that returns or shows it caps it with Cut.
func Cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// Clip is Cut for text shown in a line (a trace step's detail, a notification's subject or
// block): "…" marks where it cut.
func Clip(s string, n int) string {
	if c, cut := Cut(s, n); cut {
		return c + "…"
	}
	return s
}

// printable reports valid UTF-8 made of graphic characters and ordinary white space.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		switch {
		case r == '\n', r == '\r', r == '\t':
		case unicode.IsGraphic(r):
		default:
			return false
		}
	}
	return true
}
