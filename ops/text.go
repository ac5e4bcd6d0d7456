package ops

import (
	"fmt"
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

// InertText is s with what a terminal, a spreadsheet or a chat client would act on rather than
// show written out as text: control characters (ESC, BEL, NUL, a lone carriage return … — all but
// tab and line feed) and the invisible characters that reorder or hide text (bidi embeddings,
// overrides and isolates, marks, zero-width characters, the line and paragraph separators, the
// byte-order mark) become \x1b or \u202e; invalid UTF-8 becomes U+FFFD. Message content reaches
// CSV exports and notifications through it: a queue named "invoice\u202egpj.exe" reads as written,
// and an ESC sequence does not recolour the terminal that cats an export.
func InertText(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || inert(r) != "" {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if e := inert(r); e != "" {
			b.WriteString(e)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// inert is how InertText writes r, or "" when r is shown as it is.
func inert(r rune) string {
	switch {
	case r == '\t' || r == '\n':
		return ""
	case r < 0x20 || r == 0x7f:
		return fmt.Sprintf(`\x%02x`, r)
	case r >= 0x80 && r < 0xa0, // C1 controls
		r == 0x061c,                // Arabic letter mark
		r >= 0x200b && r <= 0x200f, // zero-width space, joiners, LRM, RLM
		r == 0x2028 || r == 0x2029, // line and paragraph separators
		r >= 0x202a && r <= 0x202e, // bidi embeddings and overrides
		r >= 0x2060 && r <= 0x2064, // word joiner, invisible operators
		r >= 0x2066 && r <= 0x2069, // bidi isolates
		r == 0xfeff:                // byte-order mark
		return fmt.Sprintf(`\u%04x`, r)
	}
	return ""
}

// EchoLimit is how much of a name or id a person gave a message quotes back.
const EchoLimit = 64

// Echo is s as a message quotes a name or id a person gave: at most EchoLimit bytes, cut on a
// character boundary and marked "…" — a 404 for a 3,000-character plan id need not repeat it.
func Echo(s string) string {
	if len(s) <= EchoLimit {
		return s
	}
	return CleanText(s, EchoLimit) + "…"
}
