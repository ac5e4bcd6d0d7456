package payload

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestIsJSON(t *testing.T) {
	for in, want := range map[string]bool{
		"":                        false,
		"  ":                      false,
		`{"a":1}`:                 true,
		" [1, 2]\n":               true,
		`123`:                     true, // a scalar is JSON (the OpenAPI document: "text that parses as JSON")
		`"order"`:                 true,
		`null`:                    true,
		`{"a":`:                   false,
		`{"a":1}{"b":2}`:          false, // two documents are not one JSON value
		"{\"a\":\"\xff\"}":        false, // encoding/json accepts this; it is not JSON text
		"order 42 failed":         false,
		"{\"a\":\"x\\u0000y\"}":   true,
		"\x00":                    false,
		"Zahlung – 支付失败":          false,
		`{"note":"Zahlung 支付失败"}`: true,
	} {
		if got := IsJSON([]byte(in)); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		name, in, out, enc string
	}{
		{"Empty", "", "", Empty},
		{"JSONObject", `{"a":1,"b":[true,null]}`, `{"a":1,"b":[true,null]}`, JSON},
		{"JSONKeepsItsSpacing", " [1, 2]\n", " [1, 2]\n", JSON},
		{"JSONScalar", `123`, `123`, JSON},
		{"BrokenJSONIsText", `{"a":`, `{"a":`, Text},
		{"Text", "order 42 failed\n\tretry later", "order 42 failed\n\tretry later", Text},
		{"Unicode", "Zahlung fehlgeschlagen – 支付失败", "Zahlung fehlgeschlagen – 支付失败", Text},
		{"NULIsText", "a\x00b", "a\x00b", Text}, // valid UTF-8; the JSON encoder escapes it as \u0000
		{"JSONWithInvalidUTF8IsBase64", "{\"a\":\"\xff\"}", base64.StdEncoding.EncodeToString([]byte("{\"a\":\"\xff\"}")), Base64},
		{"BinaryIsBase64", "\xff\x00\xfe", "/wD+", Base64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, enc := Encode([]byte(tc.in))
			if out != tc.out || enc != tc.enc {
				t.Fatalf("Encode = %q, %q; want %q, %q", out, enc, tc.out, tc.enc)
			}
			// Whatever the bytes, the API's answer is valid JSON that gives them back.
			raw, err := json.Marshal(out)
			if err != nil || !json.Valid(raw) {
				t.Fatalf("does not encode: %v", err)
			}
			var back string
			_ = json.Unmarshal(raw, &back)
			if enc == Base64 {
				b, _ := base64.StdEncoding.DecodeString(back)
				back = string(b)
			}
			if back != tc.in {
				t.Fatalf("round trip gave %q", back)
			}
		})
	}
}

// TestRender is ops/kafka's TestRender, moved here with the renderer.
func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name, in, text, enc string
	}{
		{"Empty", "", "", Empty},
		{"JSONObject", `{"a":1,"b":[true,null]}`, "{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null\n  ]\n}", JSON},
		{"JSONArrayWithSpace", " [1, 2]\n", "[\n  1,\n  2\n]", JSON},
		{"JSONScalarIsText", `123`, "123", Text},
		{"BrokenJSONIsText", `{"a":`, `{"a":`, Text},
		{"Text", "order 42 failed\n\tretry later", "order 42 failed\n\tretry later", Text},
		{"Unicode", "Zahlung fehlgeschlagen – 支付失败", "Zahlung fehlgeschlagen – 支付失败", Text},
		{"ControlCharIsBinary", "a\x00b", "00000000  61 00 62                                          |a.b|\n", Binary},
		{"InvalidUTF8IsBinary", "\xff\xfe", "00000000  ff fe                                             |..|\n", Binary},
		{"JSONWithInvalidUTF8IsBinary", "{\"a\":\"\xff\"}", "00000000  7b 22 61 22 3a 22 ff 22  7d                       |{\"a\":\".\"}|\n", Binary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, enc := Render([]byte(tc.in))
			if text != tc.text || enc != tc.enc {
				t.Fatalf("Render = %q, %q; want %q, %q", text, enc, tc.text, tc.enc)
			}
		})
	}
}

func TestIndent(t *testing.T) {
	if s, ok := Indent([]byte(` {"a":[1]} `)); !ok || s != "{\n  \"a\": [\n    1\n  ]\n}" {
		t.Errorf("object: %q %v", s, ok)
	}
	if s, ok := Indent([]byte(`42`)); !ok || s != "42" {
		t.Errorf("scalar: %q %v", s, ok)
	}
	if s, ok := Indent([]byte(`{"a":`)); ok || s != `{"a":` {
		t.Errorf("broken: %q %v", s, ok)
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		out  string
		cuts bool
	}{
		{"", 4, "", false},
		{"abcd", 4, "abcd", false},
		{"abcde", 4, "abcd", true},
		{"ab支付", 4, "ab", true}, // 支 is three bytes: not split
		{"支付", 3, "支", true},
		{"支付", 2, "", true},
	} {
		out, cuts := Cut(tc.in, tc.n)
		if out != tc.out || cuts != tc.cuts || !utf8.ValidString(out) {
			t.Errorf("Cut(%q, %d) = %q, %v", tc.in, tc.n, out, cuts)
		}
		want := tc.out
		if tc.cuts {
			want += "…"
		}
		if c := Clip(tc.in, tc.n); c != want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, c, want)
		}
	}
	// A payload far over the cap is cut to it, not copied whole.
	huge := strings.Repeat("é", 1<<20) // 2 MiB
	out, cuts := Cut(huge, 256<<10)
	if !cuts || len(out) != 256<<10 || !utf8.ValidString(out) {
		t.Errorf("huge: %d bytes, cut %v", len(out), cuts)
	}
	if _, enc := Encode([]byte(out)); enc != Text {
		t.Errorf("a cut text is still text: %s", enc)
	}
	if IsJSON([]byte(`{"a":"` + huge[:1<<10])) {
		t.Error("a cut JSON document is not JSON")
	}
}

// FuzzRender: any bytes render without panicking, as one of the four encodings, as valid UTF-8;
// and encode for the API as one of its four, giving the bytes back.
func FuzzRender(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":null}]}`))
	f.Add([]byte("plain text\n"))
	f.Add([]byte{0, 1, 2, 0xff})
	f.Add(nested(200)) // lays out at 80,000 bytes: more than a page shows
	f.Fuzz(func(t *testing.T, b []byte) {
		text, enc := Render(b)
		switch enc {
		case JSON:
			if head, cut := strings.CutSuffix(text, "…"); cut && len(head) > Shown {
				// a layout longer than the page shows: a head of it (TestRenderIsJSONIndentCut)
				if !strings.HasPrefix(indented(t, b), head) {
					t.Fatalf("a cut json rendering is not the layout's head")
				}
			} else if !json.Valid([]byte(text)) {
				t.Fatalf("json rendering is not JSON: %q", text)
			}
		case Text, Binary:
		case Empty:
			if len(b) != 0 {
				t.Fatal("non-empty input rendered as empty")
			}
		default:
			t.Fatalf("unknown encoding %q", enc)
		}
		if !utf8.ValidString(text) {
			t.Fatalf("rendering is not valid UTF-8: %q", text)
		}
		s, enc := Encode(b)
		switch enc {
		case Base64:
			if d, err := base64.StdEncoding.DecodeString(s); err != nil || string(d) != string(b) {
				t.Fatalf("base64 does not give the bytes back")
			}
		case JSON, Text, Empty:
			if s != string(b) {
				t.Fatalf("%s changed the text", enc)
			}
		default:
			t.Fatalf("unknown API encoding %q", enc)
		}
		if (enc == JSON) != IsJSON(b) {
			t.Fatalf("Encode and IsJSON disagree on %q", b)
		}
	})
}

func TestValue(t *testing.T) {
	for in, want := range map[string]string{
		`{"a": 1}`:         `{"a":1}`,
		`42`:               `42`,
		`order 42`:         `"order 42"`,
		"{\"a\":\"\xff\"}": `"{\"a\":\"\ufffd\"}"`, // not JSON text: a string, made valid
		"":                 `""`,
	} {
		b, err := json.Marshal(Value([]byte(in)))
		if err != nil || string(b) != want {
			t.Errorf("Value(%q) = %s, %v; want %s", in, b, err, want)
		}
	}
}
