package replay_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
)

// TestRabbitPlanWarnsOfTheOtherQueuesItsRouteReaches: a replay publishes to the original exchange
// with the original routing key, so every queue bound there gets a copy, not only the queue the
// message died in. orders routes order.created to orders.work (where the messages died) and to
// orders.audit and orders.search (whose consumers had them once already); orders.eu is bound with
// another key. The plan names orders.audit with its consumer's inbox verdicts (2 of 5 processed)
// and orders.search, which no configured consumer reads — and neither orders.work nor orders.eu.
// Replayed, the copies land exactly where the warnings said, counted with an independent client.
func TestRabbitPlanWarnsOfTheOtherQueuesItsRouteReaches(t *testing.T) {
	w := newRabbitWorld(t)
	tp := rabbittest.Topology{TB: t, Ch: w.ch}
	for q, key := range map[string]string{"orders.audit": "order.created", "orders.search": "order.created", "orders.eu": "order.updated"} {
		tp.Queue(q, nil)
		tp.Bind(q, key, "orders")
	}
	w.deadLetter(t, 5) // m-0 … m-4: a copy each in orders.audit and orders.search, the originals dead-lettered from orders.work
	for _, q := range []string{"orders.audit", "orders.search"} {
		w.drain(t, q) // their consumers took the originals
	}
	pgtest.Exec(t, w.inboxDSN, `INSERT INTO inbox_message VALUES ('m-1', 'audit-service', now(), now()), ('m-3', 'audit-service', now(), now()), ('m-4', 'audit-service', now(), NULL)`)
	audit, err := pginbox.Open(ctxT(t), "audit-service", configs.Inbox{DSN: configs.Secret(w.inboxDSN), Table: "inbox_message",
		Columns: configs.InboxColumns{MessageID: "message_id", Consumer: "consumer", ReceivedAt: "received_at", ProcessedAt: "processed_at"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(audit.Close)
	e := w.engineOver(t, w.broker, []replay.Inbox{audit},
		ops.Consumer{Name: "audit-service", RabbitMQ: &ops.ConsumerRabbit{Broker: "test", Vhost: w.vhost, Queue: "orders.audit"}})

	plan := w.planQueue(t, e, 10, replay.Filter{})
	if plan.Counts[replay.Publish] != 5 {
		t.Fatalf("plan counts %v; want 5 to publish", plan.Counts)
	}
	want := []string{
		`queue orders.audit is also bound to exchange orders with routing key "order.created" and will receive 5 of the replayed messages; its inbox (audit-service): 2 processed, 1 in progress, 2 not processed`,
		`queue orders.search is also bound to exchange orders with routing key "order.created" and will receive 5 of the replayed messages (no consumer is configured for it, so whether its consumer processed them is unknown)`,
	}
	for _, warning := range plan.Warnings {
		if strings.Contains(warning, "orders.work") || strings.Contains(warning, "orders.eu") {
			t.Errorf("warning about a queue the replay is meant for, or does not reach: %s", warning)
		}
	}
	if got := routeWarnings(plan); !slices.Equal(got, want) {
		t.Fatalf("route warnings:\n%s\nwant:\n%s\n(all warnings: %q)", strings.Join(got, "\n"), strings.Join(want, "\n"), plan.Warnings)
	}

	work(t, e)
	if job := w.run(t, e, plan.ID); job.Status != replay.JobDone || job.Published != 5 {
		t.Fatalf("job %+v; want done with 5 published", job)
	}
	for q, n := range map[string]int{"orders.work": 5, "orders.audit": 5, "orders.search": 5, "orders.eu": 0, "orders.dlq": 0} {
		if got := len(w.drain(t, q)); got != n {
			t.Errorf("%s holds %d messages after the replay; want %d", q, got, n)
		}
	}
}

// TestRabbitPlanReadsTheBindingsOnce: a plan of 300 dead letters with 300 routing keys, each also
// reaching a queue besides the one they died in, reads the vhost's bindings through the management
// API once (counted by a proxy in front of it), not once per key, and says so in one warning.
func TestRabbitPlanReadsTheBindingsOnce(t *testing.T) {
	w := newRabbitWorld(t)
	tp := rabbittest.Topology{TB: t, Ch: w.ch}
	tp.Exchange("events", "topic")
	tp.Queue("events.all", nil)
	tp.Bind("events.all", "#", "events")
	tp.Bind("orders.work", "order.*.created", "events")
	const n = 300
	var ps []amqp.Publishing
	for i := range n {
		id := fmt.Sprintf("e-%d", i)
		death := []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "orders.work", "exchange": "events",
			"routing-keys": []any{fmt.Sprintf("order.%d.created", i)}, "time": time.Now().UTC().Truncate(time.Second)}}
		ps = append(ps, amqp.Publishing{MessageId: id, Headers: amqp.Table{"x-death": death}, Body: []byte(`{}`)})
	}
	w.putDLQ(t, ps...)
	w.waitDepth(t, "orders.dlq", n)

	var bindingReads atomic.Int64
	mgmt, err := url.Parse(w.cfg.ManagementURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(mgmt)
	counting := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/bindings") {
			bindingReads.Add(1)
		}
		proxy.ServeHTTP(rw, r)
	}))
	t.Cleanup(counting.Close)
	cfg := w.cfg
	cfg.ManagementURL = counting.URL
	b, err := rabbit.New(cfg, configs.MessageIDRules{Headers: []string{"messageId"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	e := w.engineOver(t, b, nil)

	plan := w.planQueue(t, e, n, replay.Filter{})
	want := fmt.Sprintf(`queue events.all is also bound to exchange events with %d of the routing keys ("order.0.created", …) and will receive %d of the replayed messages (no consumer is configured for it, so whether its consumer processed them is unknown)`, n, n)
	if got := routeWarnings(plan); !slices.Equal(got, []string{want}) {
		t.Fatalf("route warnings %q; want [%q]", got, want)
	}
	if reads := bindingReads.Load(); reads != 1 {
		t.Fatalf("the plan read the bindings %d times for %d routing keys; want once", reads, n)
	}
}

// TestRabbitPlanWarnsOfOtherQueuesForSpringDeadLetters: a dead letter Spring's
// RepublishMessageRecoverer put in the DLQ names where it was going (x-original-exchange,
// x-original-routingKey) but no queue it died in. Its route reaches orders.work, whose consumer
// the plan finds for it, and orders.search: only orders.search is named.
func TestRabbitPlanWarnsOfOtherQueuesForSpringDeadLetters(t *testing.T) {
	w := newRabbitWorld(t)
	tp := rabbittest.Topology{TB: t, Ch: w.ch}
	tp.Queue("orders.search", nil)
	tp.Bind("orders.search", "order.created", "orders")
	w.putDLQ(t, amqp.Publishing{MessageId: "s-1", Body: []byte(`{}`), Headers: amqp.Table{
		"x-original-exchange": "orders", "x-original-routingKey": "order.created", "x-exception-message": "boom"}})
	w.waitDepth(t, "orders.dlq", 1)
	plan := w.planQueue(t, w.engine(t), 1, replay.Filter{})
	if len(plan.Items) != 1 || plan.Items[0].Consumer != "inventory-service" {
		t.Fatalf("items %+v; want one, guarded by inventory-service", plan.Items)
	}
	want := `queue orders.search is also bound to exchange orders with routing key "order.created" and will receive 1 of the replayed messages (no consumer is configured for it, so whether its consumer processed them is unknown)`
	if got := routeWarnings(plan); !slices.Equal(got, []string{want}) {
		t.Fatalf("route warnings %q; want [%q]", got, want)
	}
}

// routeWarnings are the plan's warnings of other queues its route reaches.
func routeWarnings(plan replay.Plan) []string {
	return slices.DeleteFunc(slices.Clone(plan.Warnings), func(s string) bool { return !strings.Contains(s, " is also bound to ") })
}

// TestArchiveRestorePlanWarnsOfOtherQueues: restoring an archived dead letter to its original
// destination routes it as a replay from the queue does, so its plan names the other queue its
// route reaches too.
func TestArchiveRestorePlanWarnsOfOtherQueues(t *testing.T) {
	w := newRabbitWorld(t)
	tp := rabbittest.Topology{TB: t, Ch: w.ch}
	tp.Queue("orders.audit", nil)
	tp.Bind("orders.audit", "order.created", "orders")
	w.deadLetter(t, 1)
	e := w.engine(t)
	work(t, e)
	archived := w.discardAll(t, e, 1)["m-0"]
	plan, err := e.Plan(ctxT(t), "alice", replay.Source{Kind: "archive", ArchiveID: archived.ID}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := `queue orders.audit is also bound to exchange orders with routing key "order.created" and will receive 1 of the replayed messages (no consumer is configured for it, so whether its consumer processed them is unknown)`
	if got := routeWarnings(plan); !slices.Equal(got, []string{want}) {
		t.Fatalf("route warnings %q; want [%q]", got, want)
	}
}
