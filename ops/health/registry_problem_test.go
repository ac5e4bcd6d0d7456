package health

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/paths/links"
)

// A registry's problem names the attention states that hold rows and links the first of them,
// and says why they wait and what to do (the registry's note): with only STRANDED publications
// (which nothing re-runs), it said "FAILED/STRANDED/STALE", linked the empty FAILED list and
// told only that the console writes nothing.
func TestRegistryProblemNamesItsStates(t *testing.T) {
	const note = "2 publications have no status: nothing re-runs them; set STATUS='FAILED' and resubmit."
	st := outbox.Stats{Format: &outbox.FormatSpringModulith, Attention: 2,
		Counts:  map[outbox.Status]int64{outbox.ModulithStranded: 2, "COMPLETED": 10},
		Records: &outbox.RecordStats{Note: note}}
	got := OutboxProblems("billing", st, 0, nil, 0, now)
	if len(got) != 1 {
		t.Fatalf("problems %+v", got)
	}
	p := got[0]
	if !strings.Contains(p.Title, "2 STRANDED row(s)") || strings.Contains(p.Title, "FAILED") ||
		!strings.HasPrefix(p.Summary, note) || !strings.Contains(links.To(p.Page, p.Labels), "status=STRANDED") {
		t.Errorf("problem: title %q, summary %q, link %q", p.Title, p.Summary, links.To(p.Page, p.Labels))
	}
}
