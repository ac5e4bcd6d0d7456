package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

// The discard test of issue 16: a discard job over a 5,000-message DLQ (archive each message,
// then ack it) is SIGKILLed three times while it moves and restarted each time. At the end every
// message is in exactly one place — still in the DLQ, or in the archive — never in both, never in
// neither, counted with the management API, an AMQP client and psql, none of them the console.
// Then one archived message is restored to the DLQ, whole.
func TestDiscardKilledMidJobKeepsEveryMessageOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: seconds of SIGKILL and restarts")
	}
	const n = 5000
	ctx := waittest.Context(t, 5*time.Minute)
	vhost, ch, mgmt := deadLetteredOrders(t, ctx, n, func(i int) amqp.Publishing {
		return amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), DeliveryMode: amqp.Persistent, ContentType: "application/json",
			Headers: amqp.Table{"tenant": "7", "attempt": int32(3)}, Body: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	})

	storeDSN := pgtest.NewDatabase(t)
	cfg := rabbittest.Config(t, vhost)
	p := startProcess(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
rabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]
replay: {lease: 2s}
`, storeDSN, string(cfg.URL), cfg.ManagementURL, vhost))

	// Kafka records are never deleted: a discard of a topic is refused, in words.
	if r := doRaw("POST", p.base+"/api/v1/replays/plan", "application/json",
		`{"action":"discard","source":{"kind":"kafka","cluster":"x","topic":"orders.DLT"}}`); r.status != 400 || !strings.Contains(r.body, "resolve") {
		t.Fatalf("a Kafka discard: %d %s", r.status, r.body)
	}
	r := doRaw("POST", p.base+"/api/v1/replays/plan", "application/json",
		fmt.Sprintf(`{"action":"discard","source":{"kind":"rabbitmq","broker":"main","vhost":%q,"queue":"orders.dlq","limit":%d}}`, vhost, n))
	var plan struct {
		PlanID  string         `json:"plan_id"`
		Action  string         `json:"action"`
		Total   int            `json:"total"`
		Actions map[string]int `json:"actions"`
	}
	if r.status != 200 || json.Unmarshal([]byte(r.body), &plan) != nil || plan.Total != n || plan.Actions["discard"] != n || plan.Action != "discard" {
		t.Fatalf("plan: %d %.500s", r.status, r.body)
	}
	job := startJob(t, p.base, fmt.Sprintf(`{"plan_id":%q,"rate_per_second":1500,"reason":"poison orders, fixed in 4.2.1"}`, plan.PlanID))
	db := pgtest.Conn(t, storeDSN)
	archived := func() (ids map[string]int) {
		t.Helper()
		rows, err := db.Query(ctx, `SELECT message_id FROM redrive.archived_message`)
		mustDo(t, err)
		ids = map[string]int{}
		for rows.Next() {
			var id string
			mustDo(t, rows.Scan(&id))
			ids[id]++
		}
		mustDo(t, rows.Err())
		return ids
	}
	for kill := 0; kill < 3; kill++ {
		waitReplayMoves(t, p.base, job.ID, replayOf(p.base, job.ID).Published, 30*time.Second)
		time.Sleep(time.Duration(rand.IntN(250)) * time.Millisecond) // the random moment is the point
		p.kill()
		t.Logf("kill %d: DLQ %d, archive %d", kill+1, rabbittest.Depth(t, ch, "orders.dlq"), len(archived()))
		p.start()
	}
	final := waitReplay(t, p.base, job.ID, 3*time.Minute)
	if final.Status != replay.JobDone {
		t.Fatalf("job did not finish: %+v", final)
	}
	if final.Published != n || final.Failed != 0 {
		t.Fatalf("final job %+v", final)
	}
	// The management API's count (its statistics lag: wait until it agrees with the broker's own
	// count), then the messages themselves through an AMQP client.
	ready := rabbittest.Depth(t, ch, "orders.dlq")
	var managed int
	rabbittest.WaitFor(t, 30*time.Second, "the management API's count", func(context.Context) bool {
		q, err := mgmt.GetQueue(vhost, "orders.dlq")
		if err == nil {
			managed = q.Messages
		}
		return err == nil && managed == ready
	})
	inArchive := archived()
	dlq := drainIDs(t, ch, "orders.dlq")
	inDLQ := map[string]int{}
	for _, id := range dlq {
		inDLQ[id]++
	}
	both, neither, twice := 0, 0, 0
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("m-%d", i)
		switch {
		case inDLQ[id] > 0 && inArchive[id] > 0:
			both++
		case inDLQ[id] == 0 && inArchive[id] == 0:
			neither++
		case inDLQ[id] > 1 || inArchive[id] > 1:
			twice++
		}
	}
	t.Logf("after 3 kills: management API %d in the DLQ, AMQP read %d, archive %d rows (%d ids); both %d, neither %d, twice %d",
		managed, len(dlq), sumCounts(inArchive), len(inArchive), both, neither, twice)
	if both != 0 || neither != 0 || twice != 0 || len(dlq)+sumCounts(inArchive) != n {
		t.Fatalf("every message must be in exactly one place: both %d, neither %d, twice %d (DLQ %d + archive %d of %d)",
			both, neither, twice, len(dlq), sumCounts(inArchive), n)
	}

	// The archive API: whole messages, newest first, with the job's reason.
	r = doRaw("GET", p.base+"/api/v1/archive?broker=main&queue=orders.dlq&since=1h&limit=2", "", "")
	var page struct {
		Messages []struct {
			ID           int64  `json:"id"`
			MessageID    string `json:"message_id"`
			Vhost        string `json:"vhost"`
			Queue        string `json:"queue"`
			By, Reason   string
			Properties   map[string]any `json:"properties"`
			Headers      map[string]any `json:"headers"`
			Body         string         `json:"body"`
			BodyEncoding string         `json:"body_encoding"`
		} `json:"messages"`
		NextCursor *string `json:"next_cursor"`
	}
	if r.status != 200 || json.Unmarshal([]byte(r.body), &page) != nil || len(page.Messages) != 2 || page.NextCursor == nil {
		t.Fatalf("archive: %d %.1000s", r.status, r.body)
	}
	a := page.Messages[0]
	if a.Queue != "orders.dlq" || a.Reason != "poison orders, fixed in 4.2.1" || a.Properties["content_type"] != "application/json" ||
		a.Headers["tenant"] != "7" || a.Headers["x-death"] == nil || a.BodyEncoding != "json" || !strings.HasPrefix(a.Body, `{"n":`) {
		t.Fatalf("an archived message is not whole: %+v", a)
	}
	if r := doRaw("GET", p.base+"/api/v1/archive?since=yesterday-ish", "", ""); r.status != 400 {
		t.Fatalf("a bad since: %d %s", r.status, r.body)
	}

	// Restore it: back in the DLQ with its properties and typed headers; a second restore is refused.
	restore := fmt.Sprintf("%s/api/v1/archive/%d/restore", p.base, a.ID)
	if r := doRaw("POST", restore, "application/json", `{"to":"dlq","reason":"one more look"}`); r.status != 200 {
		t.Fatalf("restore: %d %s", r.status, r.body)
	}
	if r := doRaw("POST", restore, "application/json", `{"to":"dlq","reason":"again"}`); r.status != 409 {
		t.Fatalf("a second restore: %d %s", r.status, r.body)
	}
	if r := doRaw("POST", restore, "application/json", `{"to":"elsewhere","reason":"x"}`); r.status != 400 {
		t.Fatalf("restore elsewhere: %d %s", r.status, r.body)
	}
	rabbittest.WaitDepth(t, ch, "orders.dlq", len(dlq)+1, 20*time.Second)
	d, ok, err := ch.Get("orders.dlq", false)
	mustDo(t, err)
	for ok && d.MessageId != a.MessageID {
		d, ok, err = ch.Get("orders.dlq", false)
		mustDo(t, err)
	}
	if !ok || d.ContentType != "application/json" || d.Headers["attempt"] != int32(3) || d.Headers["x-death"] == nil ||
		d.Headers["x-redrive-restored-from"] != fmt.Sprintf("archive/%d", a.ID) || !strings.HasPrefix(string(d.Body), `{"n":`) {
		t.Fatalf("the restored message: found %v, %+v", ok, d)
	}
	var audited int
	mustDo(t, db.QueryRow(ctx, `SELECT count(*) FROM redrive.audit_log WHERE action = 'archive.restore' AND outcome = 'ok'`).Scan(&audited))
	if audited != 1 {
		t.Fatalf("%d archive.restore ok rows", audited)
	}
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}
