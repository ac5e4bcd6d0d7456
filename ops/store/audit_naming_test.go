package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/audit"
)

// The trace asks the audit log for the entries naming an id: "evt-p1" names the entries about
// evt-p1 — in the target, the reason or the detail, wherever it stands between other words — and
// not those about evt-p10 or xevt-p1, which a substring match used to return as part of another
// message's story. LIKE's and a regular expression's own characters in an id stay literal.
func TestAuditNamingMatchesWholeIDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := openStore(t)
	for _, e := range []audit.Entry{
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "replay evt-p1, fixed", Detail: map[string]any{"n": 1}},
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "replay evt-p10", Detail: map[string]any{"n": 2}},
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "other", Detail: map[string]any{"message_id": "evt-p1"}},
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "other", Detail: map[string]any{"message_id": "xevt-p1"}},
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "other", Detail: map[string]any{"message_id": "evt-p1_2"}},
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "a.b*(c)", Detail: map[string]any{"n": 6}},
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "axb*(c)", Detail: map[string]any{"n": 7}},
	} {
		e.Actor, e.Outcome = "ops", audit.OutcomeOK
		if err := st.RecordAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		needle string
		want   int
	}{{"evt-p1", 2}, {"evt-p10", 1}, {"evt-p1_2", 1}, {"a.b*(c)", 1}, {"orders.DLT", 7}, {"p1", 0}} {
		got, err := st.AuditNaming(ctx, []string{tc.needle}, nil, time.Now().Add(-time.Hour), 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.want {
			var what []any
			for _, e := range got {
				what = append(what, e.Reason, e.Detail)
			}
			t.Errorf("%q names %d entries %v; want %d", tc.needle, len(got), what, tc.want)
		}
	}
}
