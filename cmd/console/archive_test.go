package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
)

// TestArchiveRestoreBothWays: messages discarded from a DLQ are restored through the API — one
// replayed to its original destination (a job of the replay engine: 202 with its id; the message
// reaches orders.work, counted with the test's own AMQP client), one put back in its DLQ — and a
// second restore of either is 409; a viewer is refused; each restore is audited.
func TestArchiveRestoreBothWays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	vhost, ch, _ := deadLetteredOrders(t, ctx, 3, func(i int) amqp.Publishing {
		return amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), DeliveryMode: amqp.Persistent, ContentType: "application/json",
			Body: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	})
	cfg := rabbittest.Config(t, vhost)
	base := startConsole(t, fmt.Sprintf("store: {dsn: %q}\nrabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]\n%s",
		pgtest.NewDatabase(t), string(cfg.URL), cfg.ManagementURL, vhost, basicAuth("")))
	waitJob := func(id string) string {
		t.Helper()
		var j struct{ Status string }
		waitUntil(t, 30*time.Second, "job "+id+" finishes", func() bool {
			j = decode[struct{ Status string }](t, bearer(t, "GET", base+"/api/v1/replays/"+id, "tok-viewer", ""))
			return j.Status != "pending" && j.Status != "running"
		})
		return j.Status
	}
	plan := decode[struct {
		PlanID string `json:"plan_id"`
	}](t, bearer(t, "POST", base+"/api/v1/replays/plan", "tok-operator",
		fmt.Sprintf(`{"action":"discard","source":{"kind":"rabbitmq","broker":"main","vhost":%q,"queue":"orders.dlq","limit":10}}`, vhost)))
	job := decode[struct{ ID string }](t, bearer(t, "POST", base+"/api/v1/replays", "tok-operator",
		fmt.Sprintf(`{"plan_id":%q,"reason":"poison"}`, plan.PlanID)))
	if st := waitJob(job.ID); st != "done" {
		t.Fatalf("the discard: %s", st)
	}
	archive := decode[struct {
		Messages []struct {
			ID        int64  `json:"id"`
			MessageID string `json:"message_id"`
		}
	}](t, bearer(t, "GET", base+"/api/v1/archive?queue=orders.dlq", "tok-viewer", ""))
	if len(archive.Messages) != 3 {
		t.Fatalf("archive: %+v", archive)
	}
	id := map[string]int64{}
	for _, m := range archive.Messages {
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
	waitDepthFor(t, ch, "orders.work", 1, 30*time.Second)
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
	waitDepthFor(t, ch, "orders.dlq", 1, 30*time.Second)
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
