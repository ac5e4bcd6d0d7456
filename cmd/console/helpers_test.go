package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/cmd/internal/devstack"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

// replayJob is a replay job as GET /api/v1/replays/{id} answers it.
type replayJob struct {
	ID, Status                 string
	Published, Skipped, Failed int
	Error                      string
}

// over is whether the job has ended, well or not.
func (j replayJob) over() bool {
	return slices.Contains([]string{replay.JobDone, replay.JobFailed, replay.JobCancelled}, j.Status)
}

// replayOf reads the replay job id of the console at base. It asks with doRaw: a console being
// killed and restarted answers nothing for a moment, which reads as a job not over yet.
func replayOf(base, id string) replayJob {
	var j replayJob
	_ = json.Unmarshal([]byte(doRaw("GET", base+"/api/v1/replays/"+id, "", "").body), &j)
	return j
}

// waitReplay waits until the replay job id of the console at base is over and returns it; the
// caller asserts how it ended.
func waitReplay(t *testing.T, base, id string, within time.Duration) replayJob {
	t.Helper()
	return waittest.For(t, within, "replay job "+id+" ends", func() (replayJob, bool) {
		j := replayOf(base, id)
		return j, j.over()
	})
}

// waitReplayMoves waits until the replay job id has published more than before, or is over.
func waitReplayMoves(t *testing.T, base, id string, before int, within time.Duration) replayJob {
	t.Helper()
	return waittest.For(t, within, "replay job "+id+" moves messages", func() (replayJob, bool) {
		j := replayOf(base, id)
		return j, j.Published > before || j.over()
	})
}

// startKafka starts an in-process Kafka (kfake) on a free loopback port with topics (name →
// partitions; nil for none), closed when the test ends.
func startKafka(t *testing.T, topics map[string]int32) *devstack.Kafka {
	t.Helper()
	k, err := devstack.StartKafka(devstack.KafkaOptions{Addr: "127.0.0.1:0", Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k
}

// declareOrders declares the orders topology the RabbitMQ tests dead-letter through: orders.work
// (bound to the orders exchange with order.created) dead-letters through orders.dlx into
// orders.dlq.
func declareOrders(t *testing.T, ch *amqp.Channel) {
	t.Helper()
	rabbittest.Topology{TB: t, Ch: ch}.Orders("orders.work", "order.created")
}

// dlqConsole is a console (with a store, auth as given) over a vhost whose orders.dlq holds n
// orders m-0… the broker dead-lettered from orders.work, each with the body body (a format of i).
func dlqConsole(t *testing.T, ctx context.Context, n int, body, auth string) (base, vhost string, ch *amqp.Channel) {
	t.Helper()
	return dlqConsoleOn(t, ctx, pgtest.NewDatabase(t), n, body, auth)
}

// dlqConsoleOn is dlqConsole with its store at storeDSN.
func dlqConsoleOn(t *testing.T, ctx context.Context, storeDSN string, n int, body, auth string) (base, vhost string, ch *amqp.Channel) {
	t.Helper()
	vhost, ch, _ = deadLetteredOrders(t, ctx, n, func(i int) amqp.Publishing {
		return amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), DeliveryMode: amqp.Persistent, ContentType: "application/json",
			Body: []byte(fmt.Sprintf(body, i))}
	})
	cfg := rabbittest.Config(t, vhost)
	base = startConsole(t, fmt.Sprintf("store: {dsn: %q}\nrabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]\n%s",
		storeDSN, string(cfg.URL), cfg.ManagementURL, vhost, auth))
	return base, vhost, ch
}

// consumeThroughInbox is the inventory service consuming ids (the message ids of what reached
// orders.work) through its inbox at dsn: each applied once, and the copies absorbed, the inbox
// already marking them processed. It returns the ids applied, and the copies in order.
func consumeThroughInbox(t *testing.T, ctx context.Context, dsn string, ids []string) (applied map[string]bool, copies []string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	mustDo(t, err)
	defer conn.Close(ctx)
	applied = map[string]bool{}
	for _, id := range ids {
		tag, err := conn.Exec(ctx, `INSERT INTO inbox_message VALUES ($1, 'inventory-service', now(), now()) ON CONFLICT DO NOTHING`, id)
		mustDo(t, err)
		if tag.RowsAffected() == 0 {
			copies = append(copies, id)
			continue
		}
		applied[id] = true
	}
	return applied, copies
}

// sampledKafka is the config of a console over the store at storeDSN and the Kafka cluster k
// (named main), sampled every second; a test adds its auth and whatever else it needs.
func sampledKafka(storeDSN string, k *devstack.Kafka) string {
	return fmt.Sprintf("store: {dsn: %q}\nsampler: {interval: 1s}\nkafka: [{name: main, brokers: [%q]}]\n", storeDSN, k.Addrs()[0])
}

// rabbitConsumer is a console (auth off) with its store at store, over one RabbitMQ broker, main
// (amqpURL, its management API at mgmtURL), seeing vhost, where one consumer, service, reads
// queue through its inbox at inbox.
type rabbitConsumer struct {
	store, amqpURL, mgmtURL, vhost string
	service, queue, inbox          string
}

// config is c's configuration; a test adds whatever else it needs.
func (c rabbitConsumer) config() string {
	return fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
rabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]
consumers:
  - name: %s
    inbox: {dsn: %q}
    rabbitmq: {broker: main, vhost: %q, queue: %s}
`, c.store, c.amqpURL, c.mgmtURL, c.vhost, c.service, c.inbox, c.vhost, c.queue)
}

// inventoryConfig configures a console over the test RabbitMQ's vhost whose consumer, the
// inventory service, reads orders.work with its inbox at inboxDSN; replay leases of 2 s, so that a
// killed console's job is taken over soon.
func inventoryConfig(t *testing.T, storeDSN, vhost, inboxDSN string) string {
	t.Helper()
	cfg := rabbittest.Config(t, vhost)
	return inventoryConsumer(storeDSN, string(cfg.URL), cfg.ManagementURL, vhost, inboxDSN)
}

// inventoryConsumer is inventoryConfig over the broker at amqpURL and mgmtURL.
func inventoryConsumer(storeDSN, amqpURL, mgmtURL, vhost, inboxDSN string) string {
	return rabbitConsumer{store: storeDSN, amqpURL: amqpURL, mgmtURL: mgmtURL, vhost: vhost,
		service: "inventory-service", queue: "orders.work", inbox: inboxDSN}.config() + "replay: {lease: 2s}\n"
}

// apiOutboxes is GET /api/v1/outboxes as a test reads it.
type apiOutboxes struct {
	Outboxes []struct {
		Name   string           `json:"name"`
		Counts map[string]int64 `json:"counts"`
		Stuck  int64            `json:"stuck_leases"`
		Age    float64          `json:"oldest_ready_age_seconds"`
		// StuckAge is how long ago the earliest stuck lease expired.
		StuckAge float64 `json:"oldest_stuck_age_seconds"`
	} `json:"outboxes"`
}

// apiGroup is one consumer group as GET /api/v1/kafka/{cluster}/groups lists it and
// GET /api/v1/kafka/{cluster}/groups/{group} answers it.
type apiGroup struct {
	Group  string `json:"group"`
	Status string `json:"status"`
	Topics []struct {
		Topic      string `json:"topic"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Committed int64 `json:"committed"`
			Lag       int64 `json:"lag"`
		} `json:"partitions"`
	} `json:"topics"`
}

// apiGroups is GET /api/v1/kafka/{cluster}/groups as a test reads it.
type apiGroups struct {
	SampledAt  *time.Time `json:"sampled_at"`
	Stale      bool       `json:"stale"`
	AgeSeconds *int64     `json:"age_seconds"`
	StaleNote  string     `json:"stale_note"`
	Groups     []apiGroup `json:"groups"`
}

// planSelected plans the ticked rows of the open page ("Plan replay of selected") and returns the
// plan page's header and its items, as text.
func planSelected(t *testing.T, ctx context.Context) (header, items string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Click(`[data-testid="plan-selected"] button`),
		chromedp.WaitVisible(`[data-testid="plan-counts"]`),
	); err != nil {
		t.Fatal(err)
	}
	return must(t, ctx, chromedp.Text(`[data-testid="page-header"]`)), must(t, ctx, chromedp.Text(`[data-testid="plan-items"]`))
}

// privatePostgres is a PostgreSQL server of the test's own, which it may stop, freeze or start
// again under a console; it is stopped when the test ends.
func privatePostgres(t *testing.T) *devstack.Postgres {
	t.Helper()
	pg, err := devstack.StartPostgres(context.Background(), devstack.PostgresOptions{Dir: filepath.Join(t.TempDir(), "pg")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	return pg
}
