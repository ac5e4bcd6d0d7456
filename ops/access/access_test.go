package access

import (
	"encoding/json"
	"testing"
)

func TestRoleOrder(t *testing.T) {
	order := []Role{Public, Viewer, Operator, Admin}
	for i, lo := range order {
		for j, hi := range order {
			if got, want := (Actor{Role: hi}).Can(lo), j >= i; got != want {
				t.Errorf("%s Can(%s) = %v, want %v", hi, lo, got, want)
			}
		}
	}
	if !(Public < Viewer && Viewer < Operator && Operator < Admin) {
		t.Fatal("roles are not ordered public < viewer < operator < admin")
	}
}

func TestParseRole(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Role
	}{{"viewer", Viewer}, {"operator", Operator}, {"admin", Admin}} {
		got, err := ParseRole(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRole(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if s := got.String(); s != tc.in {
			t.Errorf("%v.String() = %q, want %q (the config's name)", got, s, tc.in)
		}
	}
	for _, bad := range []string{"", "none", "Admin", " admin", "root", "public"} {
		got, err := ParseRole(bad)
		if err == nil || got != Public {
			t.Errorf("ParseRole(%q) = %v, %v; want Public and an error", bad, got, err)
		}
	}
	if Public.String() != "none" || Role(9).String() != "Role(9)" {
		t.Errorf("Public %q, Role(9) %q", Public, Role(9))
	}
}

// A Role in JSON is the config's string, both ways.
func TestRoleJSON(t *testing.T) {
	b, err := json.Marshal(map[string]Role{"a": Admin, "v": Viewer, "n": Public})
	if err != nil || string(b) != `{"a":"admin","n":"none","v":"viewer"}` {
		t.Fatalf("%s %v", b, err)
	}
	var back map[string]Role
	if err := json.Unmarshal(b, &back); err != nil || back["a"] != Admin || back["v"] != Viewer || back["n"] != Public {
		t.Fatalf("%v %v", back, err)
	}
	var r Role
	if err := json.Unmarshal([]byte(`"root"`), &r); err == nil {
		t.Fatalf("unmarshal root: %v", err)
	}
}
