package kafka

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"unicode"
	"unicode/utf8"
)

// Encodings reported by Render.
const (
	EncodingJSON   = "json"   // a JSON object or array, pretty-printed with a 2-space indent
	EncodingText   = "text"   // valid UTF-8 of printable characters (and tabs and newlines), as is
	EncodingBinary = "binary" // anything else, as a hex dump (offset, hex bytes, ASCII)
	EncodingEmpty  = "empty"  // no bytes
)

// Render turns a key or value into text for people and says how it was read. It never fails:
// bytes that are neither JSON nor printable text become a hex dump. The text is not escaped for
// HTML; the view does that.
func Render(b []byte) (text string, encoding string) {
	if len(b) == 0 {
		return "", EncodingEmpty
	}
	trimmed := bytes.TrimSpace(b)
	// encoding/json accepts invalid UTF-8 inside strings; such bytes are not JSON text for us.
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && utf8.Valid(trimmed) && json.Valid(trimmed) {
		var buf bytes.Buffer
		if err := json.Indent(&buf, trimmed, "", "  "); err == nil {
			return buf.String(), EncodingJSON
		}
	}
	if printable(b) {
		return string(b), EncodingText
	}
	return hex.Dump(b), EncodingBinary
}

// printable reports valid UTF-8 made of graphic characters and ordinary whitespace.
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
