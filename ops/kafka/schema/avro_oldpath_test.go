package schema

// The decoder this package had before the transcoder (avro_read.go): twmb/avro decoded a value
// into map[string]any with tagged unions, then the value was written as JSON in the schema's
// field order. Kept here only as the oracle the transcoder's output is compared with, byte for
// byte (avro_test.go), over hand-written vectors, generated values and fuzzed bytes. It
// shares fullName and appendFloat with the transcoder (unchanged from it).

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/avro"
)

func oracleCompiled(s *avro.Schema) func(payload []byte) ([]byte, error) {
	root := s.Root()
	w := &oracleAvroJSON{named: map[string]*avro.SchemaNode{}}
	w.collect(root, "")
	return func(payload []byte) ([]byte, error) {
		var v any
		rest, err := s.Decode(payload, &v, avro.TaggedUnions())
		if err != nil {
			return nil, err
		}
		if len(rest) > 0 {
			return nil, fmt.Errorf("%d bytes left after the value (another schema's bytes?)", len(rest))
		}
		return w.write(nil, root, v), nil
	}
}

// oracleAvroJSON writes a decoded Avro value as JSON in the schema's field order, with logical types
// readable: timestamps in RFC 3339, dates as YYYY-MM-DD, decimals as numbers, bytes in base64,
// unions as their branch's bare value.
type oracleAvroJSON struct {
	named map[string]*avro.SchemaNode // every named type by full name, for references
}

func (w *oracleAvroJSON) collect(n *avro.SchemaNode, ns string) {
	switch n.Type {
	case "record", "error", "enum", "fixed":
		name := fullName(n, ns)
		if _, ok := w.named[name]; ok {
			return
		}
		w.named[name] = n
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			ns = name[:i]
		}
	}
	for i := range n.Fields {
		w.collect(&n.Fields[i].Type, ns)
	}
	for i := range n.Branches {
		w.collect(&n.Branches[i], ns)
	}
	if n.Items != nil {
		w.collect(n.Items, ns)
	}
	if n.Values != nil {
		w.collect(n.Values, ns)
	}
}

func (w *oracleAvroJSON) resolve(n *avro.SchemaNode) *avro.SchemaNode {
	switch n.Type {
	case "null", "boolean", "int", "long", "float", "double", "bytes", "string",
		"record", "error", "enum", "fixed", "array", "map", "union":
		return n
	}
	if r, ok := w.named[n.Type]; ok {
		return r
	}
	return nil
}

func (w *oracleAvroJSON) write(b []byte, n *avro.SchemaNode, v any) []byte {
	if n != nil {
		n = w.resolve(n)
	}
	if n == nil {
		return oraclePlainJSON(b, v)
	}
	switch n.Type {
	case "record", "error":
		m, ok := v.(map[string]any)
		if !ok {
			return oraclePlainJSON(b, v)
		}
		b = append(b, '{')
		for i := range n.Fields {
			f := &n.Fields[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = oracleAppendString(b, f.Name)
			b = append(b, ':')
			b = w.write(b, &f.Type, m[f.Name])
		}
		return append(b, '}')
	case "array":
		a, ok := v.([]any)
		if !ok {
			return oraclePlainJSON(b, v)
		}
		return oracleArray(b, a, func(b []byte, e any) []byte { return w.write(b, n.Items, e) })
	case "map":
		m, ok := v.(map[string]any)
		if !ok {
			return oraclePlainJSON(b, v)
		}
		return oracleObject(b, m, func(b []byte, e any) []byte { return w.write(b, n.Values, e) })
	case "union":
		m, ok := v.(map[string]any)
		if v == nil || !ok || len(m) != 1 {
			return oraclePlainJSON(b, v)
		}
		for name, bv := range m {
			for i := range n.Branches {
				br := &n.Branches[i]
				if br.Type == name || fullName(br, "") == name || (br.Name != "" && strings.HasSuffix(name, "."+br.Name)) {
					return w.write(b, br, bv)
				}
			}
			return oraclePlainJSON(b, bv)
		}
	case "int":
		if n.LogicalType == "date" {
			if t, ok := v.(time.Time); ok {
				return oracleAppendString(b, t.UTC().Format(time.DateOnly))
			}
		}
	case "long":
		if t, ok := v.(time.Time); ok && strings.HasPrefix(n.LogicalType, "local-timestamp") {
			return oracleAppendString(b, t.UTC().Format("2006-01-02T15:04:05.999999999"))
		}
	case "bytes", "fixed":
		if r, ok := v.(*big.Rat); ok && n.LogicalType == "decimal" {
			return append(b, r.FloatString(n.Scale)...)
		}
	}
	return oraclePlainJSON(b, v)
}

// oraclePlainJSON writes a decoded value by its Go type alone.
func oraclePlainJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case float32:
		return appendFloat(b, float64(x), 32)
	case float64:
		return appendFloat(b, x, 64)
	case string:
		return oracleAppendString(b, x)
	case []byte:
		return oracleAppendString(b, base64.StdEncoding.EncodeToString(x))
	case [16]byte: // uuid on fixed(16)
		return oracleAppendString(b, fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16]))
	case time.Time:
		return oracleAppendString(b, x.UTC().Format(time.RFC3339Nano))
	case time.Duration: // time-millis, time-micros: a time of day
		d := x
		h := d / time.Hour
		d -= h * time.Hour
		m := d / time.Minute
		d -= m * time.Minute
		s := float64(d) / float64(time.Second)
		return oracleAppendString(b, fmt.Sprintf("%02d:%02d:%s", h, m, strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%06.3f", s), "0"), ".")))
	case *big.Rat:
		if n, exact := x.FloatPrec(); exact {
			return append(b, x.FloatString(n)...)
		}
		return oracleAppendString(b, x.RatString())
	case avro.Duration:
		return fmt.Appendf(b, `{"months":%d,"days":%d,"milliseconds":%d}`, x.Months, x.Days, x.Milliseconds)
	case map[string]any:
		return oracleObject(b, x, oraclePlainJSON)
	case []any:
		return oracleArray(b, x, oraclePlainJSON)
	}
	j, err := json.Marshal(v)
	if err != nil {
		return oracleAppendString(b, fmt.Sprint(v))
	}
	return append(b, j...)
}

// oracleObject writes m as a JSON object, its keys sorted, each value written by value: an Avro
// map through its schema, a plain map as it is.
func oracleObject(b []byte, m map[string]any, value func([]byte, any) []byte) []byte {
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = oracleAppendString(b, k)
		b = append(b, ':')
		b = value(b, m[k])
	}
	return append(b, '}')
}

// oracleArray writes a as a JSON array, each element written by value, as oracleObject.
func oracleArray(b []byte, a []any, value func([]byte, any) []byte) []byte {
	b = append(b, '[')
	for i, e := range a {
		if i > 0 {
			b = append(b, ',')
		}
		b = value(b, e)
	}
	return append(b, ']')
}

// oracleAppendString writes s as a JSON string: invalid UTF-8 replaced, HTML characters left as they
// are (the view escapes them), so "a<b" reads as itself.
func oracleAppendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			b = append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}
