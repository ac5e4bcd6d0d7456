package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/views/viewtest"
)

// A target that names a replay job or plan offers its id to copy; other targets are shown as
// they are.
func TestAuditTargetCopiesJobAndPlanIDs(t *testing.T) {
	p := Page{Rows: []Row{
		{ID: 1, At: time.Now(), Action: "replay.start", Target: "replay/job_3ff4dfa07012f662", Outcome: "ok"},
		{ID: 2, At: time.Now(), Action: "replay.plan", Target: "replay-plan/plan_616af88882a7cdc7", Outcome: "ok"},
		{ID: 3, At: time.Now(), Action: "outbox.requeue", Target: "outbox/orders", Outcome: "ok"},
		{ID: 4, At: time.Now(), Action: "POST /replays/:id/cancel", Target: "/replays/job_b00a8bb809ba4724/cancel", Outcome: "denied"},
	}}
	doc, _ := viewtest.Render(t, List(p))
	cells := doc.Find(`[data-testid="audit-target"]`)
	for i, want := range []string{"job_3ff4dfa07012f662", "plan_616af88882a7cdc7", "", ""} {
		got, _ := cells.Eq(i).Find("[data-copy]").Attr("data-copy")
		if got != want {
			t.Errorf("target %q copies %q, want %q", p.Rows[i].Target, got, want)
		}
	}
	if got := strings.TrimSpace(cells.Eq(2).Text()); got != "outbox/orders" {
		t.Errorf("target shown as %q", got)
	}
}

// An audit row never reads "anonymous ()", and a refused start does not offer the id of a job
// that was never made as one to look up (issue 37, item 12).
func TestAuditRowWords(t *testing.T) {
	for _, tc := range []struct{ actor, role, want string }{
		{"anonymous", "", ""}, {"anonymous", "none", "not signed in"}, {"otto", "operator", "operator"}, {"anonymous", "admin", "admin"},
	} {
		if got := roleText(tc.actor, tc.role); got != tc.want {
			t.Errorf("%s (%q): %q, want %q", tc.actor, tc.role, got, tc.want)
		}
	}
	if !neverMade("replay.start", "denied") || !neverMade("replay.start", "failed") || neverMade("replay.start", "ok") || neverMade("replay.cancel", "failed") {
		t.Error("neverMade")
	}
}
