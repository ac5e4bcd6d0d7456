package schema

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/avro"
)

func mustAvro(t testing.TB, text string) (*compiled, oracleCase) {
	t.Helper()
	s, err := avro.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	c, err := avroCompiled(s)
	if err != nil {
		t.Fatal(err)
	}
	return c, oracleCase{name: text, new: c, old: oracleCompiled(s)}
}

// bigDecimal is a big-decimal's bytes: the unscaled value and the scale, length-prefixed.
func bigDecimal(unscaled []byte, scale int64) []byte {
	inner := cat(zz(int64(len(unscaled))), unscaled, zz(scale))
	return cat(zz(int64(len(inner))), inner)
}

func zz(v int64) []byte { return binary.AppendVarint(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// allocatedBy is how many bytes f allocates on the heap.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Bytes that lie about their sizes are refused with a note that says what is wrong and where,
// at once and without allocating what they claim.
func TestAvroHostileBytes(t *testing.T) {
	const lines = `{"type":"record","name":"O","fields":[{"name":"id","type":"string"},
	  {"name":"lines","type":{"type":"array","items":{"type":"record","name":"L","fields":[{"name":"sku","type":"string"}]}}}]}`
	for _, c := range []struct {
		name, schema string
		payload      []byte
		want         string
	}{
		{"truncated string", `"string"`, cat(zz(5), []byte("ab")), "string needs 5 bytes, 2 left"},
		{"truncated long", `"long"`, []byte{0x80, 0x80}, "long: the bytes end too soon"},
		{"truncated double", `"double"`, []byte{1, 2, 3}, "double needs 8 bytes, 3 left"},
		{"truncated fixed", `{"type":"fixed","name":"F","size":16}`, []byte{1}, "fixed needs 16 bytes, 1 left"},
		{"empty", `"int"`, nil, "int: the bytes end too soon"},
		{"negative length", `"bytes"`, zz(-3), "bytes has a negative length (-3)"},
		{"negative map key length", `{"type":"map","values":"int"}`, cat(zz(1), zz(-1), zz(0), zz(0)), "map key has a negative length"},
		{"length beyond the bytes", `"string"`, zz(math.MaxInt64), "string needs 2147483647 bytes, 0 left"},
		{"absurd array count", `{"type":"array","items":"long"}`, cat(zz(1<<50), zz(1)), "array block of 1125899906842624 items cannot fit in the 1 bytes left"},
		{"absurd negative block", `{"type":"array","items":"long"}`, cat(zz(-(1 << 50)), zz(-8), zz(1)), "cannot fit"},
		{"uncountable block", `{"type":"array","items":"long"}`, cat(zz(math.MinInt64), zz(0)), "array block count -9223372036854775808"},
		{"absurd map count", `{"type":"map","values":"string"}`, cat(zz(1<<40), zz(1), []byte("k"), zz(0)), "map block of 1099511627776 entries cannot fit"},
		{"items that take no bytes", `{"type":"array","items":"null"}`, cat(zz(1<<40), zz(0)), "array of more than 4096 items that take no bytes"},
		{"zero-byte items over blocks", `{"type":"array","items":"null"}`, cat(zz(100), zz(3997), zz(0)), "more than 4096 items"},
		{"enum index", `{"type":"enum","name":"E","symbols":["A","B"]}`, zz(2), "enum index 2 is not one of the 2 symbols"},
		{"union index", `["null","int"]`, zz(-1), "union index -1 is not one of the 2 branches"},
		{"int past 32 bits", `"int"`, []byte{0x80, 0x80, 0x80, 0x80, 0x10}, "int: varint longer than 5 bytes"},
		{"long past 64 bits", `"long"`, bytes.Repeat([]byte{0xff}, 11), "long: varint longer than 10 bytes"},
		{"decimal too long", `{"type":"bytes","logicalType":"decimal","precision":9}`, cat(zz(40000), make([]byte, 40000)), "decimal of 40000 bytes, more than 32768"},
		{"big-decimal scale", `{"type":"bytes","logicalType":"big-decimal"}`, bigDecimal([]byte{5}, 1<<20), "big-decimal scale 1048576, more than 65536"},
		{"time-micros out of range", `{"type":"long","logicalType":"time-micros"}`, zz(math.MaxInt64), "time-micros value 9223372036854775807 is out of range"},
		{"bytes left over", `"int"`, []byte{2, 2}, "1 bytes left after the value"},
		{"where, in a record", lines, cat(zz(1), []byte("x"), zz(2), zz(1), []byte("a"), zz(9), []byte("b")), "at lines[1].sku: string needs 9 bytes, 1 left"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, oc := mustAvro(t, c.schema)
			var err error
			var got []byte
			if n := allocatedBy(func() { got, _, err = s.decodeJSON(c.payload) }); n > 64<<10 {
				t.Errorf("allocated %d bytes", n)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %s, %v; want an error with %q", got, err, c.want)
			}
			if d := sameAsOld(oc, c.payload); d != "" {
				t.Errorf("the old decoder did otherwise: %s", d)
			}
			// As a record's note reads it.
			var out Decoded
			s.decode(&out, c.payload)
			if out.JSON != nil || !strings.HasPrefix(out.Error, "the bytes do not decode as avro") {
				t.Errorf("note %q", out.Error)
			}
		})
	}
}

// A recursive schema's bytes nest as deep as they claim up to 1000 levels (records and unions
// count one each, as twmb/avro counted them), then are refused; 100,000 levels do not overflow the
// stack.
func TestAvroDeepRecursion(t *testing.T) {
	s, oc := mustAvro(t, `{"type":"record","name":"N","fields":[{"name":"next","type":["null","N"]}]}`)
	nested := func(levels int) []byte { return append(bytes.Repeat([]byte{2}, levels), 0) }
	j, _, err := s.decodeJSON(nested(499))
	if err != nil || !json.Valid(j) || bytes.Count(j, []byte(`{"next":`)) != 500 {
		t.Fatalf("499 levels: %.80s… %v", j, err)
	}
	for _, levels := range []int{499, 500, 100_000} {
		if d := sameAsOld(oc, nested(levels)); d != "" {
			t.Errorf("%d levels: %s", levels, d)
		}
	}
	for _, levels := range []int{500, 100_000} {
		if _, _, err := s.decodeJSON(nested(levels)); err == nil || !strings.Contains(err.Error(), "nested more than 1000 deep") {
			t.Errorf("%d levels: %v", levels, err)
		}
	}
	var out Decoded
	s.decode(&out, nested(100_000))
	if len(out.Error) > 600 {
		t.Errorf("the note is %d characters: %.200s…", len(out.Error), out.Error)
	}
}

// A few bytes that stand for gigabytes of JSON stop as soon as the JSON passes what is shown.
func TestAvroValueTooLargeToShow(t *testing.T) {
	for _, c := range []struct {
		name, schema string
		payload      []byte
	}{
		// 3 bytes per inner array of 4,096 nulls: 20 KB of JSON per 3 bytes.
		{"arrays of nulls", `{"type":"array","items":{"type":"array","items":"null"}}`,
			cat(zz(300), bytes.Repeat(cat(zz(4096), zz(0)), 300), zz(0))},
		// A decimal with 60,000 places: 60 KB of JSON per 2 bytes.
		{"decimal places", `{"type":"array","items":{"type":"bytes","logicalType":"decimal","precision":65536,"scale":60000}}`,
			cat(zz(60), bytes.Repeat(cat(zz(1), []byte{7}), 60), zz(0))},
		{"map of long strings", `{"type":"map","values":"string"}`, longStrings(300, func(i int) string { return fmt.Sprint(i) })},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, oc := mustAvro(t, c.schema)
			var err error
			start := time.Now()
			if n := allocatedBy(func() { _, _, err = s.decodeJSON(c.payload) }); n > 8*MaxJSONBytes {
				t.Errorf("allocated %d bytes", n)
			}
			if !errors.Is(err, errTooLarge) {
				t.Fatalf("got %v", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %s", d)
			}
			var out Decoded
			s.decode(&out, c.payload)
			if out.JSON != nil || out.Error != fmt.Sprintf("decoded value is more than %d bytes of JSON, the most shown", MaxJSONBytes) {
				t.Errorf("note %q", out.Error)
			}
			if d := sameAsOld(oc, c.payload); d != "" {
				t.Error(d)
			}
		})
	}
}

// longStrings is a map<string> of n values of 5,000 control characters (30 KB of JSON each).
func longStrings(n int, key func(int) string) []byte {
	p := zz(int64(n))
	for i := range n {
		k := key(i)
		p = append(append(p, zz(int64(len(k)))...), k...)
		p = append(append(p, zz(5000)...), bytes.Repeat([]byte{1}, 5000)...)
	}
	return append(p, 0)
}

// A map whose repeated keys come to more JSON than is shown, but one value per key does not, is
// shown (as the old decoder did, which kept a Go map).
func TestAvroRepeatedKeysUnderTheCap(t *testing.T) {
	s, oc := mustAvro(t, `{"type":"map","values":"string"}`)
	p := longStrings(300, func(i int) string { return fmt.Sprint(i % 7) })
	j, _, err := s.decodeJSON(p)
	if err != nil || len(j) > 7*30_100 || !bytes.HasPrefix(j, []byte(`{"0":"\u0001`)) {
		t.Fatalf("%d bytes, %v", len(j), err)
	}
	if d := sameAsOld(oc, p); d != "" {
		t.Error(d)
	}
}

// 100,000 items in one array and 100,000 map entries (given in reverse, each key twice) read as
// the old decoder read them: the map in key order, each key once with its last value.
func TestAvroHundredThousandItems(t *testing.T) {
	const n = 100_000
	arr, oa := mustAvro(t, `{"type":"array","items":"long"}`)
	var p []byte
	for i := range n {
		if i%1000 == 0 {
			p = append(p, zz(1000)...)
		}
		p = append(p, zz(int64(i)*7919)...)
	}
	p = append(p, 0)
	j, _, err := arr.decodeJSON(p)
	var got []int64
	if err != nil || json.Unmarshal(j, &got) != nil || len(got) != n || got[n-1] != (n-1)*7919 {
		t.Fatalf("array: %d items, %v", len(got), err)
	}
	if d := sameAsOld(oa, p); d != "" {
		t.Error(d)
	}

	// Keys of four characters and values of one digit keep the map's JSON under MaxJSONBytes;
	// written twice over, it is not.
	m, om := mustAvro(t, `{"type":"map","values":"int"}`)
	key := func(i int) string { return fmt.Sprintf("%04s", strconv.FormatInt(int64(i), 36)) }
	p = p[:0]
	p = append(p, zz(-2*n)...)
	var block []byte
	for i := n - 1; i >= 0; i-- {
		for _, v := range []int{7, i % 10} {
			block = append(block, zz(4)...)
			block = append(block, key(i)...)
			block = append(block, zz(int64(v))...)
		}
	}
	p = append(append(append(p, zz(int64(len(block)))...), block...), 0)
	j, _, err = m.decodeJSON(p)
	var mv map[string]int
	if err != nil || json.Unmarshal(j, &mv) != nil || len(mv) != n || mv[key(12345)] != 5 {
		t.Fatalf("map: %d entries, %v", len(mv), err)
	}
	if !bytes.HasPrefix(j, []byte(`{"0000":0,"0001":1,`)) {
		t.Errorf("not in key order: %.60s", j)
	}
	if d := sameAsOld(om, p); d != "" {
		t.Error(d)
	}
}

// Names used inside a namespace without it (how most schemas refer to their own types, and to
// themselves) are followed. The old decoder lost them: it printed such a value in its tagged form
// with its fields sorted, and a union of two types of one short name through the first.
func TestAvroShortNamesInANamespace(t *testing.T) {
	s, oc := mustAvro(t, `{"type":"record","name":"Node","namespace":"tree","fields":[
	  {"name":"v","type":"int"},{"name":"next","type":["null","Node"]},
	  {"name":"either","type":[{"type":"record","name":"X","namespace":"a","fields":[{"name":"a","type":"int"}]},
	                           {"type":"record","name":"X","namespace":"b","fields":[{"name":"b","type":"int"}]}]}]}`)
	p := cat(zz(1), zz(1), zz(2), zz(0), zz(0), zz(3), zz(1), zz(4))
	got, _, err := s.decodeJSON(p)
	want := `{"v":1,"next":{"v":2,"next":null,"either":{"a":3}},"either":{"b":4}}`
	if err != nil || string(got) != want {
		t.Fatalf("got %s, %v\nwant %s", got, err, want)
	}
	old, err := oc.old(p)
	if err != nil || string(old) != `{"v":1,"next":{"either":{"a.X":{"a":3}},"next":null,"v":2},"either":{"a":null}}` {
		t.Errorf("the old decoder printed %s, %v", old, err)
	}
}

// Times of day read as the old decoder wrote them (%02d:%02d:%06.3f, trailing zeros dropped),
// over every millisecond of a few spans and values outside a day.
func TestAvroTimeOfDay(t *testing.T) {
	var ds []time.Duration
	for ms := range 130_000 {
		ds = append(ds, time.Duration(ms)*time.Millisecond)
	}
	ds = append(ds, -time.Millisecond, -61*time.Second-500*time.Millisecond, 25*time.Hour, 1234567*time.Microsecond,
		999999*time.Microsecond, 59999999*time.Microsecond, time.Duration(math.MaxInt64), time.Duration(math.MinInt64))
	for _, d := range slices.Concat(ds, []time.Duration{23*time.Hour + 59*time.Minute + 59999*time.Millisecond}) {
		got := string(appendTimeOfDay(nil, d))
		want := string(oraclePlainJSON(nil, d))
		if got != want {
			t.Fatalf("%d: got %s, want %s", d, got, want)
		}
	}
}

// Dates and timestamps written digit by digit read as Time.AppendFormat writes them, across the
// years AppendFormat is left to (before 0, after 9999) and fractions of every length.
func TestAvroTimeLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	times := []time.Time{time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.UnixMilli(math.MinInt64), time.UnixMicro(math.MaxInt64)}
	for range 100_000 {
		times = append(times, time.Unix(rng.Int64N(1<<38)-1<<37, rng.Int64N(1e9)/int64(pick(rng, 1, 10, 1000, 1e6, 1e9))))
	}
	for _, tm := range times {
		tm = tm.UTC()
		for _, layout := range []string{dateLayout, timestampLayout, localTimestampLayout} {
			want := `"` + tm.Format(layout) + `"`
			if got := string(appendTime(nil, tm, layout)); got != want {
				t.Fatalf("%v in %s: got %s, want %s", tm, layout, got, want)
			}
		}
	}
}

// A schema whose every type uses the next one twice (60 levels: 2^60 paths to the last) compiles
// at once, and its values are read.
func TestAvroSchemaOfSharedTypes(t *testing.T) {
	const levels = 60
	text := `{"type":"record","name":"R60","fields":[]}`
	for i := levels - 1; i >= 0; i-- {
		text = fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"a","type":%s},{"name":"b","type":"R%d"}]}`, i, text, i+1)
	}
	start := time.Now()
	c, _ := mustAvro(t, text)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("compiling took %s", d)
	}
	// Its one value takes no bytes and would be 2^60 empty records of JSON.
	if _, _, err := c.decodeJSON(nil); !errors.Is(err, errTooLarge) {
		t.Errorf("got %v", err)
	}
}
