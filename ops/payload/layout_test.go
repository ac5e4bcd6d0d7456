package payload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// indented is the layout the way it was made before layout: json.Indent, whole.
func indented(t testing.TB, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(b), "", "  "); err != nil {
		t.Fatalf("json.Indent(%q): %v", b, err)
	}
	return buf.String()
}

// nested is n arrays, each holding the next: the record that took the topic page down.
func nested(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }

// randomJSON writes a JSON value of at most depth levels, with white space where JSON allows it
// and strings holding escapes, quotes, backslashes and characters of two to four bytes.
func randomJSON(r *rand.Rand, w *strings.Builder, depth int) {
	space := func() {
		if r.IntN(4) == 0 {
			w.WriteString([]string{" ", "\n", "\t", "\r\n  "}[r.IntN(4)])
		}
	}
	space()
	switch k := r.IntN(10); {
	case depth > 0 && k < 3:
		w.WriteByte('{')
		for i := range r.IntN(5) {
			if i > 0 {
				w.WriteByte(',')
			}
			space()
			fmt.Fprintf(w, "%q", randomString(r))
			space()
			w.WriteByte(':')
			randomJSON(r, w, depth-1)
		}
		space()
		w.WriteByte('}')
	case depth > 0 && k < 6:
		w.WriteByte('[')
		for i := range r.IntN(5) {
			if i > 0 {
				w.WriteByte(',')
			}
			randomJSON(r, w, depth-1)
		}
		space()
		w.WriteByte(']')
	case k < 8:
		w.WriteString(`"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(randomString(r)) + `\u00e9\/\"\\"`)
	default:
		w.WriteString([]string{"0", "-12.5e+3", "true", "false", "null", "1E-7"}[r.IntN(6)])
	}
	space()
}

func randomString(r *rand.Rand) string {
	parts := []string{"a", "order", " ", `"`, `\`, "{", "}", "[", "]", ",", ":", "é", "支付", "😀", "\u2028", "<&>"}
	var sb strings.Builder
	for range r.IntN(6) {
		sb.WriteString(parts[r.IntN(len(parts))])
	}
	return sb.String()
}

// checkLayout: the whole layout when it fits in n, else a head longer than n that Cut at n gives
// what Cut of json.Indent's layout does.
func checkLayout(t *testing.T, b []byte, n int) {
	t.Helper()
	want := indented(t, b)
	got, stopped := layout(bytes.TrimSpace(b), n)
	if stopped != (len(want) > n+utf8.UTFMax) {
		t.Fatalf("layout(%q, %d): stopped %v for a layout of %d bytes", b, n, stopped, len(want))
	}
	if !stopped {
		if got != want {
			t.Fatalf("layout(%q, %d) = %q, json.Indent gives %q", b, n, got, want)
		}
		return
	}
	if len(got) <= n || len(got) > n+utf8.UTFMax || !strings.HasPrefix(want, got) || !utf8.ValidString(got) {
		t.Fatalf("layout(%q, %d): %d bytes %q, not a head of json.Indent's %q longer than n", b, n, len(got), got, want)
	}
	if g, _ := Cut(got, n); g != func() string { w, _ := Cut(want, n); return w }() {
		t.Fatalf("layout(%q, %d): Cut differs", b, n)
	}
}

// TestLayoutIsJSONIndent compares layout with json.Indent on 5,000 random documents, whole and
// stopped at every kind of place (in a string, in a character, in an indent).
func TestLayoutIsJSONIndent(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		var sb strings.Builder
		randomJSON(r, &sb, 1+i%8)
		b := []byte(sb.String())
		if !IsJSON(b) {
			t.Fatalf("generator made no JSON: %q", b)
		}
		checkLayout(t, b, 1<<30)
		whole := len(indented(t, b))
		for _, n := range []int{0, 1, whole / 3, whole / 2, whole - 5, whole - 4, whole - 1, r.IntN(whole + 1)} {
			checkLayout(t, b, max(n, 0))
		}
	}
	for _, in := range []string{`{}`, `[]`, `[{}, [], {"a": []}]`, `{"a":"\"}"}`, `"x"`, `-0.5`, `{"\\":"\\\\"}`, string(nested(300))} {
		checkLayout(t, []byte(in), 1<<30)
		checkLayout(t, []byte(in), 100)
	}
}

// FuzzLayout: for any JSON, layout is json.Indent's layout or, stopped, a head of it.
func FuzzLayout(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":null}],"c":"\"]}"}`), 10)
	f.Add([]byte(` [ "支付", {"x" : [ ] } ] `), 7)
	f.Add(nested(50), 100)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if !IsJSON(b) || len(b) > 4096 || n < 0 {
			return
		}
		checkLayout(t, b, n)
		checkLayout(t, b, 1<<30)
	})
}

// TestRenderDeeplyNested: the 20,000-byte record nested 10,000 deep (200,000,000 bytes laid out
// whole, 21.7 s) renders in milliseconds, to about what the page shows, and the page shows what it
// showed before: the first 64 KiB of the layout, marked as cut.
func TestRenderDeeplyNested(t *testing.T) {
	in := nested(10000)
	start := time.Now()
	text, enc := Render(in)
	took := time.Since(start)
	if took > 100*time.Millisecond {
		t.Errorf("Render took %v", took)
	}
	if enc != JSON || len(text) > Shown+utf8.UTFMax+len("…") || !strings.HasSuffix(text, "…") {
		t.Fatalf("Render: %s, %d bytes", enc, len(text))
	}
	// The layout's first 64 KiB are those of 300 levels (90,000 bytes of layout).
	want, _ := Cut(indented(t, nested(300)), Shown)
	if got, cut := Cut(text, Shown); !cut || got != want {
		t.Fatalf("the page's 64 KiB differ from before (cut %v)", cut)
	}

	// Indent (the outbox page, payloads up to 256 KiB) does not lay it out either: it gives the
	// document as it is.
	big := nested(128 << 10)
	start = time.Now()
	s, ok := Indent(big)
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("Indent took %v", took)
	}
	if ok || s != string(big) {
		t.Fatalf("Indent: %v, %d bytes", ok, len(s))
	}
}

// TestRenderIsJSONIndentCut: on documents whose layout fits, Render is json.Indent's layout; on
// longer ones Cut(Render, Shown) is Cut(json.Indent, Shown), the page's text before this change.
func TestRenderIsJSONIndentCut(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var fits, longer int
	for range 100 {
		var sb strings.Builder
		sb.WriteByte('[')
		for i := range 1 + r.IntN(300) {
			if i > 0 {
				sb.WriteByte(',')
			}
			randomJSON(r, &sb, 5)
		}
		sb.WriteByte(']')
		b := []byte(sb.String())
		want := indented(t, b)
		text, enc := Render(b)
		if enc != JSON {
			t.Fatalf("Render: %s", enc)
		}
		if len(want) <= Shown {
			fits++
			if text != want {
				t.Fatalf("Render of a %d-byte layout differs from json.Indent", len(want))
			}
		} else {
			longer++
		}
		g, gcut := Cut(text, Shown)
		w, wcut := Cut(want, Shown)
		if g != w || gcut != wcut {
			t.Fatalf("Cut(Render) differs from Cut(json.Indent) on a %d-byte layout", len(want))
		}
		if s, ok := Indent(b); !ok || s != want {
			t.Fatalf("Indent differs from json.Indent on a %d-byte layout", len(want))
		}
	}
	if fits < 10 || longer < 10 {
		t.Fatalf("the corpus should hold both: %d layouts fit, %d are longer", fits, longer)
	}
}

// BenchmarkRender: Render against what it replaced (json.Indent whole, then the page's 64 KiB
// cut), on the nested record and on an ordinary document.
func BenchmarkRender(b *testing.B) {
	var orders strings.Builder
	orders.WriteString(`{"orders":[`)
	for i := range 400 {
		if i > 0 {
			orders.WriteByte(',')
		}
		fmt.Fprintf(&orders, `{"orderId":"ord-%06d","customer":{"id":%d,"name":"Zahlung 支付 %d"},"lines":[{"sku":"A-1","qty":2,"price":9.99},{"sku":"B-2","qty":1,"price":120.5}],"paid":true}`, i, i, i)
	}
	orders.WriteString(`]}`)
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"nested10000", nested(10000)},
		{"nested2000", nested(2000)},
		{"orders", []byte(orders.String())},
	} {
		b.Run(tc.name+"/Render", func(b *testing.B) {
			b.SetBytes(int64(len(tc.in)))
			for b.Loop() {
				s, _ := Render(tc.in)
				Cut(s, Shown)
			}
		})
		b.Run(tc.name+"/json.Indent", func(b *testing.B) {
			b.SetBytes(int64(len(tc.in)))
			for b.Loop() {
				var buf bytes.Buffer
				_ = json.Indent(&buf, tc.in, "", "  ")
				Cut(buf.String(), Shown)
			}
		})
	}
}
