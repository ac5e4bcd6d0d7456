package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
	"github.com/redrive/redrive/paths"
)

// withCSRF is client sending the session's CSRF token with every request, as the pages' htmx
// does: a signed-in browser's calls of the JSON API.
func withCSRF(client *http.Client, csrf string) *http.Client {
	c := *client
	c.Transport = csrfHeader(csrf)
	return &c
}

type csrfHeader string

func (h csrfHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-CSRF-Token", string(h))
	return http.DefaultTransport.RoundTrip(r)
}

// postForms is what the page at u, read by client, lets its user submit: the action of each
// form that posts and has a button to submit it, sorted, but signing out (every page has it).
func postForms(t *testing.T, client *http.Client, u string) (actions []string, doc *goquery.Document) {
	t.Helper()
	r := do(t, client, "GET", u, "", "")
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %.300s", u, r.status, r.body)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	doc.Find("form").Each(func(_ int, f *goquery.Selection) {
		submit := f.Find(`button:not([type="button"]), input[type="submit"]`).Length() > 0
		if m, _ := f.Attr("method"); strings.EqualFold(m, "post") && submit {
			if a, _ := f.Attr("action"); a != paths.Logout {
				actions = append(actions, a)
			}
		}
	})
	slices.Sort(actions)
	return actions, doc
}

// Each page offers a viewer, an operator and an admin exactly the forms the API would accept from
// them (QA: a viewer was shown the silence, test notification, cancel, approve and apply forms, and
// an operator the cancel of an admin's job and the approval of a plan of their own, each answered
// 403): the notifications page; a replay job running or awaiting approval, the operator's own and
// an admin's; a replay plan larger than an operator may start; an offset move awaiting approval
// and one that needs none. A viewer sees no form but signing out on any page.
func TestRoleButtons(t *testing.T) {
	k := startKafka(t, map[string]int32{"shipments": 1, "shipments.DLT": 1})
	ctx := waittest.Context(t, 2*time.Minute)
	cl := kfaketest.Client(t, k.Cluster(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := range 40 {
		recs = append(recs, &kgo.Record{Topic: "shipments", Value: []byte(fmt.Sprintf(`{"shipment":%d}`, i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kfaketest.Commit(t, kadm.NewClient(cl), "race", "shipments", map[int32]int64{0: 10})
	hook, _ := webhookReceiver(t)
	base, _ := outboxConsole(t, basicAuth("")+fmt.Sprintf(`
kafka: [{name: main, brokers: [%q]}]
replay:
  operator_max_messages: 11
  four_eyes: {enabled: true, threshold: 2}
notify:
  channels: [{name: hook, type: webhook, url: %q}]
  rules: [{match: {kind: outbox_dead}, channels: [hook]}]
`, k.Addrs()[0], hook))

	users := map[string]*http.Client{}
	for _, name := range []string{"vera", "otto", "ada"} {
		users[name] = withCSRF(signedIn(t, base, name))
	}
	call := func(who, method, path, body string) response {
		t.Helper()
		r := do(t, users[who], method, base+path, "application/json", body)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %s %s: %d %s", who, method, path, r.status, r.body)
		}
		return r
	}
	ids := func(status string, n int) []int64 {
		t.Helper()
		r := call("vera", "GET", paths.APIOutboxEvents("orders")+"?status="+status+"&limit=50", "")
		var out []int64
		for _, e := range decode[struct{ Events []struct{ ID int64 } }](t, r).Events {
			out = append(out, e.ID)
		}
		if len(out) < n {
			t.Fatalf("%d %s events, want %d", len(out), status, n)
		}
		return out[:n]
	}
	dead, failed := ids("DEAD", 25), ids("FAILED", 13)
	plan := func(who string, events []int64) string {
		t.Helper()
		body := fmt.Sprintf(`{"source":{"kind":"outbox","outbox":"orders","ids":%s}}`, strings.ReplaceAll(fmt.Sprint(events), " ", ","))
		p := decode[struct {
			PlanID  string         `json:"plan_id"`
			Actions map[string]int `json:"actions"`
		}](t, call(who, "POST", paths.APIPlanReplay, body))
		if p.Actions["publish"] != len(events) {
			t.Fatalf("plan of %d events: %v", len(events), p.Actions)
		}
		return p.PlanID
	}
	start := func(who, planID string) string {
		t.Helper()
		j := decode[struct{ ID, Status string }](t, call(who, "POST", paths.APIReplays, `{"plan_id":"`+planID+`","rate_per_second":1,"reason":"role test"}`))
		if j.Status != replay.JobAwaiting {
			t.Fatalf("job of plan %s is %s, want it awaiting approval (four-eyes threshold 2)", planID, j.Status)
		}
		return j.ID
	}
	// Ten messages a second apart: the approved jobs run for ten seconds, while their pages are read.
	ottoRunning, adaRunning := start("otto", plan("otto", dead[:10])), start("ada", plan("ada", failed[:10]))
	ottoWaiting, adaWaiting := start("otto", plan("otto", dead[10:13])), start("ada", plan("ada", failed[10:13]))
	bigPlan, smallPlan := plan("otto", dead[13:25]), plan("otto", dead[10:13]) // 12 > operator_max_messages 11
	call("ada", "POST", paths.APIReplayApprove(ottoRunning), "")

	offsetPlan := func(by int) string {
		t.Helper()
		return decode[struct {
			PlanID string `json:"plan_id"`
		}](t, call("otto", "POST", paths.APIOffsetsPlan("main", "race"),
			fmt.Sprintf(`{"topic":"shipments","partitions":[0],"to":{"kind":"shift","by":%d}}`, by))).PlanID
	}
	fourEyesMove, plainMove := offsetPlan(30), offsetPlan(1) // 30 skipped records need a second person; 1 does not

	silence := decode[struct{ ID int64 }](t, call("otto", "POST", paths.APISilences, `{"matchers":{"kind":"outbox_dead","severity":"warning"},"duration":"2h"}`))

	none := []string{}
	notify := []string{paths.NotificationChannelTest("hook"), paths.Silences, paths.SilenceEnd(silence.ID)}
	cancel := func(job string) []string { return []string{paths.ReplayCancel(job)} }
	approve := func(job string) []string { return []string{paths.ReplayApprove(job)} }
	both := func(job string) []string { return []string{paths.ReplayApprove(job), paths.ReplayCancel(job)} }
	offsetsApply := []string{paths.OffsetsApply("main", "race")}
	offsetsApprove := []string{paths.OffsetsApprove("main", "race")}
	run := []string{paths.Replays}
	type pageCase struct {
		name, page            string
		vera, otto, ada       []string
		ottoNote, veraNote    string // a testid of the line said instead of the missing button
		runningJob, forceForm bool
	}
	check := func(tc pageCase) {
		t.Run(tc.name, func(t *testing.T) {
			for _, who := range []struct {
				name string
				want []string
				note string
			}{{"vera", tc.vera, tc.veraNote}, {"otto", tc.otto, tc.ottoNote}, {"ada", tc.ada, ""}} {
				got, doc := postForms(t, users[who.name], base+tc.page)
				want := slices.Sorted(slices.Values(who.want))
				if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Errorf("%s is offered %q, want %q", who.name, got, want)
				}
				if who.note != "" && strings.TrimSpace(doc.Find(`[data-testid="`+who.note+`"]`).Text()) == "" {
					t.Errorf("%s is not told why a button is missing (%s)", who.name, who.note)
				}
				if tc.runningJob {
					if s, _ := doc.Find(`[data-testid="job-progress"]`).Attr("data-status"); s != replay.JobPending && s != replay.JobRunning {
						t.Fatalf("the job is %s when %s reads it: it must run while the page is read", s, who.name)
					}
				}
				if tc.forceForm {
					if force := doc.Find(`input[name="force"]`).Length() > 0; force != (who.name == "ada") {
						t.Errorf("%s is offered force: %v (only an admin may force)", who.name, force)
					}
				}
			}
		})
	}
	for _, tc := range []pageCase{
		{name: "notifications", page: paths.Notifications, vera: none, otto: notify, ada: notify, veraNote: "silence-note"},
		{name: "operator's running job", page: paths.Replay(ottoRunning), vera: none, otto: cancel(ottoRunning), ada: cancel(ottoRunning),
			veraNote: "cancel-note", runningJob: true},
		{name: "operator's job awaiting approval", page: paths.Replay(ottoWaiting), vera: none, otto: cancel(ottoWaiting), ada: both(ottoWaiting),
			veraNote: "approve-note", ottoNote: "approve-note"},
		{name: "admin's job awaiting approval", page: paths.Replay(adaWaiting), vera: none, otto: approve(adaWaiting), ada: cancel(adaWaiting),
			veraNote: "approve-note"},
		{name: "plan above operator_max_messages", page: paths.ReplayPlan(bigPlan), vera: none, otto: none, ada: run,
			veraNote: "run-note", ottoNote: "run-note", forceForm: true},
		{name: "plan", page: paths.ReplayPlan(smallPlan), vera: none, otto: run, ada: run, veraNote: "run-note", forceForm: true},
		{name: "offset move awaiting approval", page: paths.OffsetMove("main", "race", fourEyesMove), vera: none, otto: none, ada: offsetsApprove,
			veraNote: "approve-note", ottoNote: "approve-note"},
		{name: "offset move", page: paths.OffsetMove("main", "race", plainMove), vera: none, otto: offsetsApply, ada: offsetsApply,
			veraNote: "apply-note"},
	} {
		check(tc)
	}
	// One job moves a source at a time: the operator's stops, then the admin's runs.
	call("otto", "POST", paths.APIReplayCancel(ottoRunning), "")
	waittest.Until(t, 30*time.Second, "the operator's job stops", func() bool {
		return decode[struct{ Status string }](t, call("vera", "GET", paths.APIReplay(ottoRunning), "")).Status == replay.JobCancelled
	})
	call("otto", "POST", paths.APIReplayApprove(adaRunning), "")
	check(pageCase{name: "admin's running job", page: paths.Replay(adaRunning), vera: none, otto: none, ada: cancel(adaRunning),
		veraNote: "cancel-note", ottoNote: "cancel-note", runningJob: true})

	// Everywhere else a viewer may look, nothing to submit either.
	for _, page := range []string{paths.Overview, paths.Outboxes, paths.Outbox("orders"), paths.Outbox("orders") + "?status=DEAD",
		paths.KafkaCluster("main"), paths.KafkaGroup("main", "race"), paths.KafkaTopic("main", "shipments.DLT"), paths.Replays, paths.Audit, paths.Archive, paths.Trace} {
		if got, _ := postForms(t, users["vera"], base+page); len(got) != 0 {
			t.Errorf("a viewer is offered %q on %s", got, page)
		}
	}
}
