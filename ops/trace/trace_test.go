package trace

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
)

func TestQueryValidate(t *testing.T) {
	for _, tc := range []struct {
		q    Query
		want string
	}{
		{Query{}, "give a message_id"},
		{Query{MessageID: "  "}, "give a message_id"},
		{Query{AggregateID: strings.Repeat("x", MaxIDBytes+1)}, "aggregate_id: must be at most 512 bytes"},
		{Query{TraceID: "t", Since: new(time.Now()), Until: new(time.Now().Add(-time.Hour))}, "until: must not be before since"},
		// Two ids were traced as the first alone, silently.
		{Query{MessageID: "a", AggregateID: "b"}, "message_id and aggregate_id: give one of them"},
		{Query{EventID: "a", TraceID: "b", Any: "c"}, "event_id and trace_id and q: give one of them"},
	} {
		err := tc.q.Validate()
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v", tc.q, err)
		}
	}
	if err := (Query{Any: "order-100"}).Validate(); err != nil {
		t.Errorf("any: %v", err)
	}
}

// A time the query gives is a bound whatever its value: since=0001-01-01 (time.Time's zero) was
// read as no since, so the trace chose its own window and searched the audit log only
// AuditWindow back. Before 1970 it is the epoch, where Kafka's log starts.
func TestQueryTimesArePresentWhateverTheirValue(t *testing.T) {
	epoch := time.Unix(0, 0)
	for _, tc := range []struct {
		name     string
		q        Query
		from, to time.Time
	}{
		{"SinceYearOne", Query{MessageID: "m", Since: new(time.Time{})}, epoch, time.Time{}},
		{"UntilYearOne", Query{MessageID: "m", Until: new(time.Time{})}, time.Time{}, epoch},
		{"Since1969", Query{MessageID: "m", Since: new(time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC))}, epoch, time.Time{}},
		{"Since2026", Query{MessageID: "m", Since: new(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))}, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := (&run{q: tc.q}).hints()
			if h.original.why != "the asked time window" || !h.original.from.Equal(tc.from) || !h.original.to.Equal(tc.to) {
				t.Errorf("window %+v, want the asked one from %v to %v", h.original, tc.from, tc.to)
			}
		})
	}
	if h := (&run{q: Query{MessageID: "m"}}).hints(); h.original.why == "the asked time window" {
		t.Errorf("no since nor until: window %+v, want none asked", h.original)
	}
}

// With nothing configured a trace still answers, and says it searched nothing.
func TestTraceWithoutSources(t *testing.T) {
	res, err := New(Options{}).Trace(context.Background(), Query{MessageID: "e-1"})
	if err != nil || len(res.Steps) != 0 || res.Verdict != "message e-1 was found nowhere: no outbox, broker, inbox or store is configured to search" {
		t.Errorf("%+v %v", res, err)
	}
	if _, err := New(Options{}).Trace(context.Background(), Query{}); !errors.Is(err, ops.ErrInvalid) {
		t.Errorf("no id: %v", err)
	}
}
