package components

import (
	"context"
	"strings"
	"testing"
)

// Names break between their parts, never mid-word (issue 37, item 17), and read as they are.
func TestBreakable(t *testing.T) {
	for in, want := range map[string]string{
		"skip_already_replayed": "skip_<wbr>already_<wbr>replayed",
		"com.acme.Outer$Inner":  "com.<wbr>acme.<wbr>Outer$<wbr>Inner",
		"Held by others":        "Held by others",
		"<b>a.b</b>":            "&lt;b&gt;a.<wbr>b&lt;/<wbr>b&gt;",
		"":                      "",
		"orders.DLT/":           "orders.<wbr>DLT/",
	} {
		var b strings.Builder
		if err := Breakable(in).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("%q: %q, want %q", in, b.String(), want)
		}
	}
}
