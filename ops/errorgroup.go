package ops

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/redrive/redrive/ops/payload"
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
	if ErrorGroupClass(line) != line { // a fingerprint (ErrorFingerprint) is its own key
		return line
	}
	line = foldIDs(line)
	line, _ = payload.Cut(line, maxErrorGroupKey)
	return line
}

// ErrorFingerprint is the key of a Java dead letter's error group when its headers carry a stack
// trace (Spring's kafka_dlt-exception-stacktrace, x-exception-stacktrace), Wolverine's fingerprint:
// the exception class ErrorGroupKey finds in text, " at ", and the first frame of the trace that
// is the application's own (FirstAppFrame) — "com.acme.StockException at
// com.acme.orders.Reserve.apply" —, so that one class thrown from two places is two bugs, two
// rows, and one bug is one row whatever ids its messages carry. Without a trace, without an
// application frame in it, or when text names no class, it is ErrorGroupKey(text). It is the one
// key of every error group: Kafka's and RabbitMQ's groups, replay plans, triage and the sampler.
func ErrorFingerprint(text, stacktrace string) string {
	key := ErrorGroupKey(text)
	if !isClassName(key) {
		return key
	}
	if frame := FirstAppFrame(stacktrace); frame != "" {
		return key + fingerprintAt + frame
	}
	return key
}

// fingerprintAt joins a fingerprint's class and frame.
const fingerprintAt = " at "

// libraryFrames are the packages whose frames are not the application's: the JDK, Spring, the
// Kafka and RabbitMQ clients, Kotlin's runtime and Reactor.
var libraryFrames = []string{"java.", "javax.", "jdk.", "sun.", "com.sun.", "org.springframework.", "org.apache.kafka.",
	"com.rabbitmq.", "kotlin.", "kotlinx.", "reactor."}

// FirstAppFrame is the first frame of a Java stack trace (its "\tat pkg.Class.method(File.java:42)"
// lines, through every "Caused by:" section in order) whose class is none of libraryFrames', as
// "pkg.Class.method": no file and line, which move with every build, and no module or class
// loader prefix ("app//", "java.base/"). "" when the trace has none.
func FirstAppFrame(stacktrace string) string {
	for rest := stacktrace; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		line = strings.TrimSpace(line)
		frame, ok := strings.CutPrefix(line, "at ")
		if !ok {
			continue
		}
		frame, _, _ = strings.Cut(frame, "(")
		frame = strings.TrimSpace(frame)
		if i := strings.LastIndexByte(frame, '/'); i >= 0 {
			frame = frame[i+1:]
		}
		if frame == "" || !isFrameName(frame) || slices.ContainsFunc(libraryFrames, func(p string) bool { return strings.HasPrefix(frame, p) }) {
			continue
		}
		if len(frame) > maxErrorGroupKey {
			frame = frame[:maxErrorGroupKey]
		}
		return frame
	}
	return ""
}

// isFrameName reports whether s is a frame's qualified method: dotted Java identifiers (with $ of
// inner classes and lambdas, and <init>).
func isFrameName(s string) bool {
	if !strings.Contains(s, ".") {
		return false
	}
	for _, r := range s {
		if !(r == '.' || r == '_' || r == '$' || r == '<' || r == '>' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

// ErrorGroupClass is the exception class a group's key names: the class of a fingerprint
// ("com.acme.StockException at com.acme.orders.Reserve.apply" → "com.acme.StockException"), the key
// itself otherwise.
func ErrorGroupClass(key string) string {
	if class, frame, ok := strings.Cut(key, fingerprintAt); ok && isClassName(class) && isFrameName(frame) {
		return class
	}
	return key
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
func IsExceptionClass(key string) bool { return isClassName(ErrorGroupClass(key)) }

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

// InErrorGroupTraced is InErrorGroup for a dead letter whose headers may carry a stack trace: want
// also names its group by its fingerprint (ErrorFingerprint). A class, a text or a simple name
// still selects every group of that class, whatever frame its trace names — so a filter or a
// selection kept from before fingerprints selects what it did.
func InErrorGroupTraced(text, stacktrace, want string) bool {
	if want == "" || InErrorGroup(text, want) {
		return true
	}
	return strings.Contains(want, fingerprintAt) && ErrorFingerprint(text, stacktrace) == want
}
