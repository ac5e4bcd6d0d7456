package replay_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

// refusedWorld is a rabbit world whose orders.dlq holds one dead letter per destination of via
// (m-0, m-1, …; exchange and routing key, all routed to orders.work), and a RabbitMQ user that may
// read the vhost's queues but write only to the exchanges orders and events, and whose topic
// permission on events (a topic exchange) lets it publish only keys under order.eu.
type refusedWorld struct {
	*rabbitWorld
	user string
}

func newRefusedWorld(t *testing.T, via [][2]string) *refusedWorld {
	t.Helper()
	w := newRabbitWorld(t)
	ctx := ctxT(t)
	topo := rabbittest.Topology{TB: t, Ch: w.ch}
	topo.Exchange("billing", "direct")
	topo.Bind("orders.work", "order.created", "billing")
	topo.Exchange("events", "topic")
	topo.Bind("orders.work", "order.#", "events")
	for i, d := range via {
		id := fmt.Sprintf("m-%d", i)
		if err := w.ch.PublishWithContext(ctx, d[0], d[1], false, false, amqp.Publishing{MessageId: id,
			DeliveryMode: amqp.Persistent, Body: []byte(fmt.Sprintf(`{"messageId":%q}`, id))}); err != nil {
			t.Fatal(err)
		}
	}
	w.waitDepth(t, "orders.work", len(via))
	for range via {
		d, ok, err := w.ch.Get("orders.work", false)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		if err := d.Reject(false); err != nil {
			t.Fatal(err)
		}
	}
	w.waitDepth(t, "orders.dlq", len(via))

	mgmt := rabbittest.Admin(t)
	user := "redrive-" + w.vhost
	if _, err := mgmt.PutUser(user, rabbithole.UserSettings{Password: "pw", Tags: rabbithole.UserTags{"management"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = mgmt.DeleteUser(user) })
	if _, err := mgmt.UpdatePermissionsIn(w.vhost, user, rabbithole.Permissions{Configure: ".*", Write: "^(orders|events)$", Read: ".*"}); err != nil {
		t.Fatal(err)
	}
	if _, err := mgmt.UpdateTopicPermissionsIn(w.vhost, user, rabbithole.TopicPermissions{Exchange: "events", Write: `^order\.eu\.`, Read: ".*"}); err != nil {
		t.Fatal(err)
	}
	return &refusedWorld{rabbitWorld: w, user: user}
}

// engine is the world's engine over a broker that publishes as the restricted user; its
// management user is the test's administrator, or with asUser the restricted user, who may not
// read permissions (only an administrator may).
func (w *refusedWorld) engine(t *testing.T, asUser bool) *replay.Engine {
	t.Helper()
	cfg := w.cfg
	u, err := url.Parse(string(cfg.URL))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(w.user, "pw")
	cfg.URL = configs.Secret(u.String())
	if asUser {
		cfg.ManagementUser, cfg.ManagementPassword = w.user, "pw"
	}
	b, err := rabbit.New(cfg, configs.MessageIDRules{Headers: []string{"messageId"}, JSONPaths: []string{"messageId"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	b.SetCustodian(replay.Custody{Store: w.store, Audit: w.store})
	return w.engineOver(t, b, nil)
}

// runToEnd starts a job of the world's DLQ and waits, within a bound, for it to end: a job that
// pauses and retries for ever fails the test.
func (w *refusedWorld) runToEnd(t *testing.T, e *replay.Engine, total int) replay.Job {
	t.Helper()
	plan := w.planQueue(t, e, 10, replay.Filter{})
	if plan.Counts[replay.Publish] != total {
		t.Fatalf("plan %v; want %d to publish", plan.Counts, total)
	}
	work(t, e)
	job, err := e.Start(ctxT(t), replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return waitJobState(t, e, job.ID, 90*time.Second, "the job ends", func(j replay.Job) bool {
		return j.Status != replay.JobPending && j.Status != replay.JobRunning
	})
}

// published waits until orders.work holds n messages, makes sure no more come, and returns their
// ids, sorted.
func (w *refusedWorld) published(t *testing.T, n int) []string {
	t.Helper()
	w.waitDepth(t, "orders.work", n)
	waittest.Holds(t, time.Second, fmt.Sprintf("orders.work keeps %d messages", n), func() bool { return w.depth(t, "orders.work") == n })
	got := ids(w.drain(t, "orders.work"))
	slices.Sort(got)
	return got
}

// A replay job whose messages go partly where the console's AMQP user may not publish — an
// exchange its write pattern does not match, a routing key its topic permission on a topic
// exchange refuses — settles those messages failed, each saying which user lacks which permission
// where and what to grant, leaves them in the DLQ, publishes the others once, and ends done. The
// broker used to close the publishing channel (403 ACCESS_REFUSED), the batch's outcome was
// unknown, and the job paused and retried it for ever.
func TestRabbitRefusedPublishFailsOnlyItsMessages(t *testing.T) {
	w := newRefusedWorld(t, [][2]string{{"orders", "order.created"}, {"billing", "order.created"},
		{"events", "order.eu.created"}, {"events", "order.us.created"}, {"orders", "order.created"}})
	e := w.engine(t, false)
	job := w.runToEnd(t, e, 5)
	if job.Status != replay.JobDone || job.Published != 3 || job.Failed != 2 {
		t.Fatalf("job %s: %d published, %d failed (%s); want done, 3 published and 2 failed", job.Status, job.Published, job.Failed, job.Error)
	}
	ledger, err := e.Ledger(ctxT(t), job.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"m-1": fmt.Sprintf(`RabbitMQ user %q may not write to exchange "billing" in vhost %q: grant it write permission`, w.user, w.vhost),
		"m-3": fmt.Sprintf(`RabbitMQ user %q may not publish to topic exchange "events" in vhost %q with routing key "order.us.created"`, w.user, w.vhost),
	}
	failed := 0
	for _, l := range ledger {
		if l.Outcome != replay.LedgerFailed {
			continue
		}
		failed++
		if words, ok := want[l.MessageID]; !ok || !strings.Contains(l.Detail, words) || !strings.Contains(l.Detail, "stays in the dead-letter queue") {
			t.Errorf("failed entry %s: %q; want %q", l.MessageID, l.Detail, want[l.MessageID])
		}
	}
	if failed != 2 {
		t.Fatalf("ledger %+v", ledger)
	}
	w.waitDepth(t, "orders.dlq", 2)
	if got := ids(w.drain(t, "orders.dlq")); fmt.Sprint(got) != "[m-1 m-3]" {
		t.Fatalf("DLQ: %v; want the refused ones", got)
	}
	if got := w.published(t, 3); fmt.Sprint(got) != "[m-0 m-2 m-4]" {
		t.Fatalf("published %v: want each allowed message once", got)
	}
}

// Where the console's management user may not read the AMQP user's permissions, the publish meets
// the broker's refusal, which closes the channel with the batch's outcome unknown. The job ends
// failed, saying who lacks what, instead of retrying for ever (each retry sent the batch's earlier
// messages again): every message stays in the DLQ, and what was published before the refusal was
// published once.
func TestRabbitRefusedPublishUncheckedEndsTheJob(t *testing.T) {
	w := newRefusedWorld(t, [][2]string{{"orders", "order.created"}, {"orders", "order.created"}, {"billing", "order.created"},
		{"orders", "order.created"}, {"orders", "order.created"}})
	e := w.engine(t, true)
	job := w.runToEnd(t, e, 5)
	t.Logf("job %s: %d published, %d failed: %s", job.Status, job.Published, job.Failed, job.Error)
	want := fmt.Sprintf(`RabbitMQ user %q may not write to exchange "billing" in vhost %q`, w.user, w.vhost)
	if job.Status != replay.JobFailed || job.Published != 0 || !strings.Contains(job.Error, want) {
		t.Fatalf("job %s: %d published, %d failed (%s); want failed saying %q", job.Status, job.Published, job.Failed, job.Error, want)
	}
	w.waitDepth(t, "orders.dlq", 5)
	if got := w.published(t, 2); fmt.Sprint(got) != "[m-0 m-1]" {
		t.Fatalf("published %v: want what came before the refusal, once", got)
	}
}
