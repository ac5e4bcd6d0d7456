package outboxtest

import (
	"context"
	"testing"

	"github.com/redrive/redrive/ops/outbox"
)

// testFiltersMatchExactly: the list's aggregate and event type filters — the page's, and the
// selection of a requeue, a replay plan and "resolve all DEAD matching" — select the rows holding
// that very text, not its other case, accents or trailing spaces (which a MySQL collation compares
// equal), and a page of them is as full as its limit.
func testFiltersMatchExactly(t *testing.T, db DB) {
	o := db.Open(t, "orders", "")
	ctx := context.Background()
	var exact []int64
	for _, r := range []Row{
		{AggregateID: "sku-abc", EventType: "PriceChanged"},
		{AggregateID: "SKU-ABC", EventType: "pricechanged"},
		{AggregateID: "sku-abc ", EventType: "PriceChanged "},
		{AggregateID: "sku-abc", EventType: "PriceChanged"},
		{AggregateID: "sku-äbc", EventType: "PrìceChanged"},
	} {
		r.Status = outbox.Dead
		id := one(t, db, r)
		if r.AggregateID == "sku-abc" {
			exact = append(exact, id)
		}
	}
	for _, f := range []outbox.Filter{{AggregateID: "sku-abc"}, {EventType: "PriceChanged"}, {Status: outbox.Dead, AggregateID: "sku-abc", EventType: "PriceChanged"}} {
		var seen []int64
		f.Limit = 1
		for range 5 {
			p, err := o.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range p.Events {
				seen = append(seen, e.ID)
				if e.AggregateID != "sku-abc" || e.EventType != "PriceChanged" {
					t.Errorf("%+v listed %q / %q", f, e.AggregateID, e.EventType)
				}
			}
			if p.NextCursor == 0 {
				break
			}
			f.Before = p.NextCursor
		}
		if len(seen) != 2 || seen[0] != exact[1] || seen[1] != exact[0] {
			t.Errorf("%+v paged %v, want %v newest first", f, seen, exact)
		}
	}
}
