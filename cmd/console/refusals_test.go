package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
	"github.com/redrive/redrive/paths"
)

// deniedRow is an audit row of a refusal as psql reads it.
type deniedRow struct {
	actor, role, action, target, reason, ip string
	count                                   int64
}

// deniedRows reads the audit log's denied rows after id, oldest first.
func deniedRows(t *testing.T, db *pgx.Conn, after int64) ([]deniedRow, int64) {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT id, actor, role, action, target, reason, source_ip, coalesce(count, 1)
		FROM redrive.audit_log WHERE outcome = 'denied' AND id > $1 ORDER BY id`, after)
	mustDo(t, err)
	defer rows.Close()
	var out []deniedRow
	last := after
	for rows.Next() {
		var r deniedRow
		mustDo(t, rows.Scan(&last, &r.actor, &r.role, &r.action, &r.target, &r.reason, &r.ip, &r.count))
		out = append(out, r)
	}
	mustDo(t, rows.Err())
	return out, last
}

// TestHandlerRefusalsAreAudited: every refusal decided inside a handler or a use case — a reveal
// by a viewer or an operator, a force and a job above replay.operator_max_messages by an operator,
// a redirect outside replay.allowed_destinations, another person's job cancelled, a replay and an
// offset move approved by who planned them, an uncommitted read by a viewer — is a 403 and
// exactly one denied row in the audit log (read with psql), naming who and why. Only the
// route-level refusals were audited before (7 of these 9 were not, and the replay self-approval
// was, by the engine; the offset move's was not).
func TestHandlerRefusalsAreAudited(t *testing.T) {
	k := startKafka(t, map[string]int32{"orders": 1, "orders.DLT": 1})
	ctx := waittest.Context(t, 2*time.Minute)
	cl := kfaketest.Client(t, k.Cluster())
	var recs []*kgo.Record
	for i := range 3 {
		recs = append(recs, &kgo.Record{Topic: "orders.DLT", Key: []byte(fmt.Sprint("order-", i)), Value: []byte(`{"card":{"number":"4111"}}`),
			Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")}, {Key: "messageId", Value: []byte(fmt.Sprint("m-", i))},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.StockException")}}})
	}
	for i := range 20 {
		recs = append(recs, &kgo.Record{Topic: "orders", Value: []byte(fmt.Sprintf(`{"n":%d}`, i))})
	}
	mustDo(t, cl.ProduceSync(ctx, recs...).FirstErr())
	kfaketest.Commit(t, kadm.NewClient(cl), "billing", "orders", map[int32]int64{0: 5})

	storeDSN, outboxDSN := pgtest.NewDatabase(t), seededOutbox(t)
	base := startConsole(t, basicAuth("")+fmt.Sprintf(`
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q}]
kafka: [{name: main, brokers: [%q]}]
redaction: {json_paths: ["$.card.number"]}
replay:
  operator_max_messages: 2
  four_eyes: {enabled: true, threshold: 1}
  allowed_destinations: [{kind: kafka, cluster: main, topic: orders-retry}]
`, storeDSN, outboxDSN, k.Addrs()[0]))
	db := pgtest.Conn(t, storeDSN)

	plan := func(token, body string) string {
		t.Helper()
		r := bearer(t, "POST", base+paths.APIPlanReplay, token, body)
		if r.status != http.StatusOK {
			t.Fatalf("plan %s: %d %s", body, r.status, r.body)
		}
		return decode[struct {
			PlanID string `json:"plan_id"`
		}](t, r).PlanID
	}
	records := func(n int) string {
		var refs []string
		for i := range n {
			refs = append(refs, fmt.Sprintf(`{"partition":0,"offset":%d}`, i))
		}
		return `{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":[` + strings.Join(refs, ",") + `]}}`
	}
	one, three := plan("tok-operator", records(1)), plan("tok-operator", records(3))
	// The admin's own job of two records waits for a second person (four_eyes threshold 1).
	r := bearer(t, "POST", base+paths.APIReplays, "tok-admin", `{"plan_id":"`+plan("tok-admin", records(2))+`","reason":"stock fixed"}`)
	if r.status != http.StatusOK || !strings.Contains(r.body, `"awaiting_approval"`) {
		t.Fatalf("the admin's job: %d %s", r.status, r.body)
	}
	adminJob := decode[struct{ ID string }](t, r).ID
	r = bearer(t, "POST", base+"/api/v1/kafka/main/groups/billing/offsets/plan", "tok-operator",
		`{"topic":"orders","partitions":[0],"to":{"kind":"shift","by":3}}`)
	if r.status != http.StatusOK {
		t.Fatalf("offset plan: %d %s", r.status, r.body)
	}
	offsetPlan := decode[struct {
		PlanID string `json:"plan_id"`
	}](t, r).PlanID
	events := decode[struct{ Events []struct{ ID int64 } }](t, bearer(t, "GET", base+paths.APIOutboxEvents("orders"), "tok-viewer", "")).Events
	event := paths.APIOutboxEvent("orders", events[0].ID)

	_, last := deniedRows(t, db, 0)
	for _, tc := range []struct {
		name, token, method, path, body string
		actor, says                     string
	}{
		{"RevealByAViewer", "tok-viewer", "GET", event + "?reveal=true", "", "token:viewer-bot", "needs the admin role"},
		{"RevealByAnOperator", "tok-operator", "GET", paths.APIKafkaRecords("main", "orders.DLT") + "?partition=0&reveal=true", "",
			"token:operator-bot", "needs the admin role"},
		{"ForceByAnOperator", "tok-operator", "POST", paths.APIReplays, `{"plan_id":"` + one + `","reason":"x","force":true}`,
			"token:operator-bot", "forcing a replay past the consumer's inbox needs the admin role"},
		{"AboveOperatorMaxMessages", "tok-operator", "POST", paths.APIReplays, `{"plan_id":"` + three + `","reason":"x"}`,
			"token:operator-bot", "replay.operator_max_messages"},
		{"RedirectOutsideAllowedDestinations", "tok-operator", "POST", paths.APIPlanReplay,
			`{"destination":{"kind":"kafka","cluster":"main","topic":"payments"},` + records(1)[1:], "token:operator-bot", "replay.allowed_destinations"},
		{"CancelAnotherPersonsJob", "tok-operator", "POST", paths.APIReplayCancel(adminJob), "{}", "token:operator-bot",
			"operators cancel their own jobs"},
		{"ReplaySelfApproval", "tok-admin", "POST", paths.APIReplayApprove(adminJob), "{}", "token:admin-bot", "a second, different person"},
		{"OffsetMoveSelfApproval", "tok-operator", "POST", "/api/v1/kafka/main/groups/billing/offsets/approve",
			`{"plan_id":"` + offsetPlan + `"}`, "token:operator-bot", "a second, different person must approve it"},
		{"UncommittedReadByAViewer", "tok-viewer", "GET", paths.APIKafkaRecords("main", "orders.DLT") + "?partition=0&isolation=uncommitted", "",
			"token:viewer-bot", "needs the admin role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bearer(t, tc.method, base+tc.path, tc.token, tc.body)
			if r.status != http.StatusForbidden || !strings.Contains(r.body, tc.says) {
				t.Fatalf("%d %.300s; want 403 saying %q", r.status, r.body, tc.says)
			}
			var rows []deniedRow
			rows, last = deniedRows(t, db, last)
			if len(rows) != 1 {
				t.Fatalf("%d denied rows, want exactly 1: %+v", len(rows), rows)
			}
			if got := rows[0]; got.actor != tc.actor || got.role == "" || !strings.Contains(got.reason, tc.says) ||
				got.ip != "127.0.0.1" || !strings.HasPrefix(got.action, tc.method+" /api/v1/") {
				t.Errorf("the denied row: %+v", got)
			}
		})
	}
	// A page's refusal is audited as the API's.
	otto, _ := signedIn(t, base, "otto")
	if r := do(t, otto, "GET", base+paths.OutboxEvent("orders", events[0].ID)+"?reveal=true", "", ""); r.status != http.StatusForbidden {
		t.Errorf("an operator's reveal on the event page: %d", r.status)
	}
	if rows, _ := deniedRows(t, db, last); len(rows) != 1 || rows[0].actor != "otto" || !strings.HasPrefix(rows[0].action, "GET /outboxes/") {
		t.Errorf("the page's refusal: %+v", rows)
	}
}

// TestAnonymousRequestsAreRecordedAtABoundedRate: one client sending a thousand refused
// anonymous requests (no identity, a wrong API token, a wrong password) writes
// audit.anonymous_per_address rows, then — when the minute ends — one row counting the rest with
// what they asked; a signed-in person's refusals are each recorded. Before, each request wrote a
// row (one client at full speed: about 19 GB a day).
func TestAnonymousRequestsAreRecordedAtABoundedRate(t *testing.T) {
	t.Parallel()
	storeDSN := pgtest.NewDatabase(t)
	base := startConsole(t, basicAuth("")+fmt.Sprintf("store: {dsn: %q}\noutboxes: [{name: orders, dsn: %q}]\n"+
		"audit: {anonymous_per_address: 5, anonymous_per_minute: 50}\n", storeDSN, seededOutbox(t)))
	db := pgtest.Conn(t, storeDSN)
	const n = 1000
	start := time.Now()
	for i := range n {
		switch i % 3 {
		case 0:
			do(t, nil, "POST", base+paths.APIOutboxRequeue("orders"), "application/json", `{"ids":[1]}`)
		case 1:
			bearer(t, "POST", base+paths.APIOutboxRequeue("orders"), "tok-wrong", `{"ids":[1]}`)
		default:
			client := browserlike()
			postLogin(t, client, base, loginForm(t, client, base), "vera", "wrong")
		}
	}
	for range 10 {
		bearer(t, "POST", base+paths.APIOutboxRequeue("orders"), "tok-viewer", `{"ids":[1]}`)
	}
	rows, _ := deniedRows(t, db, 0)
	var anonymous, vera int
	for _, r := range rows {
		switch r.role {
		case "":
			anonymous++
		case "viewer":
			vera++
		}
	}
	if anonymous != 5 || vera != 10 {
		t.Errorf("%d anonymous or failed rows one by one (want 5), %d of the viewer's refusals (want all 10)", anonymous, vera)
	}
	t.Logf("%d refused anonymous requests in %s", n, time.Since(start).Round(time.Millisecond))
	// When the minute ends, one row counts the rest and says what they asked.
	var left deniedRow
	waittest.Until(t, 90*time.Second, "the row counting what was left out", func() bool {
		rows, _ := deniedRows(t, db, 0)
		for _, r := range rows {
			if r.action == "audit.left_out" {
				left = r
				return true
			}
		}
		return false
	})
	// Every refused requeue and wrong token is counted; of the wrong passwords, those the sign-in
	// throttle let through to the password check (it answers the rest 429, unaudited).
	if left.count < 2*n/3-5 || left.count > n-5 || left.ip != "127.0.0.1" ||
		!strings.Contains(left.reason, fmt.Sprintf("%d more refused anonymous or failed requests from 127.0.0.1", left.count)) {
		t.Errorf("the left-out row: %+v", left)
	}
	var actions string
	mustDo(t, db.QueryRow(context.Background(), `SELECT detail->>'actions' FROM redrive.audit_log WHERE action = 'audit.left_out'`).Scan(&actions))
	for _, a := range []string{"POST /api/v1/outboxes/:name/events/requeue", "auth.login"} {
		if !strings.Contains(actions, a) {
			t.Errorf("the left-out row's actions %s do not name %s", actions, a)
		}
	}
}

// TestSilencesBoundedByRole: one operator silenced every critical notification for 30 days. Now
// an operator's silence lasts at most notify.silences.operator_max and names a severity of
// notify.silences.operator_severities; past that it is a 403 naming the key, audited; an admin may
// silence critical problems for up to admin_max. The page's form offers the severity and says
// the bound.
func TestSilencesBoundedByRole(t *testing.T) {
	t.Parallel()
	storeDSN := pgtest.NewDatabase(t)
	base := startConsole(t, basicAuth("")+fmt.Sprintf("store: {dsn: %q}\n", storeDSN))
	db := pgtest.Conn(t, storeDSN)
	silence := func(token, body string) response {
		t.Helper()
		return bearer(t, "POST", base+paths.APISilences, token, body)
	}
	_, last := deniedRows(t, db, 0)
	for _, tc := range []struct{ name, token, body, says string }{
		{"OperatorEveryCriticalFor30Days", "tok-operator", `{"matchers":{"severity":"critical"},"duration":"30d","comment":"quiet"}`,
			"notify.silences.operator_max"},
		{"OperatorCriticalForAnHour", "tok-operator", `{"matchers":{"severity":"critical"},"duration":"1h","comment":"quiet"}`,
			"notify.silences.operator_severities"},
		{"OperatorWithoutSeverity", "tok-operator", `{"matchers":{"kind":"outbox_dead"},"duration":"1h","comment":"quiet"}`,
			"notify.silences.operator_severities"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := silence(tc.token, tc.body)
			if r.status != http.StatusForbidden || !strings.Contains(r.body, tc.says) {
				t.Fatalf("%d %s; want 403 naming %s", r.status, r.body, tc.says)
			}
			var rows []deniedRow
			if rows, last = deniedRows(t, db, last); len(rows) != 1 || rows[0].actor != "token:operator-bot" {
				t.Errorf("denied rows: %+v", rows)
			}
		})
	}
	for _, tc := range []struct{ token, body string }{
		{"tok-operator", `{"matchers":{"kind":"outbox_dead","severity":"warning"},"duration":"4h","comment":"relay redeploy"}`},
		{"tok-admin", `{"matchers":{"severity":"critical"},"duration":"30d","comment":"decommissioned cluster"}`},
	} {
		if r := silence(tc.token, tc.body); r.status != http.StatusOK {
			t.Errorf("%s %s: %d %s", tc.token, tc.body, r.status, r.body)
		}
	}
	otto, _ := signedIn(t, base, "otto")
	page := do(t, otto, "GET", base+paths.Notifications, "", "")
	if !strings.Contains(page.body, `data-testid="silence-severity"`) ||
		!strings.Contains(page.body, "You may silence for at most 4 h, problems of severity warning or info") {
		i := strings.Index(page.body, "silence-form")
		t.Errorf("the silence form offers no severity, or does not say the bound: %s", page.body[max(0, i-100):min(len(page.body), i+3000)])
	}
}
