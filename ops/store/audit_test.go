package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/audit"
)

// Text written by others — a user agent or a reason with a NUL or a 0xFF byte — must not cost the
// audit entry: PostgreSQL refuses both in text and jsonb, and an unaudited change is the worst case.
func TestAuditKeepsEntriesWithOddBytes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := openStore(t)
	odd := "curl/8\xff\x00<script>"
	if err := st.RecordAudit(ctx, audit.Entry{Actor: "ops\x00", SourceIP: "10.0.0.1", UserAgent: odd, Action: "outbox.requeue",
		Target: "outbox/orders", Reason: "fix \xfe\x00 now", Outcome: audit.OutcomeOK,
		Detail: map[string]any{"note": "a\x00b\xff"}}); err != nil {
		t.Fatalf("the entry was refused: %v", err)
	}
	got, err := st.ListAudit(ctx, audit.Filter{})
	if err != nil || len(got) != 1 {
		t.Fatalf("entries %v, %v", got, err)
	}
	e := got[0]
	for _, s := range []string{e.Actor, e.UserAgent, e.Reason} {
		if strings.ContainsRune(s, 0) || !strings.Contains(s+e.UserAgent, "\uFFFD") {
			t.Errorf("stored %q: want NUL dropped and invalid bytes as U+FFFD", s)
		}
	}
	if e.UserAgent != "curl/8\uFFFD<script>" || e.Detail["note"] != "a\uFFFDb\uFFFD" {
		t.Errorf("user agent %q, detail %v", e.UserAgent, e.Detail)
	}
}
