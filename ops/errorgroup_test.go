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
		{"payment provider did not answer: 30 s", "payment provider did not answer: # s"}, // not a class
		{"org.acme.v2.StockException", "org.acme.v2.StockException"},                      // a bare class keeps its digits
		// Words holding a digit are ids or numbers: folded, so one bug is one group.
		{"out of stock for o-100", "out of stock for #"},
		{"out of stock for o-104", "out of stock for #"},
		{"timeout after 30s (7)", "timeout after # (#)"},
		{"order 3f2a9c1e-77b0-4c1e-9a2d-5e8f00c1d2b4 not found.", "order # not found."},
		{"lock 0x7ffe12ab held by pid 4412 since 2026-03-01T08:00:00Z", "lock # held by pid # since #:#:#"},
		{"GET /orders/o-1/items?page=2 failed", "GET /orders/#/items?page=# failed"},
		{"amount 12.50 exceeds limit", "amount # exceeds limit"},
		{"café n°5 épuisé", "café n°# épuisé"},
		{"no digits here - at all.", "no digits here - at all."},
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

func TestInErrorGroup(t *testing.T) {
	for _, tc := range []struct {
		text, want string
		in         bool
	}{
		{"org.acme.StockException", "org.acme.StockException", true},                        // a Kafka class header
		{"org.acme.StockException", "StockException", true},                                 // its simple name
		{"java.net.SocketTimeoutException: read timed out", "SocketTimeoutException", true}, // an outbox last error
		{"java.net.SocketTimeoutException: read timed out", "java.net.SocketTimeoutException", true},
		{"java.net.SocketTimeoutException: read timed out", "TimeoutException", false}, // not a simple name
		{"java.net.SocketTimeoutException: read timed out", "read timed out", false},   // a substring is not a group
		{"upstream returned 503\nat line 2", "upstream returned 503", true},            // no class: the first line
		{"upstream returned 503\nat line 2", "upstream returned #", true},              // …whose key folds the number
		{"upstream returned 503", "503", false},
		{"out of stock for o-100", "out of stock for o-104", true}, // another text of the group
		{"out of stock for o-100", "out of stock for #", true},     // the group's key
		{"out of stock for o-100", "out of stock", false},
		{"timeout after 30s (7)", "timeout after 5s (1)", true},
		{"anything", "", true},
		{"", "X", false},
	} {
		if got := InErrorGroup(tc.text, tc.want); got != tc.in {
			t.Errorf("InErrorGroup(%q, %q) = %v, want %v", tc.text, tc.want, got, tc.in)
		}
	}
}
