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

// avroReader is the state of one transcode: the bytes left to read and the JSON written so far.
// It lives on the stack (its fields are written for every value, and a heap object's would each
// pay the garbage collector's write barrier); its buffers are pooled, so the output buffer and
// the map-sorting scratch are reused from one record to the next, and each record's JSON is
// copied out once, at its exact size.
type avroReader struct {
	src   []byte
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
	r := avroReader{src: payload, avroBuffers: *bufs}
	r.out, r.entries = r.out[:0], r.entries[:0]
	err := r.value(p.root)
	var j []byte
	switch {
	case err != nil:
	case len(r.src) > 0:
		err = fmt.Errorf("%d bytes left after the value (another schema's bytes?)", len(r.src))
	default:
		j = bytes.Clone(r.out)
	}
	clear(r.entries[:cap(r.entries)]) // the keys point into the payload
	if cap(r.out) <= 2*MaxJSONBytes {
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

// uvarint reads an unsigned varint of at most 5 (int) or 10 (long) bytes; the last byte may not
// carry bits past the width.
func (r *avroReader) uvarint(long bool, what string) (uint64, error) {
	last, top := 4, byte(0x0f)
	if long {
		last, top = 9, 0x01
	}
	var u uint64
	for i := 0; ; i++ {
		if i >= len(r.src) {
			return 0, truncated(what, 0, len(r.src))
		}
		b := r.src[i]
		if i == last {
			if b > top {
				return 0, avroErrorf("%s: varint longer than %d bytes", what, last+1)
			}
			u |= uint64(b) << (7 * i)
			r.src = r.src[i+1:]
			return u, nil
		}
		u |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			r.src = r.src[i+1:]
			return u, nil
		}
	}
}

func (r *avroReader) int32(what string) (int32, error) {
	if len(r.src) > 0 && r.src[0] < 0x80 {
		u := uint32(r.src[0])
		r.src = r.src[1:]
		return int32(u>>1) ^ -int32(u&1), nil
	}
	u, err := r.uvarint(false, what)
	return int32(uint32(u)>>1) ^ -int32(uint32(u)&1), err
}

func (r *avroReader) int64(what string) (int64, error) {
	if len(r.src) > 0 && r.src[0] < 0x80 {
		u := uint64(r.src[0])
		r.src = r.src[1:]
		return int64(u>>1) ^ -int64(u&1), nil
	}
	u, err := r.uvarint(true, what)
	return int64(u>>1) ^ -int64(u&1), err
}

// length reads a length-prefixed string or bytes, refusing a negative length or one longer than
// what is left.
func (r *avroReader) length(what string) ([]byte, error) {
	n, err := r.int64(what)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, avroErrorf("%s has a negative length (%d)", what, n)
	}
	if n > int64(len(r.src)) {
		return nil, truncated(what, int(min(n, math.MaxInt32)), len(r.src))
	}
	b := r.src[:n]
	r.src = r.src[n:]
	return b, nil
}

func (r *avroReader) fixed(n int, what string) ([]byte, error) {
	if n > len(r.src) {
		return nil, truncated(what, n, len(r.src))
	}
	b := r.src[:n]
	r.src = r.src[n:]
	return b, nil
}

// blockCount reads the item count of an array or map block (0 ends it). A negative count is
// followed by the block's size in bytes, there for skipping a block; it is read past, as Java's
// and twmb/avro's readers do.
func (r *avroReader) blockCount(what string) (int64, error) {
	n, err := r.int64(what)
	if err != nil || n >= 0 {
		return n, err
	}
	if n == math.MinInt64 {
		return 0, avroErrorf("%s %d", what, n)
	}
	if _, err := r.int64(what); err != nil {
		return 0, err
	}
	return -n, nil
}

func (r *avroReader) enter() error {
	if r.depth >= maxAvroDepth {
		return avroErrorf("nested more than %d deep", maxAvroDepth)
	}
	r.depth++
	return nil
}

// value reads one value of n and writes its JSON.
func (r *avroReader) value(n *avroNode) error {
	switch n.kind {
	case avroNull:
		r.out = append(r.out, "null"...)
	case avroBoolean:
		if len(r.src) == 0 {
			return truncated("boolean", 1, 0)
		}
		// Only 1 is true, as in Java's reader (the encoders write 0 or 1).
		r.out = strconv.AppendBool(r.out, r.src[0] == 1)
		r.src = r.src[1:]
	case avroInt:
		v, err := r.int32("int")
		if err != nil {
			return err
		}
		r.out = strconv.AppendInt(r.out, int64(v), 10)
	case avroLong:
		v, err := r.int64("long")
		if err != nil {
			return err
		}
		r.out = strconv.AppendInt(r.out, v, 10)
	case avroFloat:
		b, err := r.fixed(4, "float")
		if err != nil {
			return err
		}
		r.out = appendFloat(r.out, float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 32)
	case avroDouble:
		b, err := r.fixed(8, "double")
		if err != nil {
			return err
		}
		r.out = appendFloat(r.out, math.Float64frombits(binary.LittleEndian.Uint64(b)), 64)
	case avroString:
		b, err := r.length("string")
		if err != nil {
			return err
		}
		r.out = appendJSONString(r.out, b)
	case avroBytes:
		b, err := r.length("bytes")
		if err != nil {
			return err
		}
		r.out = appendBase64(r.out, b)
	case avroFixed:
		b, err := r.fixed(n.size, "fixed")
		if err != nil {
			return err
		}
		r.out = appendBase64(r.out, b)
	case avroEnum:
		i, err := r.int32("enum")
		if err != nil {
			return err
		}
		if i < 0 || int(i) >= len(n.symbols) {
			return avroErrorf("enum index %d is not one of the %d symbols", i, len(n.symbols))
		}
		r.out = append(r.out, n.symbols[i]...)
	case avroRecord:
		if err := r.enter(); err != nil {
			return err
		}
		r.out = append(r.out, '{')
		for i := range n.fields {
			f := &n.fields[i]
			r.out = append(r.out, f.key...)
			if err := r.value(f.node); err != nil {
				return within(err, f.name)
			}
		}
		r.out = append(r.out, '}')
		r.depth--
	case avroArray:
		return r.array(n)
	case avroMap:
		return r.mapValue(n)
	case avroUnion:
		if err := r.enter(); err != nil {
			return err
		}
		i, err := r.int32("union index")
		if err != nil {
			return err
		}
		if i < 0 || int(i) >= len(n.branches) {
			return avroErrorf("union index %d is not one of the %d branches", i, len(n.branches))
		}
		// A union is shown as its branch's bare value (no {"type": value} wrapper): what an
		// operator reads and what json_paths address.
		if err := r.value(n.branches[i]); err != nil {
			return err
		}
		if len(r.out) > MaxJSONBytes {
			return errTooLarge
		}
		r.depth--
	default:
		return r.logical(n)
	}
	return nil
}

// logical reads the logical types, as twmb/avro decoded them: dates and times readable,
// decimals as exact numbers.
func (r *avroReader) logical(n *avroNode) error {
	switch n.kind {
	case avroDate:
		v, err := r.int32("date")
		if err != nil {
			return err
		}
		r.out = appendTime(r.out, time.Unix(int64(v)*86400, 0).UTC(), dateLayout)
	case avroTimeMillis:
		v, err := r.int32("time-millis")
		if err != nil {
			return err
		}
		r.out = appendTimeOfDay(r.out, time.Duration(v)*time.Millisecond)
	case avroTimeMicros:
		v, err := r.int64("time-micros")
		if err != nil {
			return err
		}
		if v > math.MaxInt64/int64(time.Microsecond) || v < math.MinInt64/int64(time.Microsecond) {
			return avroErrorf("time-micros value %d is out of range", v)
		}
		r.out = appendTimeOfDay(r.out, time.Duration(v)*time.Microsecond)
	case avroTimestampMillis, avroTimestampMicros, avroTimestampNanos,
		avroLocalTimestampMillis, avroLocalTimestampMicros, avroLocalTimestampNanos:
		v, err := r.int64("timestamp")
		if err != nil {
			return err
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
		r.out = appendTime(r.out, t.UTC(), layout)
	case avroDecimalBytes, avroDecimalFixed:
		var b []byte
		var err error
		if n.kind == avroDecimalBytes {
			b, err = r.length("decimal")
		} else {
			b, err = r.fixed(n.size, "decimal")
		}
		if err != nil {
			return err
		}
		if len(b) > maxDecimalBytes {
			return avroErrorf("decimal of %d bytes, more than %d", len(b), maxDecimalBytes)
		}
		r.out = appendDecimal(r.out, b, n.scale)
		if len(r.out) > MaxJSONBytes {
			return errTooLarge
		}
	case avroBigDecimal:
		b, err := r.length("big-decimal")
		if err != nil {
			return err
		}
		if r.out, err = appendBigDecimal(r.out, b); err != nil {
			return err
		}
		if len(r.out) > MaxJSONBytes {
			return errTooLarge
		}
	case avroUUIDFixed:
		b, err := r.fixed(16, "uuid")
		if err != nil {
			return err
		}
		r.out = appendUUID(r.out, b)
	case avroDuration:
		b, err := r.fixed(12, "duration")
		if err != nil {
			return err
		}
		r.out = append(r.out, `{"months":`...)
		r.out = strconv.AppendUint(r.out, uint64(binary.LittleEndian.Uint32(b[0:4])), 10)
		r.out = append(r.out, `,"days":`...)
		r.out = strconv.AppendUint(r.out, uint64(binary.LittleEndian.Uint32(b[4:8])), 10)
		r.out = append(r.out, `,"milliseconds":`...)
		r.out = strconv.AppendUint(r.out, uint64(binary.LittleEndian.Uint32(b[8:12])), 10)
		r.out = append(r.out, '}')
	default:
		return avroErrorf("unknown step %d", n.kind)
	}
	return nil
}

// array reads an array's blocks. A block count is checked against the bytes left before any item
// is read (count × the least bytes an item takes), so a count in the billions fails at once.
func (r *avroReader) array(n *avroNode) error {
	if err := r.enter(); err != nil {
		return err
	}
	r.out = append(r.out, '[')
	var total int64
	for {
		count, err := r.blockCount("array block count")
		if err != nil {
			return err
		}
		if count == 0 {
			break
		}
		if m := int64(n.elem.min); m > 0 && count > int64(len(r.src))/m {
			return avroErrorf("array block of %d items cannot fit in the %d bytes left", count, len(r.src))
		} else if m == 0 && count > maxZeroByteItems-total {
			return avroErrorf("array of more than %d items that take no bytes", maxZeroByteItems)
		}
		for range count {
			if total > 0 {
				r.out = append(r.out, ',')
			}
			if err := r.value(n.elem); err != nil {
				return within(err, "["+strconv.FormatInt(total, 10)+"]")
			}
			if len(r.out) > MaxJSONBytes {
				return errTooLarge
			}
			total++
		}
	}
	r.out = append(r.out, ']')
	r.depth--
	return nil
}

// mapValue reads a map's blocks and writes its entries in key order, a repeated key once with its
// last value (as a Go map held them): entries are written as they come, and put in order only if
// they did not come sorted.
func (r *avroReader) mapValue(n *avroNode) error {
	if err := r.enter(); err != nil {
		return err
	}
	r.out = append(r.out, '{')
	first, base := len(r.out), len(r.entries)
	sorted := true
	for {
		count, err := r.blockCount("map block count")
		if err != nil {
			return err
		}
		if count == 0 {
			break
		}
		if count > int64(len(r.src))/int64(1+n.elem.min) {
			return avroErrorf("map block of %d entries cannot fit in the %d bytes left", count, len(r.src))
		}
		for range count {
			key, err := r.length("map key")
			if err != nil {
				return err
			}
			if len(r.entries) > base {
				r.out = append(r.out, ',')
				if sorted && bytes.Compare(key, r.entries[len(r.entries)-1].key) <= 0 {
					sorted = false
				}
			}
			start := len(r.out)
			r.out = append(appendJSONString(r.out, key), ':')
			if err := r.value(n.elem); err != nil {
				return within(err, "["+strconv.Quote(string(key[:min(len(key), 40)]))+"]")
			}
			r.entries = append(r.entries, mapEntry{key: key, start: start, end: len(r.out)})
			if len(r.out) > MaxJSONBytes && !sorted {
				// Repeated keys may be what makes it large: keep each key's last value only,
				// and go on. (A later value that would shrink a map still too large after this
				// is not waited for.)
				r.sortEntries(first, base)
				sorted = true
			}
			if len(r.out) > MaxJSONBytes {
				return errTooLarge
			}
		}
	}
	if !sorted {
		r.sortEntries(first, base)
	}
	r.entries = r.entries[:base]
	r.out = append(r.out, '}')
	r.depth--
	return nil
}

// sortEntries puts the entries of the map written from first (r.entries[base:]) in key order,
// each key once with its last value, in out and in r.entries.
func (r *avroReader) sortEntries(first, base int) {
	es := r.entries[base:]
	slices.SortStableFunc(es, func(a, b mapEntry) int { return bytes.Compare(a.key, b.key) })
	r.scratch = append(r.scratch[:0], r.out[first:]...)
	r.out = r.out[:first]
	kept := r.entries[:base] // rewritten in place: never ahead of the entry being read
	for i, e := range es {
		if i+1 < len(es) && bytes.Equal(es[i+1].key, e.key) {
			continue // a later entry of the same key wins
		}
		if len(r.out) > first {
			r.out = append(r.out, ',')
		}
		start := len(r.out)
		r.out = append(r.out, r.scratch[e.start-first:e.end-first]...)
		kept = append(kept, mapEntry{key: e.key, start: start, end: len(r.out)})
	}
	r.entries = kept
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
	in := avroReader{src: payload}
	unscaled, err := in.length("big-decimal unscaled value")
	if err != nil {
		return b, err
	}
	if len(unscaled) > maxDecimalBytes {
		return b, avroErrorf("big-decimal of %d bytes, more than %d", len(unscaled), maxDecimalBytes)
	}
	scale, err := in.int64("big-decimal scale")
	if err != nil {
		return b, err
	}
	if len(in.src) > 0 {
		return b, avroErrorf("big-decimal: %d bytes after the scale", len(in.src))
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
