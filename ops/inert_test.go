package ops

import "testing"

func TestInertText(t *testing.T) {
	for in, want := range map[string]string{
		"orders.dlq":                "orders.dlq",
		"tab\tand\nnewline stay":    "tab\tand\nnewline stay",
		"k\x1b[31mred\x07\x00":      `k\x1b[31mred\x07\x00`,
		"lone\rreturn\x7f":          `lone\x0dreturn\x7f`,
		"invoice\u202egpj.exe":      `invoice\u202egpj.exe`,
		"\u2066isolate\u2069\u200f": `\u2066isolate\u2069\u200f`,
		"zero\u200bwidth\ufeff":     `zero\u200bwidth\ufeff`,
		"c1\u0085next line":         `c1\u0085next line`,
		"bad \xff utf-8":            "bad \uFFFD utf-8",
		"Zoë Quist, 東京, עברית ok":   "Zoë Quist, 東京, עברית ok",
	} {
		if got := InertText(in); got != want {
			t.Errorf("InertText(%q) = %q, want %q", in, got, want)
		}
	}
}
