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
	"sync"
	"testing"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
)

// The schemas the transcoder is compared with the old decoder on. Their references are by full
// name, or in the null namespace: the old decoder could not follow a short name inside a
// namespace (TestAvroShortNamesInANamespace shows what it printed and what is shown now).
var oracleSchemas = []struct {
	name string
	text string
	refs []string // schemas parsed before it, as registry references are
}{
	{name: "order", refs: []string{`{"type":"record","name":"Money","namespace":"acme","fields":[
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"currency","type":"string"}]}`}, text: `{"type":"record","name":"Order","namespace":"acme","fields":[
 {"name":"messageId","type":{"type":"string","logicalType":"uuid"}},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","FAILED"]}},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"coupon","type":["null","string"],"default":null},
 {"name":"total","type":"acme.Money"},
 {"name":"refund","type":["null","acme.Money"],"default":null},
 {"name":"placedAt","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"card","type":{"type":"record","name":"Card","fields":[{"name":"number","type":"string"}]}},
 {"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[
   {"name":"sku","type":"string"},{"name":"qty","type":"int"}]}}}]}`},
	{name: "primitives", text: `{"type":"record","name":"P","fields":[
 {"name":"n","type":"null"},{"name":"b","type":"boolean"},{"name":"i","type":"int"},{"name":"l","type":"long"},
 {"name":"f","type":"float"},{"name":"d","type":"double"},{"name":"s","type":"string"},{"name":"y","type":"bytes"},
 {"name":"x","type":{"type":"fixed","name":"F3","size":3}},{"name":"z","type":{"type":"fixed","name":"F0","size":0}},
 {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B_2","c"]}},
 {"name":"_last9","type":"string"}]}`},
	{name: "logical", text: `{"type":"record","name":"L","namespace":"t","fields":[
 {"name":"date","type":{"type":"int","logicalType":"date"}},
 {"name":"tms","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"tus","type":{"type":"long","logicalType":"time-micros"}},
 {"name":"tsms","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"tsus","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"tsns","type":{"type":"long","logicalType":"timestamp-nanos"}},
 {"name":"lms","type":{"type":"long","logicalType":"local-timestamp-millis"}},
 {"name":"lus","type":{"type":"long","logicalType":"local-timestamp-micros"}},
 {"name":"lns","type":{"type":"long","logicalType":"local-timestamp-nanos"}},
 {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":40,"scale":3}},
 {"name":"dec0","type":{"type":"bytes","logicalType":"decimal","precision":30}},
 {"name":"decf","type":{"type":"fixed","name":"D9","size":9,"logicalType":"decimal","precision":20,"scale":5}},
 {"name":"bigdec","type":{"type":"bytes","logicalType":"big-decimal"}},
 {"name":"uuid","type":{"type":"string","logicalType":"uuid"}},
 {"name":"uuidf","type":{"type":"fixed","name":"U","size":16,"logicalType":"uuid"}},
 {"name":"dur","type":{"type":"fixed","name":"Dur","size":12,"logicalType":"duration"}},
 {"name":"notdate","type":{"type":"string","logicalType":"date"}},
 {"name":"odd","type":{"type":"long","logicalType":"no-such-type"}},
 {"name":"uuid8","type":{"type":"fixed","name":"U8","size":8,"logicalType":"uuid"}}]}`},
	{name: "unions", text: `{"type":"record","name":"U","namespace":"u","fields":[
 {"name":"a","type":["null","int"]},{"name":"b","type":["string","null"]},
 {"name":"c","type":["null","long","double","string","bytes","boolean"]},
 {"name":"d","type":["null",{"type":"record","name":"R","fields":[{"name":"v","type":"int"}]},{"type":"enum","name":"En","symbols":["X","Y"]},{"type":"fixed","name":"Fx","size":2}]},
 {"name":"e","type":["null",{"type":"array","items":"u.R"},{"type":"map","values":["null","u.En"]}]},
 {"name":"f","type":["null",{"type":"long","logicalType":"timestamp-micros"},{"type":"bytes","logicalType":"decimal","precision":9,"scale":4}]},
 {"name":"g","type":["null",{"type":"int","logicalType":"date"},{"type":"string","logicalType":"uuid"}]},
 {"name":"h","type":["null",{"type":"long","logicalType":"local-timestamp-millis"}]}]}`},
	{name: "collections", text: `{"type":"record","name":"C","fields":[
 {"name":"ints","type":{"type":"array","items":"int"}},
 {"name":"nulls","type":{"type":"array","items":"null"}},
 {"name":"empties","type":{"type":"array","items":{"type":"record","name":"Empty","fields":[]}}},
 {"name":"nested","type":{"type":"array","items":{"type":"array","items":"string"}}},
 {"name":"m","type":{"type":"map","values":"long"}},
 {"name":"mm","type":{"type":"map","values":{"type":"map","values":{"type":"array","items":"double"}}}},
 {"name":"mr","type":{"type":"map","values":{"type":"record","name":"V","fields":[{"name":"k","type":"string"},{"name":"o","type":["null","V"]}]}}}]}`},
	{name: "recursive", text: `{"type":"record","name":"Node","namespace":"tree","fields":[
 {"name":"value","type":"long"},
 {"name":"next","type":["null","tree.Node"]},
 {"name":"children","type":{"type":"array","items":"tree.Node"}},
 {"name":"byName","type":{"type":"map","values":"tree.Node"}}]}`},
	{name: "top-level-array", text: `{"type":"array","items":{"type":"map","values":["null","string","float"]}}`},
	{name: "top-level-union", text: `["null","string",{"type":"record","name":"Q","fields":[{"name":"q","type":"float"}]}]`},
	{name: "string", text: `"string"`},
	{name: "namespaces", refs: []string{`{"type":"enum","name":"Kind","namespace":"other","symbols":["ONE","TWO"]}`},
		text: `{"type":"record","name":"a.b.Outer","fields":[
 {"name":"k","type":"other.Kind"},
 {"name":"inner","type":{"type":"record","name":"Inner","namespace":"c","fields":[{"name":"k2","type":["null","other.Kind"]}]}},
 {"name":"again","type":"c.Inner"},
 {"name":"nullns","type":{"type":"record","name":"Plain","namespace":"","fields":[{"name":"p","type":"int"}]}},
 {"name":"p2","type":["null","Plain"]}]}`},
}

// oracleCase is one schema compiled both ways, with a generator of its values.
type oracleCase struct {
	name string
	root *avro.SchemaNode
	gen  *wireGen
	new  *compiled
	old  func([]byte) ([]byte, error)
}

func oracleCases(t testing.TB) []oracleCase {
	t.Helper()
	var out []oracleCase
	for _, s := range oracleSchemas {
		var cache avro.SchemaCache
		var refs []refSource
		for i, r := range s.refs {
			if _, err := cache.Parse(r); err != nil {
				t.Fatalf("%s: reference %d: %v", s.name, i, err)
			}
			refs = append(refs, refSource{name: fmt.Sprint("ref", i), schema: sr.Schema{Schema: r}})
		}
		parsed, err := cache.Parse(s.text)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		c, err := compileAvro(s.text, refs) // the path registry schemas take
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		root := parsed.Root()
		out = append(out, oracleCase{name: s.name, root: root, gen: newWireGen(root), new: c, old: oracleCompiled(parsed)})
	}
	return out
}

// sameAsOld decodes payload both ways and says how they differ, "" when they agree: the same JSON,
// or both refusing the bytes. JSON the old decoder wrote past MaxJSONBytes was refused after the
// fact; the transcoder stops as soon as it gets there.
func sameAsOld(c oracleCase, payload []byte) string {
	want, oldErr := c.old(payload)
	got, _, newErr := c.new.decodeJSON(payload)
	switch {
	case oldErr == nil && len(want) > MaxJSONBytes:
		if !errors.Is(newErr, errTooLarge) {
			return fmt.Sprintf("old wrote %d bytes (too many to show), new: %d bytes, %v", len(want), len(got), newErr)
		}
	case oldErr != nil && newErr != nil:
	case oldErr != nil:
		return fmt.Sprintf("old refused (%v), new wrote %s", oldErr, got)
	case newErr != nil:
		return fmt.Sprintf("new refused (%v), old wrote %s", newErr, want)
	case !bytes.Equal(got, want):
		return fmt.Sprintf("\nold %s\nnew %s", want, got)
	case !json.Valid(got):
		// Message ids are read from the decoded JSON without checking it again.
		return fmt.Sprintf("not valid JSON: %s", got)
	}
	return ""
}

func TestAvroTranscodeMatchesOldDecoder(t *testing.T) {
	const perSchema = 1500
	for _, c := range oracleCases(t) {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(c.name))))
			bad := 0
			for i := range perSchema {
				payload := c.gen.value(rng)
				if d := sameAsOld(c, payload); d != "" {
					t.Errorf("value %d (% x): %s", i, payload, d)
					if bad++; bad > 5 {
						t.FailNow()
					}
				}
			}
		})
	}
}

// Every way of cutting or corrupting a valid value is refused (or read) exactly as the old decoder
// did, and none panics.
func TestAvroTranscodeCorruptedValues(t *testing.T) {
	for _, c := range oracleCases(t) {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2, uint64(len(c.name))))
			for range 40 {
				payload := c.gen.value(rng)
				for cut := range len(payload) {
					if len(payload) > 200 && rng.IntN(len(payload)/100) > 0 {
						continue
					}
					if d := sameAsOld(c, payload[:cut]); d != "" {
						t.Fatalf("cut at %d of % x: %s", cut, payload, d)
					}
				}
				for range 20 {
					p := bytes.Clone(payload)
					if len(p) == 0 {
						break
					}
					p[rng.IntN(len(p))] ^= byte(1 << rng.IntN(8))
					if d := sameAsOld(c, p); d != "" {
						t.Fatalf("flipped % x: %s", p, d)
					}
				}
			}
		})
	}
}

// FuzzAvroTranscode compares the transcoder with the old decoder on arbitrary bytes for each of
// the oracle schemas; the seeds are generated values of each.
func FuzzAvroTranscode(f *testing.F) {
	cases := oracleCases(f)
	rng := rand.New(rand.NewPCG(3, 3))
	for i, c := range cases {
		for range 4 {
			f.Add(uint8(i), c.gen.value(rng))
		}
	}
	for _, v := range hostileVectors() {
		for i := range cases {
			f.Add(uint8(i), v)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		c := cases[int(which)%len(cases)]
		if d := sameAsOld(c, payload); d != "" {
			t.Fatalf("%s, % x: %s", c.name, payload, d)
		}
	})
}

// hostileVectors are prefixes that claim more than they hold.
func hostileVectors() [][]byte {
	zz := func(v int64) []byte { return binary.AppendVarint(nil, v) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	return [][]byte{
		nil,
		zz(-1),                         // a negative length
		zz(math.MaxInt64),              // a length far beyond the bytes
		cat(zz(5), []byte("ab")),       // a length larger than what remains
		cat(zz(1<<40), zz(1), zz(2)),   // a block count of a trillion
		cat(zz(-(1 << 40)), zz(-7)),    // negative count, negative byte size
		cat(zz(math.MinInt64), zz(0)),  // a count that cannot be negated
		bytes.Repeat([]byte{0xff}, 11), // a varint that never ends
		cat([]byte{0x80, 0x80, 0x80, 0x80, 0x10}), // an int past 32 bits
		bytes.Repeat([]byte{2}, 5000),             // union index 1 over and over: deep recursion
	}
}

// wireGen writes random valid Avro binary for a schema, independently of the code under test:
// blocks split at random (negative counts with their byte sizes too), map keys repeated and out
// of order, strings with escapes and invalid UTF-8, extreme numbers.
type wireGen struct {
	root  *avro.SchemaNode
	named map[string]*avro.SchemaNode
}

func newWireGen(root *avro.SchemaNode) *wireGen {
	g := &wireGen{root: root, named: map[string]*avro.SchemaNode{}}
	var walk func(n *avro.SchemaNode)
	walk = func(n *avro.SchemaNode) {
		if isNamed(n.Type) {
			g.named[fullName(n, "")] = n
		}
		for i := range n.Fields {
			walk(&n.Fields[i].Type)
		}
		for i := range n.Branches {
			walk(&n.Branches[i])
		}
		if n.Items != nil {
			walk(n.Items)
		}
		if n.Values != nil {
			walk(n.Values)
		}
	}
	walk(root)
	return g
}

func (g *wireGen) value(rng *rand.Rand) []byte {
	return g.write(nil, rng, g.root, "", 0)
}

func (g *wireGen) resolve(n *avro.SchemaNode, ns string) (*avro.SchemaNode, string) {
	switch n.Type {
	case "null", "boolean", "int", "long", "float", "double", "bytes", "string", "array", "map", "union":
		return n, ns
	}
	if !isNamed(n.Type) {
		name := n.Type
		if d, ok := g.named[ns+"."+name]; ok && !strings.Contains(name, ".") {
			n = d
		} else {
			n = g.named[name]
		}
	}
	return n, namespaceOf(fullName(n, ""))
}

func zigzag(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

func pick[T any](rng *rand.Rand, vs ...T) T { return vs[rng.IntN(len(vs))] }

func randInt(rng *rand.Rand, bits int) int64 {
	switch rng.IntN(6) {
	case 0:
		return 0
	case 1:
		if bits == 32 {
			return pick[int64](rng, math.MinInt32, math.MaxInt32, -1, 1)
		}
		return pick[int64](rng, math.MinInt64, math.MaxInt64, -1, 1, 1<<53+1)
	case 2:
		return int64(rng.IntN(200)) - 100
	case 3:
		return 1_770_000_000_000 + rng.Int64N(1e9) // plausible millis
	}
	if bits == 32 {
		return int64(int32(rng.Uint32()))
	}
	return int64(rng.Uint64())
}

func randText(rng *rand.Rand) []byte {
	pieces := []string{"a", "Zz", "7", " ", "\"", "\\", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "<b>&", "é", "日本",
		"\u2028", "\u2029", "\U0001F600", "\uFFFD", "\xff", "\xc3", "\xed\xa0\x80", "\xe2\x82", "\x80\x80"}
	var b []byte
	for range rng.IntN(6) {
		b = append(b, pick(rng, pieces...)...)
	}
	return b
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	if n > 0 && rng.IntN(4) == 0 {
		b[0] |= 0x80 // negative decimals
	}
	return b
}

func (g *wireGen) write(b []byte, rng *rand.Rand, n *avro.SchemaNode, ns string, depth int) []byte {
	n, ns = g.resolve(n, ns)
	deep := depth > 6
	switch n.Type {
	case "null":
	case "boolean":
		b = append(b, pick[byte](rng, 0, 1, 1, 0, 2))
	case "int":
		b = zigzag(b, randInt(rng, 32))
	case "long":
		if n.LogicalType == "time-micros" && rng.IntN(3) > 0 {
			return zigzag(b, rng.Int64N(86_400_000_000))
		}
		b = zigzag(b, randInt(rng, 64))
	case "float":
		v := pick(rng, float32(0), float32(math.Copysign(0, -1)), float32(1.5), float32(math.NaN()), float32(math.Inf(1)),
			float32(math.Inf(-1)), math.MaxFloat32, math.SmallestNonzeroFloat32, float32(rng.NormFloat64()*1e6), math.Float32frombits(rng.Uint32()))
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	case "double":
		v := pick(rng, 0, math.Copysign(0, -1), 0.1, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, 5e-324,
			rng.NormFloat64()*1e12, math.Float64frombits(rng.Uint64()), 1e21, 123456789012345678)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	case "string":
		s := randText(rng)
		b = append(zigzag(b, int64(len(s))), s...)
	case "bytes":
		var p []byte
		switch n.LogicalType {
		case "big-decimal":
			u := randBytes(rng, rng.IntN(12))
			p = append(zigzag(nil, int64(len(u))), u...)
			p = zigzag(p, int64(rng.IntN(21))-10)
		default:
			p = randBytes(rng, pick(rng, 0, 1, 2, 3, 8, 9, 17))
		}
		b = append(zigzag(b, int64(len(p))), p...)
	case "fixed":
		b = append(b, randBytes(rng, n.Size)...)
	case "enum":
		b = zigzag(b, int64(rng.IntN(len(n.Symbols))))
	case "record", "error":
		for i := range n.Fields {
			b = g.write(b, rng, &n.Fields[i].Type, ns, depth+1)
		}
	case "union":
		i := rng.IntN(len(n.Branches))
		if deep {
			for j := range n.Branches {
				if n.Branches[j].Type == "null" {
					i = j
				}
			}
		}
		b = zigzag(b, int64(i))
		b = g.write(b, rng, &n.Branches[i], ns, depth+1)
	case "array", "map":
		items := rng.IntN(6)
		if depth >= 2 {
			items = rng.IntN(3)
		}
		if depth < 2 && rng.IntN(20) == 0 {
			items = 40
		}
		if deep || depth > 3 && rng.IntN(2) == 0 {
			items = 0
		}
		for items > 0 {
			k := 1 + rng.IntN(items)
			items -= k
			var block []byte
			for range k {
				if n.Type == "map" {
					key := pick(rng, []byte("b"), []byte("a"), []byte("c"), randText(rng))
					block = append(zigzag(block, int64(len(key))), key...)
					block = g.write(block, rng, n.Values, ns, depth+1)
				} else {
					block = g.write(block, rng, n.Items, ns, depth+1)
				}
			}
			if rng.IntN(2) == 0 {
				b = zigzag(b, int64(k))
			} else {
				b = zigzag(zigzag(b, -int64(k)), int64(len(block)))
			}
			b = append(b, block...)
		}
		b = zigzag(b, 0)
	default:
		panic("unresolved " + n.Type)
	}
	return b
}

// Twenty goroutines transcode at once through the pooled readers; each gets its own value back.
func TestAvroTranscodeConcurrent(t *testing.T) {
	cases := oracleCases(t)
	var wg sync.WaitGroup
	errs := make(chan string, 20)
	for w := range 20 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for range 300 {
				c := cases[rng.IntN(len(cases))]
				if d := sameAsOld(c, c.gen.value(rng)); d != "" {
					errs <- c.name + ": " + d
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

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

// zz is v as one zig-zag varint.
func zz(v int64) []byte { return zigzag(nil, v) }

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

// BenchmarkAvroTranscode decodes the page benchmark's order (ops/kafka BenchmarkRecordsAvroPage)
// to JSON: the transcoder, and the old decoder beside it.
//
//	go test ./ops/kafka/schema/ -run '^$' -bench AvroTranscode -benchmem
func BenchmarkAvroTranscode(b *testing.B) {
	c := oracleCases(b)[0] // order
	str := func(s string) []byte { return cat(zz(int64(len(s))), []byte(s)) }
	payload := cat(str("7d3c3a2e-5b1f-4c53-9a43-000000000001"), zz(2), zz(1), str("gift"), zz(0),
		str("\x03\xe8"), str("EUR"), zz(0), zz(1_770_000_000_000), zz(20_513), str("4111111111111111"),
		zz(3), str("A-1"), zz(2), str("B-7"), zz(1), str("C-3"), zz(5), zz(0))
	if d := sameAsOld(c, payload); d != "" {
		b.Fatal(d)
	}
	for _, bc := range []struct {
		name string
		f    func([]byte) ([]byte, error)
	}{
		{"transcoder", func(p []byte) ([]byte, error) { j, _, err := c.new.decodeJSON(p); return j, err }},
		{"old", c.old},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.f(payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
