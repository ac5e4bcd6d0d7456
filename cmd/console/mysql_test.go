package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/inbox/mysqlinbox"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// mariadbService is a service database in MariaDB holding the seed's outbox and inbox tables: the
// orders outbox in every state (READY 2, one due for ten minutes; PROCESSING 3, two of them stuck;
// SENT 6; FAILED 1; DEAD 4, one of them with markup in its payload), and inventory-service's inbox
// with e-1 and m-2 processed. Its mysql:// URL.
func mariadbService(t *testing.T) string {
	t.Helper()
	dsn := mysqltest.NewDatabase(t)
	mysqltest.Exec(t, dsn, mysqloutbox.SeedDDL)
	mysqltest.Exec(t, dsn, mysqlinbox.SeedDDL)
	row := func(id, status, aggregate, payload, lastError string, available, locked time.Duration) {
		t.Helper()
		mysqltest.Exec(t, dsn, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
			status, attempts, available_at, locked_until, last_error, created_at, sent_at)
			VALUES (?, 'Order', ?, 'OrderPlaced', 1, ?, ?, 3, UTC_TIMESTAMP(6) + INTERVAL ? SECOND,
				IF(? = 'PROCESSING', UTC_TIMESTAMP(6) + INTERVAL ? SECOND, NULL), nullif(?, ''),
				UTC_TIMESTAMP(6) - INTERVAL 10 MINUTE, IF(? = 'SENT', UTC_TIMESTAMP(6) - INTERVAL 9 MINUTE, NULL))`,
			id, aggregate, payload, status, available.Seconds(), status, locked.Seconds(), lastError, status)
	}
	row("e-1", "SENT", "order-100", `{"orderId":"order-100"}`, "", -10*time.Minute, 0)
	for i := range 5 {
		row(fmt.Sprintf("s-%d", i), "SENT", "order-1", "{}", "", -time.Hour, 0)
	}
	row("r-1", "READY", "order-2", "{}", "", -10*time.Minute, 0)
	row("r-2", "READY", "order-3", "{}", "", time.Hour, 0)
	row("p-1", "PROCESSING", "order-4", "{}", "", -time.Hour, -5*time.Minute)
	row("p-2", "PROCESSING", "order-5", "{}", "", -time.Hour, -time.Minute)
	row("p-3", "PROCESSING", "order-6", "{}", "", -time.Hour, time.Hour)
	row("f-1", "FAILED", "order-7", "{}", "java.net.SocketTimeoutException: read timed out", time.Minute, 0)
	for i := range 3 {
		row(fmt.Sprintf("d-%d", i), "DEAD", "order-8", "{}", "IllegalStateException: no stock for o-10"+fmt.Sprint(i), -time.Hour, 0)
	}
	row("d-x", "DEAD", "order-9", `<script>alert("x")</script>`, `<b>bold</b> & "quoted"`, -time.Hour, 0)
	mysqltest.Exec(t, dsn, `INSERT INTO inbox_message VALUES ('e-1', 'inventory-service', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)),
		('m-2', 'inventory-service', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`)
	return dsn
}

// springDeadLetter is a Spring-Kafka-style DLT record of message id, failed on orders[0].
func springDeadLetter(id string) *kgo.Record {
	return &kgo.Record{Topic: "orders.DLT", Partition: 0, Key: []byte("k-" + id), Value: []byte(fmt.Sprintf(`{"messageId":%q}`, id)),
		Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
			{Key: "kafka_dlt-original-partition", Value: binary.BigEndian.AppendUint32(nil, 0)},
			{Key: "kafka_dlt-original-offset", Value: binary.BigEndian.AppendUint64(nil, 7)},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte("inventory-service")},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.StockException")},
			{Key: "kafka_dlt-exception-message", Value: []byte("no stock")},
			{Key: "messageId", Value: []byte(id)},
		}}
}

// TestMariaDBOutboxAndInboxEndToEnd: the console's run() over an outbox and an inbox in MariaDB
// (mysql:// DSNs) does what it does over PostgreSQL — the outbox API, pages and exporter agree on
// the counts, the overview and notifications raise the stuck leases and DEAD events, release and
// requeue change the rows (audited), a guarded outbox replay requeues, the trace finds the
// outbox row and the inbox row, a Kafka replay skips what the MariaDB inbox processed, and the
// doctor checks the tables.
func TestMariaDBOutboxAndInboxEndToEnd(t *testing.T) {
	svc := mariadbService(t)
	k := startKafka(t, map[string]int32{"orders": 1, "orders.DLT": 1})
	ctx := waittest.Context(t, 3*time.Minute)
	if err := kfaketest.Client(t, k.Cluster()).ProduceSync(ctx, springDeadLetter("m-1"), springDeadLetter("m-2"), springDeadLetter("m-3")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	hook, bodies := webhookReceiver(t)
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q, stale_ready_after: 1m}]
kafka: [{name: main, brokers: [%q]}]
consumers:
  - name: inventory-service
    inbox: {dsn: %q}
    kafka: {cluster: main, group: inventory-service, topics: [orders]}
notify:
  interval: 1s
  channels: [{name: hook, type: webhook, url: %q}]
  rules: [{match: {kind: outbox_dead}, channels: [hook]}, {match: {kind: outbox_stuck}, channels: [hook]}]
`, pgtest.NewDatabase(t), svc, k.Addrs()[0], svc, hook))

	t.Run("CountsAPIAndExporter", func(t *testing.T) {
		v := decode[apiOutboxes](t, do(t, nil, "GET", base+"/api/v1/outboxes", "", ""))
		if len(v.Outboxes) != 1 {
			t.Fatalf("%+v", v)
		}
		o := v.Outboxes[0]
		want := map[string]int64{"READY": 2, "PROCESSING": 3, "SENT": 6, "FAILED": 1, "DEAD": 4}
		for s, n := range want {
			if o.Counts[s] != n {
				t.Errorf("%s = %d, want %d", s, o.Counts[s], n)
			}
		}
		if o.Stuck != 2 || o.Age < 590 || o.Age > 700 {
			t.Errorf("stuck %d, oldest READY age %v; want 2 and about 600 s", o.Stuck, o.Age)
		}
		// p-1's lease expired 5 minutes before the rows were written; the mariadb client agrees.
		cli := mariadbCLI(t, svc, `SELECT TIMESTAMPDIFF(SECOND, min(locked_until), UTC_TIMESTAMP(6)) FROM outbox_event
			WHERE status = 'PROCESSING' AND locked_until < UTC_TIMESTAMP(6)`)
		if want, err := strconv.ParseFloat(cli[0], 64); err != nil || o.StuckAge < 295 || math.Abs(o.StuckAge-want) > 10 {
			t.Errorf("oldest stuck age %v s; the mariadb client says %v (%v)", o.StuckAge, cli, err)
		}
		m := scrape(t, base)
		for s, n := range want {
			if got := m[series("redrive_outbox_events", "outbox", "orders", "status", s)]; got != float64(n) {
				t.Errorf("redrive_outbox_events %s = %v, want %d", s, got, n)
			}
		}
		if got := m[series("redrive_outbox_stuck_leases", "outbox", "orders")]; got != 2 {
			t.Errorf("redrive_outbox_stuck_leases = %v", got)
		}
		if got := m[series("redrive_outbox_oldest_ready_age_seconds", "outbox", "orders")]; math.Abs(got-o.Age) > 10 {
			t.Errorf("oldest READY age %v; the API says %v", got, o.Age)
		}
		one := do(t, nil, "GET", base+"/api/v1/outboxes/orders", "", "")
		if one.status != 200 || !strings.Contains(one.body, `"DEAD":4`) {
			t.Errorf("GET /api/v1/outboxes/orders: %d %s", one.status, one.body)
		}
	})

	t.Run("OverviewAndNotifications", func(t *testing.T) {
		ov := do(t, nil, "GET", base+"/api/v1/overview", "", "")
		for _, kind := range []string{`"kind":"outbox_stuck"`, `"kind":"outbox_dead"`, `"kind":"outbox_backlog"`} {
			if !strings.Contains(ov.body, kind) {
				t.Errorf("overview without %s: %s", kind, ov.body)
			}
		}
		// Stuck since p-1's lease expired, 5 minutes before the rows were written.
		var o struct {
			Problems []struct {
				Kind  string     `json:"kind"`
				Since *time.Time `json:"since"`
			} `json:"problems"`
		}
		mustDo(t, json.Unmarshal([]byte(ov.body), &o))
		for _, p := range o.Problems {
			if p.Kind == "outbox_stuck" && (p.Since == nil || time.Since(*p.Since) < 295*time.Second || time.Since(*p.Since) > 400*time.Second) {
				t.Errorf("outbox_stuck since %v, want about 5 min ago", p.Since)
			}
		}
		waittest.Until(t, 30*time.Second, "the outbox_dead and outbox_stuck notifications", func() bool {
			all := strings.Join(bodies(), "\n")
			return strings.Contains(all, `"kind":"outbox_dead"`) && strings.Contains(all, `"kind":"outbox_stuck"`)
		})
	})

	type event struct {
		ID        int64   `json:"id"`
		EventID   string  `json:"event_id"`
		Status    string  `json:"status"`
		Stuck     bool    `json:"stuck"`
		Attempts  int     `json:"attempts"`
		LastError *string `json:"last_error"`
	}
	events := func(query string) []event {
		t.Helper()
		r := do(t, nil, "GET", base+"/api/v1/outboxes/orders/events?"+query, "", "")
		if r.status != 200 {
			t.Fatalf("events?%s: %d %s", query, r.status, r.body)
		}
		return decode[struct{ Events []event }](t, r).Events
	}
	idOf := func(eventID string) int64 {
		t.Helper()
		for _, e := range events("limit=500") {
			if e.EventID == eventID {
				return e.ID
			}
		}
		t.Fatalf("no event %s", eventID)
		return 0
	}

	t.Run("EventsAndPages", func(t *testing.T) {
		if dead := events("status=DEAD"); len(dead) != 4 || dead[0].EventID != "d-x" {
			t.Errorf("DEAD events newest first: %+v", dead)
		}
		if stuck := events("stuck=true"); len(stuck) != 2 || !stuck[0].Stuck {
			t.Errorf("stuck events: %+v", stuck)
		}
		page := do(t, nil, "GET", base+"/outboxes/orders?status=DEAD", "", "")
		if page.status != 200 || !strings.Contains(page.body, "d-x") || strings.Contains(page.body, "<b>bold</b>") {
			t.Errorf("outbox page: %d", page.status)
		}
		ev := do(t, nil, "GET", fmt.Sprintf("%s/outboxes/orders/events/%d", base, idOf("d-x")), "", "")
		if ev.status != 200 || strings.Contains(ev.body, `<script>alert("x")</script>`) || !strings.Contains(ev.body, "&lt;script&gt;") {
			t.Errorf("event page: %d, the payload must be shown escaped", ev.status)
		}
		detail := do(t, nil, "GET", fmt.Sprintf("%s/api/v1/outboxes/orders/events/%d", base, idOf("d-x")), "", "")
		if detail.status != 200 || !strings.Contains(detail.body, `\u003cscript\u003ealert(\"x\")\u003c/script\u003e`) {
			t.Errorf("event API: %d %s", detail.status, detail.body)
		}
		if r := do(t, nil, "GET", base+"/api/v1/outboxes/orders/events/424242", "", ""); r.status != http.StatusNotFound {
			t.Errorf("an unknown event: %d %s", r.status, r.body)
		}
	})

	t.Run("TraceFindsTheOutboxAndInboxRows", func(t *testing.T) {
		a := getTrace(t, base, "message_id=e-1")
		ob := a.steps("outbox orders")
		if len(ob) != 1 || !ob[0].Found || !strings.Contains(ob[0].Detail, "status SENT") {
			t.Errorf("outbox step: %s", a.dump())
		}
		if in := a.steps("inbox inventory-service"); len(in) != 1 || !in[0].Found || !strings.HasPrefix(in[0].Detail, "processed by inventory-service") {
			t.Errorf("inbox step: %s", a.dump())
		}
	})

	t.Run("KafkaReplaySkipsWhatTheInboxProcessed", func(t *testing.T) {
		plan := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json",
			`{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT"}}`)
		p := decode[struct {
			PlanID  string         `json:"plan_id"`
			Actions map[string]int `json:"actions"`
		}](t, plan)
		if plan.status != 200 || p.Actions["publish"] != 2 || p.Actions["skip_processed"] != 1 {
			t.Fatalf("plan: %d %s", plan.status, plan.body)
		}
		job := decode[struct{ ID string }](t, do(t, nil, "POST", base+"/api/v1/replays", "application/json",
			fmt.Sprintf(`{"plan_id":%q,"reason":"stock fixed"}`, p.PlanID)))
		if j := waitReplay(t, base, job.ID, time.Minute); j.Status != "done" || j.Published != 2 || j.Skipped != 1 {
			t.Fatalf("job %+v", j)
		}
	})

	t.Run("ReleaseRequeueAndOutboxReplay", func(t *testing.T) {
		r := do(t, nil, "POST", base+"/api/v1/outboxes/orders/leases/release", "application/json", `{"all_stuck":true,"reason":"relay redeployed"}`)
		if r.status != 200 || !strings.Contains(r.body, `"released":2`) {
			t.Fatalf("release: %d %s", r.status, r.body)
		}
		if left := events("stuck=true"); len(left) != 0 {
			t.Errorf("stuck after the release: %+v", left)
		}
		if s := mysqltest.Value[string](t, svc, `SELECT status FROM outbox_event WHERE event_id = 'p-3'`); s != "PROCESSING" {
			t.Errorf("the live lease's row is %s", s)
		}
		failed := idOf("f-1")
		r = do(t, nil, "POST", base+"/api/v1/outboxes/orders/events/requeue", "application/json",
			fmt.Sprintf(`{"ids":[%d,%d],"reason":"broker back","reset_attempts":true}`, failed, idOf("e-1")))
		if r.status != 200 || !strings.Contains(r.body, `"requeued":1`) {
			t.Fatalf("requeue: %d %s", r.status, r.body)
		}
		if s := mysqltest.Value[string](t, svc, `SELECT concat(status, ' ', attempts) FROM outbox_event WHERE event_id = 'f-1'`); s != "READY 0" {
			t.Errorf("f-1 after the requeue: %s", s)
		}
		v := decode[apiOutboxes](t, do(t, nil, "GET", base+"/api/v1/outboxes", "", ""))
		if c := v.Outboxes[0].Counts; c["READY"] != 5 || c["PROCESSING"] != 1 || c["FAILED"] != 0 || v.Outboxes[0].Stuck != 0 {
			t.Errorf("counts after the repairs: %v, stuck %d", c, v.Outboxes[0].Stuck)
		}
		for _, action := range []string{"outbox.release_leases", "outbox.requeue"} {
			a := decode[struct {
				Entries []struct {
					Target, Outcome string
					Count           *int64
				}
			}](t, do(t, nil, "GET", base+"/api/v1/audit?action="+action, "", ""))
			if !slices.ContainsFunc(a.Entries, func(e struct {
				Target, Outcome string
				Count           *int64
			}) bool {
				return e.Outcome == "ok" && e.Target == "outbox/orders" && e.Count != nil && *e.Count >= 1
			}) {
				t.Errorf("no ok %s audit entry: %+v", action, a.Entries)
			}
		}

		dead := events("status=DEAD")
		plan := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json",
			fmt.Sprintf(`{"source":{"kind":"outbox","outbox":"orders","ids":[%d,%d]}}`, dead[1].ID, dead[2].ID))
		p := decode[struct {
			PlanID  string         `json:"plan_id"`
			Actions map[string]int `json:"actions"`
		}](t, plan)
		if plan.status != 200 || p.Actions["publish"] != 2 {
			t.Fatalf("outbox plan: %d %s", plan.status, plan.body)
		}
		job := decode[struct{ ID string }](t, do(t, nil, "POST", base+"/api/v1/replays", "application/json",
			fmt.Sprintf(`{"plan_id":%q,"reason":"stock fixed"}`, p.PlanID)))
		if j := waitReplay(t, base, job.ID, time.Minute); j.Status != "done" || j.Published != 2 {
			t.Fatalf("outbox job %+v", j)
		}
		if n := mysqltest.Value[int](t, svc, `SELECT count(*) FROM outbox_event WHERE status = 'DEAD'`); n != 2 {
			t.Errorf("%d DEAD rows after the outbox replay, want 2", n)
		}
	})

	t.Run("Doctor", func(t *testing.T) {
		r := do(t, nil, "GET", base+"/api/v1/admin/doctor", "", "")
		if r.status != 200 {
			t.Fatalf("doctor: %d %s", r.status, r.body)
		}
		rep := decode[struct {
			Checks []struct{ Target, Check, Status, Detail string }
		}](t, r)
		var seen []string
		for _, c := range rep.Checks {
			if c.Target == "outbox/orders" || c.Target == "inbox/inventory-service" {
				seen = append(seen, c.Target+" "+c.Check)
				if c.Status != "ok" {
					t.Errorf("%s %s: %s %s", c.Target, c.Check, c.Status, c.Detail)
				}
			}
		}
		if len(seen) < 10 {
			t.Errorf("doctor checked %v", seen)
		}
	})
}
