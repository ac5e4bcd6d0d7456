package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/cmd/internal/demo"
	"github.com/redrive/redrive/cmd/internal/devstack"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/paths"
)

// slashVhost creates a vhost for this test whose name holds a "/" (so every URL must carry it as
// %2F), deleted at cleanup, and returns it with an AMQP URL for it.
func slashVhost(t *testing.T) (vhost, vhostURL string) {
	t.Helper()
	mgmt := rabbittest.Admin(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	vhost = "shop/e2e-" + hex.EncodeToString(b)
	if _, err := mgmt.PutVhost(vhost, rabbithole.VhostSettings{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = mgmt.DeleteVhost(vhost) })
	if _, err := mgmt.UpdatePermissionsIn(vhost, mgmt.Username, rabbithole.Permissions{Configure: ".*", Write: ".*", Read: ".*"}); err != nil {
		t.Fatal(err)
	}
	base, _ := rabbittest.Env(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path, u.RawPath = "/"+vhost, "/"+url.PathEscape(vhost)
	return vhost, u.String()
}

// rabbitConsole seeds the demo's RabbitMQ topology (with its live traffic) into a fresh vhost and
// serves a console that watches it, sampling every 2 s.
func rabbitConsole(t *testing.T) (base, vhost, vhostURL string) {
	t.Helper()
	vhost, vhostURL = demoVhost(t)
	amqpURL, mgmtURL := rabbittest.Env(t)
	base = startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
sampler: {interval: 2s}
rabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]
`, pgtest.NewDatabase(t), amqpURL, mgmtURL, vhost))
	return base, vhost, vhostURL
}

// demoVhost seeds the demo's RabbitMQ topology, with its live traffic, into a fresh vhost (a name
// with a slash) and waits until the management API shows the seeded DLQ: its statistics trail the
// broker. The traffic stops before the vhost goes.
func demoVhost(t *testing.T) (vhost, vhostURL string) {
	t.Helper()
	vhost, vhostURL = slashVhost(t)
	_, mgmtURL := rabbittest.Env(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := demo.SeedRabbit(ctx, vhostURL, mgmtURL); err != nil {
		t.Fatal(err)
	}
	waitMgmt(t, vhost, "orders.dlq", 62)
	return vhost, vhostURL
}

// fullConfig configures a console over every kind of source, sampling every 2 s: the outbox
// orders (also the inventory service's inbox), the Kafka cluster at kafkaAddr and the RabbitMQ
// vhost, in a fresh store.
func fullConfig(t *testing.T, kafkaAddr, orders, vhost string) string {
	t.Helper()
	amqpURL, mgmtURL := rabbittest.Env(t)
	return fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
sampler: {interval: 2s}
outboxes: [{name: orders, dsn: %q}]
kafka: [{name: main, brokers: [%q]}]
rabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]
consumers:
  - name: inventory-service
    inbox: {dsn: %q}
    kafka: {cluster: main, group: inventory-service, topics: [orders]}
`, pgtest.NewDatabase(t), orders, kafkaAddr, amqpURL, mgmtURL, vhost, orders)
}

func waitMgmt(t *testing.T, vhost, queue string, atLeast int) {
	t.Helper()
	mgmt := rabbittest.Admin(t)
	rabbittest.WaitFor(t, 20*time.Second, fmt.Sprintf("%d messages in %s in the management API", atLeast, queue), func(context.Context) bool {
		q, err := mgmt.GetQueue(vhost, queue)
		return err == nil && q.Messages >= atLeast
	})
}

func queuePath(vhost, queue string) string {
	return "/api/v1/rabbitmq/main/queues/" + url.PathEscape(vhost) + "/" + url.PathEscape(queue)
}

type apiQueue struct {
	Vhost                string  `json:"vhost"`
	Name                 string  `json:"name"`
	Type                 string  `json:"type"`
	State                string  `json:"state"`
	Ready                int64   `json:"ready"`
	Unacked              int64   `json:"unacked"`
	Consumers            int64   `json:"consumers"`
	PublishRate          float64 `json:"publish_rate"`
	DeliverRate          float64 `json:"deliver_rate"`
	AckRate              float64 `json:"ack_rate"`
	RedeliverRate        float64 `json:"redeliver_rate"`
	DeadLetterExchange   string  `json:"dead_letter_exchange"`
	DeadLetterRoutingKey string  `json:"dead_letter_routing_key"`
	DeadLetterSource     string  `json:"dead_letter_source"`
	IsDeadLetterQueue    bool    `json:"is_dead_letter_queue"`
	IsRetryQueue         bool    `json:"is_retry_queue"`
	DeliveryLimit        *int64  `json:"delivery_limit"`
	// StatsNotReported says why the counts and rates are null (a queue's first seconds).
	StatsNotReported string `json:"stats_not_reported"`
}

// apiQueues is GET /api/v1/rabbitmq/{broker}/queues as a test reads it.
type apiQueues struct {
	SampledAt *time.Time `json:"sampled_at"`
	Error     string     `json:"error"`
	Queues    []apiQueue `json:"queues"`
}

func TestRabbitAPI(t *testing.T) {
	base, vhost, _ := rabbitConsole(t)

	t.Run("Queues", func(t *testing.T) {
		r := do(t, nil, "GET", base+"/api/v1/rabbitmq/main/queues", "", "")
		raw := decode[struct {
			Queues []map[string]any `json:"queues"`
		}](t, r)
		if r.status != 200 || len(raw.Queues) != 9 {
			t.Fatalf("%d, %d queues: %s", r.status, len(raw.Queues), r.body)
		}
		for _, q := range raw.Queues {
			for _, k := range []string{"vhost", "name", "type", "state", "ready", "unacked", "consumers", "publish_rate",
				"deliver_rate", "ack_rate", "redeliver_rate", "dead_letter_exchange", "dead_letter_routing_key", "is_dead_letter_queue"} {
				if _, ok := q[k]; !ok {
					t.Fatalf("queue lacks %q: %v", k, q)
				}
			}
		}
		v := decode[apiQueues](t, r)
		byName := map[string]apiQueue{}
		for _, q := range v.Queues {
			byName[q.Name] = q
			if q.Vhost != vhost {
				t.Errorf("%s in vhost %q, want %q", q.Name, q.Vhost, vhost)
			}
		}
		if q := byName["orders.dlq"]; !q.IsDeadLetterQueue || q.Ready < 62 {
			t.Errorf("orders.dlq = %+v", q)
		}
		if q := byName["orders.work"]; q.DeadLetterExchange != "orders.dlx" || q.IsDeadLetterQueue || q.DeadLetterSource != "argument" {
			t.Errorf("orders.work = %+v", q)
		}
		if q := byName["audit.events"]; q.DeadLetterExchange != "audit.dlx" || q.DeadLetterSource != "policy" {
			t.Errorf("audit.events = %+v, want its DLX from the policy", q)
		}
		if q := byName["payments.retry"]; !q.IsRetryQueue || q.IsDeadLetterQueue || q.DeadLetterRoutingKey != "payments.work" {
			t.Errorf("payments.retry = %+v", q)
		}
		if q := byName["invoices"]; q.Type != "quorum" || q.DeliveryLimit == nil || *q.DeliveryLimit != 3 {
			t.Errorf("invoices = %+v", q)
		}
		if q := byName["audit.dlq"]; !q.IsDeadLetterQueue {
			t.Errorf("audit.dlq = %+v", q)
		}
	})

	t.Run("OneQueueEscapedVhost", func(t *testing.T) {
		p := queuePath(vhost, "orders.dlq")
		if !strings.Contains(p, "shop%2Fe2e-") {
			t.Fatalf("path %s does not escape the vhost", p)
		}
		r := do(t, nil, "GET", base+p, "", "")
		v := decode[struct {
			apiQueue
			From []string `json:"dead_letters_from"`
		}](t, r)
		if r.status != 200 || v.Name != "orders.dlq" || v.Vhost != vhost || strings.Join(v.From, ",") != "invoices,orders.reminders,orders.work" {
			t.Fatalf("%d %s", r.status, r.body)
		}
		r = do(t, nil, "GET", base+queuePath(vhost, "payments.work"), "", "")
		w := decode[struct {
			From []string `json:"dead_letters_from"`
			To   struct {
				ToQueues []string `json:"to_queues"`
			} `json:"dead_letters_to"`
		}](t, r)
		if strings.Join(w.From, ",") != "payments.retry" || strings.Join(w.To.ToQueues, ",") != "payments.retry" {
			t.Errorf("payments.work: %s", r.body)
		}
	})

	t.Run("History", func(t *testing.T) {
		var points []map[string]any
		rabbittest.WaitFor(t, 20*time.Second, "two history points", func(context.Context) bool {
			r := do(t, nil, "GET", base+queuePath(vhost, "orders.dlq")+"/history?since=1h", "", "")
			points = decode[struct {
				Points []map[string]any `json:"points"`
			}](t, r).Points
			return r.status == 200 && len(points) >= 2
		})
		for _, k := range []string{"at", "ready", "unacked"} {
			if _, ok := points[0][k]; !ok {
				t.Fatalf("point lacks %q: %v", k, points[0])
			}
		}
		if points[0]["ready"].(float64) < 62 {
			t.Errorf("first point %v", points[0])
		}
	})

	t.Run("Messages", func(t *testing.T) {
		r := do(t, nil, "GET", base+queuePath(vhost, "orders.dlq")+"/messages?limit=50", "", "")
		v := decode[struct {
			Notes       []string         `json:"notes"`
			Redelivered bool             `json:"redelivered"`
			Messages    []map[string]any `json:"messages"`
			Groups      []struct {
				Reason           string `json:"reason"`
				ExceptionMessage string `json:"exception_message"`
				Count            int    `json:"count"`
			} `json:"error_groups"`
		}](t, r)
		if r.status != 200 || len(v.Messages) != 50 || !v.Redelivered || v.Notes == nil {
			t.Fatalf("%d: %d messages: %.500s", r.status, len(v.Messages), r.body)
		}
		for _, m := range v.Messages {
			for _, k := range []string{"position", "message_id", "exchange", "routing_key", "redelivered", "properties", "headers",
				"body", "body_encoding", "dead_letter"} {
				if _, ok := m[k]; !ok {
					t.Fatalf("message lacks %q: %v", k, m)
				}
			}
			dl := m["dead_letter"].(map[string]any)
			for _, k := range []string{"reason", "count", "original_queue", "original_exchange", "original_routing_keys", "first_death_at", "exception_message"} {
				if _, ok := dl[k]; !ok {
					t.Fatalf("dead_letter lacks %q: %v", k, dl)
				}
			}
		}
		first := v.Messages[0]
		dl := first["dead_letter"].(map[string]any)
		if first["position"].(float64) != 0 || first["message_id"] != "evt-000007" || dl["reason"] != "rejected" || dl["count"].(float64) != 1 ||
			dl["original_queue"] != "orders.work" || dl["original_exchange"] != "orders" || fmt.Sprint(dl["original_routing_keys"]) != "[order.created]" ||
			!strings.Contains(dl["exception_message"].(string), "NullPointerException") || first["body_encoding"] != "json" {
			t.Errorf("first message: %v", first)
		}
		if third := v.Messages[2]; third["message_id"] != "evt-000029" || third["properties"].(map[string]any)["message_id"] != "" {
			t.Errorf("third message: its id comes from the body: %v", third)
		}
		if len(v.Groups) != 4 || v.Groups[0].Count != 15 || v.Groups[0].Reason != "rejected" || v.Groups[0].ExceptionMessage != "" {
			t.Errorf("groups: %+v", v.Groups)
		}

		// The expired reminders further down, and a filter.
		r = do(t, nil, "GET", base+queuePath(vhost, "orders.dlq")+"/messages?limit=62&reason=expired", "", "")
		e := decode[struct {
			Messages []struct {
				DeadLetter struct {
					Reason        string   `json:"reason"`
					OriginalQueue string   `json:"original_queue"`
					Keys          []string `json:"original_routing_keys"`
				} `json:"dead_letter"`
			} `json:"messages"`
		}](t, r)
		if len(e.Messages) != 12 || e.Messages[0].DeadLetter.OriginalQueue != "orders.reminders" || strings.Join(e.Messages[0].DeadLetter.Keys, ",") != "reminder.due" {
			t.Errorf("expired: %d messages, %.300s", len(e.Messages), r.body)
		}
	})

	// Each error group the browse shows is what a plan filtered by its key selects, and ?group=
	// shows just those messages: one error-group key for the page, the API and the plan.
	t.Run("GroupsAreWhatAPlanSelects", func(t *testing.T) {
		type group struct {
			Reason string `json:"reason"`
			Key    string `json:"key"`
			Count  int    `json:"count"`
		}
		r := do(t, nil, "GET", base+queuePath(vhost, "orders.dlq")+"/messages?limit=62", "", "")
		v := decode[struct {
			Groups []group `json:"error_groups"`
		}](t, r)
		keyed := 0
		for _, g := range v.Groups {
			if g.Key == "" {
				continue
			}
			keyed++
			q := url.Values{"limit": {"62"}, "reason": {g.Reason}, "group": {g.Key}}
			r := do(t, nil, "GET", base+queuePath(vhost, "orders.dlq")+"/messages?"+q.Encode(), "", "")
			shown := decode[struct {
				Messages []json.RawMessage `json:"messages"`
			}](t, r)
			body, _ := json.Marshal(map[string]any{
				"source": map[string]any{"kind": "rabbitmq", "broker": "main", "vhost": vhost, "queue": "orders.dlq", "limit": 62},
				"filter": map[string]any{"reason": g.Reason, "exception_type": g.Key}})
			r = do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json", string(body))
			plan := decode[struct {
				Total int `json:"total"`
			}](t, r)
			if len(shown.Messages) != g.Count || plan.Total != g.Count {
				t.Errorf("group %+v: ?group= shows %d, a plan by its key selects %d", g, len(shown.Messages), plan.Total)
			}
		}
		if keyed == 0 {
			t.Fatalf("no group with an exception: %+v", v.Groups)
		}
	})

	bad := []struct {
		name, path string
		status     int
		mentions   string
	}{
		{"UnknownBroker", "/api/v1/rabbitmq/nope/queues", 404, "nope"},
		{"UnknownBrokerQueue", "/api/v1/rabbitmq/nope/queues/%2F/q", 404, "nope"},
		{"UnknownVhost", "/api/v1/rabbitmq/main/queues/nope/orders.dlq", 404, "nope"},
		{"UnknownQueue", queuePath(vhost, "nope"), 404, "nope"},
		{"UnknownQueueHistory", queuePath(vhost, "nope") + "/history", 404, "nope"},
		{"UnknownQueueMessages", queuePath(vhost, "nope") + "/messages", 404, "nope"},
		{"UnknownVhostMessages", "/api/v1/rabbitmq/main/queues/nope/orders.dlq/messages", 404, "nope"},
		{"LimitZero", queuePath(vhost, "orders.dlq") + "/messages?limit=0", 400, "limit"},
		{"LimitTooBig", queuePath(vhost, "orders.dlq") + "/messages?limit=501", 400, "limit"},
		{"LimitNotANumber", queuePath(vhost, "orders.dlq") + "/messages?limit=ten", 400, "limit"},
		{"BadSince", queuePath(vhost, "orders.dlq") + "/history?since=yesterday", 400, "since"},
	}
	// invoices is a quorum queue with a delivery limit of 3: RabbitMQ 3.x puts returns at the back,
	// so a browse would read it whole, and it is refused; 4.x puts them back at the head, and a
	// browse costs each message it reads one delivery, which it says.
	if rabbitMajor(t) < 4 {
		bad = append(bad, struct {
			name, path string
			status     int
			mentions   string
		}{"QuorumWithDeliveryLimit", queuePath(vhost, "invoices") + "/messages", 409, "delivery limit"})
	} else {
		t.Run("QuorumWithDeliveryLimit", func(t *testing.T) {
			r := do(t, nil, "GET", base+queuePath(vhost, "invoices")+"/messages?limit=1", "", "")
			if v := decode[browsed](t, r); r.status != 200 || ptrText(v.DeliveryLimit) != "3" || v.DeliveryLimitFrom == "" {
				t.Fatalf("%d %.500s", r.status, r.body)
			}
		})
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, nil, "GET", base+tc.path, "", "")
			if r.status != tc.status || !strings.Contains(strings.ToLower(r.body), strings.ToLower(tc.mentions)) {
				t.Fatalf("%s: %d %s; want %d mentioning %q", tc.path, r.status, r.body, tc.status, tc.mentions)
			}
		})
	}
}

// The default vhost "/" travels as %2F.
func TestRabbitDefaultVhost(t *testing.T) {
	amqpURL, mgmtURL := rabbittest.Env(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	work, dlq := "e2e-"+hex.EncodeToString(b)+".work", "e2e-"+hex.EncodeToString(b)+".dlq"
	for _, q := range []struct {
		name string
		args amqp.Table
	}{{dlq, nil}, {work, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}}} {
		// Not auto-delete: the console refuses to read such a queue (a read's consumer leaving
		// deletes it); the cleanup deletes these.
		if _, err := ch.QueueDeclare(q.name, false, false, false, false, q.args); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = rabbittest.Admin(t).DeleteQueue("/", q.name) })
	}
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
rabbitmq: [{name: main, url: %q, management_url: %q, vhosts: ["/"]}]
`, pgtest.NewDatabase(t), amqpURL, mgmtURL))
	r := do(t, nil, "GET", base+"/api/v1/rabbitmq/main/queues/%2F/"+dlq, "", "")
	v := decode[struct {
		Vhost string   `json:"vhost"`
		DLQ   bool     `json:"is_dead_letter_queue"`
		From  []string `json:"dead_letters_from"`
	}](t, r)
	if r.status != 200 || v.Vhost != "/" || !v.DLQ || strings.Join(v.From, ",") != work {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := do(t, nil, "GET", base+"/api/v1/rabbitmq/main/queues/%2F/"+dlq+"/messages?limit=5", "", ""); r.status != 200 {
		t.Fatalf("browse in /: %d %s", r.status, r.body)
	}
	if r := do(t, nil, "GET", base+"/rabbitmq/main/queues/%2F/"+dlq, "", ""); r.status != 200 || !strings.Contains(r.body, `data-src="/api/v1/rabbitmq/main/queues/%2F/`+dlq+`/history?since=1h"`) {
		t.Fatalf("queue page in /: %d", r.status)
	}
}

func TestRabbitPages(t *testing.T) {
	base, vhost, _ := rabbitConsole(t)
	r := do(t, nil, "GET", base+"/rabbitmq", "", "")
	if r.status != 302 || r.header.Get("Location") != "/rabbitmq/main" {
		t.Fatalf("/rabbitmq with one broker: %d → %q", r.status, r.header.Get("Location"))
	}
	q := "/rabbitmq/main/queues/" + url.PathEscape(vhost)
	// invoices, a quorum queue with a delivery limit of 3: refused on 3.x, browsed at a cost on 4.x.
	invoices := struct {
		status int
		want   []string
	}{409, []string{`data-testid="refused"`, "delivery limit"}}
	if rabbitMajor(t) >= 4 {
		invoices.status, invoices.want = 200, []string{`data-testid="browse-cost"`, "Delivery limit 3"}
	}
	for _, tc := range []struct {
		path   string
		status int
		want   []string
	}{
		{"/rabbitmq/main", 200, []string{`data-testid="queues-table"`, `data-testid="dlq-badge"`, `data-testid="retry-loop"`, `data-testid="edge"`, "payments.retry"}},
		{q + "/orders.dlq", 200, []string{`data-chart`, `data-series="ready,unacked"`, `data-testid="dead-letters-from"`, "orders.reminders"}},
		{q + "/audit.events", 200, []string{`data-testid="dead-letter-settings"`, "policy audit-dead-letters", "audit.dlq"}},
		{q + "/orders.work", 200, []string{"argument x-dead-letter-exchange"}},
		{q + "/orders.dlq/messages?limit=20", 200, []string{`data-testid="message"`, `data-testid="dl-reason"`, "redelivered",
			`data-testid="plan-form"`, `name="kind" value="rabbitmq"`, `data-testid="replay-one"`, `name="message_ids" value="evt-000007"`,
			`name="limit" value="20"`, `data-testid="csrf-field"`, `data-testid="error-group"`}},
		{q + "/orders.dlq/messages?limit=62&exception=Timeout", 200, []string{"ProviderTimeoutException", `value="Timeout"`}},
		{q + "/invoices/messages", invoices.status, invoices.want},
		{q + "/nope", 404, nil},
		{q + "/orders.dlq/messages?limit=0", 400, []string{"limit"}},
		{"/rabbitmq/nope", 404, nil},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := do(t, nil, "GET", base+tc.path, "", "")
			if r.status != tc.status {
				t.Fatalf("%d, want %d", r.status, tc.status)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
		})
	}
	r = do(t, nil, "GET", base+q+"/orders.dlq/messages?limit=62&exception=Timeout", "", "")
	if n := strings.Count(r.body, `data-testid="message"`); n != 12 {
		t.Errorf("%d messages with a timeout exception, want 12", n)
	}
}

// The queue page draws its chart; the DLQ page decodes a dead letter and shows a hostile body as
// text without running it.
func TestBrowserRabbit(t *testing.T) {
	base, vhost, vhostURL := rabbitConsole(t)
	_, ch := rabbittest.Channel(t, vhostURL)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	// A hostile message expires into orders.dlq like the reminders.
	if err := ch.Publish("orders", "reminder.due", false, false, amqp.Publishing{MessageId: "evt-hostile", ContentType: "text/html",
		Headers: amqp.Table{"x-note": hostile}, Body: []byte(hostile)}); err != nil {
		t.Fatal(err)
	}
	rabbittest.WaitFor(t, 20*time.Second, "the hostile message in orders.dlq", func(context.Context) bool {
		r := do(t, nil, "GET", base+queuePath(vhost, "orders.dlq")+"/messages?limit=200", "", "")
		return strings.Contains(r.body, `"message_id":"evt-hostile"`)
	})
	q := base + "/rabbitmq/main/queues/" + url.PathEscape(vhost)
	ctx, dialogs := newBrowser(t)

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/rabbitmq/main"), chromedp.WaitVisible(`[data-testid="queues-table"]`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "rabbitmq-queues")

	rabbittest.WaitFor(t, 20*time.Second, "three history points", func(context.Context) bool {
		r := do(t, nil, "GET", base+queuePath(vhost, "orders.dlq")+"/history?since=1h", "", "")
		return strings.Count(r.body, `"at":`) >= 3
	})
	if err := chromedp.Do(ctx, chromedp.Navigate(q+"/orders.dlq"), chromedp.WaitVisible(`[data-chart] canvas`)); err != nil {
		t.Fatalf("queue chart: %v", err)
	}
	screenshot(t, ctx, "rabbitmq-queue")

	if err := chromedp.Do(ctx, chromedp.Navigate(q+"/orders.dlq/messages?limit=2"), chromedp.WaitVisible(`[data-testid="messages-table"]`),
		chromedp.Click(chromedp.CSS(`[data-testid="expand-message"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"]`))); err != nil {
		t.Fatal(err)
	}
	reason := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="dl-reason"]`)))
	exception := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="dl-exception"]`)))
	dest := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="dl-destination"]`)))
	screenshot(t, ctx, "rabbitmq-dlq")
	if !strings.Contains(reason, "rejected") || !strings.Contains(exception, "NullPointerException") || dest != "exchange orders, routing key order.created" {
		t.Errorf("decoded dead letter: reason %q, exception %q, destination %q", reason, exception, dest)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(q+"/orders.dlq/messages?limit=200"), chromedp.WaitVisible(`[data-testid="messages-table"]`)); err != nil {
		t.Fatal(err)
	}
	bodies := must(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="message-body"] pre')).map(e => e.textContent)`))
	found := false
	for _, b := range bodies {
		found = found || strings.Contains(b, "<script>window.__pwned=1")
	}
	injected := must(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('main script, main img').length`))
	pwned := must(t, ctx, chromedp.Evaluate[bool](`window.__pwned !== undefined`))
	if !found || injected != 0 || pwned || dialogs.Load() != 0 {
		t.Fatalf("hostile body: shown as text %v, injected elements %d, pwned %v, dialogs %d", found, injected, pwned, dialogs.Load())
	}
	// A message's Replay button plans a replay of exactly that message.
	if err := chromedp.Do(ctx, chromedp.Navigate(q+"/orders.dlq/messages?limit=20"), chromedp.Click(chromedp.CSS(`[data-testid="expand-message"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="replay-one"] button`)), chromedp.WaitVisible(`[data-testid="plan-counts"]`)); err != nil {
		t.Fatalf("plan from the Replay button: %v", err)
	}
	if u := must(t, ctx, chromedp.Location()); !strings.Contains(u, "/replays/plans/") {
		t.Errorf("the Replay button led to %s", u)
	}
	planned := must(t, ctx, chromedp.Evaluate[string](`document.querySelector('main').innerText`))
	if !strings.Contains(planned, "evt-000007") {
		t.Errorf("the plan does not list the message:\n%.800s", planned)
	}
	// invoices has a delivery limit of 3: refused on RabbitMQ 3.x, browsed at a cost it states on 4.x.
	if rabbitMajor(t) < 4 {
		if err := chromedp.Do(ctx, chromedp.Navigate(q+"/invoices/messages"), chromedp.WaitVisible(`[data-testid="refused"]`)); err != nil {
			t.Fatal(err)
		}
		screenshot(t, ctx, "rabbitmq-refused")
		return
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(q+"/invoices/messages"), chromedp.WaitVisible(`[data-testid="browse-cost"]`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "rabbitmq-quorum-cost")
}

// The broker page follows the sampler without a reload: a queue declared and filled after the
// page loaded shows up with its depth, and the "updated" time moves; a quorum queue with a
// delivery limit offers no Browse button that leads to a 409 on RabbitMQ 3.x, but the reason, and
// on 4.x a Browse button with what a browse costs.
func TestBrowserLiveNumbersAndBrowseCost(t *testing.T) {
	base, vhost, vhostURL := rabbitConsole(t)
	_, ch := rabbittest.Channel(t, vhostURL)
	ctx, _ := newBrowser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/rabbitmq/main"), chromedp.WaitVisible(`[data-testid="queues-table"]`)); err != nil {
		t.Fatal(err)
	}
	before := must(t, ctx, chromedp.Evaluate[string](`window.__sameDocument = true; document.querySelector('[data-testid="updated"]').getAttribute('datetime')`))
	queuesBefore := must(t, ctx, chromedp.Text(chromedp.CSS(`#broker-stats [data-testid="stat-value"]`)))

	if _, err := ch.QueueDeclare("live.check", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 7; i++ {
		if err := ch.Publish("", "live.check", false, false, amqp.Publishing{Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	var ready string
	rabbittest.WaitFor(t, 45*time.Second, "the new queue's depth on the open page", func(context.Context) bool {
		ready = must(t, ctx, chromedp.Evaluate[string](`(() => { const r = document.querySelector('tr[data-queue="live.check"] td:nth-child(4)');
			return r ? r.textContent.trim() : ""; })()`))
		return ready == "7"
	})
	same := must(t, ctx, chromedp.Evaluate[bool](`window.__sameDocument === true`))
	after := must(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="updated"]').getAttribute('datetime')`))
	queuesAfter := must(t, ctx, chromedp.Text(chromedp.CSS(`#broker-stats [data-testid="stat-value"]`)))
	screenshot(t, ctx, "rabbitmq-queues-live")
	if !same || after <= before || queuesAfter == queuesBefore {
		t.Errorf("live page: same document %v, updated %s → %s, queues %s → %s", same, before, after, queuesBefore, queuesAfter)
	}

	q := base + "/rabbitmq/main/queues/" + strings.ReplaceAll(vhost, "/", "%2F")
	if rabbitMajor(t) < 4 {
		if err := chromedp.Do(ctx, chromedp.Navigate(q+"/invoices"), chromedp.WaitVisible(`[data-testid="browse-refused"]`)); err != nil {
			t.Fatal(err)
		}
		why := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="browse-refused"]`)))
		links, buttons := countOf(t, ctx, `[data-testid="browse-link"]`), countOf(t, ctx, `main button[disabled]`)
		screenshot(t, ctx, "rabbitmq-quorum-browse-refused")
		if links != 0 || buttons != 0 || !strings.Contains(why, "delivery limit of 3") {
			t.Errorf("invoices on 3.x: %d browse links, %d disabled buttons, reason %q", links, buttons, why)
		}
	} else {
		if err := chromedp.Do(ctx, chromedp.Navigate(q+"/invoices"), chromedp.WaitVisible(`[data-testid="browse-cost"]`)); err != nil {
			t.Fatal(err)
		}
		cost := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="browse-cost"]`)))
		links := countOf(t, ctx, `[data-testid="browse-link"]`)
		screenshot(t, ctx, "rabbitmq-quorum-browse-cost")
		if links != 1 || !strings.Contains(cost, "one of its 3 deliveries") {
			t.Errorf("invoices on 4.x: %d browse links, cost %q", links, cost)
		}
	}
	// A dead-letter queue shows its inflow; its breadcrumb names the vhost only when it is not "/".
	if err := chromedp.Do(ctx, chromedp.Navigate(q+"/orders.dlq"), chromedp.WaitVisible(`#queue-stats`)); err != nil {
		t.Fatal(err)
	}
	stats := must(t, ctx, chromedp.Text(chromedp.CSS(`#queue-stats`)))
	crumbs := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="breadcrumbs"]`)))
	screenshot(t, ctx, "rabbitmq-dlq-queue")
	if !strings.Contains(stats, "INFLOW") && !strings.Contains(stats, "Inflow") || strings.Contains(crumbs, "/ ·") {
		t.Errorf("DLQ page: stats %q, breadcrumbs %q", stats, crumbs)
	}
}

// Killing RabbitMQ under a running console shows the error in the RabbitMQ panels and /readyz,
// keeps the last good sample and the rest of the console, and recovers when the broker returns.
func TestRabbitDownAndBack(t *testing.T) {
	ctx := context.Background()
	rmq, err := devstack.StartRabbitMQ(ctx, devstack.RabbitOptions{Dir: filepath.Join(t.TempDir(), "rabbitmq")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rmq.Stop(context.Background()) })
	seedCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	if err := demo.SeedRabbit(seedCtx, rmq.URL(), rmq.ManagementURL()); err != nil {
		t.Fatal(err)
	}
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
sampler: {interval: 1s}
rabbitmq: [{name: main, url: %q, management_url: %q}]
`, pgtest.NewDatabase(t), rmq.URL(), rmq.ManagementURL()))

	r := do(t, nil, "GET", base+"/api/v1/rabbitmq/main/queues", "", "")
	before := decode[apiQueues](t, r)
	if r.status != 200 || before.Error != "" || len(before.Queues) != 9 {
		t.Fatalf("before: %d %.300s", r.status, r.body)
	}
	if r := do(t, nil, "GET", base+"/readyz", "", ""); r.status != 200 {
		t.Fatalf("readyz before: %d %s", r.status, r.body)
	}

	if err := rmq.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	r = do(t, nil, "GET", base+"/readyz", "", "")
	if r.status != 503 || !strings.Contains(r.body, `"name":"rabbitmq/main","ok":false`) || !strings.Contains(r.body, `"name":"store","ok":true`) {
		t.Fatalf("readyz with RabbitMQ down: %d %s", r.status, r.body)
	}
	var down apiQueues
	rabbittest.WaitFor(t, 20*time.Second, "a failed sample", func(context.Context) bool {
		down = decode[apiQueues](t, do(t, nil, "GET", base+"/api/v1/rabbitmq/main/queues", "", ""))
		return down.Error != ""
	})
	if len(down.Queues) != 9 || down.SampledAt == nil {
		t.Errorf("the last good sample must stay: %d queues, sampled at %v", len(down.Queues), down.SampledAt)
	}
	r = do(t, nil, "GET", base+"/rabbitmq/main", "", "")
	if r.status != 200 || !strings.Contains(r.body, `data-testid="sample-error"`) || !strings.Contains(r.body, `data-testid="queues-table"`) {
		t.Fatalf("broker page with RabbitMQ down: %d", r.status)
	}
	r = do(t, nil, "GET", base+"/rabbitmq/main/queues/%2F/orders.dlq/messages", "", "")
	if r.status != 200 || !strings.Contains(r.body, `data-testid="error-panel"`) {
		t.Fatalf("browser page with RabbitMQ down: %d", r.status)
	}
	if r := do(t, nil, "GET", base+"/api/v1/rabbitmq/main/queues/%2F/orders.dlq/messages", "", ""); r.status != 503 {
		t.Fatalf("browse API with RabbitMQ down: %d %s", r.status, r.body)
	}
	for _, p := range []string{"/audit", "/", "/rabbitmq/main/queues/%2F/orders.dlq"} {
		if r := do(t, nil, "GET", base+p, "", ""); r.status != 200 {
			t.Errorf("%s with RabbitMQ down: %d", p, r.status)
		}
	}

	if err := rmq.Start(ctx); err != nil {
		t.Fatal(err)
	}
	rabbittest.WaitFor(t, 30*time.Second, "recovery", func(context.Context) bool {
		if do(t, nil, "GET", base+"/readyz", "", "").status != 200 {
			return false
		}
		v := decode[apiQueues](t, do(t, nil, "GET", base+"/api/v1/rabbitmq/main/queues", "", ""))
		return v.Error == "" && v.SampledAt != nil && v.SampledAt.After(*down.SampledAt)
	})
	r = do(t, nil, "GET", base+"/api/v1/rabbitmq/main/queues/%2F/orders.dlq/messages?limit=5", "", "")
	if r.status != 200 || !strings.Contains(r.body, `"reason":"rejected"`) {
		t.Fatalf("browse after recovery: %d %.300s", r.status, r.body)
	}
}

// A copy of a message a job replayed, back in its DLQ (a broker that lost the job's acks): the
// browse names the job on its row and says above the list how many there are and what to do; a
// plan of the queue then drops them and publishes only the fresh dead letter.
func TestRabbitReplayedCopiesPointedOut(t *testing.T) {
	vhost, vhostURL, _ := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, vhostURL)
	rabbittest.Topology{TB: t, Ch: ch}.Orders("orders.work", "order.created")
	amqpURL, mgmtURL := rabbittest.Env(t)
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
rabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]
`, pgtest.NewDatabase(t), amqpURL, mgmtURL, vhost))
	death := []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "orders.work", "exchange": "orders",
		"routing-keys": []any{"order.created"}, "time": time.Now().UTC().Truncate(time.Second)}}
	put := func(id string) {
		t.Helper()
		if err := ch.PublishWithContext(context.Background(), "", "orders.dlq", false, false, amqp.Publishing{MessageId: id,
			DeliveryMode: amqp.Persistent, Headers: amqp.Table{"x-death": death}, Body: []byte(`{"id":"` + id + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	plan := func(limit int) (id string, actions map[string]int) {
		t.Helper()
		r := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json",
			fmt.Sprintf(`{"source":{"kind":"rabbitmq","broker":"main","vhost":%q,"queue":"orders.dlq","limit":%d}}`, vhost, limit))
		p := decode[struct {
			PlanID  string         `json:"plan_id"`
			Actions map[string]int `json:"actions"`
		}](t, r)
		if r.status != http.StatusOK {
			t.Fatalf("plan: %d %s", r.status, r.body)
		}
		return p.PlanID, p.Actions
	}
	for i := range 5 {
		put(fmt.Sprintf("c-%d", i))
	}
	rabbittest.WaitDepth(t, ch, "orders.dlq", 5, 30*time.Second)
	id, _ := plan(5)
	job := startJob(t, base, fmt.Sprintf(`{"plan_id":%q,"reason":"test"}`, id))
	if j := waitReplay(t, base, job.ID, time.Minute); j.Status != replay.JobDone || j.Published != 5 {
		t.Fatalf("job %+v", j)
	}
	rabbittest.WaitDepth(t, ch, "orders.dlq", 0, 30*time.Second)
	for i := range 3 {
		put(fmt.Sprintf("c-%d", i)) // as the broker returns them: same id, same x-death
	}
	put("fresh-1")
	rabbittest.WaitDepth(t, ch, "orders.dlq", 4, 30*time.Second)

	q := "/rabbitmq/main/queues/" + url.PathEscape(vhost) + "/orders.dlq/messages?limit=10"
	r := do(t, nil, "GET", base+"/api/v1"+q, "", "")
	v := decode[struct {
		Messages []struct {
			MessageID  string `json:"message_id"`
			ReplayedBy string `json:"replayed_by"`
		} `json:"messages"`
	}](t, r)
	marked := 0
	for _, m := range v.Messages {
		switch {
		case strings.HasPrefix(m.MessageID, "c-") && m.ReplayedBy == job.ID:
			marked++
		case m.ReplayedBy != "":
			t.Errorf("%s is marked replayed by %s", m.MessageID, m.ReplayedBy)
		}
	}
	if len(v.Messages) != 4 || marked != 3 {
		t.Fatalf("browse: %d messages, %d marked replayed by %s: %s", len(v.Messages), marked, job.ID, r.body)
	}
	page := do(t, nil, "GET", base+q, "", "")
	if page.status != http.StatusOK || !strings.Contains(page.body, `data-testid="replayed-copies"`) ||
		!strings.Contains(page.body, "3 of these messages were replayed or archived already") ||
		strings.Count(page.body, `data-testid="replayed-by"`) != 3 || !strings.Contains(page.body, `href="/replays/`+job.ID+`"`) {
		t.Errorf("the messages page does not point out the 3 copies of %s", job.ID)
	}
	id, actions := plan(10)
	if actions["drop_replayed_copy"] != 3 || actions["publish"] != 1 {
		t.Errorf("plan of the copies and a fresh one: %v", actions)
	}
	// The plan page says what running it does to them, and shows their count.
	if page := do(t, nil, "GET", base+paths.ReplayPlan(id), "", ""); page.status != http.StatusOK ||
		!strings.Contains(page.body, `data-testid="drop-note"`) || !strings.Contains(page.body, "3 of these dead letters are copies") ||
		!strings.Contains(page.body, `data-testid="count-drop_replayed_copy"`) {
		t.Errorf("the plan page does not say that 3 copies are dropped: %d", page.status)
	}
}
