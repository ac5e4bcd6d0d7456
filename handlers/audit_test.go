package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/storetest"
)

// The audit list filters by outcome, exact target and until (the grammar of since); a filter too
// long is named, a bad outcome lists the outcomes, and an unknown parameter is refused with the
// known ones (the QA's ?outcome=ok, ?target= and ?until= listed everything).
func TestAuditFilters(t *testing.T) {
	st := storetest.Open(t)
	ctx := context.Background()
	for _, e := range []audit.Entry{
		{Actor: "otto", Action: "outbox.requeue", Target: "outbox/orders", Outcome: audit.OutcomeOK},
		{Actor: "otto", Action: "outbox.requeue", Target: "outbox/orders-eu", Outcome: audit.OutcomeFailed},
		{Actor: "vera", Action: "replay.start", Target: "kafka/main/orders.DLT", Outcome: audit.OutcomeDenied},
	} {
		if err := st.RecordAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	h := NewAudit(st, nil)
	list := func(query string) ([]string, error) {
		rec, err := callAPI(t, h.API, "/api/v1/audit?"+query, nil)
		if err != nil {
			return nil, err
		}
		var resp struct{ Entries []auditJSON }
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range resp.Entries {
			got = append(got, e.Target+" "+e.Outcome)
		}
		return got, nil
	}
	tomorrow := time.Now().Add(24 * time.Hour).UTC().Format("2006-01-02")
	for query, want := range map[string]string{
		"outcome=ok":                            "outbox/orders ok",
		"outcome=failed":                        "outbox/orders-eu failed",
		"target=outbox/orders":                  "outbox/orders ok",
		"target=outbox/orders&outcome=ok":       "outbox/orders ok",
		"target=outbox/orders&outcome=failed":   "",
		"until=2000-01-01":                      "",
		"until=" + tomorrow + "&outcome=denied": "kafka/main/orders.DLT denied",
		"since=1h&until=" + tomorrow:            "kafka/main/orders.DLT denied,outbox/orders-eu failed,outbox/orders ok",
	} {
		got, err := list(query)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("?%s: %q %v; want %q", query, got, err, want)
		}
	}
	for query, want := range map[string]string{
		"action=" + strings.Repeat("x", 5000): "action: must be at most 256 characters (it has 5000)",
		"actor=" + strings.Repeat("é", 257):   "actor: must be at most 256 characters (it has 257)",
		"target=" + strings.Repeat("x", 1025): "target: must be at most 1024 characters",
		"outcome=OK":                          "outcome: must be one of ok, failed, denied, started, partial, cancelled",
		"until=tomorrow":                      "until: must be RFC 3339",
		"until=0001-01-01":                    "until: must be RFC 3339 (2026-11-30T06:00:00Z) or a date (2026-11-30) between 1970 and 9999", // the zero time: no bound
		"since=1h&until=2h":                   "until: must be after since",
		"outcom=ok":                           "outcom: unknown query parameter; known: actor, action, outcome, target, since, until, limit, cursor",
	} {
		if _, err := list(query); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(ops.Message(err), want) {
			t.Errorf("?%.40s: %v; want a 400 with %q", query, err, want)
		}
	}
}
