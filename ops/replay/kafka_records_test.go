package replay_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/replay"
)

// "records": [] is a client with nothing ticked: it selected the whole topic, as if records were
// left out. It is refused; absent (or null) still selects by offsets and filter.
func TestKafkaPlanEmptyRecordsIsRefused(t *testing.T) {
	w := newWorld(t)
	w.deadLetter(t, 0, "m-1", "k-1", "com.acme.StockException")
	w.deadLetter(t, 1, "m-2", "k-2", "com.acme.StockException")
	e := w.engine(t, "a")
	ctx := ctxT(t)
	for _, body := range []string{
		`{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":[]}`,
		`{"kind":"kafka","cluster":"main","topic":"orders.DLT","partition":0,"records":[]}`,
	} {
		var src replay.Source
		if err := json.Unmarshal([]byte(body), &src); err != nil {
			t.Fatal(err)
		}
		plan, err := e.Plan(ctx, "alice", src, replay.Filter{})
		want := "source.records: empty — tick at least one record, or leave records out to select by offsets/filter"
		if !errors.Is(err, ops.ErrInvalid) || err.Error() != want {
			t.Errorf("%s: plan of %d (%v), err %v; want %q", body, plan.Total, plan.Counts, err, want)
		}
	}
	for _, body := range []string{
		`{"kind":"kafka","cluster":"main","topic":"orders.DLT"}`,
		`{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":null}`,
	} {
		var src replay.Source
		if err := json.Unmarshal([]byte(body), &src); err != nil {
			t.Fatal(err)
		}
		if plan, err := e.Plan(ctx, "alice", src, replay.Filter{}); err != nil || plan.Total != 2 {
			t.Errorf("%s: plan of %d, err %v; want the whole topic (2)", body, plan.Total, err)
		}
	}
}
