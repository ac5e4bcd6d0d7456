package trace

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/inbox"
)

// The trace told an inbox row processed by its processed_at, so an Eventuate row (processed by
// being there) without creation_time read "received … but not processed", and one with it said
// "(received …)" with the same time twice. The adapter's verdict, Row.Processed, decides.
func TestInboxStepsFollowTheRowsVerdict(t *testing.T) {
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	later := at.Add(2 * time.Second)
	rows := []inbox.Row{
		{MessageID: "seed-done", ReceivedAt: &at, ProcessedAt: &later, Processed: true},
		{MessageID: "seed-open", ReceivedAt: &at},
		{MessageID: "ev-timed", ReceivedAt: &at, ProcessedAt: &at, Processed: true},
		{MessageID: "ev-untimed", Processed: true},
	}
	steps := inboxSteps("billing", []string{"seed-done", "seed-open", "ev-timed", "ev-untimed", "none"}, rows)
	want := map[string]struct {
		status, says, never string
	}{
		"seed-done":  {string(inbox.Processed), "processed by billing at", "not processed"},
		"seed-open":  {string(inbox.InProgress), "but not processed", "processed by"},
		"ev-timed":   {string(inbox.Processed), "processed by billing at", "(received"},
		"ev-untimed": {string(inbox.Processed), "processed by billing, at a time its row does not keep", "not processed"},
		"none":       {string(inbox.NotProcessed), "no row", "processed by billing at"},
	}
	if len(steps) != len(want) {
		t.Fatalf("%d steps: %+v", len(steps), steps)
	}
	for _, s := range steps {
		w := want[s.fact.messageID]
		if s.fact.status != w.status || !strings.Contains(s.Detail, w.says) || strings.Contains(s.Detail, w.never) {
			t.Errorf("%s: %s %q; want %s saying %q, never %q", s.fact.messageID, s.fact.status, s.Detail, w.status, w.says, w.never)
		}
	}
	other := otherInboxSteps("billing", []inbox.Row{{MessageID: "ev-untimed", Consumer: "ledger", Processed: true}})
	if len(other) != 1 || strings.Contains(other[0].Detail, "not processed") || !strings.Contains(other[0].Detail, "processed by ledger") {
		t.Errorf("another consumer's Eventuate row: %+v", other)
	}
}
