package replay

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Message content is written by programs Redrive does not control. A NUL or bytes that are not
// UTF-8 in an id, a header-derived destination or an error text must not fail the plan of the
// whole selection (PostgreSQL text and jsonb refuse both): such an item is planned like the rest,
// stored with those bytes escaped, and skipped as skip_unresolvable with a note when the bytes
// are in what a replay would use.

// unusable reports whether s cannot be stored as text or sent on as a name.
func unusable(s string) bool {
	return strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s)
}

// escapeBytes writes NUL and bytes that are not UTF-8 as \xNN, leaving everything else as it is.
func escapeBytes(s string) string {
	if !unusable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == 0:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// sanitize makes an item safe to store and decides whether its content can be used.
func sanitize(it *Item) {
	it.ErrorGroup = escapeBytes(it.ErrorGroup)
	if unusable(it.MessageID) {
		it.MessageID = escapeBytes(it.MessageID)
		it.unresolvable("its message id holds a NUL or bytes that are not UTF-8 (%s): the consumer's inbox cannot be asked about it", it.MessageID)
	}
	d := it.Destination
	for _, f := range []struct{ name, value string }{{"topic", d.Topic}, {"exchange", d.Exchange}, {"routing key", d.RoutingKey}} {
		if unusable(f.value) {
			it.unresolvable("its original %s holds a NUL or bytes that are not UTF-8 (%s)", f.name, escapeBytes(f.value))
		}
	}
}

func (it *Item) unresolvable(format string, a ...any) {
	it.Destination = Destination{}
	if it.Note == "" {
		it.Note = fmt.Sprintf(format, a...)
	}
}

// validTopic reports whether name can be a Kafka topic: 1 to 249 of [a-zA-Z0-9._-], not "." or "..".
func validTopic(name string) bool {
	if name == "" || len(name) > 249 || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
