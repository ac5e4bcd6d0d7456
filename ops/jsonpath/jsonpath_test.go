package jsonpath

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseJSONPath(t *testing.T) {
	good := map[string]Path{
		"$.card.number":   {{Kind: StepKey, Key: "card"}, {Kind: StepKey, Key: "number"}},
		"$.items[*].iban": {{Kind: StepKey, Key: "items"}, {Kind: StepAnyIndex}, {Kind: StepKey, Key: "iban"}},
		"$.customer.*":    {{Kind: StepKey, Key: "customer"}, {Kind: StepAnyKey}},
		`$['a.b']["c"]`:   {{Kind: StepKey, Key: "a.b"}, {Kind: StepKey, Key: "c"}},
		"$[2]":            {{Kind: StepIndex, Index: 2}},
	}
	for p, want := range good {
		if got, err := Parse(p); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%q) = %+v, %v", p, got, err)
		}
	}
	for _, p := range []string{"", "$", "card.number", "$.", "$..a", "$[", "$[x]", "$[-1]", "$['a", "$a", "$.a]", `$.it's`} {
		if _, err := Parse(p); err == nil || !strings.Contains(err.Error(), "write it like $.card.number") {
			t.Errorf("Parse(%q) = %v", p, err)
		}
	}
}

func TestJSONPathString(t *testing.T) {
	for p, want := range map[string]string{"$.a.b": "$.a.b", `$["a.b"][3].*`: "$['a.b'][3].*", "$['it''s']": `$["it''s"]`, "$[*]": "$[*]"} {
		path, err := Parse(p)
		if err != nil || path.String() != want {
			t.Errorf("%s: %s %v", p, path.String(), err)
		}
	}
}
