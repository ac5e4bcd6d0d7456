package main

import (
	"cmp"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/paths"
)

// QA, in a 1400 px window over ordinary demo data: the replays table was 1,435 px wide in its
// 1,360 px panel, so its Created column was cut off; its Duration column sorted as text ("1 s,
// 5 min 24 s, 9 s, 11 s, 14 s, 17 ms, …"); and no job or plan id could be copied, where message ids
// can. Here jobs that took milliseconds, seconds and minutes (and one that never started) sort by
// how long they took, the list and a job page fit the window, and every job and plan id has its
// copy button.
func TestBrowserReplaysSortFitAndCopy(t *testing.T) {
	storeDSN := pgtest.NewDatabase(t)
	base, _ := kafkaConsoleOn(t, storeDSN)

	// How long each job took, as QA's list had them: 0 is a job cancelled before it started, a
	// negative one a job still running (on another console) that started so long ago, paused.
	const failures = 28 * time.Second // the job whose messages all failed
	took := []time.Duration{17 * time.Millisecond, 5*time.Minute + 24*time.Second, 1 * time.Second, 40 * time.Millisecond,
		9 * time.Second, 0, 11 * time.Second, -2 * time.Minute, 793 * time.Millisecond, failures}
	reasons := []string{"consumer fixed in v2.4.1", "demo: stock service fixed (INC-2231), replaying the first failures",
		"retry after the settlement outage", "qab rabbit concurrent 13"}
	var jobs, plans []string
	for i := range took {
		part, from := i%3, (i/3)*20
		plan := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json",
			fmt.Sprintf(`{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","partition":%d,"from_offset":%d,"to_offset":%d}}`, part, from, from+14))
		p := decode[struct {
			PlanID string `json:"plan_id"`
		}](t, plan)
		if plan.status != http.StatusOK {
			t.Fatalf("plan: %d %s", plan.status, plan.body)
		}
		start := do(t, nil, "POST", base+"/api/v1/replays", "application/json",
			fmt.Sprintf(`{"plan_id":%q,"rate_per_second":1000,"reason":%q}`, p.PlanID, reasons[i%len(reasons)]))
		j := decode[struct{ ID string }](t, start)
		if start.status != http.StatusOK {
			t.Fatalf("start: %d %s", start.status, start.body)
		}
		if final := waitReplay(t, base, j.ID, 30*time.Second); final.Status != replay.JobDone {
			t.Fatalf("job %+v", final)
		}
		jobs, plans = append(jobs, j.ID), append(plans, p.PlanID)
	}
	// The jobs ran in milliseconds: give them the lengths and states QA saw (the running one last:
	// it holds its source). They were created a minute apart (a page's times are to the second),
	// and each settled its messages a second apart.
	for i, d := range took {
		exec := func(sql string, args ...any) {
			pgtest.Exec(t, storeDSN, strings.ReplaceAll(sql, "replay_", store.Schema+".replay_"), append([]any{jobs[i]}, args...)...)
		}
		exec(`UPDATE replay_job SET created_at = created_at - $2 * interval '1 minute', started_at = started_at - $2 * interval '1 minute' WHERE id = $1`, len(took)-i)
		exec(`UPDATE replay_ledger l SET at = j.started_at + l.seq * interval '1 second' FROM replay_job j WHERE j.id = l.job_id AND j.id = $1`)
		switch {
		case d == 0:
			exec(`UPDATE replay_job SET status = 'cancelled', started_at = NULL, finished_at = created_at WHERE id = $1`)
		case d < 0:
			exec(`UPDATE replay_job SET status = 'running', started_at = now() - $2 * interval '1 millisecond', finished_at = NULL,
				lease_owner = 'console-b', lease_until = now() + interval '1 hour', paused = 'Kafka cluster main did not answer' WHERE id = $1`, (-d).Milliseconds())
		default:
			exec(`UPDATE replay_job SET finished_at = started_at + $2 * interval '1 millisecond' WHERE id = $1`, d.Milliseconds())
		}
		if d == failures {
			exec(`UPDATE replay_ledger SET outcome = 'failed', holds = false, detail = 'NOT_LEADER_FOR_PARTITION' WHERE job_id = $1 AND outcome = 'published'`)
			exec(`UPDATE replay_job SET failed = published, published = 0 WHERE id = $1`)
		}
	}

	b, _ := newBrowser(t)
	shot := func(name string) {
		if os.Getenv("REDRIVE_SCREENSHOTS") != "" {
			screenshot(t, b, name)
		}
	}
	act(t, b, chromedp.Navigate(base+paths.Replays), chromedp.WaitVisible(`[data-testid="jobs-table"]`))
	shot("replays-list")
	if w := must(t, b, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 1400 {
		t.Errorf("/replays is %d px wide in a 1400 px window", w)
	}
	if over := must(t, b, chromedp.Evaluate[string](`(() => { const t = document.querySelector('[data-testid="jobs-table"]'), p = t.closest('.panel');
		return t.scrollWidth > p.clientWidth ? t.scrollWidth + " px in a panel of " + p.clientWidth : "" })()`)); over != "" {
		t.Errorf("the replays table is %s: its last columns are cut off", over)
	}

	// The Duration column, ascending then descending: by how long each job took, the one that
	// never started last both ways.
	column := func(name string) int {
		t.Helper()
		heads := must(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="jobs-table"] thead th')].map(th => th.textContent.trim())`))
		i := slices.Index(heads, name)
		if i < 0 {
			t.Fatalf("no %s column in %q", name, heads)
		}
		return i + 1
	}
	sortBy := func(col int) (ids, texts []string) {
		t.Helper()
		act(t, b, chromedp.Click(fmt.Sprintf(`[data-testid="jobs-table"] thead th:nth-child(%d)`, col)))
		ids = must(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="job-row"] td:first-child a')].map(a => a.textContent.trim())`))
		texts = must(t, b, chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll('[data-testid="job-row"] td:nth-child(%d)')].map(td => td.textContent.trim())`, col)))
		return ids, texts
	}
	byLength := func(desc bool) []string {
		var out []string
		length := func(d time.Duration) time.Duration { return max(d, -d) } // running: for so long
		order := slices.Clone(took)
		slices.SortFunc(order, func(a, b time.Duration) int { return cmp.Compare(length(a), length(b)) })
		if desc {
			slices.Reverse(order)
		}
		for _, d := range order {
			if d != 0 {
				out = append(out, jobs[slices.Index(took, d)])
			}
		}
		return append(out, jobs[slices.Index(took, 0)])
	}
	duration := column("Duration")
	if ids, texts := sortBy(duration); !slices.Equal(ids, byLength(false)) {
		t.Errorf("Duration ascending: %q, want shortest first and the job that never started last", texts)
	}
	if ids, texts := sortBy(duration); !slices.Equal(ids, byLength(true)) {
		t.Errorf("Duration descending: %q, want longest first and the job that never started last", texts)
	}
	// Created sorts by the instant (the jobs were created one after the other, jobs[0] first).
	created := column("Created")
	if ids, texts := sortBy(created); !slices.Equal(ids, jobs) {
		t.Errorf("Created ascending: %q, want the oldest first", texts)
	}
	newest := slices.Clone(jobs)
	slices.Reverse(newest)
	if ids, texts := sortBy(created); !slices.Equal(ids, newest) {
		t.Errorf("Created descending: %q, want the newest first", texts)
	}

	// Every job id in the list can be copied.
	copied := must(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="job-row"] td:first-child [data-copy]')].map(e => e.getAttribute('data-copy'))`))
	if !sameSet(copied, jobs) {
		t.Errorf("copy buttons of the list's job ids: %q, want one for each of %q", copied, jobs)
	}

	// A job's page and its plan's fit the window, and each has the copy button of the job's id
	// and of the plan's.
	job, plan := jobs[1], plans[1]
	for _, p := range []struct{ what, url, ready string }{
		{"job", base + paths.Replay(job), `[data-testid="ledger"]`},
		{"plan", base + paths.ReplayPlan(plan), `[data-testid="plan-items"]`},
	} {
		act(t, b, chromedp.Navigate(p.url), chromedp.WaitVisible(p.ready))
		shot("replay-" + p.what + "-page")
		if w := must(t, b, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 1400 {
			t.Errorf("the %s page is %d px wide in a 1400 px window", p.what, w)
		}
		if c := must(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-copy]')].map(e => e.getAttribute('data-copy'))`)); !slices.Contains(c, job) || !slices.Contains(c, plan) {
			t.Errorf("the %s page copies %q, want the job id %s and the plan id %s", p.what, c, job, plan)
		}
	}
	// The job's ledger sorts When by the instant.
	act(t, b, chromedp.Navigate(base+paths.Replay(job)), chromedp.WaitVisible(`[data-testid="ledger"]`),
		chromedp.Click(`[data-testid="ledger"] thead th:last-child`), chromedp.Click(`[data-testid="ledger"] thead th:last-child`))
	if when := must(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="ledger-row"] td:last-child time')].map(e => e.getAttribute('datetime'))`)); len(when) == 0 ||
		!slices.IsSortedFunc(when, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("ledger When descending: %q, want the newest first", when)
	}

	// A silence's id (what DELETE /api/v1/silences/{id} takes) can be copied.
	sil := do(t, nil, "POST", base+"/api/v1/silences", "application/json", `{"matchers":{"kind":"outbox_stuck"},"duration":"2h","comment":"relay redeploy"}`)
	s := decode[struct{ ID int64 }](t, sil)
	if sil.status != http.StatusOK {
		t.Fatalf("POST /api/v1/silences: %d %s", sil.status, sil.body)
	}
	act(t, b, chromedp.Navigate(base+paths.Notifications), chromedp.WaitVisible(`[data-testid="silence-row"]`))
	if c := must(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="silence-row"] [data-copy]')].map(e => e.getAttribute('data-copy'))`)); !slices.Equal(c, []string{strconv.FormatInt(s.ID, 10)}) {
		t.Errorf("the silence row copies %q, want its id %d", c, s.ID)
	}
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
