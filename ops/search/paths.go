package search

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"github.com/tidwall/gjson"
)

// documentVar is each kind's variable holding the message's JSON document.
var documentVar = map[Kind]string{Kafka: "value", RabbitMQ: "body"}

// pathTree is the parts of a JSON document an expression reads: the keys selected from each
// object on the way down (value.order.id, value["order"]["id"]), each read whole where the path
// ends. A filter over value.orderId then decodes one number, not the document.
type pathTree struct {
	key   string // the key this part is under
	whole bool   // read as a whole: decoded in full
	next  map[string]*pathTree
}

// valuePaths is the paths of the document variable name that the checked expression reads, nil
// when it may read the document whole (value == {...}, size(value), "k" in value) or a loop
// variable of the same name hides it. A path stops at the first step that is not a constant key
// (value.items[0], value.items.exists(…)), and the part there is read whole.
func valuePaths(a *cel.Ast, name string) *pathTree {
	root := celast.NavigateAST(a.NativeRep())
	for _, c := range celast.MatchDescendants(root, celast.KindMatcher(celast.ComprehensionKind)) {
		if cx := c.AsComprehension(); cx.IterVar() == name || cx.IterVar2() == name || cx.AccuVar() == name {
			return nil
		}
	}
	uses := celast.MatchDescendants(root, func(e celast.NavigableExpr) bool {
		return e.Kind() == celast.IdentKind && e.AsIdent() == name
	})
	if len(uses) == 0 {
		return nil
	}
	t := &pathTree{}
	for _, u := range uses {
		node, cur := t, u
		for {
			p, ok := cur.Parent()
			if !ok {
				break
			}
			key, ok := keyStep(p, cur)
			if !ok {
				break
			}
			if node.next == nil {
				node.next = map[string]*pathTree{}
			}
			if node.next[key] == nil {
				node.next[key] = &pathTree{key: key}
			}
			node, cur = node.next[key], p
		}
		node.whole = true
	}
	if t.whole {
		return nil
	}
	return t
}

// keyStep is the key parent selects from child (child.key, has(child.key) or child["key"]).
func keyStep(parent, child celast.NavigableExpr) (string, bool) {
	switch parent.Kind() {
	case celast.SelectKind:
		s := parent.AsSelect()
		return s.FieldName(), s.Operand().ID() == child.ID()
	case celast.CallKind:
		c := parent.AsCall()
		if args := c.Args(); c.FunctionName() == operators.Index && len(args) == 2 && args[0].ID() == child.ID() &&
			args[1].Kind() == celast.LiteralKind {
			if k, ok := args[1].AsLiteral().(types.String); ok {
				return string(k), true
			}
		}
	}
	return "", false
}

// maxJSONDepth is encoding/json's nesting limit: a deeper document does not decode, so it is text.
const maxJSONDepth = 10000

// document is b as the filter sees it, reading only the parts t names: for a JSON object, a map
// (a lazyMap over an object) holding just those keys (the last of a repeated key, as a whole decode keeps); each part read
// whole exactly as decoded reads it. A document that is not a JSON object, or t nil, is decoded
// whole. Any other expression over the paths then gives what it gives over the whole decode,
// a missing key's error included.
func document(b []byte, t *pathTree) any {
	d := bytes.TrimSpace(b)
	if t == nil || len(d) == 0 || d[0] != '{' || !gjson.ValidBytes(d) || (len(d) > maxJSONDepth && deeper(d, maxJSONDepth)) {
		return decoded(b)
	}
	v, ok := t.read(d)
	if !ok {
		return decoded(b)
	}
	return v
}

// read decodes the parts t names of the valid JSON value d.
func (t *pathTree) read(d []byte) (any, bool) {
	if t.whole || d[0] != '{' {
		return part(d)
	}
	var obj object
	ok := true
	members(d, func(k, v []byte) bool {
		var sub *pathTree
		if plain(k) {
			sub = t.next[string(k[1:len(k)-1])] // looked up without a copy of the key
		} else {
			key, good := unquote(k)
			if !good {
				ok = false
				return false
			}
			sub = t.next[key]
		}
		if sub == nil {
			return true
		}
		var x any
		if x, ok = sub.read(v); !ok {
			return false
		}
		obj.set(sub.key, x) // a repeated key: the last one stays, as in a whole decode
		return true
	})
	return &lazyMap{src: obj}, ok
}

// object is the members of a JSON object that paths read, in a slice: the few keys a filter
// names are found faster there than a map is made.
type object []member

type member struct {
	key string
	val any
}

func (o *object) set(k string, v any) {
	for i := range *o {
		if (*o)[i].key == k {
			(*o)[i].val = v
			return
		}
	}
	*o = append(*o, member{k, v})
}

func (o object) lookup(k string) (any, bool) {
	for _, m := range o {
		if m.key == k {
			return m.val, true
		}
	}
	return nil, false
}

func (o object) whole() any {
	m := make(map[string]any, len(o))
	for _, e := range o {
		m[e.key] = e.val
	}
	return m
}

// part is one valid JSON value decoded as decoded does: integers as int, other numbers as double.
func part(d []byte) (any, bool) {
	switch d[0] {
	case 'n':
		return nil, true
	case 't':
		return true, true
	case 'f':
		return false, true
	case '"':
		if plain(d) {
			return string(d[1 : len(d)-1]), true
		}
	case '{', '[':
	default:
		if n, ok := smallInt(d); ok {
			return n, true
		}
		return numbers(json.Number(d)), true
	}
	v, err := decodeJSON(d)
	return v, err == nil
}

// members hands fn each key (a string literal, quotes included) and value of the valid JSON
// object d, in order, until fn returns false.
func members(d []byte, fn func(key, value []byte) bool) {
	i := 1
	for {
		i = skipSpace(d, i)
		if d[i] == '}' {
			return
		}
		k := skipValue(d, i)
		key := d[i:k]
		i = skipSpace(d, k) + 1 // the colon
		i = skipSpace(d, i)
		e := skipValue(d, i)
		if !fn(key, d[i:e]) {
			return
		}
		i = skipSpace(d, e)
		if d[i] == '}' {
			return
		}
		i++ // the comma
	}
}

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// skipValue is the end of the valid JSON value starting at d[i].
func skipValue(d []byte, i int) int {
	switch d[i] {
	case '"':
		for i++; ; i++ {
			switch d[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch d[i] {
			case '"':
				i = skipValue(d, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(d) && d[i] != ',' && d[i] != '}' && d[i] != ']' && d[i] != ' ' && d[i] != '\t' && d[i] != '\n' && d[i] != '\r' {
		i++
	}
	return i
}

// unquote is the text of a JSON string literal, as encoding/json reads it.
func unquote(lit []byte) (string, bool) {
	var s string
	err := json.Unmarshal(lit, &s)
	return s, err == nil
}

// smallInt reads a JSON integer of at most 18 digits (which cannot overflow int64) without the
// allocations of json.Number; any other number is left to numbers.
func smallInt(d []byte) (int64, bool) {
	neg := d[0] == '-'
	if neg {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// plain reports whether a JSON string literal is its own text between the quotes: printable
// ASCII without escapes (anything else is unquoted by encoding/json, invalid UTF-8 replaced).
func plain(lit []byte) bool {
	for i := 1; i < len(lit)-1; i++ {
		if c := lit[i]; c == '\\' || c < ' ' || c >= 0x80 {
			return false
		}
	}
	return len(lit) >= 2
}

// deeper reports whether a valid JSON document nests objects and arrays more than n deep.
func deeper(d []byte, n int) bool {
	depth, inString := 0, false
	for i := 0; i < len(d); i++ {
		switch c := d[i]; {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > n {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// String shows the tree for tests and logs: {order{id lines}}, "key*" for a part read whole and
// below, "whole" for nil (the document read whole).
func (t *pathTree) String() string {
	if t == nil {
		return "whole"
	}
	keys := slices.Sorted(maps.Keys(t.next))
	parts := make([]string, len(keys))
	for i, k := range keys {
		switch sub := t.next[k]; {
		case sub.whole && len(sub.next) > 0:
			parts[i] = k + "*"
		case sub.whole:
			parts[i] = k
		default:
			parts[i] = k + sub.String()
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}
