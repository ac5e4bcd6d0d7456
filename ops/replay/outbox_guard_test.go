package replay_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/storetest"
)

// An outbox replay sets rows back to READY for the service's relay, which publishes them where
// outboxes[].relay_to says: the consumer reading there guards them with its inbox, by event id
// (issue 37, item 11: the plan said "no configured consumer reads their destination" although
// inventory-service reads the orders topic). Without relay_to, the plan says what is missing.
func TestOutboxReplayGuardedByTheRelaysConsumer(t *testing.T) {
	dsn, inboxDSN := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	pgtest.Exec(t, dsn, pgoutbox.SeedDDL)
	pgtest.Exec(t, dsn, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, last_error, created_at)
		SELECT 'evt-' || g, 'Order', 'o' || g, 'OrderCreated', 1, '{}', 'DEAD', 10, now(), 'boom', now()
		FROM generate_series(1, 7) g`)
	pgtest.Exec(t, inboxDSN, pginbox.SeedDDL)
	pgtest.Exec(t, inboxDSN, `INSERT INTO inbox_message VALUES ('evt-2', 'inventory-service', now(), now()),
		('evt-3', 'inventory-service', now(), NULL)`)
	for _, c := range []struct {
		name, relayTo string
		guarded       bool
		warning       string
	}{
		{"KafkaTopic", "{cluster: main, topic: orders}", true, ""},
		{"RabbitQueue", "{broker: main, queue: orders.work}", true, ""},
		{"NoRelayTo", "", false, "where outbox orders's relay publishes is not configured (outboxes[].relay_to)"},
		{"TopicNobodyReads", "{cluster: main, topic: payments}", false, "no one configured consumer reads topic payments on main, where outbox orders's relay publishes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			relay := ""
			if c.relayTo != "" {
				relay = ", relay_to: " + c.relayTo
			}
			cfg, err := configs.Parse([]byte(fmt.Sprintf(`auth: {mode: none}
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q%s}]
kafka: [{name: main, brokers: ["127.0.0.1:1"]}]
rabbitmq: [{name: main, url: "amqp://127.0.0.1:1/", management_url: "http://127.0.0.1:1"}]
consumers:
  - name: inventory-service
    inbox: {dsn: %q}
    kafka: {cluster: main, group: inventory-service, topics: [orders]}
    rabbitmq: {broker: main, vhost: /, queue: orders.work}
`, dsn, dsn, relay, inboxDSN)), func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			o, err := pgoutbox.Open(ctxT(t), cfg.Outboxes[0])
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(o.Close)
			in, err := pginbox.Open(ctxT(t), "inventory-service", *cfg.Consumers[0].Inbox)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(in.Close)
			relays := map[string]replay.OutboxRelay{}
			if r := cfg.Outboxes[0].RelayTo; r != nil {
				relays["orders"] = replay.OutboxRelay(*r)
			}
			e, err := replay.New(replay.Options{Store: storetest.Open(t), Outboxes: []replay.OutboxTable{o}, Inboxes: []replay.Inbox{in},
				Consumers: []ops.Consumer{{Name: "inventory-service",
					Kafka:    &ops.ConsumerKafka{Cluster: "main", Group: "inventory-service", Topics: []string{"orders"}},
					RabbitMQ: &ops.ConsumerRabbit{Broker: "main", Vhost: "/", Queue: "orders.work"}}},
				OutboxRelays: relays, Replay: configDefaults, Poll: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := e.Plan(ctxT(t), "ops", replay.Source{Kind: "outbox", Outbox: "orders", Limit: 100}, replay.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			unguarded := ""
			for _, w := range plan.Warnings {
				if strings.Contains(w, "without an idempotency check") {
					unguarded = w
				}
			}
			if c.guarded {
				// evt-2 processed, evt-3 in progress: skipped; the other 5 go back to READY, each
				// with the inbox's verdict.
				if plan.Counts[replay.Publish] != 5 || plan.Counts[replay.SkipProcessed] != 1 || plan.Counts[replay.SkipInProgress] != 1 || unguarded != "" {
					t.Fatalf("guarded plan: %v, warning %q", plan.Counts, unguarded)
				}
				for _, it := range plan.Items {
					if it.Consumer != "inventory-service" || it.Inbox == inbox.Unknown {
						t.Errorf("item %s: consumer %q inbox %s", it.MessageID, it.Consumer, it.Inbox)
					}
				}
				return
			}
			if plan.Counts[replay.Publish] != 7 || !strings.Contains(unguarded, c.warning) || strings.Contains(unguarded, "no configured consumer reads their destination") {
				t.Fatalf("unguarded plan: %v, warning %q, want %q", plan.Counts, unguarded, c.warning)
			}
		})
	}
}
