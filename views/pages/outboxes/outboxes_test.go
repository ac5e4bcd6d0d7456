package outboxes

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/viewtest"
)

// Each listed event carries its event id with a copy button (QA: message ids could be copied,
// event ids could not), and its lease time sorts by the instant, not by "in 5 min".
func TestEventListCopiesEventIDAndSortsLease(t *testing.T) {
	lease := time.Date(2026, 12, 2, 15, 4, 5, 0, time.UTC)
	p := ShowPage{Summary: Summary{Name: "orders"}, Events: []EventRow{
		{ID: 7, EventID: "0b8c7e2a-58a1-4a0e-9a57-5f2a1c0d9e11", Status: "PROCESSING", LockedUntil: &lease},
		{ID: 8, EventID: "1f4d", Status: "DEAD"},
	}}
	doc, _ := viewtest.Render(t, Show(p))
	rows := doc.Find(`[data-testid="event-row"]`)
	for i, want := range []string{p.Events[0].EventID, p.Events[1].EventID} {
		if got, _ := rows.Eq(i).Find(`[data-testid="event-id"] [data-copy]`).Attr("data-copy"); got != want {
			t.Errorf("row %d copies %q, want the event id %q", i, got, want)
		}
	}
	lastCell := func(i int) string { v, _ := rows.Eq(i).Find("td").Eq(-2).Attr("data-sort"); return v }
	if lastCell(0) != components.TimeSortKey(lease) || lastCell(1) != "" {
		t.Errorf("lease sort keys %q, %q; want %q and none", lastCell(0), lastCell(1), components.TimeSortKey(lease))
	}
}

// The stuck leases' card says how long ago the oldest lease expired when any is stuck.
func TestStuckCardSaysSinceWhen(t *testing.T) {
	age := 6*time.Minute + 34*time.Second
	for _, c := range []struct {
		s    Summary
		want string
	}{
		{Summary{Name: "orders", Stuck: 12, OldestStuckAge: &age}, "oldest lease expired 6 min 34 s ago"},
		{Summary{Name: "orders"}, "PROCESSING past locked_until"},
	} {
		doc, _ := viewtest.Render(t, Panel(c.s))
		if got := doc.Text(); !strings.Contains(got, c.want) {
			t.Errorf("stuck %d: the panel does not say %q:\n%s", c.s.Stuck, c.want, got)
		}
	}
}
