package ops

import "testing"

func TestErrorGroupKey(t *testing.T) {
	long := "x"
	for len(long) < 200 {
		long += "yz é"
	}
	for _, tc := range []struct{ in, want string }{
		{"com.acme.StockException: out of stock for o-17", "com.acme.StockException"},
		{"java.lang.IllegalStateException: boom\n\tat com.acme.Foo.bar(Foo.java:12)", "java.lang.IllegalStateException"},
		{"TimeoutException: 30000 ms", "TimeoutException"},
		{"System.InvalidOperationException: nope", "System.InvalidOperationException"},
		{"payment provider did not answer: 30 s", "payment provider did not answer: 30 s"}, // not a class
		{"  first line  \nsecond", "first line"},
		{"", ""},
	} {
		if got := ErrorGroupKey(tc.in); got != tc.want {
			t.Errorf("ErrorGroupKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := ErrorGroupKey(long); len(got) > maxErrorGroupKey || !utf8Valid(got) {
		t.Errorf("a long line is cut to %d bytes: %q", len(got), got)
	}
}

func utf8Valid(s string) bool { return CleanText(s, len(s)) == s }
