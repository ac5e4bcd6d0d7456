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

// Render turns b into text for people and says how it was read. It never fails: bytes that are
// neither JSON nor printable text become a hex dump. JSON is read by IsJSON; an object or an array
// is laid out with a two-space indent and labelled JSON, while a scalar (a number, a string) shows
// as the Text it already is, since there is nothing to lay out. The text is not escaped for HTML;
// the view does that.
func Render(b []byte) (text string, encoding string) {
	if len(b) == 0 {
		return "", Empty
	}
	if trimmed := bytes.TrimSpace(b); len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		if s, ok := Indent(trimmed); ok {
			return s, JSON
		}
	}
	if printable(b) {
		return string(b), Text
	}
	return hex.Dump(b), Binary
}

// Indent lays out b with a two-space indent when IsJSON; false (and b as it is) otherwise.
func Indent(b []byte) (string, bool) {
	if !IsJSON(b) {
		return string(b), false
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(b), "", "  "); err != nil {
		return string(b), false
	}
	return buf.String(), true
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
