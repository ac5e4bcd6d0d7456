package kafka

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A reader asked for offsets that retention deleted (the log's start moved past them) reads what
// is left of the range from the new start: the records before it are gone, the rest are read. It
// used to answer OFFSET_OUT_OF_RANGE for the whole range, which left a replay job retrying the
// same batch for ever.
func TestReaderReadsOnFromTheLogStart(t *testing.T) {
	f := newFake(t)
	f.topic(t, "orders.DLT", 1)
	ctx := ctxT(t)
	for i := range 10 {
		f.produce(t, &kgo.Record{Topic: "orders.DLT", Partition: 0, Value: fmt.Appendf(nil, "v%d", i)})
	}
	f.deleteRecords(t, "orders.DLT", 0, 3)
	rd := f.c.NewReader("orders.DLT", 0)
	defer rd.Close()
	var got []int64
	if err := rd.Read(ctx, 0, 10, func(r Record) error { got = append(got, r.Offset); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []int64{3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Fatalf("read offsets %v; want %v", got, want)
	}
	// All of a range gone: nothing read, no error.
	got = nil
	if err := rd.Read(ctx, 0, 2, func(r Record) error { got = append(got, r.Offset); return nil }); err != nil || len(got) != 0 {
		t.Fatalf("a range wholly deleted: %v, %v; want nothing, no error", got, err)
	}
}
