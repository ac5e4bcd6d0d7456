package kafka

import (
	"testing"
)

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name, in, text, enc string
	}{
		{"Empty", "", "", EncodingEmpty},
		{"JSONObject", `{"a":1,"b":[true,null]}`, "{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null\n  ]\n}", EncodingJSON},
		{"JSONArrayWithSpace", " [1, 2]\n", "[\n  1,\n  2\n]", EncodingJSON},
		{"JSONScalarIsText", `123`, "123", EncodingText},
		{"BrokenJSONIsText", `{"a":`, `{"a":`, EncodingText},
		{"Text", "order 42 failed\n\tretry later", "order 42 failed\n\tretry later", EncodingText},
		{"Unicode", "Zahlung fehlgeschlagen – 支付失败", "Zahlung fehlgeschlagen – 支付失败", EncodingText},
		{"ControlCharIsBinary", "a\x00b", "00000000  61 00 62                                          |a.b|\n", EncodingBinary},
		{"InvalidUTF8IsBinary", "\xff\xfe", "00000000  ff fe                                             |..|\n", EncodingBinary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, enc := Render([]byte(tc.in))
			if text != tc.text || enc != tc.enc {
				t.Fatalf("Render = %q, %q; want %q, %q", text, enc, tc.text, tc.enc)
			}
		})
	}
}
