package ops

import (
	"strings"
	"unicode/utf8"
)

// maxErrorGroupKey bounds an error group's key, in bytes.
const maxErrorGroupKey = 120

// ErrorGroupKey is the one rule that turns an error text (a Kafka exception message, RabbitMQ's
// x-exception-message, an outbox event's last_error) into the key its dead letters are grouped
// by, so that one bug is one group whatever the ids in its message: the exception's class when the
// text starts with one ("com.acme.StockException: out of stock for o-17" → the class), else its
// first line, cut at 120 bytes on a character boundary.
func ErrorGroupKey(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	line = strings.TrimSpace(line)
	if name, _, ok := strings.Cut(line, ":"); ok && isClassName(name) {
		return name
	}
	if len(line) <= maxErrorGroupKey {
		return line
	}
	cut := maxErrorGroupKey
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut]
}

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

// InErrorGroup reports whether want names the error group of text: its key (ErrorGroupKey) or,
// when the key is an exception class, the class's simple name ("SocketTimeoutException" for
// "java.net.SocketTimeoutException: read timed out"). It is the one meaning of an exception_type
// filter, for a Kafka exception class header, a RabbitMQ x-exception-message and an outbox
// event's last_error alike. An empty want matches everything.
func InErrorGroup(text, want string) bool {
	if want == "" {
		return true
	}
	key := ErrorGroupKey(text)
	return key == want || (isClassName(key) && strings.HasSuffix(key, "."+want))
}
