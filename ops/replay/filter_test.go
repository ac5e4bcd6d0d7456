package replay

import (
	"fmt"
	"testing"
)

// The set a plan matches ids with answers as the list does: ids listed match, others do not, and
// no list matches everything.
func TestFilterIDSetMatchesAsTheList(t *testing.T) {
	f := Filter{MessageIDs: []string{"m-1", "m-2", ""}}
	set := f.withIDSet()
	for _, id := range []string{"m-1", "m-2", "", "m-3", "M-1"} {
		if got, want := set.matchIDs(id), f.matchIDs(id); got != want {
			t.Errorf("matchIDs(%q): set %v, list %v", id, got, want)
		}
	}
	if !(Filter{}).withIDSet().matchIDs("anything") {
		t.Error("no ids must match everything")
	}
}

// Reproduce: go test ./ops/replay/ -run '^$' -bench FilterIDs -benchtime 3x
//
// A plan reading 100,000 messages filtered by 10,000 ids: "list" is the linear search it did
// before, "set" the map it builds once.
func BenchmarkFilterIDs(b *testing.B) {
	ids := make([]string, 10_000)
	for i := range ids {
		ids[i] = fmt.Sprintf("m-%d", i*10)
	}
	msgs := make([]string, 100_000)
	for i := range msgs {
		msgs[i] = fmt.Sprintf("m-%d", i)
	}
	for name, f := range map[string]Filter{"list": {MessageIDs: ids}, "set": Filter{MessageIDs: ids}.withIDSet()} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				n := 0
				for _, m := range msgs {
					if f.matchIDs(m) {
						n++
					}
				}
				if n != len(ids) {
					b.Fatalf("%d matches, want %d", n, len(ids))
				}
			}
		})
	}
}
