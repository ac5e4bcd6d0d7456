package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/ops/waittest"
)

// TestBrowserDLTPageTellsTheTruth (issue 37, items 1, 2, 5 and 9): the DLT page opens on every
// partition; with State = open its filter's scan, export and plan of the matches leave out a
// resolved record, as the records API with state=open does, and the scan's last words say what
// it read; a mistyped field says why nothing matched; a topic that is no dead-letter topic shows
// records, not open dead letters with error groups and plans.
func TestBrowserDLTPageTellsTheTruth(t *testing.T) {
	base := kafkaConsole(t)
	ctx, _ := newBrowser(t)
	dlt := base + "/kafka/main/topics/orders.DLT"

	// 9: no partition asked, every partition shown.
	act(t, ctx, chromedp.Navigate(dlt), chromedp.WaitVisible(`[data-testid="records-table"]`))
	if sel := must(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="partition-select"]').value`)); sel != "all" {
		t.Errorf("the DLT page opens on partition %q, not all", sel)
	}

	// 1: one of the 30 records below offset 10 resolved; the page's state is open.
	if r := do(t, nil, "POST", base+"/api/v1/kafka/main/topics/orders.DLT/resolutions", "application/json",
		`{"records":[{"partition":1,"offset":3}],"state":"resolved","reason":"fixed by hand"}`); r.status != http.StatusOK {
		t.Fatalf("resolve: %d %s", r.status, r.body)
	}
	const filter = `offset < 10`
	api := do(t, nil, "GET", base+"/api/v1/kafka/main/topics/orders.DLT/records?partition=all&state=open&limit=500&filter="+strings.ReplaceAll(filter, " ", "+"), "", "")
	if api.status != http.StatusOK || !strings.Contains(api.body, `"matched":29`) {
		t.Fatalf("the API with state=open: %d %.300s", api.status, api.body)
	}
	status := runSearch(t, ctx, filter, chromedp.Navigate(dlt), chromedp.WaitVisible(`[data-testid="filter-input"]`))
	rows := countOf(t, ctx, `[data-testid="scan-row"]`)
	if rows != 29 || !strings.Contains(status, "29 matched") {
		t.Errorf("the page's scan with State open: %d rows, %q (the API: 29)", rows, status)
	}
	if !strings.Contains(status, "every partition read to its end") {
		t.Errorf("the scan's last words do not say what it read: %q", status)
	}
	export := must(t, ctx, chromedp.Evaluate[string](`(document.querySelector('[data-testid="export-matches"]') || {}).href || ""`))
	if export == "" {
		t.Fatal("no export offered")
	}
	if r := do(t, nil, "GET", export, "", ""); r.status != http.StatusOK || strings.Count(strings.TrimSpace(r.body), "\n")+1 != 29 {
		t.Errorf("the export of the matches: %d %.200s, %d lines (want 29)", r.status, r.body, strings.Count(strings.TrimSpace(r.body), "\n")+1)
	}
	act(t, ctx, chromedp.Click(`[data-testid="plan-matches"] button`), chromedp.WaitVisible(`[data-testid="plan-counts"]`))
	total := 0
	for _, action := range []string{"publish", "skip_processed", "skip_in_progress", "skip_already_replayed", "skip_replay_limit", "skip_unresolvable"} {
		total += must(t, ctx, chromedp.Evaluate[int](`(() => { const e = document.querySelector('[data-testid="count-`+action+`"] [data-testid="stat-value"]'); return e ? parseInt(e.textContent.replace(/,/g, ''), 10) : 0; })()`))
	}
	if total != 29 {
		t.Errorf("the plan of the matches holds %d items (want the 29 open ones)", total)
	}

	// 2: a mistyped field matches nothing, and the page says why.
	act(t, ctx, chromedp.Navigate(dlt+"?filter="+`dead_letter.exception_typ+%3D%3D+%22x%22`))
	waittest.Until(t, 30*time.Second, "the typo's scan to finish", func() bool {
		return strings.Contains(must(t, ctx, chromedp.Text(`[data-testid="scan-status"]`)), "done")
	})
	errs := must(t, ctx, chromedp.Evaluate[string](`(() => { const e = document.querySelector('[data-testid="scan-eval-errors"]'); return e && !e.hidden ? e.innerText : ""; })()`))
	if !strings.Contains(errs, "could not be evaluated on") || !strings.Contains(errs, "exception_typ") {
		t.Errorf("the typo's eval errors are not on the page: %q", errs)
	}
	screenshot(t, ctx, "kafka-dlt-typo")

	// 5: orders is no dead-letter topic.
	act(t, ctx, chromedp.Navigate(base+"/kafka/main/topics/orders"), chromedp.WaitVisible(`[data-testid="records-table"]`))
	text := must(t, ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if countOf(t, ctx, `[data-testid="record-row"]`) == 0 {
		t.Error("the orders topic shows no records")
	}
	for _, bad := range []string{"Group by error", "Plan replay", "open dead letters", "Showing open records"} {
		if strings.Contains(text, bad) {
			t.Errorf("the orders topic page says %q", bad)
		}
	}
	if n := countOf(t, ctx, `[data-testid="record-state"], [data-testid="state-select"], [data-testid="select-record"]`); n != 0 {
		t.Errorf("the orders topic page shows %d dead-letter states or plan boxes", n)
	}
	screenshot(t, ctx, "kafka-topic-not-dlt")
}

// TestBrowserErrorPageLinksAndOnePost (issue 37, item 14): an error page links the job its 409
// names and offers a way back besides the overview; a double click on a plain form posts once.
func TestBrowserErrorPageLinksAndOnePost(t *testing.T) {
	base := kafkaConsole(t)
	ctx, _ := newBrowser(t)

	plan := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json",
		`{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","partition":2,"from_offset":0,"to_offset":29}}`)
	p := decode[struct {
		PlanID string `json:"plan_id"`
	}](t, plan)
	var job struct{ ID, Status string }
	waittest.Until(t, 30*time.Second, "the job to start", func() bool {
		r := do(t, nil, "POST", base+"/api/v1/replays", "application/json", `{"plan_id":"`+p.PlanID+`","reason":"issue 37"}`)
		job = decode[struct{ ID, Status string }](t, r)
		return r.status == http.StatusOK
	})
	var ended struct {
		Status    string
		Published int
	}
	waittest.Until(t, 30*time.Second, "the job to end", func() bool {
		ended = decode[struct {
			Status    string
			Published int
		}](t, do(t, nil, "GET", base+"/api/v1/replays/"+job.ID, "", ""))
		return ended.Status == "done" || ended.Status == "failed" || ended.Status == "cancelled"
	})
	// Item 3: the copy the job published is marked as Redrive's on the orders topic's page.
	act(t, ctx, chromedp.Navigate(base+"/kafka/main/topics/orders?limit=500"), chromedp.WaitVisible(`[data-testid="records-table"]`))
	if n := countOf(t, ctx, `[data-testid="replay-copy"]`); n != ended.Published || n == 0 {
		t.Errorf("%d records marked replay copy on the orders page; the job published %d", n, ended.Published)
	}
	// The job page's Cancel, posted after the job ended (a second tab, a stale page): a 409.
	act(t, ctx, chromedp.Navigate(base+"/replays/"+job.ID))
	must(t, ctx, chromedp.Evaluate[bool](`(() => { const f = document.createElement("form"); f.method = "post"; f.action = "/replays/`+job.ID+`/cancel";
			document.body.appendChild(f); f.submit(); return true; })()`))
	act(t, ctx, chromedp.WaitVisible(`[data-testid="error-page"]`))
	status := must(t, ctx, chromedp.Text(`[data-testid="error-status"]`))
	link := must(t, ctx, chromedp.Evaluate[string](`(document.querySelector('[data-testid="error-link"]') || {}).getAttribute ? document.querySelector('[data-testid="error-link"]').getAttribute("href") : ""`))
	open := countOf(t, ctx, `[data-testid="error-open-named"], [data-testid="error-back"], [data-testid="error-replays"]`)
	screenshot(t, ctx, "error-409")
	if status != "409" || link != "/replays/"+job.ID || open != 3 {
		t.Errorf("the 409 page: status %q, link %q, %d ways on (want 409, /replays/%s, 3)", status, link, open, job.ID)
	}

	// A double click on "Add note" adds one note.
	act(t, ctx, chromedp.Navigate(base+"/kafka/main/topics/orders.DLT/errors"), chromedp.WaitVisible(`[data-testid="note-form"]`),
		chromedp.SetValue(`[data-testid="note-form"] input[name="text"]`, "double click 37"))
	must(t, ctx, chromedp.Evaluate[bool](`(() => { const b = document.querySelector('[data-testid="note-form"] button'); b.click(); setTimeout(() => b.click(), 30); return true; })()`))
	act(t, ctx, chromedp.Sleep(time.Second), chromedp.WaitReady(`main`))
	notes := do(t, nil, "GET", base+"/api/v1/kafka/main/topics/orders.DLT/notes", "", "")
	if n := strings.Count(notes.body, "double click 37"); n != 1 {
		t.Errorf("a double click added %d notes: %.300s", n, notes.body)
	}
}

// TestBrowserDiscardFromTheQueuePage (issue 37, item 13): the DLQ's messages page offers a
// discard into the archive (it was API-only): its plan holds the messages asked for as discards,
// and the job run from it archives them.
func TestBrowserDiscardFromTheQueuePage(t *testing.T) {
	base, vhost, _ := rabbitConsole(t)
	ctx, _ := newBrowser(t)
	page := base + "/rabbitmq/main/queues/" + strings.ReplaceAll(vhost, "/", "%2F") + "/orders.dlq/messages"
	act(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible(`[data-testid="plan-discard"]`),
		chromedp.SetValue(`[data-testid="plan-form"] input[name="limit"]`, "3"))
	screenshot(t, ctx, "rabbitmq-queue-discard-offer")
	act(t, ctx, chromedp.Click(`[data-testid="plan-discard"]`), chromedp.WaitVisible(`[data-testid="count-discard"]`))
	discards := must(t, ctx, chromedp.Text(`[data-testid="count-discard"] [data-testid="stat-value"]`))
	planPath := must(t, ctx, chromedp.Evaluate[string](`location.pathname`))
	if discards != "3" || !strings.HasPrefix(planPath, "/replays/plans/plan_") {
		t.Fatalf("the discard plan from the queue page: %q discards at %s", discards, planPath)
	}
	planID := strings.TrimPrefix(planPath, "/replays/plans/")
	var job struct{ ID string }
	waittest.Until(t, 30*time.Second, "the discard job to start", func() bool {
		r := do(t, nil, "POST", base+"/api/v1/replays", "application/json", `{"plan_id":"`+planID+`","reason":"issue 37"}`)
		job = decode[struct{ ID string }](t, r)
		return r.status == http.StatusOK
	})
	waittest.Until(t, 60*time.Second, "the discard job to archive 3 messages", func() bool {
		r := do(t, nil, "GET", base+"/api/v1/archive?queue=orders.dlq", "", "")
		return strings.Count(r.body, `"job_id":"`+job.ID+`"`) == 3
	})
}
