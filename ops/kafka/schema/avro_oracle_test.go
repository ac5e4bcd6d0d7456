package schema

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

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
