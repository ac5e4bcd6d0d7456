package kafka

import (
	"testing"
	"time"
)

// A dead letter of Redrive's own replay copy (it carries x-redrive-replay-id) is counted in its
// error group as one that failed again after a replay, not as a new failure (issue 37, item 3).
func TestErrorGroupsCountReplayCopies(t *testing.T) {
	f := newFake(t)
	f.topic(t, "copies.DLT", 1)
	at := func(i int) time.Time { return recBase.Add(time.Duration(i) * time.Minute) }
	first := dlRecord("copies.DLT", 0, at(0), "orders", timeout, "", "read timed out")
	again := dlRecord("copies.DLT", 0, at(1), "orders", timeout, "", "read timed out")
	again.Headers = append(again.Headers, hdr("x-redrive-replay-id", []byte("job_0123456789abcdef")), hdr("x-redrive-replay-count", []byte("1")))
	other := dlRecord("copies.DLT", 0, at(2), "orders", timeout, "", "read timed out")
	f.produce(t, first, again, other)
	scan, err := f.c.ErrorGroups(ctxT(t), "copies.DLT", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.Groups) != 1 || scan.Groups[0].Count != 3 || scan.Groups[0].ReplayCopies != 1 {
		t.Fatalf("groups %+v; want one of 3, 1 after a replay", scan.Groups)
	}
}
