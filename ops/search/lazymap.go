package search

import (
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// mapSource is the content of one of a filter's map variables (headers, dead_letter, a JSON
// object read by paths), read in place.
type mapSource interface {
	// lookup is the value under key, as the whole map would hold it.
	lookup(key string) (any, bool)
	// whole is the map itself (map[string]string or map[string]any).
	whole() any
}

// lazyMap is a CEL map whose lookups by a string key (m["k"], m.k, has(m.k), "k" in m) read its
// source in place; anything else a map does (size, iteration, equality, conversion, a key of
// another type) is done by the map the source makes, once. Most filters only look keys up, so
// most records never build a map.
type lazyMap struct {
	src  mapSource
	full traits.Mapper
}

func (m *lazyMap) mapper() traits.Mapper {
	if m.full == nil {
		m.full = types.DefaultTypeAdapter.NativeToValue(m.src.whole()).(traits.Mapper)
	}
	return m.full
}

// FindStringKey is the interpreter's lookup of a constant key.
func (m *lazyMap) FindStringKey(k string) (any, bool) { return m.src.lookup(k) }

func (m *lazyMap) Find(k ref.Val) (ref.Val, bool) {
	if s, ok := k.(types.String); ok {
		if v, ok := m.src.lookup(string(s)); ok {
			return types.DefaultTypeAdapter.NativeToValue(v), true
		}
		return nil, false
	}
	return m.mapper().Find(k)
}

func (m *lazyMap) Get(k ref.Val) ref.Val {
	if v, ok := m.Find(k); ok {
		return v
	}
	return m.mapper().Get(k) // the map's own error
}

func (m *lazyMap) Contains(k ref.Val) ref.Val {
	if s, ok := k.(types.String); ok {
		_, found := m.src.lookup(string(s))
		return types.Bool(found)
	}
	return m.mapper().Contains(k)
}

func (m *lazyMap) ConvertToNative(t reflect.Type) (any, error) { return m.mapper().ConvertToNative(t) }
func (m *lazyMap) ConvertToType(t ref.Type) ref.Val            { return m.mapper().ConvertToType(t) }
func (m *lazyMap) Equal(o ref.Val) ref.Val                     { return m.mapper().Equal(o) }
func (m *lazyMap) Type() ref.Type                              { return m.mapper().Type() }
func (m *lazyMap) Value() any                                  { return m.mapper().Value() }
func (m *lazyMap) Iterator() traits.Iterator                   { return m.mapper().Iterator() }
func (m *lazyMap) Size() ref.Val                               { return m.mapper().Size() }
