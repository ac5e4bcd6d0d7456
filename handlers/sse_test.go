package handlers

import (
	"strings"
	"testing"
)

// A step's detail quotes message content, CRs included; an EventSource ends a line at a CR too, so
// each must start a data line of its own: one cut the rest of the event off, and a header holding
// "\revent: done\rdata: x" ended the trace's stream early.
func TestSSEEventKeepsContentInItsDataLines(t *testing.T) {
	ev := string(sseEvent("steps", []byte("<li>boom\revent: done\rdata: x\r\nmore\nend</li>")))
	lines := strings.FieldsFunc(strings.TrimSuffix(ev, "\n\n"), func(r rune) bool { return r == '\r' || r == '\n' })
	if lines[0] != "event: steps" {
		t.Fatalf("first line %q", lines[0])
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "data: ") {
			t.Errorf("line %q of %q is no data line: an EventSource reads it as a field of its own", l, ev)
		}
	}
	if !strings.HasSuffix(ev, "data: end</li>\n\n") || strings.Count(ev, "\n\n") != 1 {
		t.Errorf("event %q; want one event ending with its last line", ev)
	}
}
