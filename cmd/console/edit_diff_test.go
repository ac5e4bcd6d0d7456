package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
	"github.com/redrive/redrive/paths"
)

// TestEditBeforeAfterForPlanAndApprover: an edit and retry's plan, its API answer and the job
// page where a second person approves it show the edit's before and after — masked as any
// content (redaction.json_paths $.email) — so that the approver sees what they approve (issue 37,
// item 10: they saw only "edit and retry: the value and 1 header(s) change").
func TestEditBeforeAfterForPlanAndApprover(t *testing.T) {
	k := startKafka(t, map[string]int32{"orders": 1, "orders.DLT": 1})
	ctx := waittest.Context(t, 2*time.Minute)
	cl := kfaketest.Client(t, k.Cluster())
	mustDo(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "orders.DLT", Key: []byte("order-0"),
		Value: []byte(`{"messageId":"order-0","email":"old@example.com","customerId":"bad-id"}`),
		Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
			{Key: "fixed-by", Value: []byte("nobody")}}}).FirstErr())
	base := startConsole(t, basicAuth("")+fmt.Sprintf(`
store: {dsn: %q}
kafka: [{name: main, brokers: [%q]}]
redaction: {json_paths: ["$.email"]}
replay: {four_eyes: {enabled: true, threshold: 1000, window: 1h}}
`, pgtest.NewDatabase(t), k.Addrs()[0]))

	r := bearer(t, "POST", base+paths.APIPlanReplay, "tok-operator",
		`{"edit":{"value":"{\"messageId\":\"order-0\",\"email\":\"new@example.com\",\"customerId\":\"c-42\"}","set_headers":{"fixed-by":"ops"}},`+
			`"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":[{"partition":0,"offset":0}]}}`)
	if r.status != http.StatusOK {
		t.Fatalf("plan: %d %s", r.status, r.body)
	}
	var v any
	mustDo(t, json.Unmarshal([]byte(r.body), &v))
	if err := loadOpenAPI(t, base).Components.Schemas["ReplayPlan"].Value.VisitJSON(v); err != nil {
		t.Errorf("the plan does not match ReplayPlan: %v\n%s", err, r.body)
	}
	plan := decode[struct {
		PlanID string `json:"plan_id"`
		Edit   *struct {
			ValueBefore string               `json:"value_before"`
			ValueAfter  string               `json:"value_after"`
			Headers     map[string][2]string `json:"headers"`
		} `json:"edit"`
	}](t, r)
	if e := plan.Edit; e == nil || !strings.Contains(e.ValueBefore, "bad-id") || !strings.Contains(e.ValueAfter, "c-42") ||
		e.Headers["fixed-by"] != [2]string{"nobody", "ops"} {
		t.Fatalf("the plan's edit: %+v\n%s", e, r.body)
	}
	if strings.Contains(r.body, "old@example.com") || strings.Contains(r.body, "new@example.com") {
		t.Errorf("the plan's edit shows a masked path:\n%s", r.body)
	}

	// What a page shows of the edit, the masked path's values nowhere.
	shows := func(what, body string) {
		t.Helper()
		for _, want := range []string{`data-testid="edit-diff"`, "bad-id", "c-42", "fixed-by", "nobody", "ops"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q", what, want)
			}
		}
		for _, masked := range []string{"old@example.com", "new@example.com"} {
			if strings.Contains(body, masked) {
				t.Errorf("%s shows %q, a masked path's value", what, masked)
			}
		}
	}
	otto, _ := signedIn(t, base, "otto")
	page := do(t, otto, "GET", base+paths.ReplayPlan(plan.PlanID), "", "")
	if page.status != http.StatusOK {
		t.Fatalf("plan page: %d", page.status)
	}
	shows("the plan page", page.body)

	r = bearer(t, "POST", base+paths.APIReplays, "tok-operator", `{"plan_id":"`+plan.PlanID+`","reason":"customer id fixed by hand"}`)
	if r.status != http.StatusOK {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	job := decode[struct{ ID, Status string }](t, r)
	if job.Status != "awaiting_approval" {
		t.Fatalf("an edited message's job is %s, want awaiting_approval", job.Status)
	}
	ada, _ := signedIn(t, base, "ada")
	page = do(t, ada, "GET", base+paths.Replay(job.ID), "", "")
	if page.status != http.StatusOK || !strings.Contains(page.body, `data-testid="approve"`) {
		t.Fatalf("the approver's job page: %d, approve offered %v", page.status, strings.Contains(page.body, `data-testid="approve"`))
	}
	shows("the approver's job page", page.body)

	// As the approver sees it in chromium, at 1440 and 1024 px: the before and after beside the
	// Approve button, the page not scrolling sideways.
	bctx, _ := newBrowser(t)
	act(t, bctx, chromedp.Navigate(base+"/login"))
	browserSignIn(t, bctx, "ada", `[data-testid="signed-in-user"]`)
	for _, width := range []int64{1440, 1024} {
		act(t, bctx, chromedp.EmulateViewport(width, 1000), chromedp.Navigate(base+paths.Replay(job.ID)),
			chromedp.WaitVisible(`[data-testid="edit-diff"]`), chromedp.WaitVisible(`[data-testid="approve"]`))
		before := must(t, bctx, chromedp.Text(`[data-testid="edit-value-before"]`))
		after := must(t, bctx, chromedp.Text(`[data-testid="edit-value-after"]`))
		if !strings.Contains(before, "bad-id") || !strings.Contains(after, "c-42") || strings.Contains(before+after, "@example.com") {
			t.Errorf("at %d px the approver reads before %q, after %q", width, before, after)
		}
		if wide := must(t, bctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth`)); wide {
			t.Errorf("the job page scrolls sideways at %d px", width)
		}
		screenshot(t, bctx, fmt.Sprintf("edit-approve-%d", width))
	}
}
