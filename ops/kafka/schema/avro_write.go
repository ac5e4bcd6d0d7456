package schema

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/avro"
)

// avroWriter writes JSON, in the form avroReader writes it (unions bare, timestamps RFC 3339,
// dates, decimals as numbers, bytes base64), as the Avro binary of a schema: the inverse of the
// transcoder, over the same compiled nodes. The raw numbers under the logical types are taken too.
type avroWriter struct {
	prog     *avroProgram
	root     *avroNode
	names    map[*avroNode]string                 // named types' full names
	defaults map[*avroNode]map[string]avroDefault // record → field → its default
	symbols  map[*avroNode][]string
}

type avroDefault struct {
	has bool
	v   any
}

// pathError is a value that does not fit, where it is.
type pathError struct{ path, problem string }

func (e *pathError) Error() string { return e.path + ": " + e.problem }

func mismatch(path, format string, a ...any) error {
	return &pathError{path: path, problem: fmt.Sprintf(format, a...)}
}

func newAvroWriter(root *avro.SchemaNode) (*avroWriter, error) {
	n, c, err := compileAvroTree(root)
	if err != nil {
		return nil, err
	}
	w := &avroWriter{prog: &avroProgram{root: n}, root: n, names: map[*avroNode]string{},
		defaults: map[*avroNode]map[string]avroDefault{}, symbols: map[*avroNode][]string{}}
	for name, b := range c.built {
		w.names[b] = name
		def := c.defs[name]
		switch b.kind {
		case avroRecord:
			m := map[string]avroDefault{}
			for _, f := range def.Fields {
				m[f.Name] = avroDefault{has: f.HasDefault, v: f.Default}
			}
			w.defaults[b] = m
		case avroEnum:
			w.symbols[b] = def.Symbols
		}
	}
	return w, nil
}

// join extends a path: a field name, or an index or key in brackets.
func join(path, name string) string {
	if path == "" || strings.HasPrefix(name, "[") {
		return path + name
	}
	return path + "." + name
}

// describe says what a node takes, in words for a person.
func (w *avroWriter) describe(n *avroNode) string {
	switch n.kind {
	case avroNull:
		return "null"
	case avroBoolean:
		return "true or false"
	case avroInt:
		return "a whole number from -2147483648 to 2147483647"
	case avroLong:
		return "a whole number"
	case avroFloat, avroDouble:
		return "a number"
	case avroString:
		return "text"
	case avroBytes:
		return "base64 text"
	case avroFixed:
		return fmt.Sprintf("base64 text of exactly %d bytes", n.size)
	case avroEnum:
		return "one of " + strings.Join(w.symbols[n], ", ")
	case avroRecord:
		return "an object (" + w.names[n] + ")"
	case avroArray:
		return "a list"
	case avroMap:
		return "an object"
	case avroUnion:
		var parts []string
		for _, b := range n.branches {
			parts = append(parts, w.describe(b))
		}
		return strings.Join(parts, ", or ")
	case avroDate:
		return `a date like "2026-03-01"`
	case avroTimeMillis, avroTimeMicros:
		return `a time of day like "10:20:30.123"`
	case avroTimestampMillis, avroTimestampMicros, avroTimestampNanos:
		return `a time like "2026-03-01T10:20:30Z"`
	case avroLocalTimestampMillis, avroLocalTimestampMicros, avroLocalTimestampNanos:
		return `a time without zone like "2026-03-01T10:20:30"`
	case avroDecimalBytes, avroDecimalFixed:
		return fmt.Sprintf("a number with at most %d decimals", n.scale)
	case avroBigDecimal:
		return "a decimal number"
	case avroUUIDFixed:
		return `a UUID like "7d3c3a2e-5b1f-4c1a-9e2b-0a1b2c3d4e5f"`
	case avroDuration:
		return `an object {"months":…,"days":…,"milliseconds":…}`
	}
	return "a value"
}

// shown is a JSON value as a person wrote it, cut short.
func shown(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return "null"
	case []byte:
		s = base64.StdEncoding.EncodeToString(x)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	default:
		b, _ := json.Marshal(x)
		s = string(b)
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// number is v's text when v is a number (a JSON number, or a default's Go number).
func number(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		return string(x), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return "", false
}

func (w *avroWriter) want(n *avroNode, path string, v any) error {
	return mismatch(path, "must be %s, not %s", w.describe(n), shown(v))
}

// write appends the binary of v as n to out.
func (w *avroWriter) write(n *avroNode, v any, path string, out []byte) ([]byte, error) {
	switch n.kind {
	case avroNull:
		if v != nil {
			return nil, w.want(n, path, v)
		}
		return out, nil
	case avroBoolean:
		b, ok := v.(bool)
		if !ok {
			return nil, w.want(n, path, v)
		}
		if b {
			return append(out, 1), nil
		}
		return append(out, 0), nil
	case avroInt, avroLong:
		bits := 32
		if n.kind == avroLong {
			bits = 64
		}
		s, ok := number(v)
		if !ok {
			return nil, w.want(n, path, v)
		}
		i, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return nil, w.want(n, path, v)
		}
		return binary.AppendVarint(out, i), nil
	case avroFloat, avroDouble:
		f, ok := floatOf(v)
		if !ok {
			return nil, w.want(n, path, v)
		}
		if n.kind == avroFloat {
			if !math.IsInf(f, 0) && math.Abs(f) > math.MaxFloat32 {
				return nil, mismatch(path, "is too large for a float")
			}
			return binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(f))), nil
		}
		return binary.LittleEndian.AppendUint64(out, math.Float64bits(f)), nil
	case avroString:
		s, ok := v.(string)
		if !ok {
			return nil, w.want(n, path, v)
		}
		return appendBytes(out, []byte(s)), nil
	case avroBytes, avroFixed:
		b, ok := bytesOf(v)
		if !ok || (n.kind == avroFixed && len(b) != n.size) {
			return nil, w.want(n, path, v)
		}
		if n.kind == avroFixed {
			return append(out, b...), nil
		}
		return appendBytes(out, b), nil
	case avroEnum:
		s, ok := v.(string)
		i := slices.Index(w.symbols[n], s)
		if !ok || i < 0 {
			return nil, w.want(n, path, v)
		}
		return binary.AppendVarint(out, int64(i)), nil
	case avroRecord:
		return w.record(n, v, path, out)
	case avroArray:
		items, ok := v.([]any)
		if !ok {
			return nil, w.want(n, path, v)
		}
		if len(items) > 0 {
			out = binary.AppendVarint(out, int64(len(items)))
			for i, it := range items {
				var err error
				if out, err = w.write(n.elem, it, join(path, fmt.Sprintf("[%d]", i)), out); err != nil {
					return nil, err
				}
			}
		}
		return append(out, 0), nil
	case avroMap:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, w.want(n, path, v)
		}
		if len(m) > 0 {
			out = binary.AppendVarint(out, int64(len(m)))
			for _, k := range slices.Sorted(func(yield func(string) bool) {
				for k := range m {
					if !yield(k) {
						return
					}
				}
			}) {
				out = appendBytes(out, []byte(k))
				var err error
				if out, err = w.write(n.elem, m[k], join(path, fmt.Sprintf("[%q]", k)), out); err != nil {
					return nil, err
				}
			}
		}
		return append(out, 0), nil
	case avroUnion:
		return w.union(n, v, path, out)
	}
	return w.logical(n, v, path, out)
}

// record writes an object's fields in the schema's order: a field left out takes its default,
// a field the schema does not have is refused (a typo would otherwise be dropped silently).
func (w *avroWriter) record(n *avroNode, v any, path string, out []byte) ([]byte, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, w.want(n, path, v)
	}
	defaults := w.defaults[n]
	for k := range m {
		if _, ok := defaults[k]; !ok {
			names := make([]string, len(n.fields))
			for i, f := range n.fields {
				names[i] = f.name
			}
			return nil, mismatch(join(path, k), "is not a field of %s (its fields: %s)", w.names[n], strings.Join(names, ", "))
		}
	}
	for _, f := range n.fields {
		fv, ok := m[f.name]
		if !ok {
			d := defaults[f.name]
			if !d.has {
				return nil, mismatch(join(path, f.name), "is missing, and the schema gives it no default")
			}
			fv = d.v
		}
		var err error
		if out, err = w.write(f.node, fv, join(path, f.name), out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// union writes v as the first branch it fits (a null as the null branch), with its index.
func (w *avroWriter) union(n *avroNode, v any, path string, out []byte) ([]byte, error) {
	var only error
	tried := 0
	for i, b := range n.branches {
		if (v == nil) != (b.kind == avroNull) {
			continue
		}
		body, err := w.write(b, v, path, nil)
		if err == nil {
			out = binary.AppendVarint(out, int64(i))
			return append(out, body...), nil
		}
		tried++
		only = err
	}
	if tried == 1 { // one branch of this JSON type: its own complaint says most
		return nil, only
	}
	return nil, w.want(n, path, v)
}

// logical writes the logical types from their readable forms (or the number under them).
func (w *avroWriter) logical(n *avroNode, v any, path string, out []byte) ([]byte, error) {
	s, isText := v.(string)
	switch n.kind {
	case avroDate:
		if !isText {
			return w.write(&avroNode{kind: avroInt}, v, path, out)
		}
		t, err := time.Parse(dateLayout, s)
		if err != nil {
			return nil, w.want(n, path, v)
		}
		days := t.Unix() / 86400
		if t.Unix() < 0 && t.Unix()%86400 != 0 {
			days--
		}
		return binary.AppendVarint(out, days), nil
	case avroTimeMillis, avroTimeMicros:
		if !isText {
			k := avroInt
			if n.kind == avroTimeMicros {
				k = avroLong
			}
			return w.write(&avroNode{kind: k}, v, path, out)
		}
		t, err := time.Parse("15:04:05.999999999", s)
		if err != nil {
			return nil, w.want(n, path, v)
		}
		d := t.Sub(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC))
		if n.kind == avroTimeMillis {
			return binary.AppendVarint(out, d.Milliseconds()), nil
		}
		return binary.AppendVarint(out, d.Microseconds()), nil
	case avroTimestampMillis, avroTimestampMicros, avroTimestampNanos,
		avroLocalTimestampMillis, avroLocalTimestampMicros, avroLocalTimestampNanos:
		if !isText {
			return w.write(&avroNode{kind: avroLong}, v, path, out)
		}
		layout := time.RFC3339Nano
		if n.kind >= avroLocalTimestampMillis {
			layout = localTimestampLayout
		}
		t, err := time.Parse(layout, s)
		if err != nil {
			return nil, w.want(n, path, v)
		}
		var i int64
		switch n.kind {
		case avroTimestampMillis, avroLocalTimestampMillis:
			i = t.UnixMilli()
		case avroTimestampMicros, avroLocalTimestampMicros:
			i = t.UnixMicro()
		default:
			i = t.UnixNano()
		}
		return binary.AppendVarint(out, i), nil
	case avroDecimalBytes, avroDecimalFixed, avroBigDecimal:
		if b, ok := v.([]byte); ok && n.kind != avroBigDecimal { // a default: the unscaled bytes
			if n.kind == avroDecimalFixed {
				return append(out, b...), nil
			}
			return appendBytes(out, b), nil
		}
		r, ok := ratOf(v)
		if !ok {
			return nil, w.want(n, path, v)
		}
		scale := n.scale
		if n.kind == avroBigDecimal {
			p, exact := r.FloatPrec()
			if !exact {
				return nil, w.want(n, path, v)
			}
			scale = p
		}
		u := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
		if !u.IsInt() {
			return nil, mismatch(path, "has more than the %d decimals the schema keeps, in %s", scale, shown(v))
		}
		size := 0
		if n.kind == avroDecimalFixed {
			size = n.size
		}
		b, ok := twosComplement(u.Num(), size)
		if !ok {
			return nil, mismatch(path, "is too large for the schema's %d-byte decimal", n.size)
		}
		switch n.kind {
		case avroDecimalFixed:
			return append(out, b...), nil
		case avroDecimalBytes:
			return appendBytes(out, b), nil
		}
		inner := binary.AppendVarint(appendBytes(nil, b), int64(scale))
		return appendBytes(out, inner), nil
	case avroUUIDFixed:
		if b, ok := v.([]byte); ok && len(b) == 16 {
			return append(out, b...), nil
		}
		b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
		if !isText || err != nil || len(b) != 16 || len(s) != 36 {
			return nil, w.want(n, path, v)
		}
		return append(out, b...), nil
	case avroDuration:
		if b, ok := v.([]byte); ok && len(b) == 12 {
			return append(out, b...), nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, w.want(n, path, v)
		}
		for k := range m {
			if k != "months" && k != "days" && k != "milliseconds" {
				return nil, mismatch(join(path, k), "is not part of a duration (months, days, milliseconds)")
			}
		}
		for _, k := range []string{"months", "days", "milliseconds"} {
			s, ok := number(m[k])
			u, err := strconv.ParseUint(s, 10, 32)
			if !ok || err != nil {
				return nil, mismatch(join(path, k), "must be a whole number from 0 to 4294967295, not %s", shown(m[k]))
			}
			out = binary.LittleEndian.AppendUint32(out, uint32(u))
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown step %d", n.kind)
}

func appendBytes(out, b []byte) []byte {
	return append(binary.AppendVarint(out, int64(len(b))), b...)
}

// floatOf reads a number, or the strings the reader writes for NaN and the infinities.
func floatOf(v any) (float64, bool) {
	switch v {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	s, ok := number(v)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// bytesOf reads base64 text (as the reader writes bytes), or a default's bytes.
func bytesOf(v any) ([]byte, bool) {
	switch x := v.(type) {
	case []byte:
		return x, true
	case string:
		b, err := base64.StdEncoding.DecodeString(x)
		return b, err == nil
	}
	return nil, false
}

// ratOf reads a decimal: a JSON number as written, or the same as text.
func ratOf(v any) (*big.Rat, bool) {
	s, ok := number(v)
	if !ok {
		if s, ok = v.(string); !ok {
			return nil, false
		}
	}
	if len(s) > 400 {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// twosComplement is i as big-endian two's complement: in the fewest bytes (size 0), or in
// exactly size bytes (false when it does not fit).
func twosComplement(i *big.Int, size int) ([]byte, bool) {
	n := i.BitLen()/8 + 1
	if i.Sign() < 0 {
		n = new(big.Int).Sub(new(big.Int).Neg(i), big.NewInt(1)).BitLen()/8 + 1
	}
	if size > 0 {
		if n > size {
			return nil, false
		}
		n = size
	}
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
	u := new(big.Int).Mod(i, m) // Mod is Euclidean: a negative i wraps to 2^(8n) + i
	return u.FillBytes(make([]byte, n)), true
}
