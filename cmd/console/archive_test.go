package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops/pglock"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/waittest"
)

// TestArchiveRestoreBothWays: messages discarded from a DLQ are restored through the API — one
// replayed to its original destination (a job of the replay engine: 202 with its id; the message
// reaches orders.work, counted with the test's own AMQP client), one put back in its DLQ — and a
// second restore of either is 409; a viewer is refused; each restore is audited.
func TestArchiveRestoreBothWays(t *testing.T) {
	ctx := waittest.Context(t, 3*time.Minute)
	base, vhost, ch := dlqConsole(t, ctx, 3, `{"n":%d}`, basicAuth(""))
	waitJob := func(id string) string { t.Helper(); return waitReplayJob(t, base, id) }
	archive := discardOrdersDLQ(t, base, vhost, `{"discard":3}`)
	if len(archive) != 3 {
		t.Fatalf("archive: %+v", archive)
	}
	id := map[string]int64{}
	for _, m := range archive {
		id[m.MessageID] = m.ID
	}
	restore := func(token, msg, body string) response {
		t.Helper()
		return bearer(t, "POST", fmt.Sprintf("%s/api/v1/archive/%d/restore", base, id[msg]), token, body)
	}
	if r := restore("tok-viewer", "m-0", `{"to":"original","reason":"x"}`); r.status != http.StatusForbidden {
		t.Fatalf("viewer: %d %s", r.status, r.body)
	}
	for body, want := range map[string]string{
		`{"to":"elsewhere","reason":"x"}`:          "must be dlq",
		`{"to":"original"}`:                        "reason",
		`{"to":"dlq","reason":"x","force":true}`:   "force",
		`{"to":"original","reason":"x","extra":1}`: "unknown field",
	} {
		if r := restore("tok-operator", "m-0", body); r.status != http.StatusBadRequest || !strings.Contains(r.body, want) {
			t.Errorf("%s: %d %s, want 400 saying %q", body, r.status, r.body, want)
		}
	}

	r := restore("tok-operator", "m-0", `{"to":"original","reason":"fixed in 4.2.1"}`)
	out := decode[struct {
		To, Queue, Status string
		JobID             string `json:"job_id"`
		Action            string `json:"action"`
	}](t, r)
	if r.status != http.StatusAccepted || out.To != "original" || out.JobID == "" || out.Action != "publish" || out.Queue != "orders.dlq" {
		t.Fatalf("restore to the original: %d %s", r.status, r.body)
	}
	if st := waitJob(out.JobID); st != "done" {
		t.Fatalf("the restore's job: %s", st)
	}
	rabbittest.WaitDepth(t, ch, "orders.work", 1, 30*time.Second)
	d, ok, err := ch.Get("orders.work", true)
	if err != nil || !ok || d.MessageId != "m-0" || d.Headers["x-death"] != nil {
		t.Fatalf("on orders.work: %v %v %+v", ok, err, d)
	}
	if r := restore("tok-operator", "m-0", `{"to":"original","reason":"again"}`); r.status != http.StatusConflict || !strings.Contains(r.body, "restored already") {
		t.Fatalf("a second replay: %d %s", r.status, r.body)
	}
	if r := restore("tok-operator", "m-0", `{"to":"dlq","reason":"again"}`); r.status != http.StatusConflict {
		t.Fatalf("a restore to the DLQ after the replay: %d %s", r.status, r.body)
	}
	if r := restore("tok-operator", "m-1", `{"reason":"look at it again"}`); r.status != http.StatusOK || !strings.Contains(r.body, `"restored":true`) {
		t.Fatalf("restore to the DLQ: %d %s", r.status, r.body)
	}
	rabbittest.WaitDepth(t, ch, "orders.dlq", 1, 30*time.Second)
	if r := restore("tok-operator", "m-1", `{"to":"original","reason":"x"}`); r.status != http.StatusConflict {
		t.Fatalf("a replay after the restore to the DLQ: %d %s", r.status, r.body)
	}
	a := decode[struct{ Entries []auditRow }](t, bearer(t, "GET", base+"/api/v1/audit?action=archive.restore", "tok-admin", ""))
	var ok2, failed int
	for _, e := range a.Entries {
		switch e.Outcome {
		case "ok":
			ok2++
		case "failed":
			failed++
		}
	}
	if ok2 != 2 || failed != 3 {
		t.Fatalf("archive.restore audit: %d ok, %d failed; want 2, 3: %+v", ok2, failed, a.Entries)
	}
}

// TestBrowserArchiveRestores: the archive page lists what a discard took, each row offering both
// ways back; an operator replays one to its original destination (the job page follows and
// finishes) and puts the other back in its DLQ; each row then says where it went, and the test's
// own AMQP client finds one message in each queue.
func TestBrowserArchiveRestores(t *testing.T) {
	ctx0 := waittest.Context(t, 3*time.Minute)
	base, vhost, ch := dlqConsole(t, ctx0, 2, `{"n":%d}`, "auth: {mode: none}\n")
	r := doRaw("POST", base+"/api/v1/replays/plan", "application/json",
		fmt.Sprintf(`{"action":"discard","source":{"kind":"rabbitmq","broker":"main","vhost":%q,"queue":"orders.dlq","limit":10}}`, vhost))
	var plan struct {
		PlanID string `json:"plan_id"`
	}
	mustDo(t, json.Unmarshal([]byte(r.body), &plan))
	r = doRaw("POST", base+"/api/v1/replays", "application/json", fmt.Sprintf(`{"plan_id":%q,"reason":"poison"}`, plan.PlanID))
	var job struct{ ID string }
	mustDo(t, json.Unmarshal([]byte(r.body), &job))
	waittest.Until(t, 30*time.Second, "the discard finishes", func() bool {
		return strings.Contains(doRaw("GET", base+"/api/v1/replays/"+job.ID, "", "").body, `"status":"done"`)
	})
	ctx, dialogs := newBrowser(t)
	m0 := `//tr[@data-testid="archive-row"][.//td[@data-testid="archive-message-id"][text()="m-0"]]`
	m1 := `//tr[@data-testid="archive-row"][.//td[@data-testid="archive-message-id"][text()="m-1"]]`
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/rabbitmq/main/queues/"+url.PathEscape(vhost)+"/orders.dlq/messages"),
		chromedp.Click(`[data-testid="archive-link"]`),
		chromedp.WaitVisible(`[data-testid="archive-table"]`)); err != nil {
		t.Fatal(err)
	}
	if n := countOf(t, ctx, `[data-testid="restore-original"]`); n != 2 || countOf(t, ctx, `[data-testid="restore-dlq"]`) != 2 {
		t.Fatalf("%d rows offer a replay to the original, want both", n)
	}
	screenshot(t, ctx, "archive")
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(m0+`//form[@data-testid="restore-original"]//input[@name="reason"]`, "fixed in 4.2.1"),
		chromedp.Click(m0+`//form[@data-testid="restore-original"]//button`),
		chromedp.WaitVisible(`[data-testid="job-progress"][data-status="done"]`)); err != nil {
		t.Fatalf("replay to the original: %v\n%.2000s", err, must(t, ctx, chromedp.Text(`body`)))
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/archive"),
		chromedp.SendKeys(m1+`//form[@data-testid="restore-dlq"]//input[@name="reason"]`, "look again"),
		chromedp.Click(m1+`//form[@data-testid="restore-dlq"]//button`),
		chromedp.WaitVisible(`[data-testid="archive-flash"]`)); err != nil {
		t.Fatalf("restore to the DLQ: %v\n%.2000s", err, must(t, ctx, chromedp.Text(`body`)))
	}
	restored := must(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="archive-restored"]')).map(e => e.textContent)`))
	if len(restored) != 2 || countOf(t, ctx, `[data-testid="restore-dlq"]`) != 0 || dialogs.Load() != 0 {
		t.Fatalf("after both restores: %v, %d forms left, %d dialogs", restored, countOf(t, ctx, `[data-testid="restore-dlq"]`), dialogs.Load())
	}
	screenshot(t, ctx, "archive-restored")
	rabbittest.WaitDepth(t, ch, "orders.work", 1, 30*time.Second)
	rabbittest.WaitDepth(t, ch, "orders.dlq", 1, 30*time.Second)
	if d, ok, err := ch.Get("orders.work", true); err != nil || !ok || d.MessageId != "m-0" {
		t.Fatalf("orders.work: %v %v %s", ok, err, d.MessageId)
	}
	if d, ok, err := ch.Get("orders.dlq", true); err != nil || !ok || d.MessageId != "m-1" {
		t.Fatalf("orders.dlq: %v %v %s", ok, err, d.MessageId)
	}
}

// TestArchiveRestoreTwentyAtOnce: twenty operators restore the same archived message at once,
// half to its DLQ and half to its original destination. It ends up in exactly one place, once:
// one message in orders.dlq and orders.work together (counted with the test's own AMQP client);
// every request that did not restore it is a 409 (or a replay job that finds it restored and
// fails it without publishing).
func TestArchiveRestoreTwentyAtOnce(t *testing.T) {
	ctx := waittest.Context(t, 3*time.Minute)
	base, vhost, ch := dlqConsole(t, ctx, 1, `{"n":%d}`, basicAuth(""))
	archive := discardOrdersDLQ(t, base, vhost, `{"discard":1}`)
	rabbittest.WaitDepth(t, ch, "orders.dlq", 0, 10*time.Second)
	if len(archive) != 1 {
		t.Fatalf("archive: %+v", archive)
	}
	restoreURL := fmt.Sprintf("%s/api/v1/archive/%d/restore", base, archive[0].ID)
	statuses := make([]int, 20)
	jobs := make([]string, 20)
	var wg sync.WaitGroup
	for i := range 20 {
		to := "dlq"
		if i%2 == 1 {
			to = "original"
		}
		wg.Go(func() {
			r := bearer(t, "POST", restoreURL, "tok-operator", fmt.Sprintf(`{"to":%q,"reason":"operator %d"}`, to, i))
			statuses[i] = r.status
			if r.status == http.StatusAccepted {
				jobs[i] = decode[struct {
					JobID string `json:"job_id"`
				}](t, r).JobID
			}
		})
	}
	wg.Wait()
	for i, st := range statuses {
		if st != http.StatusOK && st != http.StatusAccepted && st != http.StatusConflict {
			t.Fatalf("request %d: %d", i, st)
		}
	}
	for _, id := range jobs {
		if id != "" {
			waittest.Until(t, 30*time.Second, "job "+id+" ends", func() bool {
				b := bearer(t, "GET", base+"/api/v1/replays/"+id, "tok-viewer", "").body
				return !strings.Contains(b, `"status":"pending"`) && !strings.Contains(b, `"status":"running"`)
			})
		}
	}
	waittest.Until(t, 30*time.Second, "the message in one queue", func() bool {
		return rabbittest.Depth(t, ch, "orders.dlq")+rabbittest.Depth(t, ch, "orders.work") >= 1
	})
	waittest.Holds(t, 2*time.Second, "exactly one copy", func() bool {
		return rabbittest.Depth(t, ch, "orders.dlq")+rabbittest.Depth(t, ch, "orders.work") == 1
	})
	var ok int
	for _, st := range statuses {
		if st == http.StatusOK {
			ok++
		}
	}
	if ok > 1 {
		t.Fatalf("%d restores to the DLQ succeeded: %v", ok, statuses)
	}
}

// archivedRow is one message of GET /api/v1/archive.
type archivedRow struct {
	ID         int64      `json:"id"`
	MessageID  string     `json:"message_id"`
	JobID      string     `json:"job_id"`
	RestoredAt *time.Time `json:"restored_at"`
	RestoredTo string     `json:"restored_to"`
}

// discardOrdersDLQ discards what orders.dlq holds through the API as tok-operator (plan, then its
// job, until it is done), checks the plan's actions against want (JSON), and returns the
// archive's rows of orders.dlq, newest first.
func discardOrdersDLQ(t *testing.T, base, vhost, want string) []archivedRow {
	t.Helper()
	r := bearer(t, "POST", base+"/api/v1/replays/plan", "tok-operator",
		fmt.Sprintf(`{"action":"discard","source":{"kind":"rabbitmq","broker":"main","vhost":%q,"queue":"orders.dlq","limit":1000}}`, vhost))
	plan := decode[struct {
		PlanID  string         `json:"plan_id"`
		Actions map[string]int `json:"actions"`
	}](t, r)
	if got, _ := json.Marshal(nonZero(plan.Actions)); string(got) != want {
		t.Fatalf("the discard plan: %s, want the actions %s", r.body, want)
	}
	job := decode[struct{ ID string }](t, bearer(t, "POST", base+"/api/v1/replays", "tok-operator",
		fmt.Sprintf(`{"plan_id":%q,"reason":"poison"}`, plan.PlanID)))
	if st := waitReplayJob(t, base, job.ID); st != "done" {
		t.Fatalf("the discard: %s", st)
	}
	return decode[struct{ Messages []archivedRow }](t, bearer(t, "GET", base+"/api/v1/archive?queue=orders.dlq", "tok-viewer", "")).Messages
}

// nonZero is a plan's actions without those it counts none of.
func nonZero(actions map[string]int) map[string]int {
	out := map[string]int{}
	for a, n := range actions {
		if n != 0 {
			out[a] = n
		}
	}
	return out
}

// waitReplayJob waits for replay job id to end and returns its status.
func waitReplayJob(t *testing.T, base, id string) string {
	t.Helper()
	var j struct{ Status string }
	waittest.Until(t, 30*time.Second, "job "+id+" finishes", func() bool {
		j = decode[struct{ Status string }](t, bearer(t, "GET", base+"/api/v1/replays/"+id, "tok-viewer", ""))
		return j.Status != "pending" && j.Status != "running"
	})
	return j.Status
}

// TestArchiveRestoredToDLQIsDiscardedAgain: a message restored from the archive to its DLQ is a
// dead letter there again. The next discard archives it again — a second archive row, not
// restored — and the queue ends empty (counted with the test's own AMQP client): nothing lost. It
// used to be planned drop_replayed_copy (the first discard's ledger row still held its locator)
// and acked away, archived nowhere. Restored once more, a replay of the queue publishes it to its
// original destination once.
func TestArchiveRestoredToDLQIsDiscardedAgain(t *testing.T) {
	ctx := waittest.Context(t, 3*time.Minute)
	base, vhost, ch := dlqConsole(t, ctx, 1, `{"n":%d}`, basicAuth(""))
	restoreToDLQ := func(id int64) {
		t.Helper()
		r := bearer(t, "POST", fmt.Sprintf("%s/api/v1/archive/%d/restore", base, id), "tok-operator", `{"to":"dlq","reason":"look again"}`)
		if r.status != http.StatusOK {
			t.Fatalf("restore %d to the DLQ: %d %s", id, r.status, r.body)
		}
		rabbittest.WaitDepth(t, ch, "orders.dlq", 1, 30*time.Second)
	}
	first := discardOrdersDLQ(t, base, vhost, `{"discard":1}`)
	rabbittest.WaitDepth(t, ch, "orders.dlq", 0, 30*time.Second)
	restoreToDLQ(first[0].ID)
	rows := discardOrdersDLQ(t, base, vhost, `{"discard":1}`)
	rabbittest.WaitDepth(t, ch, "orders.dlq", 0, 30*time.Second)
	if len(rows) != 2 || rows[0].MessageID != "m-0" || rows[0].RestoredAt != nil || rows[0].JobID == first[0].JobID ||
		rows[1].ID != first[0].ID || rows[1].RestoredTo != "dlq" {
		t.Fatalf("the archive after discard, restore, discard: %+v; want the restored row and a new one", rows)
	}

	restoreToDLQ(rows[0].ID)
	r := bearer(t, "POST", base+"/api/v1/replays/plan", "tok-operator",
		fmt.Sprintf(`{"source":{"kind":"rabbitmq","broker":"main","vhost":%q,"queue":"orders.dlq","limit":1000}}`, vhost))
	plan := decode[struct {
		PlanID  string         `json:"plan_id"`
		Actions map[string]int `json:"actions"`
	}](t, r)
	if got := nonZero(plan.Actions); got["publish"] != 1 || len(got) != 1 {
		t.Fatalf("the replay plan of the restored message: %s", r.body)
	}
	job := decode[struct{ ID string }](t, bearer(t, "POST", base+"/api/v1/replays", "tok-operator",
		fmt.Sprintf(`{"plan_id":%q,"reason":"fixed"}`, plan.PlanID)))
	if st := waitReplayJob(t, base, job.ID); st != "done" {
		t.Fatalf("the replay: %s", st)
	}
	rabbittest.WaitDepth(t, ch, "orders.work", 1, 30*time.Second)
	waittest.Holds(t, time.Second, "m-0 once on orders.work, the DLQ empty", func() bool {
		return rabbittest.Depth(t, ch, "orders.work") == 1 && rabbittest.Depth(t, ch, "orders.dlq") == 0
	})
	if d, ok, err := ch.Get("orders.work", true); err != nil || !ok || d.MessageId != "m-0" {
		t.Fatalf("on orders.work: %v %v %+v", ok, err, d)
	}
}

// TestArchiveRestoreToADeletedDLQ: restoring an archived message to a dead-letter queue that was
// deleted since is a 409 saying so and what to do (it was a 500 "internal": the broker's
// NO_ROUTE return had no kind), and the row stays unrestored; once the queue is declared again the
// same restore puts the message in it.
func TestArchiveRestoreToADeletedDLQ(t *testing.T) {
	ctx := waittest.Context(t, 3*time.Minute)
	base, vhost, ch := dlqConsole(t, ctx, 1, `{"n":%d}`, basicAuth(""))
	rows := discardOrdersDLQ(t, base, vhost, `{"discard":1}`)
	if _, err := ch.QueueDelete("orders.dlq", false, false, false); err != nil {
		t.Fatal(err)
	}
	restoreURL := fmt.Sprintf("%s/api/v1/archive/%d/restore", base, rows[0].ID)
	r := bearer(t, "POST", restoreURL, "tok-operator", `{"to":"dlq","reason":"x"}`)
	if r.status != http.StatusConflict || !strings.Contains(r.body, `queue \"orders.dlq\": it no longer exists`) ||
		!strings.Contains(r.body, "recreate the queue, or restore the message to its original destination") || strings.Contains(r.body, "NO_ROUTE") {
		t.Fatalf("a restore to the deleted DLQ: %d %s", r.status, r.body)
	}
	after := decode[struct{ Messages []archivedRow }](t, bearer(t, "GET", base+"/api/v1/archive?queue=orders.dlq", "tok-viewer", "")).Messages
	if len(after) != 1 || after[0].RestoredAt != nil {
		t.Fatalf("the archive row after the refused restore: %+v", after)
	}
	declareOrders(t, ch)
	if r := bearer(t, "POST", restoreURL, "tok-operator", `{"to":"dlq","reason":"x"}`); r.status != http.StatusOK {
		t.Fatalf("the restore once the queue is back: %d %s", r.status, r.body)
	}
	rabbittest.WaitDepth(t, ch, "orders.dlq", 1, 30*time.Second)
}

// A restore that waits out another replica's turn on the same archived message (the store's lock
// held past its wait) is a 409 that says so in words, not the lock's key.
func TestArchiveRestoreWaitingOnAnotherRestore(t *testing.T) {
	ctx := waittest.Context(t, 3*time.Minute)
	storeDSN := pgtest.NewDatabase(t)
	base, vhost, _ := dlqConsoleOn(t, ctx, storeDSN, 1, `{"n":%d}`, basicAuth(""))
	rows := discardOrdersDLQ(t, base, vhost, `{"discard":1}`)
	cfg, err := pgx.ParseConfig(storeDSN)
	mustDo(t, err)
	unlock, err := pglock.Lock(ctx, cfg, fmt.Sprintf("archive.restore/%d", rows[0].ID))
	mustDo(t, err)
	restoreURL := fmt.Sprintf("%s/api/v1/archive/%d/restore", base, rows[0].ID)
	r := bearer(t, "POST", restoreURL, "tok-operator", `{"to":"dlq","reason":"x"}`)
	unlock()
	if want := fmt.Sprintf("another restore of archived message %d is still under way", rows[0].ID); r.status != http.StatusConflict ||
		!strings.Contains(r.body, want) || strings.Contains(r.body, "lock") {
		t.Fatalf("a restore while another holds the turn: %d %s; want 409 saying %q", r.status, r.body, want)
	}
	if r := bearer(t, "POST", restoreURL, "tok-operator", `{"to":"dlq","reason":"x"}`); r.status != http.StatusOK {
		t.Fatalf("the restore once the turn is free: %d %s", r.status, r.body)
	}
}

// TestArchiveRestoreToOriginalTwentyAtOnce: twenty operators replay the same archived message to
// its original destination at once. One request starts the job (202) and the message reaches
// orders.work once (counted with the test's own AMQP client); each of the nineteen others is a 409
// saying it was restored already or is being restored by that job — never the ledger's "replayed
// already … an admin may force a replay past the consumer's inbox", which one loser used to get,
// naming a plan of its own that nothing ran — and no request that lost leaves a plan behind (the
// audit log has the discard's plan and the winner's, nothing else).
func TestArchiveRestoreToOriginalTwentyAtOnce(t *testing.T) {
	ctx := waittest.Context(t, 3*time.Minute)
	base, vhost, ch := dlqConsole(t, ctx, 1, `{"n":%d}`, basicAuth(""))
	rows := discardOrdersDLQ(t, base, vhost, `{"discard":1}`)
	restoreURL := fmt.Sprintf("%s/api/v1/archive/%d/restore", base, rows[0].ID)
	answers := make([]response, 20)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			answers[i] = bearer(t, "POST", restoreURL, "tok-operator", fmt.Sprintf(`{"to":"original","reason":"operator %d"}`, i))
		})
	}
	wg.Wait()
	var started []string
	for i, r := range answers {
		switch {
		case r.status == http.StatusAccepted:
			started = append(started, decode[struct {
				JobID string `json:"job_id"`
			}](t, r).JobID)
		case r.status != http.StatusConflict || strings.Contains(r.body, "force") || strings.Contains(r.body, "inbox") ||
			!strings.Contains(r.body, "restored already") && !strings.Contains(r.body, "being restored"):
			t.Errorf("request %d: %d %s; want 409 saying it was restored already or is being restored", i, r.status, r.body)
		}
	}
	if len(started) != 1 {
		t.Fatalf("%d requests started a job, want 1", len(started))
	}
	if st := waitReplayJob(t, base, started[0]); st != "done" {
		t.Fatalf("the restore's job: %s", st)
	}
	rabbittest.WaitDepth(t, ch, "orders.work", 1, 30*time.Second)
	waittest.Holds(t, time.Second, "the message once on orders.work", func() bool { return rabbittest.Depth(t, ch, "orders.work") == 1 })
	plans := decode[struct{ Entries []auditRow }](t, bearer(t, "GET", base+"/api/v1/audit?action=replay.plan", "tok-admin", "")).Entries
	if len(plans) != 2 {
		t.Fatalf("%d plans audited, want the discard's and the restore's: %+v", len(plans), plans)
	}
}
