package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/views/layout"
)

// replayFixture is an engine and store views holding canned plans and jobs: what the handlers
// present is under test here, not what the engine decides (ops/replay tests that).
type replayFixture struct {
	plans  map[string]replay.Plan
	jobs   []replay.Job // newest first
	fails  map[string][]replay.FailureGroup
	routes map[string]replay.PlanRoute
	ledger []replay.LedgerEntry
	// viewsDown makes every ReplayViews call fail as a store that went away.
	viewsDown bool
}

// ReplayedCopies: the fixture's jobs hold no RabbitMQ dead letters.
func (f *replayFixture) ReplayedCopies(context.Context, string, string, string, []rabbitmodel.Message) (map[int]string, error) {
	return nil, nil
}

func (f *replayFixture) Plan(context.Context, string, replay.Source, replay.Filter) (replay.Plan, error) {
	return replay.Plan{}, ops.ErrUnavailable
}

func (f *replayFixture) StartPlanFor(context.Context, replay.PlanRequest) (*replay.Planning, error) {
	return nil, ops.ErrUnavailable
}

func (f *replayFixture) AwaitPlan(context.Context, *replay.Planning, time.Duration) (replay.Plan, bool, error) {
	return replay.Plan{}, true, ops.ErrUnavailable
}

func (f *replayFixture) PlanWait(int) time.Duration { return 0 }

func (f *replayFixture) CancelPlan(context.Context, string, access.Actor) (replay.Plan, error) {
	return replay.Plan{}, ops.ErrConflict
}

func (f *replayFixture) LoadPlan(_ context.Context, id string) (replay.Plan, error) {
	if p, ok := f.plans[id]; ok {
		return p, nil
	}
	return replay.Plan{}, fmt.Errorf("replay plan %q: %w", id, ops.ErrNotFound)
}

func (f *replayFixture) Start(context.Context, replay.StartRequest) (replay.Job, error) {
	return replay.Job{}, ops.ErrUnavailable
}

func (f *replayFixture) Job(_ context.Context, id string) (replay.Job, error) {
	for _, j := range f.jobs {
		if j.ID == id {
			return j, nil
		}
	}
	return replay.Job{}, fmt.Errorf("replay job %q: %w", id, ops.ErrNotFound)
}

func (f *replayFixture) Jobs(context.Context, int) ([]replay.Job, error) { return f.jobs, nil }

func (f *replayFixture) Ledger(context.Context, string, int) ([]replay.LedgerEntry, error) {
	return f.ledger, nil
}

func (f *replayFixture) Cancel(context.Context, string, access.Actor) (replay.Job, error) {
	return replay.Job{}, ops.ErrConflict
}

func (f *replayFixture) Approve(context.Context, string, access.Actor) (replay.Job, error) {
	return replay.Job{}, ops.ErrConflict
}

// StartRefused lets anyone start anything: the engine's rule is ops/replay's to test.
func (f *replayFixture) StartRefused(replay.Plan, access.Actor, bool) error { return nil }

// ApproveRefused is the engine's rule for the job alone, without the plan's size.
func (f *replayFixture) ApproveRefused(_ context.Context, job replay.Job, approver access.Actor) error {
	if job.Status != replay.JobAwaiting {
		return ops.ErrConflict
	}
	return foureyes.ApproveRefused(job.StartedBy(), approver, "started this replay")
}

func (f *replayFixture) JobsOfPlan(_ context.Context, planID string) ([]replay.Job, error) {
	if f.viewsDown {
		return nil, fmt.Errorf("jobs of plan: %w", ops.ErrUnavailable)
	}
	var out []replay.Job
	for _, j := range f.jobs {
		if j.PlanID == planID {
			out = append(out, j)
		}
	}
	return out, nil
}

func (f *replayFixture) FailureGroups(_ context.Context, jobID string, limit int) ([]replay.FailureGroup, error) {
	if f.viewsDown {
		return nil, fmt.Errorf("failure groups: %w", ops.ErrUnavailable)
	}
	g := f.fails[jobID]
	return g[:min(limit, len(g))], nil
}

func (f *replayFixture) PlanRoutes(_ context.Context, ids []string, _ int) (map[string]replay.PlanRoute, error) {
	if f.viewsDown {
		return nil, fmt.Errorf("plan routes: %w", ops.ErrUnavailable)
	}
	out := map[string]replay.PlanRoute{}
	for _, id := range ids {
		if r, ok := f.routes[id]; ok {
			out[id] = r
		}
	}
	return out, nil
}

func at(min int) *time.Time {
	t := time.Date(2026, 12, 1, 9, min, 0, 0, time.UTC)
	return &t
}

// newReplayFixture is one Kafka plan (items to partition 2 by header, 0 by key, any) that ran
// twice: job_first published 2 and job_again, its second run, skipped those and failed 3 for two
// reasons; plus a running job of another plan, paused.
func newReplayFixture() *replayFixture {
	kafka := func(p int32, src string) replay.Destination {
		return replay.Destination{Kind: "kafka", Cluster: "main", Topic: "orders", Partition: p, PartitionSource: src}
	}
	plan := replay.Plan{ID: "plan_k", CreatedAt: *at(0), Actor: "ana", Total: 5,
		Source: replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"},
		Counts: map[replay.Action]int{replay.Publish: 5}, ErrorGroups: map[string]map[replay.Action]int{},
		Items: []replay.Item{
			{Seq: 0, Locator: "kafka:main/orders.DLT/2/7", MessageID: "m0", Destination: kafka(2, replay.PartitionFromHeader), Action: replay.Publish},
			{Seq: 1, Locator: "kafka:main/orders.DLT/0/1", MessageID: "m1", Destination: kafka(0, replay.PartitionFromKey), Action: replay.Publish},
			{Seq: 2, Locator: "kafka:main/orders.DLT/1/3", MessageID: "m2", Destination: kafka(-1, replay.PartitionFromKey), Action: replay.Publish},
			{Seq: 3, Locator: "rabbitmq:main/%2F/orders.dlq/x", MessageID: "m3",
				Destination: replay.Destination{Kind: "rabbitmq", Broker: "main", Vhost: "/", Exchange: "orders", RoutingKey: "created"}, Action: replay.Publish},
		}}
	src, _ := json.Marshal(plan.Source)
	dest, _ := json.Marshal(replay.Destination{Kind: "kafka", Cluster: "main", Topic: "orders"})
	return &replayFixture{
		plans: map[string]replay.Plan{"plan_k": plan},
		jobs: []replay.Job{
			{ID: "job_paused", PlanID: "plan_other", Status: replay.JobRunning, Actor: "bo", Total: 100, Published: 40,
				CreatedAt: *at(9), StartedAt: at(9), Paused: "the store is unreachable: connection refused"},
			{ID: "job_again", PlanID: "plan_k", Status: replay.JobDone, Actor: "ana", Total: 5, Skipped: 2, Failed: 3,
				CreatedAt: *at(5), StartedAt: at(5), FinishedAt: at(7)},
			{ID: "job_first", PlanID: "plan_k", Status: replay.JobDone, Actor: "ana", Total: 5, Published: 2, Skipped: 3,
				CreatedAt: *at(1), StartedAt: at(1), FinishedAt: at(2)},
		},
		fails:  map[string][]replay.FailureGroup{"job_again": {{Detail: "not found in the topic", Count: 2}, {Detail: "NOT_LEADER_FOR_PARTITION", Count: 1}}},
		routes: map[string]replay.PlanRoute{"plan_k": {Source: src, Destinations: []json.RawMessage{dest}}},
	}
}

func newReplayHandlers(f *replayFixture) *Replays {
	return NewReplays(f, f, func(_ echo.Context, title, section string) layout.Meta {
		return layout.Meta{Title: title, Section: section, CanOperate: true}
	})
}

// call runs one handler on a GET of target with path parameter id.
func call(t *testing.T, h echo.HandlerFunc, target, id string) *httptest.ResponseRecorder {
	t.Helper()
	rec, err := callAPI(t, h, target, []string{"id"}, id)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d", target, rec.Code)
	}
	return rec
}

func page(t *testing.T, rec *httptest.ResponseRecorder) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func text(doc *goquery.Document, sel string) string {
	return strings.Join(strings.Fields(doc.Find(sel).Text()), " ")
}

// Every Kafka item carries its partition and where it comes from — partition 0 included — and
// other kinds carry neither.
func TestPlanDestinationDetail(t *testing.T) {
	f := newReplayFixture()
	rec := call(t, newReplayHandlers(f).APIPlanGet, "/api/v1/replays/plans/plan_k", "plan_k")
	var got struct {
		Items []struct {
			Detail map[string]any `json:"destination_detail"`
		} `json:"items"`
		Jobs []map[string]any `json:"jobs"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got.Items) != 4 {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	for i, want := range []struct {
		partition any
		source    any
	}{{2.0, "header"}, {0.0, "key"}, {-1.0, "key"}, {nil, nil}} {
		d := got.Items[i].Detail
		if d["partition"] != want.partition || d["partition_source"] != want.source {
			t.Errorf("item %d: partition %v (%v), want %v (%v)", i, d["partition"], d["partition_source"], want.partition, want.source)
		}
		if _, has := d["partition"]; has != (want.partition != nil) {
			t.Errorf("item %d: partition present %v: %v", i, has, d)
		}
	}
	if d := got.Items[3].Detail; d["kind"] != "rabbitmq" || d["exchange"] != "orders" || d["routing_key"] != "created" {
		t.Errorf("rabbitmq detail %v", d)
	}
	t.Run("Jobs", func(t *testing.T) {
		if len(got.Jobs) != 2 || got.Jobs[0]["id"] != "job_again" || got.Jobs[1]["id"] != "job_first" {
			t.Fatalf("jobs %v, want job_again then job_first", got.Jobs)
		}
		if j := got.Jobs[0]; j["outcome"] != "done_with_failures" || j["failed"] != 3.0 || j["skipped"] != 2.0 || j["status"] != "done" {
			t.Errorf("job_again %v", j)
		}
		if got.Jobs[1]["outcome"] != "done" {
			t.Errorf("job_first %v", got.Jobs[1])
		}
	})
	t.Run("NeverRan", func(t *testing.T) {
		j := toPlanJSON(f.plans["plan_k"])
		b, _ := json.Marshal(j)
		if !strings.Contains(string(b), `"jobs":[]`) {
			t.Errorf("a new plan's jobs: %s", b)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		if _, err := callAPI(t, newReplayHandlers(f).APIPlanGet, "/x", []string{"id"}, "plan_nope"); err == nil || !strings.Contains(err.Error(), "plan_nope") {
			t.Errorf("unknown plan: %v", err)
		}
	})
}

// A plan that ran says so at the top, links its jobs newest first, and offers "Run again"
// explaining what a second run does.
func TestPlanPageThatRan(t *testing.T) {
	f := newReplayFixture()
	doc := page(t, call(t, newReplayHandlers(f).PlanPage, "/replays/plans/plan_k", "plan_k"))
	ran := text(doc, `[data-testid="plan-ran"]`)
	if want := "This plan ran as job job_again (done with failures: 0 published, 2 skipped, 3 failed), and 1 time(s) before"; !strings.Contains(ran, want) {
		t.Errorf("ran sentence %q, want %q", ran, want)
	}
	if href, _ := doc.Find(`[data-testid="plan-ran-job"]`).Attr("href"); href != "/replays/job_again" {
		t.Errorf("ran link %q", href)
	}
	var jobs []string
	doc.Find(`[data-testid="plan-job"] a`).Each(func(_ int, s *goquery.Selection) { jobs = append(jobs, s.Text()) })
	if fmt.Sprint(jobs) != "[job_again job_first]" {
		t.Errorf("jobs of the plan %v", jobs)
	}
	if c, _ := doc.Find(`[data-testid="plan-job"]`).First().Attr("class"); !strings.Contains(c, "row-warn") {
		t.Errorf("a job with failures is not marked: class %q", c)
	}
	if run := text(doc, `[data-testid="run"]`); run != "Run again" {
		t.Errorf("run button %q", run)
	}
	// job_again published nothing: the note names job_first, whose publishes a second run skips.
	if note := text(doc, `[data-testid="run-again-note"]`); !strings.Contains(note, "The 2 that job job_first published are skipped as skip_already_replayed") {
		t.Errorf("run again note %q", note)
	}
	var parts []string
	doc.Find(`[data-testid="item-partition"]`).Each(func(_ int, s *goquery.Selection) { parts = append(parts, s.Text()) })
	want := []string{"partition 2 (from the dead-letter header)", "partition 0 (by key)", "any partition (no key)"}
	if fmt.Sprint(parts) != fmt.Sprint(want) {
		t.Errorf("partitions %q, want %q", parts, want)
	}

	t.Run("NeverRan", func(t *testing.T) {
		f := newReplayFixture()
		f.jobs = nil
		doc := page(t, call(t, newReplayHandlers(f).PlanPage, "/replays/plans/plan_k", "plan_k"))
		if doc.Find(`[data-testid="plan-ran"]`).Length() != 0 || text(doc, `[data-testid="run"]`) != "Run replay" ||
			doc.Find(`[data-testid="plan-jobs"]`).Length() != 0 {
			t.Errorf("a plan that never ran: ran %q, button %q", text(doc, `[data-testid="plan-ran"]`), text(doc, `[data-testid="run"]`))
		}
	})
	t.Run("StoreDown", func(t *testing.T) {
		f := newReplayFixture()
		f.viewsDown = true
		doc := page(t, call(t, newReplayHandlers(f).PlanPage, "/replays/plans/plan_k", "plan_k"))
		if e := text(doc, `[data-testid="plan-jobs-error"]`); !strings.Contains(e, "could not be read") ||
			doc.Find(`[data-testid="plan-item"]`).Length() != 4 {
			t.Errorf("jobs error %q; items %d", e, doc.Find(`[data-testid="plan-item"]`).Length())
		}
	})
}

// A discard job archives and acks: its pages never say it published or name the original
// destination as where its messages went.
func TestDiscardJobPages(t *testing.T) {
	f := newReplayFixture()
	src := replay.Source{Kind: "rabbitmq", Broker: "main", Vhost: "/", Queue: "audit.dlq", Limit: 100, Action: replay.ActionDiscard}
	f.plans["plan_d"] = replay.Plan{ID: "plan_d", CreatedAt: *at(0), Actor: "ana", Total: 3, Source: src,
		Counts: map[replay.Action]int{replay.Discard: 3}, ErrorGroups: map[string]map[replay.Action]int{},
		Items: []replay.Item{{Seq: 0, Locator: "discard:rabbitmq:main///audit.dlq/a-0#0", MessageID: "a-0", Action: replay.Discard,
			Destination: replay.Destination{Kind: "rabbitmq", Broker: "main", Vhost: "/", Exchange: "orders", RoutingKey: "audit.recorded"}}}}
	f.jobs = append([]replay.Job{{ID: "job_d", PlanID: "plan_d", Status: replay.JobDone, Actor: "ana", Total: 3, Published: 3,
		CreatedAt: *at(3), StartedAt: at(3), FinishedAt: at(4)}}, f.jobs...)
	raw, _ := json.Marshal(src)
	dest, _ := json.Marshal(f.plans["plan_d"].Items[0].Destination)
	f.routes["plan_d"] = replay.PlanRoute{Source: raw, Destinations: []json.RawMessage{dest}}
	f.ledger = []replay.LedgerEntry{{Seq: 0, Locator: "discard:rabbitmq:main///audit.dlq/a-0#0", MessageID: "a-0",
		Outcome: replay.LedgerPublished, Detail: "archived, then acked from the queue", At: *at(4)}}
	h := newReplayHandlers(f)

	job := page(t, call(t, h.JobPage, "/replays/job_d", "job_d"))
	if got := text(job, "h1"); got != "Discard job_d" {
		t.Errorf("job heading %q", got)
	}
	if got := text(job, `[data-testid="job-destination"]`); got != "the archive, then acked from the queue" {
		t.Errorf("job destination %q", got)
	}
	if got := text(job, ".stats"); !strings.Contains(got, "Archived3") || strings.Contains(got, "Published") {
		t.Errorf("job counts %q: a discard archived, it published nothing", got)
	}
	if got := text(job, `[data-testid="ledger-row"] .badge`); got != "archived" {
		t.Errorf("ledger outcome %q", got)
	}

	list := page(t, call(t, h.Index, "/replays", ""))
	row := list.Find(`[data-testid="job-row"]`).First()
	if got := strings.Join(strings.Fields(row.Find(`[data-testid="job-published"]`).Text()), " "); got != "3 archived" {
		t.Errorf("list count %q", got)
	}
	if got := strings.Join(strings.Fields(row.Find(`[data-testid="job-route"]`).Text()), " "); strings.Contains(got, "orders") ||
		!strings.Contains(got, "→ the archive") {
		t.Errorf("list route %q: a discard goes to the archive", got)
	}

	plan := page(t, call(t, h.PlanPage, "/replays/plans/plan_d", "plan_d"))
	if got := text(plan, "h1"); got != "Discard plan" {
		t.Errorf("plan heading %q", got)
	}
	if got := text(plan, `[data-testid="plan-ran"]`); !strings.Contains(got, "3 archived, 0 skipped") {
		t.Errorf("plan ran %q", got)
	}
	if got := text(plan, `[data-testid="run-again-note"]`); !strings.Contains(got, "The 3 that job job_d archived are skipped") ||
		strings.Contains(got, "inbox") {
		t.Errorf("run again note %q", got)
	}
	if got := text(plan, `[data-testid="plan-jobs"] thead`); !strings.Contains(got, "Archived") || strings.Contains(got, "Published") {
		t.Errorf("jobs of the plan header %q", got)
	}
	if got := text(plan, `[data-testid="plan-items"] thead`); !strings.Contains(got, "Original destination") {
		t.Errorf("items header %q: a discard sends nothing to the destination it shows", got)
	}
}

// A finished job with failures is amber, not a green done, and lists its failures by reason.
func TestJobPageWithFailures(t *testing.T) {
	f := newReplayFixture()
	doc := page(t, call(t, newReplayHandlers(f).JobPage, "/replays/job_again", "job_again"))
	progress := doc.Find(`[data-testid="job-progress"]`)
	if o, _ := progress.Attr("data-outcome"); o != "done_with_failures" || !progress.HasClass("job-outcome-done_with_failures") {
		t.Errorf("progress outcome %q class %q", o, progress.AttrOr("class", ""))
	}
	badge := progress.Find(`[data-testid="status-badge"]`)
	if !badge.HasClass("tone-warn") || badge.HasClass("tone-ok") || strings.TrimSpace(badge.Text()) != "done with failures" {
		t.Errorf("badge %q class %q", badge.Text(), badge.AttrOr("class", ""))
	}
	var groups []string
	doc.Find(`[data-testid="failure-group"]`).Each(func(_ int, s *goquery.Selection) {
		groups = append(groups, strings.TrimSpace(s.Find(`[data-testid="failure-count"]`).Text())+" "+strings.TrimSpace(s.Find(`[data-testid="failure-detail"]`).Text()))
	})
	if want := "[2 not found in the topic 1 NOT_LEADER_FOR_PARTITION]"; fmt.Sprint(groups) != want {
		t.Errorf("failure groups %v, want %s", groups, want)
	}
	if src := text(doc, `[data-testid="job-source"]`); src != "Kafka main, topic orders.DLT" {
		t.Errorf("source %q", src)
	}
	if dst := text(doc, `[data-testid="job-destination"]`); dst != "kafka main → orders" {
		t.Errorf("destination %q", dst)
	}
	if d := text(doc, `[data-testid="job-duration"]`); d != "2 min" {
		t.Errorf("duration %q", d)
	}

	t.Run("Done", func(t *testing.T) {
		doc := page(t, call(t, newReplayHandlers(f).JobPage, "/replays/job_first", "job_first"))
		badge := doc.Find(`[data-testid="job-progress"] [data-testid="status-badge"]`)
		if !badge.HasClass("tone-ok") || doc.Find(`[data-testid="failure-groups"]`).Length() != 0 {
			t.Errorf("a clean done: badge class %q, failure groups %d", badge.AttrOr("class", ""), doc.Find(`[data-testid="failure-groups"]`).Length())
		}
	})
	t.Run("Paused", func(t *testing.T) {
		doc := page(t, call(t, newReplayHandlers(f).JobPage, "/replays/job_paused", "job_paused"))
		want := "Paused: the store is unreachable: connection refused — it resumes by itself when that returns."
		if got := text(doc, `[data-testid="job-paused"]`); got != want {
			t.Errorf("paused %q, want %q", got, want)
		}
		if d := text(doc, `[data-testid="job-duration"]`); !strings.HasPrefix(d, "running for ") {
			t.Errorf("duration %q", d)
		}
	})
	t.Run("StoreDown", func(t *testing.T) {
		f := newReplayFixture()
		f.viewsDown = true
		doc := page(t, call(t, newReplayHandlers(f).JobPage, "/replays/job_again", "job_again"))
		if e := text(doc, `[data-testid="error-panel"]`); !strings.Contains(e, "could not be grouped") {
			t.Errorf("failure groups error %q", e)
		}
	})
}

func TestJobAPIOutcome(t *testing.T) {
	f := newReplayFixture()
	h := newReplayHandlers(f)
	get := func(id string) map[string]any {
		var j map[string]any
		rec := call(t, h.APIJob, "/api/v1/replays/"+id, id)
		if err := json.Unmarshal(rec.Body.Bytes(), &j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	again := get("job_again")
	if again["outcome"] != "done_with_failures" || again["status"] != "done" {
		t.Errorf("job_again %v", again)
	}
	groups, _ := json.Marshal(again["failure_groups"])
	if want := `[{"count":2,"detail":"not found in the topic"},{"count":1,"detail":"NOT_LEADER_FOR_PARTITION"}]`; string(groups) != want {
		t.Errorf("failure groups %s, want %s", groups, want)
	}
	if _, has := again["paused"]; has {
		t.Errorf("paused on a finished job: %v", again)
	}
	first := get("job_first")
	if _, has := first["failure_groups"]; has || first["outcome"] != "done" {
		t.Errorf("job_first %v", first)
	}
	if p := get("job_paused"); p["paused"] != "the store is unreachable: connection refused" || p["outcome"] != "running" {
		t.Errorf("job_paused %v", p)
	}
}

// The replays list: a done job with failures is amber, every job says where it reads and writes and
// how long it took.
func TestReplaysListOutcomes(t *testing.T) {
	f := newReplayFixture()
	rec, err := callAPI(t, newReplayHandlers(f).Index, "/replays", nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := page(t, rec)
	rows := doc.Find(`[data-testid="job-row"]`)
	if rows.Length() != 3 {
		t.Fatalf("%d rows", rows.Length())
	}
	byID := map[string]*goquery.Selection{}
	rows.Each(func(_ int, s *goquery.Selection) { byID[strings.TrimSpace(s.Find("a").First().Text())] = s })
	again, first, paused := byID["job_again"], byID["job_first"], byID["job_paused"]
	if !again.HasClass("row-warn") || !again.Find(`[data-testid="status-badge"]`).HasClass("tone-warn") {
		t.Errorf("job_again row class %q badge %q", again.AttrOr("class", ""), again.Find(`[data-testid="status-badge"]`).AttrOr("class", ""))
	}
	if first.HasClass("row-warn") || !first.Find(`[data-testid="status-badge"]`).HasClass("tone-ok") {
		t.Errorf("job_first row class %q", first.AttrOr("class", ""))
	}
	if r := again.Find(`[data-testid="job-route"] div`).Map(func(_ int, s *goquery.Selection) string { return s.Text() }); fmt.Sprint(r) != "[Kafka main, topic orders.DLT → kafka main → orders]" {
		t.Errorf("route %q", r)
	}
	if d := strings.TrimSpace(again.Find(`[data-testid="job-duration"]`).Text()); d != "2 min" {
		t.Errorf("duration %q", d)
	}
	if !strings.Contains(paused.Text(), "paused") || !strings.HasPrefix(strings.TrimSpace(paused.Find(`[data-testid="job-duration"]`).Text()), "running for") {
		t.Errorf("paused row %q", strings.Join(strings.Fields(paused.Text()), " "))
	}
	if r := strings.TrimSpace(paused.Find(`[data-testid="job-route"]`).Text()); r != "—" {
		t.Errorf("a plan without a route: %q", r)
	}
}
