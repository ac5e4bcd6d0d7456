package handlers

import (
	"encoding/json"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/views/components"
)

// An edit and retry's diff keeps each header it sets or drops whole, before and after: a dead
// letter's dropped x-exception-stacktrace of 900 KB showed whole in the plan's "before and after"
// table, and again on its job's page where a second person approves it. Each value is cut as a
// message's headers are (maxRenderedField), the table says what was cut and its full size, and
// links the plan in the API, which gives the diff whole.
func TestEditDiffHeadersAreCutForDisplay(t *testing.T) {
	const traceSize, noteSize = 900_000, 9_000
	trace := "<b>com.acme.OrderRejected</b>\n" + strings.Repeat("S", traceSize-len("<b>com.acme.OrderRejected</b>\n"))
	note := strings.Repeat("N", noteSize)
	f := newReplayFixture()
	src := replay.Source{Kind: "rabbitmq", Broker: "main", Vhost: "/", Queue: "orders.dlq", Edit: &replay.Edit{
		SetHeaders: map[string]string{"x-note": note}, DropHeaders: []string{"x-exception-stacktrace"},
		Diff: &replay.EditDiff{Headers: map[string][2]string{"x-exception-stacktrace": {trace, ""}, "x-note": {"", note}, "x-small": {"a", "b"}}}}}
	f.plans["plan_e"] = replay.Plan{ID: "plan_e", CreatedAt: *at(0), Actor: "ana", Total: 1, Source: src,
		Counts: map[replay.Action]int{replay.Publish: 1}}
	f.jobs = append(f.jobs, replay.Job{ID: "job_e", PlanID: "plan_e", Status: replay.JobAwaiting, Actor: "ana", Total: 1, CreatedAt: *at(1)})
	raw, _ := json.Marshal(src)
	f.routes["plan_e"] = replay.PlanRoute{Source: raw}
	h := newReplayHandlers(f)

	for _, p := range []struct {
		name string
		body string
	}{
		{"plan", call(t, h.PlanPage, "/replays/plans/plan_e", "plan_e").Body.String()},
		{"job", call(t, h.JobPage, "/replays/job_e", "job_e").Body.String()},
	} {
		t.Logf("%s page: %d bytes", p.name, len(p.body))
		if n := strings.Count(p.body, `data-testid="edit-header"`); n != 3 {
			t.Fatalf("%s page: %d header rows, want 3", p.name, n)
		}
		longest := 0
		for _, run := range regexp.MustCompile(`[SN]+`).FindAllString(p.body, -1) {
			longest = max(longest, len(run))
		}
		if longest > maxRenderedField || len(p.body) > 100_000 {
			t.Errorf("%s page: %d bytes, a header's longest run %d: want at most %d", p.name, len(p.body), longest, maxRenderedField)
		}
		for _, want := range []string{"Header cut for display: " + components.FormatNum(traceSize) + " bytes in full.",
			"Header cut for display: " + components.FormatNum(noteSize) + " bytes in full."} {
			if !strings.Contains(p.body, want) {
				t.Errorf("%s page does not say %q", p.name, want)
			}
		}
		if strings.Count(p.body, `data-testid="cut-note"`) != 2 {
			t.Errorf("%s page: %d cut notes, want 2 (x-small is whole)", p.name, strings.Count(p.body, `data-testid="cut-note"`))
		}
		if !strings.Contains(p.body, "&lt;b&gt;com.acme.OrderRejected&lt;/b&gt;") || strings.Contains(p.body, "<b>com.acme") {
			t.Errorf("%s page: the header is not escaped", p.name)
		}
		link := regexp.MustCompile(`data-testid="cut-note">[^<]*<a href="([^"]*)" data-testid="raw-plan"`).FindStringSubmatch(p.body)
		if link == nil || html.UnescapeString(link[1]) != "/api/v1/replays/plans/plan_e" {
			t.Errorf("%s page: raw link %v, want the plan in the API", p.name, link)
		}
	}

	// The raw link's answer: the diff whole.
	var got planJSON
	if err := json.Unmarshal(call(t, h.APIPlanGet, "/api/v1/replays/plans/plan_e", "plan_e").Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Edit == nil || got.Edit.Headers["x-exception-stacktrace"][0] != trace || got.Edit.Headers["x-note"][1] != note {
		t.Error("the plan in the API does not give the diff whole")
	}
}
