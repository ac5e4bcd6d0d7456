package replay

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// An edit's diff is cut at maxDiffText bytes; values of multi-byte characters must be cut between
// characters, or the diff (JSON for the API, text for the page) carries a broken character.
func TestEditDiffCutsBetweenCharacters(t *testing.T) {
	for _, pad := range []int{0, 1, 2} { // each offset of a 3-byte character against the bound
		long := strings.Repeat("a", pad) + strings.Repeat("€", maxDiffText)
		value := `"` + long + `"`
		d, err := diffEdit([]byte(value), nil, &Edit{Value: &value}, "value")
		if err != nil {
			t.Fatal(err)
		}
		for name, s := range map[string]string{"before": d.ValueBefore, "after": d.ValueAfter} {
			if !utf8.ValidString(s) || !strings.HasSuffix(s, "…") || len(s) > maxDiffText+len("…") {
				t.Errorf("pad %d: %s: %d bytes, valid UTF-8 %v, ends %q", pad, name, len(s), utf8.ValidString(s), s[max(0, len(s)-6):])
			}
		}
	}
}
