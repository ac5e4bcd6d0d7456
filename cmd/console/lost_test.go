package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/waittest"
)

// When RabbitMQ dropped a DLQ's messages, the overview's "orders.dlq holds N dead letters" simply
// went away, as if resolved. Now a replay job draining the DLQ raises nothing, while a purge of
// the rest is a dead_letters_lost problem: on the overview, in redrive_problems and sent to the
// webhook, and still there samples later, after the queue is empty.
func TestLostDeadLettersAreAProblem(t *testing.T) {
	ctx := waittest.Context(t, 2*time.Minute)
	vhost, ch, mgmt := deadLetteredOrders(t, ctx, 20, func(i int) amqp.Publishing {
		return amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), ContentType: "application/json", Body: fmt.Appendf(nil, `{"n":%d}`, i)}
	})
	// The management API's figures come a statistics interval late: the console's first sample
	// must see the 20 for it to be the one that found them.
	waittest.Until(t, 30*time.Second, "the management API shows orders.dlq's 20", func() bool {
		q, err := mgmt.GetQueue(vhost, "orders.dlq")
		return err == nil && q.MessagesReady == 20
	})
	hook, bodies := webhookReceiver(t)
	cfg := rabbittest.Config(t, vhost)
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
sampler: {interval: 1s}
rabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]
notify:
  interval: 1s
  channels: [{name: hook, type: webhook, url: %q}]
  rules: [{match: {kind: dead_letters_lost}, channels: [hook]}]
`, pgtest.NewDatabase(t), string(cfg.URL), cfg.ManagementURL, vhost, hook))

	type problem struct {
		Kind, Title string
		Since       *time.Time
	}
	problems := func() []problem {
		var o struct{ Problems []problem }
		if err := json.Unmarshal([]byte(do(t, nil, "GET", base+"/api/v1/overview", "", "").body), &o); err != nil {
			t.Fatal(err)
		}
		return o.Problems
	}
	find := func(kind, prefix string) (problem, bool) {
		for _, p := range problems() {
			if p.Kind == kind && strings.HasPrefix(p.Title, prefix) {
				return p, true
			}
		}
		return problem{}, false
	}
	lost := func() bool { _, ok := find("dead_letters_lost", ""); return ok }
	held := waittest.For(t, 20*time.Second, "the overview: orders.dlq holds 20", func() (problem, bool) {
		return find("dead_letters", "orders.dlq holds 20 dead letters")
	})
	if held.Since != nil {
		t.Errorf("orders.dlq held its 20 at the console's first sample: since %v, want null (unknown)", held.Since)
	}

	// A replay job moves 10 of them: the DLQ holds 10, nothing is lost.
	plan := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json",
		fmt.Sprintf(`{"source":{"kind":"rabbitmq","broker":"main","vhost":%q,"queue":"orders.dlq","limit":10}}`, vhost))
	p := decode[struct {
		PlanID string `json:"plan_id"`
		Total  int    `json:"total"`
	}](t, plan)
	if plan.status != 200 || p.Total != 10 {
		t.Fatalf("plan: %d %s", plan.status, plan.body)
	}
	job := startJob(t, base, fmt.Sprintf(`{"plan_id":%q,"rate_per_second":1000,"reason":"lost test"}`, p.PlanID))
	if j := waitReplay(t, base, job.ID, 30*time.Second); j.Status != "done" || j.Published != 10 {
		t.Fatalf("the replay: %+v", j)
	}
	waittest.Until(t, 20*time.Second, "the overview: orders.dlq holds 10", func() bool {
		_, ok := find("dead_letters", "orders.dlq holds 10 dead letters")
		return ok
	})
	waittest.Holds(t, 3*time.Second, "no dead letters lost after the replay", func() bool { return !lost() })

	// The rest purged behind Redrive's back.
	if _, err := mgmt.PurgeQueue(vhost, "orders.dlq"); err != nil {
		t.Fatal(err)
	}
	want := "orders.dlq lost 10 dead letters since "
	got := waittest.For(t, 20*time.Second, "the overview: orders.dlq lost 10", func() (problem, bool) { return find("dead_letters_lost", want) })
	if !strings.HasSuffix(got.Title, " UTC that Redrive did not move (dropped by the broker at a delivery limit, purged, expired or consumed elsewhere)") {
		t.Errorf("title: %q", got.Title)
	}
	if _, ok := find("dead_letters", "orders.dlq holds"); ok {
		t.Error("the empty DLQ still holds dead letters")
	}
	if m := scrape(t, base); m[series("redrive_problems", "kind", "dead_letters_lost", "severity", "warning")] != 1 {
		t.Errorf("redrive_problems{kind=dead_letters_lost}: %v", m[series("redrive_problems", "kind", "dead_letters_lost", "severity", "warning")])
	}
	waittest.Until(t, 20*time.Second, "the dead_letters_lost notification at the webhook", func() bool {
		for _, b := range bodies() {
			var e struct{ Kind, State, Title string }
			if json.Unmarshal([]byte(b), &e) == nil && e.Kind == "dead_letters_lost" && e.State == "firing" && strings.HasPrefix(e.Title, want) {
				return true
			}
		}
		return false
	})
	// Samples go on (one a second): the loss stays, as the problem's key does.
	waittest.Holds(t, 4*time.Second, "the loss on the overview", func() bool {
		p, ok := find("dead_letters_lost", want)
		return ok && p.Title == got.Title
	})

	// Dead letters arrive in the DLQ the samples saw empty: they are held since the first sample
	// that found them.
	refilled := time.Now()
	for i := range 3 {
		mustDo(t, ch.PublishWithContext(ctx, "", "orders.dlq", false, false, amqp.Publishing{MessageId: fmt.Sprintf("late-%d", i), Body: []byte(`{}`)}))
	}
	held = waittest.For(t, 20*time.Second, "the overview: orders.dlq holds 3", func() (problem, bool) {
		return find("dead_letters", "orders.dlq holds 3 dead letters")
	})
	if held.Since == nil || held.Since.Before(refilled.Add(-time.Millisecond)) || held.Since.After(time.Now()) {
		t.Errorf("orders.dlq holds 3 since %v, want between the first of them (%v) and now", held.Since, refilled)
	}
	// The queue's API says the same, and its page how long.
	q := decode[struct {
		HoldingSince *time.Time `json:"holding_since"`
	}](t, do(t, nil, "GET", base+"/api/v1/rabbitmq/main/queues/"+url.PathEscape(vhost)+"/orders.dlq", "", ""))
	if held.Since != nil && (q.HoldingSince == nil || !q.HoldingSince.Equal(*held.Since)) {
		t.Errorf("the queue API's holding_since %v, the overview's since %v", q.HoldingSince, held.Since)
	}
	if page := do(t, nil, "GET", base+"/rabbitmq/main/queues/"+url.PathEscape(vhost)+"/orders.dlq", "", ""); !strings.Contains(page.body, "dead letters held for ") {
		t.Errorf("the queue page does not say how long orders.dlq has held its dead letters")
	}
}
