package paths

import "testing"

// Moved here with Segment (it was components.PathSegment's test).
func TestPathSegment(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{".", ".;"}, {"..", "..;"}, {"...", "..."}, {".;", ".%3B"}, {"/", "%2F"}, {"a b", "a%20b"},
	} {
		if got := Segment(tc.in); got != tc.want {
			t.Errorf("Segment(%q) = %q; want %q", tc.in, got, tc.want)
		}
		if got := ParseSegment(tc.want, true); got != tc.in {
			t.Errorf("ParseSegment(%q) = %q; want %q", tc.want, got, tc.in)
		}
	}
}
