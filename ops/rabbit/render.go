package rabbit

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"
)

// maxRenderDepth stops rendering nested tables and arrays; a Go table can even contain itself.
const maxRenderDepth = 16

// renderValue renders one AMQP field value (a header, an argument) for people: a string as it is,
// a byte array as text when it is valid UTF-8 (else as 0x-prefixed hex), numbers in decimal, a
// timestamp in RFC 3339 UTC, and tables and arrays as compact JSON-like text with sorted keys
// ({"count":1,"routing-keys":["a"]}). The result is valid UTF-8; it is not escaped for HTML.
func renderValue(v any) string {
	switch t := v.(type) {
	case string:
		return strings.ToValidUTF8(t, "\uFFFD")
	case []byte:
		if utf8.Valid(t) {
			return string(t)
		}
		return "0x" + hex.EncodeToString(t)
	}
	var sb strings.Builder
	appendValue(&sb, v, 0)
	return sb.String()
}

func appendValue(sb *strings.Builder, v any, depth int) {
	if depth > maxRenderDepth {
		sb.WriteString(`"…"`)
		return
	}
	switch t := v.(type) {
	case nil:
		sb.WriteString("null")
	case string:
		appendQuoted(sb, t)
	case []byte:
		if utf8.Valid(t) {
			appendQuoted(sb, string(t))
		} else {
			appendQuoted(sb, "0x"+hex.EncodeToString(t))
		}
	case bool, int, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64:
		// fmt writes these as strconv does: integers in decimal, a float in the shortest 'g'
		// form that reads back as the same float of its own size.
		fmt.Fprint(sb, t)
	case json.Number:
		sb.WriteString(t.String())
	case amqp.Decimal:
		sb.WriteString(decimalString(t))
	case time.Time:
		appendQuoted(sb, t.UTC().Format(time.RFC3339))
	case amqp.Table:
		appendTable(sb, t, depth)
	case map[string]any:
		appendTable(sb, t, depth)
	case []any:
		sb.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				sb.WriteByte(',')
			}
			appendValue(sb, e, depth+1)
		}
		sb.WriteByte(']')
	default:
		appendQuoted(sb, "?")
	}
}

func appendTable(sb *strings.Builder, t map[string]any, depth int) {
	keys := slices.Sorted(maps.Keys(t))
	sb.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			sb.WriteByte(',')
		}
		appendQuoted(sb, k)
		sb.WriteByte(':')
		appendValue(sb, t[k], depth+1)
	}
	sb.WriteByte('}')
}

// appendQuoted writes s as a JSON string (invalid UTF-8 replaced, no HTML escaping).
func appendQuoted(sb *strings.Builder, s string) {
	sb.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r < 0x20:
			sb.WriteString(`\u00`)
			sb.WriteString(hex.EncodeToString([]byte{byte(r)}))
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
}

// decimalString renders an AMQP decimal (Value × 10^-Scale) exactly.
func decimalString(d amqp.Decimal) string {
	if d.Scale == 0 {
		return strconv.FormatInt(int64(d.Value), 10)
	}
	r := new(big.Rat).SetFrac(big.NewInt(int64(d.Value)), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))
	return r.FloatString(int(d.Scale))
}

// renderJSONValue renders a value decoded from the management API's JSON (queue arguments).
func renderJSONValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var sb strings.Builder
	appendValue(&sb, v, 0)
	return sb.String()
}

// valueString reads a header value as a plain string when it is one (string, UTF-8 bytes) or an
// integer; other types are not identifiers. Bytes that are not UTF-8 in a string are replaced: the
// result is for display (rawString keeps them).
func valueString(v any) (string, bool) {
	if b, ok := v.([]byte); ok && !utf8.Valid(b) {
		return "", false
	}
	s, ok := rawString(v)
	return strings.ToValidUTF8(s, "\uFFFD"), ok
}

// rawString is valueString byte for byte: a string or a byte array as it is (NUL and bytes that
// are not UTF-8 included), an integer in decimal. What a replay sends on is read with it.
func rawString(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case []byte:
		return string(t), true
	case int, int8, int16, int32, int64, uint8, uint16, uint32, uint64:
		return renderValue(t), true
	}
	return "", false
}

// valueInt reads an integer header value: any integer type, a whole float, or decimal text.
func valueInt(v any) (int64, bool) {
	switch t := v.(type) {
	case int, int8, int16, int32, int64:
		return reflect.ValueOf(t).Int(), true
	case uint8, uint16, uint32:
		return int64(reflect.ValueOf(t).Uint()), true
	case uint64:
		if t > 1<<62 {
			return 0, false
		}
		return int64(t), true
	case float32:
		return floatInt(float64(t))
	case float64:
		return floatInt(t)
	case string:
		i, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
		return i, err == nil
	case []byte:
		i, err := strconv.ParseInt(strings.TrimSpace(string(t)), 10, 64)
		return i, err == nil
	}
	return 0, false
}

func floatInt(f float64) (int64, bool) {
	if f != f || f < -(1<<62) || f > 1<<62 || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}
