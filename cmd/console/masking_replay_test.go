package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/waittest"
	"github.com/redrive/redrive/paths"
)

// A replay plan's filters match what its planner may see, as a search's do: an operator, who sees
// the card number and the exception type masked, learns nothing of them from what a plan selects —
// a right guess is answered as a wrong one, whole or one character at a time. An admin who reveals
// the content (audited) plans on it. An edit and retry's diff hides a header quoting the masked
// card, which only the whole record tells, from everyone the plan and the audit log are shown to.
func TestMaskedReplayPlansKafka(t *testing.T) {
	k := startKafka(t, map[string]int32{"orders": 1, "orders.DLT": 1})
	ctx := waittest.Context(t, 2*time.Minute)
	cl := kfaketest.Client(t, k.Cluster())
	mustDo(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "orders.DLT", Key: []byte("order-0"),
		Value: fmt.Appendf(nil, `{"messageId":"order-0","card":{"number":%q}}`, secretCard),
		Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.SecretFraudRuleException")},
			{Key: "kafka_dlt-exception-message", Value: []byte("card " + secretCard + " declined")}}}).FirstErr())
	base := startConsole(t, basicAuth("")+fmt.Sprintf(`
store: {dsn: %q}
kafka: [{name: main, brokers: [%q]}]
redaction: {json_paths: ["$.card.number"], headers: ["kafka_dlt-exception-fqcn"]}
`, pgtest.NewDatabase(t), k.Addrs()[0]))
	const selection = `"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","partition":0,"from_offset":0,"to_offset":0}`
	plan := func(token, query, filter string) response {
		t.Helper()
		return bearer(t, "POST", base+paths.APIPlanReplay+query, token, `{`+selection+`,"filter":`+filter+`}`)
	}

	t.Run("filters", func(t *testing.T) {
		for _, c := range []struct{ name, right, wrong string }{
			{"cel equals", fmt.Sprintf(`{"cel":"value.card.number == \"%s\""}`, secretCard), `{"cel":"value.card.number == \"4111111111111111\""}`},
			{"cel one character", `{"cel":"value.card.number.startsWith(\"4\")"}`, `{"cel":"value.card.number.startsWith(\"9\")"}`},
			{"cel header quoting it", `{"cel":"headers[\"kafka_dlt-exception-message\"].contains(\"4000\")"}`,
				`{"cel":"headers[\"kafka_dlt-exception-message\"].contains(\"4111\")"}`},
			{"cel exception type", `{"cel":"dead_letter.exception_type.contains(\"Fraud\")"}`, `{"cel":"dead_letter.exception_type.contains(\"Timeout\")"}`},
			{"exception type", `{"exception_type":"com.acme.SecretFraudRuleException"}`, `{"exception_type":"com.acme.OtherException"}`},
			{"exception type's simple name", `{"exception_type":"SecretFraudRuleException"}`, `{"exception_type":"OtherException"}`},
		} {
			right, wrong := plan("tok-operator", "", c.right), plan("tok-operator", "", c.wrong)
			if !sameAnswer(right, wrong) {
				t.Errorf("%s: the masked value guessed right is answered %d %s, guessed wrong %d %s", c.name,
					right.status, right.body, wrong.status, wrong.body)
			}
			if wrong.status != http.StatusBadRequest || !strings.Contains(wrong.body, "holds no messages") {
				t.Errorf("%s: a wrong guess: %d %s", c.name, wrong.status, wrong.body)
			}
			// An admin sees content masked too, unless they reveal it: then the filter reads it.
			if r := plan("tok-admin", "", c.right); r.status != http.StatusBadRequest {
				t.Errorf("%s: an admin's plan without reveal matched masked content: %d %s", c.name, r.status, r.body)
			}
			if r := plan("tok-admin", "?reveal=true", c.right); r.status != http.StatusOK || !strings.Contains(r.body, `"total":1`) {
				t.Errorf("%s: an admin who reveals: %d %s", c.name, r.status, r.body)
			}
			if r := plan("tok-admin", "?reveal=true", c.wrong); r.status != http.StatusBadRequest {
				t.Errorf("%s: an admin who reveals, guessing wrong: %d %s", c.name, r.status, r.body)
			}
		}
		// What the operator sees is matched: the filters still work on content in clear.
		for _, f := range []string{`{"cel":"value.messageId == \"order-0\" && key == \"order-0\""}`,
			`{"cel":"headers[\"kafka_dlt-original-topic\"] == \"orders\""}`, `{"original_topic":"orders"}`} {
			if r := plan("tok-operator", "", f); r.status != http.StatusOK || !strings.Contains(r.body, `"total":1`) {
				t.Errorf("filter %s on content in clear: %d %s", f, r.status, r.body)
			}
		}
		if r := plan("tok-operator", "?reveal=true", `{}`); r.status != http.StatusForbidden {
			t.Errorf("an operator's reveal: %d %s", r.status, r.body)
		}
	})

	t.Run("edit diff", func(t *testing.T) {
		r := bearer(t, "POST", base+paths.APIPlanReplay, "tok-operator", `{"edit":{"drop_headers":["kafka_dlt-exception-message"],`+
			`"set_headers":{"x-note":"retried after the fix"}},"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":[{"partition":0,"offset":0}]}}`)
		if r.status != http.StatusOK {
			t.Fatalf("plan: %d %s", r.status, r.body)
		}
		planID := decode[struct {
			PlanID string `json:"plan_id"`
		}](t, r).PlanID
		vera, _ := signedIn(t, base, "vera")
		for what, body := range map[string]string{
			"the plan answer (operator)": r.body,
			"the plan API (viewer)":      bearer(t, "GET", base+paths.APIReplayPlan(planID), "tok-viewer", "").body,
			"the plan page (viewer)":     do(t, vera, "GET", base+paths.ReplayPlan(planID), "", "").body,
			"the plan's audit (viewer)":  auditOf(t, base, "replay-plan/"+planID),
		} {
			if strings.Contains(body, secretCard) || strings.Contains(body, "SecretFraud") {
				t.Errorf("%s shows masked content: %s", what, body)
			}
		}
		// The diff still says what changes: the dropped header (its value hidden) and the set one.
		if !strings.Contains(r.body, "kafka_dlt-exception-message") || !strings.Contains(r.body, "retried after the fix") {
			t.Errorf("the plan's diff lost what it changes: %s", r.body)
		}
	})
}

// A masked RabbitMQ message id shows nowhere a plan or a job is shown: not in a plan item's
// locator (which names the message by id), not in a job's ledger, not in the audit log; a plan's
// message_ids filter and an edit's "holds N messages with that id" do not confirm it. An admin
// who reveals sees it.
func TestMaskedRabbitIDsInPlansAndJobs(t *testing.T) {
	ctx := waittest.Context(t, 2*time.Minute)
	const secretID, otherID = "alice.smith@example.com", "carol.jones@example.com"
	vhost, _, _ := deadLetteredOrders(t, ctx, 3, func(i int) amqp.Publishing {
		m := amqp.Publishing{MessageId: secretID, ContentType: "application/json", DeliveryMode: amqp.Persistent,
			Body: fmt.Appendf(nil, `{"orderId":"o-%d"}`, i)}
		if i == 2 { // a header quoting the masked id: its page hides it
			m.MessageId, m.Headers = otherID, amqp.Table{"x-note": "sent for " + otherID}
		}
		return m
	})
	cfg := rabbittest.Config(t, vhost)
	base := startConsole(t, basicAuth("")+fmt.Sprintf(`
store: {dsn: %q}
rabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]
redaction: {headers: [message_id]}
`, pgtest.NewDatabase(t), string(cfg.URL), cfg.ManagementURL, vhost))
	source := fmt.Sprintf(`"source":{"kind":"rabbitmq","broker":"main","vhost":%q,"queue":"orders.dlq","limit":10}`, vhost)
	vera, _ := signedIn(t, base, "vera")
	leaks := func(body string) bool {
		return strings.Contains(body, "alice.smith") || strings.Contains(body, "carol.jones")
	}

	// The filters: naming the masked id is answered as naming another.
	for _, c := range []struct{ name, right, wrong string }{
		{"message_ids", fmt.Sprintf(`{%s,"filter":{"message_ids":[%q]}}`, source, secretID), fmt.Sprintf(`{%s,"filter":{"message_ids":["bob@example.com"]}}`, source)},
		{"cel", fmt.Sprintf(`{%s,"filter":{"cel":"properties.message_id.startsWith(\"a\")"}}`, source),
			fmt.Sprintf(`{%s,"filter":{"cel":"properties.message_id.startsWith(\"b\")"}}`, source)},
		{"edit's one id", fmt.Sprintf(`{%s,"edit":{"set_headers":{"x-note":"retried"}},"filter":{"message_ids":[%q]}}`, source, secretID),
			fmt.Sprintf(`{%s,"edit":{"set_headers":{"x-note":"retried"}},"filter":{"message_ids":["bob@example.com"]}}`, source)},
	} {
		right := bearer(t, "POST", base+paths.APIPlanReplay, "tok-operator", c.right)
		wrong := bearer(t, "POST", base+paths.APIPlanReplay, "tok-operator", c.wrong)
		if !sameAnswer(right, wrong) {
			t.Errorf("%s: the masked id guessed right is answered %d %s, guessed wrong %d %s", c.name, right.status, right.body, wrong.status, wrong.body)
		}
	}

	// An admin who reveals edits the message by its id; the diff shown to anyone else hides the
	// header quoting it, as the message's page does.
	r := bearer(t, "POST", base+paths.APIPlanReplay+"?reveal=true", "tok-admin",
		fmt.Sprintf(`{%s,"edit":{"drop_headers":["x-note"]},"filter":{"message_ids":[%q]}}`, source, otherID))
	if r.status != http.StatusOK || !strings.Contains(r.body, "sent for "+otherID) {
		t.Fatalf("the admin's edit (revealed): %d %s", r.status, r.body)
	}
	editPlan := decode[struct {
		PlanID string `json:"plan_id"`
	}](t, r).PlanID
	if v := bearer(t, "GET", base+paths.APIReplayPlan(editPlan), "tok-viewer", ""); leaks(v.body) || !strings.Contains(v.body, "x-note") {
		t.Errorf("the edit's plan API (viewer): %s", v.body)
	}
	if page := do(t, vera, "GET", base+paths.ReplayPlan(editPlan), "", ""); leaks(page.body) {
		t.Errorf("the edit's plan page (viewer) holds the masked message id")
	}

	r = bearer(t, "POST", base+paths.APIPlanReplay, "tok-operator", "{"+source+"}")
	if r.status != http.StatusOK || !strings.Contains(r.body, `"total":3`) {
		t.Fatalf("plan: %d %s", r.status, r.body)
	}
	planID := decode[struct {
		PlanID string `json:"plan_id"`
	}](t, r).PlanID
	if leaks(r.body) {
		t.Errorf("the plan answer (operator) holds the masked message id: %s", r.body)
	}
	if !strings.Contains(r.body, "/orders.dlq/••• redacted •••~") {
		t.Errorf("the plan's locators do not say where the masked id stands: %s", r.body)
	}
	if v := bearer(t, "GET", base+paths.APIReplayPlan(planID), "tok-viewer", ""); leaks(v.body) {
		t.Errorf("the plan API (viewer) holds the masked message id: %s", v.body)
	}
	if page := do(t, vera, "GET", base+paths.ReplayPlan(planID), "", ""); leaks(page.body) {
		t.Errorf("the plan page (viewer) holds the masked message id")
	}

	r = bearer(t, "POST", base+paths.APIReplays, "tok-operator", fmt.Sprintf(`{"plan_id":%q,"reason":"masking test"}`, planID))
	job := decode[struct{ ID string }](t, r).ID
	waittest.Until(t, 30*time.Second, "job done", func() bool {
		return strings.Contains(bearer(t, "GET", base+paths.APIReplay(job), "tok-viewer", "").body, `"status":"done"`)
	})
	page := do(t, vera, "GET", base+paths.Replay(job), "", "")
	if leaks(page.body) {
		t.Errorf("the job page (viewer) holds the masked message id")
	}
	if !strings.Contains(page.body, "••• redacted •••") {
		t.Errorf("the job page shows no ledger row masked: %s", page.body)
	}
	if a := auditOf(t, base, "replay-plan/"+planID) + auditOf(t, base, "replay/"+job); leaks(a) {
		t.Errorf("the audit log (viewer) holds the masked message id: %s", a)
	}
	// (The admin's edit's audit row records its filter as typed, the id it names included:
	// ops/redact's AuditDetail masks an edit's diff, not a filter.)
	if a := auditOf(t, base, "replay-plan/"+editPlan); strings.Contains(a, "sent for") {
		t.Errorf("the edit's audit (viewer) shows the header quoting the masked id: %s", a)
	}
	if v := bearer(t, "GET", base+paths.APIReplay(job), "tok-viewer", ""); leaks(v.body) {
		t.Errorf("the job API (viewer) holds the masked message id: %s", v.body)
	}

	// An admin who reveals sees the ids (audited); one who does not, does not; no one else may.
	ada, _ := signedIn(t, base, "ada")
	revealed := func(body string) bool { return strings.Contains(strings.ReplaceAll(body, "&#64;", "@"), secretID) }
	for what, u := range map[string]string{"plan page": base + paths.ReplayPlan(planID), "job page": base + paths.Replay(job)} {
		if page := do(t, ada, "GET", u+"?reveal=true", "", ""); page.status != http.StatusOK || !revealed(page.body) {
			t.Errorf("the %s (admin, revealed): %d", what, page.status)
		}
		if page := do(t, ada, "GET", u, "", ""); leaks(page.body) {
			t.Errorf("the %s (admin, not revealed) holds the masked message id", what)
		}
		if page := do(t, vera, "GET", u+"?reveal=true", "", ""); page.status != http.StatusForbidden || leaks(page.body) {
			t.Errorf("the %s (viewer, reveal): %d", what, page.status)
		}
	}
	if r := bearer(t, "GET", base+paths.APIAudit+"?limit=100", "tok-viewer", ""); !strings.Contains(r.body, `"target":"replay/`+job+`"`) {
		t.Errorf("the admin's reveal of the job page is not in the audit log: %s", r.body)
	}
}

// sameAnswer reports whether two API answers say the same (their request ids aside).
func sameAnswer(a, b response) bool {
	type answer struct {
		Error struct{ Code, Message string }
		Total int
	}
	var x, y answer
	_ = json.Unmarshal([]byte(a.body), &x)
	_ = json.Unmarshal([]byte(b.body), &y)
	return a.status == b.status && x == y
}

// auditOf is what a viewer reads in the audit log of target.
func auditOf(t *testing.T, base, target string) string {
	t.Helper()
	r := bearer(t, "GET", base+paths.APIAudit+"?limit=500", "tok-viewer", "")
	var page struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal([]byte(r.body), &page); err != nil {
		t.Fatalf("audit: %d %s", r.status, r.body)
	}
	var out []string
	for _, e := range page.Entries {
		if strings.Contains(string(e), `"target":"`+target+`"`) {
			out = append(out, string(e))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no audit entry of %s", target)
	}
	return strings.Join(out, "\n")
}
