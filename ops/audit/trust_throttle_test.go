package audit_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/storetest"
	"github.com/redrive/redrive/ops/waittest"
)

// TestTrustRolelessRefusalsThrottled: a person signed in without a role (proxy sign-in with
// auth.proxy.default_role "", role "none") can be refused as fast as anyone, each refusal a full
// row: 500 of them from one address write the address's share one by one and one row saying how
// many were left out; 500 from as many addresses write the person's share and one such row. A
// person with a role is still recorded whole.
func TestTrustRolelessRefusalsThrottled(t *testing.T) {
	const perAddress, total = 20, 120
	ctx := waittest.Context(t, time.Minute)
	st := storetest.Open(t)
	th := audit.NewThrottle(st, perAddress, total, nil)
	refused := func(user, role, ip string) audit.Entry {
		return audit.Entry{Actor: user, Role: role, SourceIP: ip, UserAgent: strings.Repeat("u", 512),
			Action: "POST /api/v1/replays/:id/approve", Target: "/api/v1/replays/" + strings.Repeat("x", 496),
			Outcome: audit.OutcomeDenied, Reason: "forbidden", Detail: map[string]any{"status": 403, "via": "proxy"}}
	}
	for i := range 500 {
		_ = th.RecordAudit(ctx, refused("sam", "none", "10.0.0.9"))
		_ = th.RecordAudit(ctx, refused("sue", "none", fmt.Sprintf("10.1.%d.%d", i/250, i%250)))
	}
	for range 30 {
		_ = th.RecordAudit(ctx, refused("vera", "viewer", "10.0.0.9"))
	}
	th.Flush()
	for _, tc := range []struct {
		user       string
		one, count int64 // rows one by one, and the left-out row's count (0: none)
	}{
		{"sam", perAddress, 500 - perAddress},
		{"sue", perAddress, 500 - perAddress},
		{"vera", 30, 0},
	} {
		rows, err := st.ListAudit(ctx, audit.Filter{Actor: tc.user, Limit: audit.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		var one, left int64
		var leftRows int
		for _, e := range rows {
			if e.Action == "audit.left_out" {
				leftRows++
				left += *e.Count
				if !strings.Contains(e.Reason, tc.user) {
					t.Errorf("%s's left-out row does not name them: %q", tc.user, e.Reason)
				}
				continue
			}
			one++
		}
		if one != tc.one || left != tc.count || (tc.count > 0) != (leftRows == 1) || leftRows > 1 {
			t.Errorf("%s: %d rows one by one and %d left-out rows counting %d; want %d and one counting %d",
				tc.user, one, leftRows, left, tc.one, tc.count)
		}
	}
}
