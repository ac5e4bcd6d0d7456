package ops

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxErrorGroupKey bounds an error group's key, in bytes.
const maxErrorGroupKey = 120

// ErrorGroupKey is the one rule that turns an error text (a Kafka exception message, RabbitMQ's
// x-exception-message, an outbox event's last_error) into the key its dead letters are grouped
// by, so that one bug is one group whatever the ids in its message: the exception's class when the
// text starts with one ("com.acme.StockException: out of stock for o-17" → the class), else its
// first line with every word that holds a digit folded into "#" (foldIDs: "out of stock for
// o-100" and "… o-104" → "out of stock for #", "timeout after 30s (7)" → "timeout after # (#)"),
// cut at 120 bytes on a character boundary. The key is for grouping and selecting; a group shows
// one of its texts as they were as its example.
func ErrorGroupKey(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	line = strings.TrimSpace(line)
	if name, _, ok := strings.Cut(line, ":"); ok && isClassName(name) {
		return name
	}
	if isClassName(line) { // a bare class ("org.acme.v2.StockException"): its digits are its name
		return line
	}
	line = foldIDs(line)
	if len(line) <= maxErrorGroupKey {
		return line
	}
	cut := maxErrorGroupKey
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut]
}

// IDPlaceholder is what ErrorGroupKey puts in place of a word holding a digit.
const IDPlaceholder = "#"

// foldIDs replaces each word of s that holds a digit with IDPlaceholder. A word is a run of
// letters, digits and the joiners '-', '_' and '.' (an order id "o-100", a uuid, "3f2a9c", "30s",
// "1.5"), without a joiner it ends with ("o-100." at a sentence's end keeps its full stop);
// whatever surrounds it stays ("(7)" → "(#)", "key=o-1" → "key=#", "/orders/o-1/items" →
// "/orders/#/items").
func foldIDs(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isWordRune(r) || isJoiner(r) {
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		end, digit := i, false
		for j := i; j < len(s); {
			r, size := utf8.DecodeRuneInString(s[j:])
			if !isWordRune(r) {
				break
			}
			digit = digit || unicode.IsDigit(r)
			j += size
			if !isJoiner(r) {
				end = j
			}
		}
		if digit {
			b.WriteString(IDPlaceholder)
		} else {
			b.WriteString(s[i:end])
		}
		i = end
	}
	return b.String()
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || isJoiner(r) }

func isJoiner(r rune) bool { return r == '-' || r == '_' || r == '.' }

// IsExceptionClass reports whether an error group's key is an exception class (ErrorGroupKey of a
// text starting with one), which names the kind of failure and quotes none of the message.
func IsExceptionClass(key string) bool { return isClassName(key) }

// isClassName reports whether s looks like a (qualified) exception class: dotted identifiers,
// the last one starting with a capital letter, no spaces.
func isClassName(s string) bool {
	if s == "" || len(s) > maxErrorGroupKey {
		return false
	}
	parts := strings.Split(s, ".")
	for _, p := range parts {
		if p == "" {
			return false
		}
		for i, r := range p {
			if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
				return false
			}
		}
	}
	last := parts[len(parts)-1]
	return last[0] >= 'A' && last[0] <= 'Z'
}

// InErrorGroup reports whether want names the error group of text: its key (ErrorGroupKey), any
// text of the group (its key is the same: "out of stock for o-7" names the group of "out of stock
// for o-100") or, when the key is an exception class, the class's simple name
// ("SocketTimeoutException" for "java.net.SocketTimeoutException: read timed out"). It is the one
// meaning of an exception_type filter, for a Kafka exception class header, a RabbitMQ
// x-exception-message and an outbox event's last_error alike. An empty want matches everything.
func InErrorGroup(text, want string) bool {
	if want == "" {
		return true
	}
	key := ErrorGroupKey(text)
	return key == want || key == ErrorGroupKey(want) || (isClassName(key) && strings.HasSuffix(key, "."+want))
}
