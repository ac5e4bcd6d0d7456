package schema

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/twmb/avro"
)

// Bounds on what hostile bytes can make the transcoder do; each is twmb/avro's own, so a value
// one of them refuses was refused before too.
const (
	// maxAvroDepth bounds nesting (records, unions, arrays, maps): a recursive schema lets the
	// bytes nest as deep as they like, the stack cannot.
	maxAvroDepth = 1000
	// maxZeroByteItems bounds the items of an array whose items take no bytes (array<null>):
	// ten bytes could otherwise claim ten billion of them.
	maxZeroByteItems = 4 << 10
	// maxDecimalBytes bounds a decimal's unscaled value (past it, base conversion is slow).
	maxDecimalBytes = 32 << 10
	// maxDecimalScale bounds a big-decimal's own scale.
	maxDecimalScale = 1 << 16
)

// errTooLarge stops a value whose JSON outgrows what is shown, as soon as it does: a few bytes
// of input (nested arrays of nulls, decimals with a large scale) can stand for gigabytes of text.
var errTooLarge = fmt.Errorf("decoded value is more than %d bytes of JSON, the most shown", MaxJSONBytes)

// avroReader is the state of one transcode besides the bytes left to read and the JSON written
// so far: those two are passed and returned by every step, in registers (kept in a struct they
// would be written through a pointer for every value, and each such write pays the garbage
// collector's write barrier while it marks — half of the time on a small heap). The buffers are
// pooled, so the output buffer and the map-sorting scratch are reused from one record to the
// next; each record's JSON is copied out once, at its exact size.
type avroReader struct {
	depth int
	avroBuffers
}

type avroBuffers struct {
	out     []byte
	entries []mapEntry // the entries of the maps being written, innermost last
	scratch []byte     // a map's entries while they are put in key order
}

// mapEntry is one written map entry: its key as read and its `"key":value` text in out.
type mapEntry struct {
	key        []byte
	start, end int
}

var avroPool = sync.Pool{New: func() any { return &avroBuffers{out: make([]byte, 0, 1024)} }}

// decodeJSON transcodes one payload.
func (p *avroProgram) decodeJSON(payload []byte) ([]byte, string, error) {
	bufs := avroPool.Get().(*avroBuffers)
	r := avroReader{avroBuffers: *bufs}
	r.entries = r.entries[:0]
	rest, out, err := r.value(p.root, payload, r.out[:0])
	var j []byte
	switch {
	case err != nil:
	case len(rest) > 0:
		err = fmt.Errorf("%d bytes left after the value (another schema's bytes?)", len(rest))
	default:
		j = make([]byte, len(out))
		copy(j, out)
	}
	clear(r.entries[:cap(r.entries)]) // the keys point into the payload
	if cap(out) <= 2*MaxJSONBytes {
		r.out = out
		*bufs = r.avroBuffers
		avroPool.Put(bufs)
	}
	return j, "", err
}

// avroError is a value that cannot be read, with where it is in the record.
type avroError struct {
	msg  string
	path []string // innermost first: "sku", "[2]", "lines"
	cut  bool     // path holds only the innermost segments
}

func (e *avroError) Error() string {
	if len(e.path) == 0 {
		return e.msg
	}
	var b strings.Builder
	b.WriteString("at ")
	if e.cut {
		b.WriteString("…")
	}
	for i := len(e.path) - 1; i >= 0; i-- {
		s := e.path[i]
		if i < len(e.path)-1 && s[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	b.WriteString(": ")
	b.WriteString(e.msg)
	return b.String()
}

func avroErrorf(format string, args ...any) error {
	return &avroError{msg: fmt.Sprintf(format, args...)}
}

// within adds a path segment to an error on its way out.
func within(err error, segment string) error {
	var e *avroError
	if errors.As(err, &e) {
		if len(e.path) < 32 {
			e.path = append(e.path, segment)
		} else {
			e.cut = true
		}
	}
	return err
}

func truncated(what string, need int, have int) error {
	if need <= 0 {
		return avroErrorf("%s: the bytes end too soon", what)
	}
	return avroErrorf("%s needs %d bytes, %d left", what, need, have)
}

// The readers below take the bytes left and return what they read and the bytes after it.

// readUvarint reads an unsigned varint of at most 5 (int) or 10 (long) bytes; the last byte may
// not carry bits past the width.
func readUvarint(src []byte, long bool, what string) (uint64, []byte, error) {
	last, top := 4, byte(0x0f)
	if long {
		last, top = 9, 0x01
	}
	var u uint64
	for i := 0; ; i++ {
		if i >= len(src) {
			return 0, nil, truncated(what, 0, len(src))
		}
		b := src[i]
		if i == last {
			if b > top {
				return 0, nil, avroErrorf("%s: varint longer than %d bytes", what, last+1)
			}
			return u | uint64(b)<<(7*i), src[i+1:], nil
		}
		u |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return u, src[i+1:], nil
		}
	}
}

// readInt32 and readInt64 read a zigzag varint; the one-byte case (-64 to 63) is inlined.
func readInt32(src []byte, what string) (int32, []byte, error) {
	if len(src) > 0 && src[0] < 0x80 {
		u := uint32(src[0])
		return int32(u>>1) ^ -int32(u&1), src[1:], nil
	}
	return readInt32Long(src, what)
}

func readInt32Long(src []byte, what string) (int32, []byte, error) {
	u, src, err := readUvarint(src, false, what)
	return int32(uint32(u)>>1) ^ -int32(uint32(u)&1), src, err
}

func readInt64(src []byte, what string) (int64, []byte, error) {
	if len(src) > 0 && src[0] < 0x80 {
		u := uint64(src[0])
		return int64(u>>1) ^ -int64(u&1), src[1:], nil
	}
	return readInt64Long(src, what)
}

func readInt64Long(src []byte, what string) (int64, []byte, error) {
	u, src, err := readUvarint(src, true, what)
	return int64(u>>1) ^ -int64(u&1), src, err
}

// readLength reads a length-prefixed string or bytes, refusing a negative length or one longer
// than what is left. A length under 64 that fits (most strings) is read inline.
func readLength(src []byte, what string) ([]byte, []byte, error) {
	if len(src) > 0 && src[0] < 0x80 && src[0]&1 == 0 {
		if n := int(src[0] >> 1); n < len(src) {
			return src[1 : 1+n], src[1+n:], nil
		}
	}
	return readLengthLong(src, what)
}

func readLengthLong(src []byte, what string) ([]byte, []byte, error) {
	n, src, err := readInt64(src, what)
	if err != nil {
		return nil, nil, err
	}
	if n < 0 {
		return nil, nil, avroErrorf("%s has a negative length (%d)", what, n)
	}
	if n > int64(len(src)) {
		return nil, nil, truncated(what, int(min(n, math.MaxInt32)), len(src))
	}
	return src[:n], src[n:], nil
}

func readFixed(src []byte, n int, what string) ([]byte, []byte, error) {
	if n > len(src) {
		return nil, nil, truncated(what, n, len(src))
	}
	return src[:n], src[n:], nil
}

// readBlockCount reads the item count of an array or map block (0 ends it). A negative count is
// followed by the block's size in bytes, there for skipping a block; it is read past, as Java's
// and twmb/avro's readers do.
func readBlockCount(src []byte, what string) (int64, []byte, error) {
	n, src, err := readInt64(src, what)
	if err != nil || n >= 0 {
		return n, src, err
	}
	if n == math.MinInt64 {
		return 0, nil, avroErrorf("%s %d", what, n)
	}
	if _, src, err = readInt64(src, what); err != nil {
		return 0, nil, err
	}
	return -n, src, nil
}

func (r *avroReader) enter() error {
	if r.depth >= maxAvroDepth {
		return errTooDeep()
	}
	r.depth++
	return nil
}

func errTooDeep() error { return avroErrorf("nested more than %d deep", maxAvroDepth) }

// value reads one value of n from src and appends its JSON to out; it returns the bytes after
// the value and out.
func (r *avroReader) value(n *avroNode, src, out []byte) ([]byte, []byte, error) {
	var err error
	switch n.kind {
	case avroNull:
		out = append(out, "null"...)
	case avroBoolean:
		if len(src) == 0 {
			return nil, out, truncated("boolean", 1, 0)
		}
		// Only 1 is true, as in Java's reader (the encoders write 0 or 1).
		out = strconv.AppendBool(out, src[0] == 1)
		src = src[1:]
	case avroInt:
		var v int32
		if v, src, err = readInt32(src, "int"); err != nil {
			return nil, out, err
		}
		out = strconv.AppendInt(out, int64(v), 10)
	case avroLong:
		var v int64
		if v, src, err = readInt64(src, "long"); err != nil {
			return nil, out, err
		}
		out = strconv.AppendInt(out, v, 10)
	case avroFloat:
		var b []byte
		if b, src, err = readFixed(src, 4, "float"); err != nil {
			return nil, out, err
		}
		out = appendFloat(out, float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 32)
	case avroDouble:
		var b []byte
		if b, src, err = readFixed(src, 8, "double"); err != nil {
			return nil, out, err
		}
		out = appendFloat(out, math.Float64frombits(binary.LittleEndian.Uint64(b)), 64)
	case avroString:
		var b []byte
		if b, src, err = readLength(src, "string"); err != nil {
			return nil, out, err
		}
		out = appendJSONString(out, b)
	case avroBytes:
		var b []byte
		if b, src, err = readLength(src, "bytes"); err != nil {
			return nil, out, err
		}
		out = appendBase64(out, b)
	case avroFixed:
		var b []byte
		if b, src, err = readFixed(src, n.size, "fixed"); err != nil {
			return nil, out, err
		}
		out = appendBase64(out, b)
	case avroEnum:
		var i int32
		if i, src, err = readInt32(src, "enum"); err != nil {
			return nil, out, err
		}
		if i < 0 || int(i) >= len(n.symbols) {
			return nil, out, avroErrorf("enum index %d is not one of the %d symbols", i, len(n.symbols))
		}
		out = append(out, n.symbols[i]...)
	case avroRecord:
		if err := r.enter(); err != nil {
			return nil, out, err
		}
		out = append(out, '{')
		for i := range n.fields {
			f := &n.fields[i]
			out = append(out, f.key...)
			if src, out, err = r.value(f.node, src, out); err != nil {
				return nil, out, within(err, f.name)
			}
		}
		// Checked here too: a schema whose records each hold the next twice is a few lines of
		// text for 2^depth of them, and reads from no bytes at all.
		if len(out) > MaxJSONBytes {
			return nil, out, errTooLarge
		}
		out = append(out, '}')
		r.depth--
	case avroArray:
		return r.array(n, src, out)
	case avroMap:
		return r.mapValue(n, src, out)
	case avroUnion:
		if err := r.enter(); err != nil {
			return nil, out, err
		}
		var i int32
		if i, src, err = readInt32(src, "union index"); err != nil {
			return nil, out, err
		}
		if i < 0 || int(i) >= len(n.branches) {
			return nil, out, avroErrorf("union index %d is not one of the %d branches", i, len(n.branches))
		}
		// A union is shown as its branch's bare value (no {"type": value} wrapper): what an
		// operator reads and what json_paths address.
		if src, out, err = r.value(n.branches[i], src, out); err != nil {
			return nil, out, err
		}
		if len(out) > MaxJSONBytes {
			return nil, out, errTooLarge
		}
		r.depth--
	default:
		return logical(n, src, out)
	}
	return src, out, nil
}

// logical reads the logical types, as twmb/avro decoded them: dates and times readable,
// decimals as exact numbers.
func logical(n *avroNode, src, out []byte) ([]byte, []byte, error) {
	var err error
	switch n.kind {
	case avroDate:
		var v int32
		if v, src, err = readInt32(src, "date"); err != nil {
			return nil, out, err
		}
		out = appendTime(out, time.Unix(int64(v)*86400, 0).UTC(), dateLayout)
	case avroTimeMillis:
		var v int32
		if v, src, err = readInt32(src, "time-millis"); err != nil {
			return nil, out, err
		}
		out = appendTimeOfDay(out, time.Duration(v)*time.Millisecond)
	case avroTimeMicros:
		var v int64
		if v, src, err = readInt64(src, "time-micros"); err != nil {
			return nil, out, err
		}
		if v > math.MaxInt64/int64(time.Microsecond) || v < math.MinInt64/int64(time.Microsecond) {
			return nil, out, avroErrorf("time-micros value %d is out of range", v)
		}
		out = appendTimeOfDay(out, time.Duration(v)*time.Microsecond)
	case avroTimestampMillis, avroTimestampMicros, avroTimestampNanos,
		avroLocalTimestampMillis, avroLocalTimestampMicros, avroLocalTimestampNanos:
		var v int64
		if v, src, err = readInt64(src, "timestamp"); err != nil {
			return nil, out, err
		}
		var t time.Time
		switch n.kind {
		case avroTimestampMillis, avroLocalTimestampMillis:
			t = time.UnixMilli(v)
		case avroTimestampMicros, avroLocalTimestampMicros:
			t = time.UnixMicro(v)
		default:
			t = time.Unix(v/1e9, v%1e9)
		}
		layout := timestampLayout
		if n.kind >= avroLocalTimestampMillis {
			layout = localTimestampLayout
		}
		out = appendTime(out, t.UTC(), layout)
	case avroDecimalBytes, avroDecimalFixed:
		var b []byte
		if n.kind == avroDecimalBytes {
			b, src, err = readLength(src, "decimal")
		} else {
			b, src, err = readFixed(src, n.size, "decimal")
		}
		if err != nil {
			return nil, out, err
		}
		if len(b) > maxDecimalBytes {
			return nil, out, avroErrorf("decimal of %d bytes, more than %d", len(b), maxDecimalBytes)
		}
		out = appendDecimal(out, b, n.scale)
		if len(out) > MaxJSONBytes {
			return nil, out, errTooLarge
		}
	case avroBigDecimal:
		var b []byte
		if b, src, err = readLength(src, "big-decimal"); err != nil {
			return nil, out, err
		}
		if out, err = appendBigDecimal(out, b); err != nil {
			return nil, out, err
		}
		if len(out) > MaxJSONBytes {
			return nil, out, errTooLarge
		}
	case avroUUIDFixed:
		var b []byte
		if b, src, err = readFixed(src, 16, "uuid"); err != nil {
			return nil, out, err
		}
		out = appendUUID(out, b)
	case avroDuration:
		var b []byte
		if b, src, err = readFixed(src, 12, "duration"); err != nil {
			return nil, out, err
		}
		out = append(out, `{"months":`...)
		out = strconv.AppendUint(out, uint64(binary.LittleEndian.Uint32(b[0:4])), 10)
		out = append(out, `,"days":`...)
		out = strconv.AppendUint(out, uint64(binary.LittleEndian.Uint32(b[4:8])), 10)
		out = append(out, `,"milliseconds":`...)
		out = strconv.AppendUint(out, uint64(binary.LittleEndian.Uint32(b[8:12])), 10)
		out = append(out, '}')
	default:
		return nil, out, avroErrorf("unknown step %d", n.kind)
	}
	return src, out, nil
}

// array reads an array's blocks. A block count is checked against the bytes left before any item
// is read (count × the least bytes an item takes), so a count in the billions fails at once.
func (r *avroReader) array(n *avroNode, src, out []byte) ([]byte, []byte, error) {
	if err := r.enter(); err != nil {
		return nil, out, err
	}
	out = append(out, '[')
	var total int64
	for {
		count, rest, err := readBlockCount(src, "array block count")
		if err != nil {
			return nil, out, err
		}
		src = rest
		if count == 0 {
			break
		}
		if m := int64(n.elem.min); m > 0 && count > int64(len(src))/m {
			return nil, out, avroErrorf("array block of %d items cannot fit in the %d bytes left", count, len(src))
		} else if m == 0 && count > maxZeroByteItems-total {
			return nil, out, avroErrorf("array of more than %d items that take no bytes", maxZeroByteItems)
		}
		for range count {
			if total > 0 {
				out = append(out, ',')
			}
			if src, out, err = r.value(n.elem, src, out); err != nil {
				return nil, out, within(err, "["+strconv.FormatInt(total, 10)+"]")
			}
			if len(out) > MaxJSONBytes {
				return nil, out, errTooLarge
			}
			total++
		}
	}
	r.depth--
	return src, append(out, ']'), nil
}

// mapValue reads a map's blocks and writes its entries in key order, a repeated key once with its
// last value (as a Go map held them): entries are written as they come, and put in order only if
// they did not come sorted.
func (r *avroReader) mapValue(n *avroNode, src, out []byte) ([]byte, []byte, error) {
	if err := r.enter(); err != nil {
		return nil, out, err
	}
	out = append(out, '{')
	first, base := len(out), len(r.entries)
	sorted := true
	for {
		count, rest, err := readBlockCount(src, "map block count")
		if err != nil {
			return nil, out, err
		}
		src = rest
		if count == 0 {
			break
		}
		if count > int64(len(src))/int64(1+n.elem.min) {
			return nil, out, avroErrorf("map block of %d entries cannot fit in the %d bytes left", count, len(src))
		}
		for range count {
			var key []byte
			if key, src, err = readLength(src, "map key"); err != nil {
				return nil, out, err
			}
			if len(r.entries) > base {
				out = append(out, ',')
				if sorted && bytes.Compare(key, r.entries[len(r.entries)-1].key) <= 0 {
					sorted = false
				}
			}
			start := len(out)
			out = append(appendJSONString(out, key), ':')
			if src, out, err = r.value(n.elem, src, out); err != nil {
				return nil, out, within(err, "["+strconv.Quote(string(key[:min(len(key), 40)]))+"]")
			}
			r.entries = append(r.entries, mapEntry{key: key, start: start, end: len(out)})
			if len(out) > MaxJSONBytes && !sorted {
				// Repeated keys may be what makes it large: keep each key's last value only,
				// and go on. (A later value that would shrink a map still too large after this
				// is not waited for.)
				out = r.sortEntries(out, first, base)
				sorted = true
			}
			if len(out) > MaxJSONBytes {
				return nil, out, errTooLarge
			}
		}
	}
	if !sorted {
		out = r.sortEntries(out, first, base)
	}
	r.entries = r.entries[:base]
	r.depth--
	return src, append(out, '}'), nil
}

// sortEntries puts the entries of the map written in out from first (r.entries[base:]) in key
// order, each key once with its last value, in out and in r.entries.
func (r *avroReader) sortEntries(out []byte, first, base int) []byte {
	es := r.entries[base:]
	slices.SortStableFunc(es, func(a, b mapEntry) int { return bytes.Compare(a.key, b.key) })
	r.scratch = append(r.scratch[:0], out[first:]...)
	out = out[:first]
	kept := r.entries[:base] // rewritten in place: never ahead of the entry being read
	for i, e := range es {
		if i+1 < len(es) && bytes.Equal(es[i+1].key, e.key) {
			continue // a later entry of the same key wins
		}
		if len(out) > first {
			out = append(out, ',')
		}
		start := len(out)
		out = append(out, r.scratch[e.start-first:e.end-first]...)
		kept = append(kept, mapEntry{key: e.key, start: start, end: len(out)})
	}
	r.entries = kept
	return out
}

// Layouts of appendTime.
const (
	dateLayout           = time.DateOnly
	timestampLayout      = time.RFC3339Nano
	localTimestampLayout = "2006-01-02T15:04:05.999999999" // a wall-clock time: no zone to claim
)

// appendTime writes t (in UTC) in one of the layouts above as a JSON string. The years 0 to 9999
// are written here, digit by digit (Time.AppendFormat parses its layout on every call: a third
// of a record's decoding); others by AppendFormat, whose output this is.
func appendTime(b []byte, t time.Time, layout string) []byte {
	b = append(b, '"')
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		b = t.AppendFormat(b, layout)
		return append(b, '"')
	}
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	if layout == dateLayout {
		return append(b, '"')
	}
	hour, minute, sec := t.Clock()
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	if ns := t.Nanosecond(); ns != 0 { // .999999999: nine digits, trailing zeros dropped
		b = append(b, '.')
		b = appendDigits(b, ns, 9)
		for b[len(b)-1] == '0' {
			b = b[:len(b)-1]
		}
	}
	if layout == timestampLayout {
		b = append(b, 'Z')
	}
	return append(b, '"')
}

// appendDigits writes 0 <= n < 10^width in width digits, zero-padded.
func appendDigits(b []byte, n, width int) []byte {
	var d [9]byte
	for i := width - 1; i >= 0; i-- {
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, d[:width]...)
}

// appendTimeOfDay writes a time-millis or time-micros value: "10:20:30.123", trailing zeros and
// a bare point dropped, to the millisecond.
func appendTimeOfDay(b []byte, d time.Duration) []byte {
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	d -= m * time.Minute
	s := float64(d) / float64(time.Second)
	b = append(b, '"')
	b = appendTwoDigits(b, int64(h))
	b = append(b, ':')
	b = appendTwoDigits(b, int64(m))
	b = append(b, ':')
	var num [32]byte
	f := strconv.AppendFloat(num[:0], s, 'f', 3, 64)
	if len(f) < 6 { // zero-padded to six characters, as %06.3f: 5.5 → 05.500
		b = append(b, "000000"[:6-len(f)]...)
	}
	// f always holds the point, so trimming never reaches the padding.
	f = bytes.TrimSuffix(bytes.TrimRight(f, "0"), []byte("."))
	b = append(b, f...)
	return append(b, '"')
}

// appendTwoDigits writes n as %02d does: zero-padded to two characters.
func appendTwoDigits(b []byte, n int64) []byte {
	if n >= 0 && n < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, n, 10)
}

// appendDecimal writes a decimal's unscaled value (big-endian two's complement) with exactly
// scale digits after the point: 1250 at scale 2 is 12.50, as it was written.
func appendDecimal(b, unscaled []byte, scale int) []byte {
	var num [24]byte
	var digits []byte
	neg := len(unscaled) > 0 && unscaled[0]&0x80 != 0
	if len(unscaled) <= 8 {
		var v int64
		for i, c := range unscaled {
			if i == 0 {
				v = int64(int8(c))
			} else {
				v = v<<8 | int64(c)
			}
		}
		u := uint64(v)
		if neg {
			u = -u
		}
		digits = strconv.AppendUint(num[:0], u, 10)
	} else {
		i := new(big.Int).SetBytes(unscaled)
		if neg {
			i.Sub(i, new(big.Int).Lsh(big.NewInt(1), uint(8*len(unscaled))))
			i.Neg(i)
		}
		digits = i.Append(nil, 10)
	}
	if neg {
		b = append(b, '-')
	}
	if scale <= 0 {
		return append(b, digits...)
	}
	if len(digits) <= scale {
		b = append(b, '0', '.')
		for range scale - len(digits) {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	b = append(b, digits[:len(digits)-scale]...)
	b = append(b, '.')
	return append(b, digits[len(digits)-scale:]...)
}

// appendBigDecimal writes a big-decimal (its unscaled bytes, then its own scale): an exact number
// with as many decimals as it needs.
func appendBigDecimal(b, payload []byte) ([]byte, error) {
	unscaled, rest, err := readLength(payload, "big-decimal unscaled value")
	if err != nil {
		return b, err
	}
	if len(unscaled) > maxDecimalBytes {
		return b, avroErrorf("big-decimal of %d bytes, more than %d", len(unscaled), maxDecimalBytes)
	}
	scale, rest, err := readInt64(rest, "big-decimal scale")
	if err != nil {
		return b, err
	}
	if len(rest) > 0 {
		return b, avroErrorf("big-decimal: %d bytes after the scale", len(rest))
	}
	if scale > maxDecimalScale || scale < -maxDecimalScale {
		return b, avroErrorf("big-decimal scale %d, more than %d", scale, maxDecimalScale)
	}
	x := avro.RatFromBytes(unscaled, int(scale))
	if n, exact := x.FloatPrec(); exact {
		return append(b, x.FloatString(n)...), nil
	}
	return appendJSONString(b, []byte(x.RatString())), nil
}

func appendUUID(b, u []byte) []byte {
	b = append(b, '"')
	b = hex.AppendEncode(b, u[0:4])
	b = append(b, '-')
	b = hex.AppendEncode(b, u[4:6])
	b = append(b, '-')
	b = hex.AppendEncode(b, u[6:8])
	b = append(b, '-')
	b = hex.AppendEncode(b, u[8:10])
	b = append(b, '-')
	b = hex.AppendEncode(b, u[10:16])
	return append(b, '"')
}

func appendBase64(b, raw []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, raw)
	return append(b, '"')
}

// appendFloat writes a float as its shortest decimal; NaN and the infinities, which JSON has no
// number for, as strings.
func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

// jsonPlain marks the bytes a JSON string holds as they are.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString writes s as a JSON string (see appendJSONString).
func appendString(b []byte, s string) []byte { return appendJSONString(b, []byte(s)) }

// appendJSONString writes s as a JSON string: each run of invalid UTF-8 replaced by one U+FFFD,
// HTML characters left as they are (the view escapes them), so "a<b" reads as itself.
func appendJSONString(b, s []byte) []byte {
	b = append(b, '"')
	i := 0
	for i < len(s) && jsonPlain[s[i]] {
		i++
	}
	b = append(b, s[:i]...)
	if i < len(s) {
		b = appendStringRest(b, s[i:])
	}
	return append(b, '"')
}

func appendStringRest(b, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	invalid := false // the byte before was part of an invalid sequence
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			invalid = false
			i++
			switch {
			case jsonPlain[c]:
				b = append(b, c)
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			continue
		}
		r, w := utf8.DecodeRune(s[i:])
		if w == 1 {
			i++
			if !invalid {
				invalid = true
				b = append(b, "\uFFFD"...)
			}
			continue
		}
		invalid = false
		if r == 0x2028 || r == 0x2029 { // valid JSON, but not inside a script
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		} else {
			b = append(b, s[i:i+w]...)
		}
		i += w
	}
	return b
}
