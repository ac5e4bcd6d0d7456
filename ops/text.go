package ops

import (
	"strings"
	"unicode/utf8"
)

// TextProblem says what PostgreSQL could not store of s, as an Invalid's problem: its text and
// JSONB refuse NUL bytes (JSONB's "unsupported Unicode escape sequence" for \u0000) and invalid
// UTF-8. "" when s can be stored. Input checked with it gets a 400 naming the field, where it
// would otherwise reach the database and come back as a 5xx blamed on a dependency.
func TextProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be valid UTF-8 text"
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain NUL bytes"
	}
	return ""
}
