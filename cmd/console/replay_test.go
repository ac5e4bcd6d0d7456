package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/cmd/internal/demo"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
)

// kafkaConsole is a console over the demo's Kafka data (a Spring-style DLT) and outbox + inbox.
func kafkaConsole(t *testing.T) string {
	t.Helper()
	base, _ := kafkaConsoleAt(t)
	return base
}

// kafkaConsoleAt is kafkaConsole that also gives the broker's address.
func kafkaConsoleAt(t *testing.T) (base, broker string) {
	t.Helper()
	return kafkaConsoleOn(t, pgtest.NewDatabase(t))
}

// kafkaConsoleOn is kafkaConsoleAt over the store storeDSN, which the test may read and change.
func kafkaConsoleOn(t *testing.T, storeDSN string) (base, broker string) {
	t.Helper()
	k := startKafka(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := demo.SeedKafka(ctx, k.Addrs()); err != nil {
		t.Fatal(err)
	}
	orders := seededOutbox(t)
	return startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q}]
kafka: [{name: main, brokers: [%q]}]
consumers:
  - name: inventory-service
    inbox: {dsn: %q}
    kafka: {cluster: main, group: inventory-service, topics: [orders]}
`, storeDSN, orders, k.Addrs()[0], orders)), k.Addrs()[0]
}

func TestReplayAPI(t *testing.T) {
	base := kafkaConsole(t)
	plan := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json",
		`{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","partition":2,"from_offset":0,"to_offset":29}}`)
	p := decode[struct {
		PlanID  string         `json:"plan_id"`
		Total   int            `json:"total"`
		Actions map[string]int `json:"actions"`
		Items   []struct {
			Locator     string `json:"locator"`
			MessageID   string `json:"message_id"`
			Destination string `json:"destination"`
			Inbox       string `json:"inbox"`
			Action      string `json:"action"`
		} `json:"items"`
	}](t, plan)
	if plan.status != 200 || p.Total != 30 || len(p.Items) != 30 {
		t.Fatalf("plan: %d %s", plan.status, plan.body)
	}
	for _, k := range []string{"publish", "skip_processed", "skip_in_progress", "skip_already_replayed", "skip_replay_limit", "skip_unresolvable"} {
		if _, ok := p.Actions[k]; !ok {
			t.Errorf("actions lack %q", k)
		}
	}
	if p.Actions["skip_processed"] == 0 || p.Actions["publish"] == 0 {
		t.Errorf("the demo inbox should make a mix: %v", p.Actions)
	}
	it := p.Items[0]
	if it.Locator == "" || it.MessageID == "" || !strings.Contains(it.Destination, "orders") || it.Inbox == "" || it.Action == "" {
		t.Errorf("item %+v", it)
	}

	// Explicit records; a record that does not exist is a 400 naming it.
	picked := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json",
		`{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":[{"partition":2,"offset":7},{"partition":0,"offset":1}]}}`)
	if pp := decode[struct{ Total int }](t, picked); picked.status != 200 || pp.Total != 2 {
		t.Fatalf("plan of records: %d %s", picked.status, picked.body)
	}
	missing := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json",
		`{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":[{"partition":0,"offset":99999}]}}`)
	if missing.status != 400 || !strings.Contains(missing.body, "0:99999 does not exist") {
		t.Fatalf("plan of a missing record: %d %s", missing.status, missing.body)
	}

	start := do(t, nil, "POST", base+"/api/v1/replays", "application/json", fmt.Sprintf(`{"plan_id":%q,"rate_per_second":500,"reason":"e2e"}`, p.PlanID))
	j := decode[struct{ ID, Status string }](t, start)
	if start.status != 200 || j.ID == "" || j.Status == "" {
		t.Fatalf("start: %d %s", start.status, start.body)
	}
	if final := waitReplay(t, base, j.ID, 30*time.Second); final.Status != replay.JobDone {
		t.Fatalf("job %+v", final)
	}
	job := decode[map[string]any](t, do(t, nil, "GET", base+"/api/v1/replays/"+j.ID, "", ""))
	for _, k := range []string{"id", "status", "total", "published", "skipped", "failed", "actor", "reason", "created_at", "finished_at"} {
		if _, ok := job[k]; !ok {
			t.Errorf("job lacks %q: %v", k, job)
		}
	}
	if job["published"].(float64) != float64(p.Actions["publish"]) {
		t.Errorf("published %v, planned %d", job["published"], p.Actions["publish"])
	}
	list := decode[struct{ Replays []map[string]any }](t, do(t, nil, "GET", base+"/api/v1/replays", "", ""))
	if len(list.Replays) != 1 {
		t.Errorf("jobs list %v", list)
	}
	if r := do(t, nil, "POST", base+"/api/v1/replays/"+j.ID+"/cancel", "application/json", ""); r.status != 409 {
		t.Errorf("cancel of a finished job: %d %s", r.status, r.body)
	}
	audit := do(t, nil, "GET", base+"/api/v1/audit?action=replay.start", "", "")
	if !strings.Contains(audit.body, j.ID) {
		t.Errorf("replay not audited: %s", audit.body)
	}

	bad := []struct{ path, body, mention string }{
		{"/api/v1/replays/plan", `{"source":{"kind":"sqs"}}`, "source.kind"},
		{"/api/v1/replays/plan", `{"source":{"kind":"kafka","cluster":"nope","topic":"x"}}`, "nope"},
		{"/api/v1/replays/plan", `{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","partition":7}}`, "partition"},
		{"/api/v1/replays/plan", `{"source":{"kind":"outbox","outbox":"orders"}}`, "ids"},
		{"/api/v1/replays", `{"plan_id":"plan_missing","reason":"x"}`, "plan_missing"},
		{"/api/v1/replays", `{"plan_id":"` + p.PlanID + `","rate_per_second":-1,"reason":"x"}`, "rate_per_second"},
		{"/api/v1/replays", `{"plan_id":"` + p.PlanID + `"}`, "reason: required: say why these messages move"},
		{"/api/v1/replays", `{"plan_id":"` + p.PlanID + `","force":true}`, "reason"},
	}
	for _, b := range bad {
		r := do(t, nil, "POST", base+b.path, "application/json", b.body)
		if r.status < 400 || r.status >= 500 || !strings.Contains(r.body, b.mention) {
			t.Errorf("%s %s: %d %s", b.path, b.body, r.status, r.body)
		}
	}
	if r := do(t, nil, "GET", base+"/api/v1/replays/job_nope", "", ""); r.status != 404 {
		t.Errorf("unknown job: %d", r.status)
	}
}

// A person plans a replay from the DLT page, runs it, and watches the progress bar reach done.
func TestBrowserPlanRunProgress(t *testing.T) {
	base := kafkaConsole(t)
	ctx, dialogs := newBrowser(t)
	// A new user starts at the overview: the DLT is listed as a problem, linking to its errors.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(`[data-testid="problems"]`)); err != nil {
		t.Fatal(err)
	}
	problems := must(t, ctx, chromedp.Text(`[data-testid="problems"]`))
	if !strings.Contains(problems, "orders.DLT") {
		t.Fatalf("the overview does not list the DLT: %q", problems)
	}
	screenshot(t, ctx, "overview")
	if err := chromedp.Do(ctx,
		chromedp.Click(`[data-testid="problem"] a[href*="orders.DLT"]`),
		chromedp.WaitVisible(`[data-testid="error-groups"]`),
		chromedp.Navigate(base+"/kafka/main/topics/orders.DLT?partition=1"),
		chromedp.WaitVisible(`[data-testid="records-table"]`),
		chromedp.Click(chromedp.CSS(`[data-testid="expand-record"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="record"]`)),
	); err != nil {
		t.Fatal(err)
	}
	exception := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="dl-exception"]`)))
	if !strings.Contains(exception, "Exception") {
		t.Fatalf("decoded exception %q", exception)
	}
	screenshot(t, ctx, "kafka-dlt")
	if err := chromedp.Do(ctx,
		chromedp.Click(`[data-testid="plan-partition"] button`),
		chromedp.WaitVisible(`[data-testid="plan-counts"]`),
	); err != nil {
		t.Fatal(err)
	}
	publish := must(t, ctx, chromedp.Text(`[data-testid="count-publish"] [data-testid="stat-value"]`))
	screenshot(t, ctx, "replay-plan")
	if err := chromedp.Do(ctx,
		chromedp.SetValue(`[data-testid="run-form"] input[name="reason"]`, "fixed the stock service"),
		chromedp.Click(`[data-testid="run"]`),
		chromedp.WaitVisible(`[data-testid="job-progress"][data-status="done"]`),
	); err != nil {
		t.Fatal(err)
	}
	published := must(t, ctx, chromedp.Text(`[data-testid="job-progress"] .stat-value`))
	screenshot(t, ctx, "replay-job")
	if published != publish || dialogs.Load() != 1 {
		t.Fatalf("published %q of %q planned; %d dialogs (want the one confirmation)", published, publish, dialogs.Load())
	}
	// …and the audit log shows who did it.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/audit"), chromedp.WaitVisible(`[data-testid="audit-table"]`)); err != nil {
		t.Fatal(err)
	}
	if audit := must(t, ctx, chromedp.Text(`[data-testid="audit-table"]`)); !strings.Contains(audit, "replay.start") || !strings.Contains(audit, "fixed the stock service") {
		t.Fatalf("audit page: %q", audit)
	}
	screenshot(t, ctx, "audit")
	// The replays list: source → destination, who, when, outcome.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/replays"), chromedp.WaitVisible(`[data-testid="jobs-table"]`)); err != nil {
		t.Fatal(err)
	}
	if jobs := must(t, ctx, chromedp.Text(`[data-testid="jobs-table"]`)); !strings.Contains(jobs, "orders.DLT") {
		t.Errorf("the replays list: %q", jobs)
	}
	screenshot(t, ctx, "replays")

	// Ticking two records of the DLT and planning "selected" freezes exactly those two.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/kafka/main/topics/orders.DLT?partition=1&order=oldest"),
		chromedp.WaitVisible(`[data-testid="select-record"]`),
	); err != nil {
		t.Fatal(err)
	}
	ticked := must(t, ctx, chromedp.Evaluate[[]string](`(() => {
		const boxes = [...document.querySelectorAll('[data-testid="select-record"]')];
		boxes.slice(0, 2).forEach(b => { b.click(); });
		return boxes.filter(b => b.checked).map(b => b.value); })()`))
	header, locators := planSelected(t, ctx)
	if len(ticked) != 2 || !strings.Contains(header, "2 selected record(s)") ||
		!strings.Contains(locators, "orders.DLT@") || // the locator names the topic by its ID too
		!strings.Contains(locators, "/"+strings.ReplaceAll(ticked[1], ":", "/")+"\n") && !strings.HasSuffix(locators, "/"+strings.ReplaceAll(ticked[1], ":", "/")) {
		t.Fatalf("ticked %v; plan header %q; items %q", ticked, header, locators)
	}
}
