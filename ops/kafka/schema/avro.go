package schema

import (
	"fmt"
	"strings"

	"github.com/twmb/avro"
)

// compileAvro parses an Avro schema after the schemas it references (dependencies first), in a
// cache of its own: two versions of one record name in the registry must not collide.
func compileAvro(text string, refs []refSource) (*compiled, error) {
	var cache avro.SchemaCache
	for _, r := range refs {
		if _, err := cache.Parse(r.schema.Schema); err != nil {
			return nil, fmt.Errorf("reference %q: %w", r.name, err)
		}
	}
	s, err := cache.Parse(text)
	if err != nil {
		return nil, err
	}
	return avroCompiled(s)
}

// avroCompiled builds the transcoder of a parsed schema. twmb/avro parses and validates the
// schema (names, references, defaults, decimal precision); the bytes are read by avroProgram,
// which writes JSON as it reads them instead of building Go values first.
func avroCompiled(s *avro.Schema) (*compiled, error) {
	root := s.Root()
	p, err := newAvroProgram(root)
	if err != nil {
		return nil, err
	}
	return &compiled{format: FormatAvro, typ: fullName(root, ""), decodeJSON: p.decodeJSON}, nil
}

// avroKind is what one step of a program reads and how it writes it.
type avroKind uint8

const (
	avroNull avroKind = iota
	avroBoolean
	avroInt
	avroLong
	avroFloat
	avroDouble
	avroString // also uuid on a string: the text is shown as it is
	avroBytes  // base64
	avroFixed  // base64
	avroEnum
	avroRecord
	avroArray
	avroMap
	avroUnion
	avroDate                 // int days since the epoch: "2026-03-01"
	avroTimeMillis           // int: a time of day, "10:20:30.123"
	avroTimeMicros           // long: the same, to the millisecond
	avroTimestampMillis      // long: RFC 3339 in UTC
	avroTimestampMicros      // long
	avroTimestampNanos       // long
	avroLocalTimestampMillis // long: the wall-clock time, no zone
	avroLocalTimestampMicros // long
	avroLocalTimestampNanos  // long
	avroDecimalBytes         // a JSON number with exactly scale decimals
	avroDecimalFixed         // the same on a fixed
	avroBigDecimal           // bytes holding the unscaled value and its own scale
	avroUUIDFixed            // fixed(16): "7d3c3a2e-5b1f-…"
	avroDuration             // fixed(12): {"months":…,"days":…,"milliseconds":…}
)

// avroNode is one schema node compiled: what to read, and the JSON to write for it. Named types
// are one node however often they are used, so a recursive schema is a cyclic graph.
type avroNode struct {
	kind     avroKind
	size     int // fixed, decimal on fixed: the byte count
	scale    int // decimal: the digits after the point
	min      int // the fewest wire bytes a value takes (bounds block counts of arrays and maps)
	minKnown bool
	fields   []avroField
	elem     *avroNode   // array items, map values
	branches []*avroNode // union
	symbols  [][]byte    // enum: each symbol as a JSON string
}

type avroField struct {
	name string
	key  []byte // `"name":`, with the comma before every field but the first
	node *avroNode
}

// avroProgram transcodes the Avro binary of one schema to JSON.
type avroProgram struct {
	root *avroNode
}

// newAvroProgram compiles a schema tree (as twmb/avro's Schema.Root gives it: each named type
// defined where it is first used, referenced by name after).
func newAvroProgram(root *avro.SchemaNode) (*avroProgram, error) {
	n, _, err := compileAvroTree(root)
	if err != nil {
		return nil, err
	}
	return &avroProgram{root: n}, nil
}

// compileAvroTree compiles a schema tree into its root node, with the compiler that holds every
// named type's definition and node (the writer of edits reads the defaults and symbols there).
func compileAvroTree(root *avro.SchemaNode) (*avroNode, *avroCompiler, error) {
	c := &avroCompiler{defs: map[string]*avro.SchemaNode{}, built: map[string]*avroNode{}}
	c.collect(root)
	n, err := c.node(root, "")
	if err != nil {
		return nil, nil, err
	}
	minBytes(n, map[*avroNode]bool{})
	return n, c, nil
}

type avroCompiler struct {
	defs  map[string]*avro.SchemaNode // every named type by full name
	built map[string]*avroNode
}

// fullName is a named type's full name (Schema.Root fills the namespace of every named type), or
// the type of any other node.
func fullName(n *avro.SchemaNode, ns string) string {
	if n.Name == "" {
		return n.Type
	}
	if strings.Contains(n.Name, ".") {
		return n.Name
	}
	if n.Namespace != "" {
		ns = n.Namespace
	}
	if ns == "" {
		return n.Name
	}
	return ns + "." + n.Name
}

// namespaceOf is the namespace a full name sets for the names used inside its type.
func namespaceOf(full string) string {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[:i]
	}
	return ""
}

func isNamed(t string) bool { return t == "record" || t == "error" || t == "enum" || t == "fixed" }

func (c *avroCompiler) collect(n *avro.SchemaNode) {
	if isNamed(n.Type) {
		name := fullName(n, "")
		if _, ok := c.defs[name]; ok {
			return
		}
		c.defs[name] = n
	}
	for i := range n.Fields {
		c.collect(&n.Fields[i].Type)
	}
	for i := range n.Branches {
		c.collect(&n.Branches[i])
	}
	if n.Items != nil {
		c.collect(n.Items)
	}
	if n.Values != nil {
		c.collect(n.Values)
	}
}

// reference finds the named type a reference names: a dotted name is a full name, a short one
// is looked up in the enclosing namespace first, as Avro resolves it.
func (c *avroCompiler) reference(name, ns string) (*avroNode, error) {
	full := name
	if !strings.Contains(name, ".") && ns != "" {
		if _, ok := c.defs[ns+"."+name]; ok {
			full = ns + "." + name
		}
	}
	d, ok := c.defs[full]
	if !ok {
		return nil, fmt.Errorf("type %q is used but not defined", name)
	}
	return c.node(d, ns)
}

// avroPrimitives are the kinds of the primitive types, avroLogical those of the logical types
// on them that twmb/avro decodes (decimal aside, for its scale): others are read as the type
// under them, as the Avro specification says (uuid on a string is its text either way).
var (
	avroPrimitives = map[string]avroKind{"null": avroNull, "boolean": avroBoolean, "int": avroInt, "long": avroLong,
		"float": avroFloat, "double": avroDouble, "string": avroString, "bytes": avroBytes}
	avroLogical = map[[2]string]avroKind{
		{"int", "date"}: avroDate, {"int", "time-millis"}: avroTimeMillis, {"long", "time-micros"}: avroTimeMicros,
		{"long", "timestamp-millis"}: avroTimestampMillis, {"long", "timestamp-micros"}: avroTimestampMicros,
		{"long", "timestamp-nanos"}: avroTimestampNanos, {"long", "local-timestamp-millis"}: avroLocalTimestampMillis,
		{"long", "local-timestamp-micros"}: avroLocalTimestampMicros, {"long", "local-timestamp-nanos"}: avroLocalTimestampNanos,
		{"bytes", "big-decimal"}: avroBigDecimal,
	}
)

// node compiles n; ns is the namespace of the enclosing named type.
func (c *avroCompiler) node(n *avro.SchemaNode, ns string) (*avroNode, error) {
	if k, ok := avroPrimitives[n.Type]; ok {
		out := &avroNode{kind: k}
		if l, ok := avroLogical[[2]string{n.Type, n.LogicalType}]; ok {
			out.kind = l
		} else if n.Type == "bytes" && n.LogicalType == "decimal" {
			out.kind, out.scale = avroDecimalBytes, n.Scale
		}
		return out, nil
	}
	switch n.Type {
	case "array", "map":
		out := &avroNode{kind: avroArray}
		elem := n.Items
		if n.Type == "map" {
			out.kind, elem = avroMap, n.Values
		}
		if elem == nil {
			return nil, fmt.Errorf("%s without its %s type", n.Type, map[string]string{"array": "items", "map": "values"}[n.Type])
		}
		e, err := c.node(elem, ns)
		if err != nil {
			return nil, err
		}
		out.elem = e
		return out, nil
	case "union":
		out := &avroNode{kind: avroUnion}
		for i := range n.Branches {
			b, err := c.node(&n.Branches[i], ns)
			if err != nil {
				return nil, err
			}
			out.branches = append(out.branches, b)
		}
		return out, nil
	case "record", "error", "enum", "fixed":
		return c.named(n)
	}
	return c.reference(n.Type, ns)
}

// named compiles a record, enum or fixed once: its node is registered before its fields are
// compiled, so a field that refers back to the record gets the same node.
func (c *avroCompiler) named(n *avro.SchemaNode) (*avroNode, error) {
	name := fullName(n, "")
	if b, ok := c.built[name]; ok {
		return b, nil
	}
	out := &avroNode{}
	c.built[name] = out
	switch n.Type {
	case "enum":
		out.kind = avroEnum
		for _, s := range n.Symbols {
			out.symbols = append(out.symbols, appendString(nil, s))
		}
	case "fixed":
		out.kind, out.size = avroFixed, n.Size
		// The logical types twmb/avro honours on a fixed, with the sizes it requires (a wrong
		// size is read as a plain fixed, as the Avro specification says).
		switch {
		case n.LogicalType == "decimal":
			out.kind, out.scale = avroDecimalFixed, n.Scale
		case n.LogicalType == "uuid" && n.Size == 16:
			out.kind = avroUUIDFixed
		case n.LogicalType == "duration" && n.Size == 12:
			out.kind = avroDuration
		}
	default:
		out.kind = avroRecord
		ns := namespaceOf(name)
		for i := range n.Fields {
			f := &n.Fields[i]
			fn, err := c.node(&f.Type, ns)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			var key []byte
			if i > 0 {
				key = append(key, ',')
			}
			key = append(appendString(key, f.Name), ':')
			out.fields = append(out.fields, avroField{name: f.Name, key: key, node: fn})
		}
	}
	return out, nil
}

// minBytes fills n.min: the fewest bytes a value of n takes on the wire. A node met again on the
// way down (a recursive type) counts 1: a finite value must leave the recursion through a union
// index or a container's end, each at least a byte. twmb/avro bounds block counts the same way.
// Each node is computed once (a value reached through a recursion is a lower bound too, which is
// all a bound on block counts needs): a schema whose types each use the next twice is not walked
// 2^depth times.
func minBytes(n *avroNode, path map[*avroNode]bool) int {
	if path[n] {
		return 1
	}
	if n.minKnown {
		return n.min
	}
	path[n] = true
	defer func() { delete(path, n); n.minKnown = true }()
	switch n.kind {
	case avroNull:
		n.min = 0
	case avroFloat:
		n.min = 4
	case avroDouble:
		n.min = 8
	case avroFixed, avroDecimalFixed, avroUUIDFixed, avroDuration:
		n.min = n.size
	case avroRecord:
		m := 0
		for _, f := range n.fields {
			m = min(m+minBytes(f.node, path), 1<<30) // a sum of fixed sizes can be anything
		}
		n.min = m
	case avroUnion:
		m := -1
		for _, b := range n.branches {
			if v := minBytes(b, path); m < 0 || v < m {
				m = v
			}
		}
		n.min = 1 + max(m, 0)
	case avroArray, avroMap:
		n.min = 1
		minBytes(n.elem, path)
	default: // boolean, enum, int, long and their logical types, string, bytes: one byte at least
		n.min = 1
	}
	return n.min
}
