package rabbit

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbittest"
)

// refusedEnv is an env whose queue orders.dlq holds n messages (m-0, m-1, …), with exchanges
// orders and billing (direct) and events (topic) all leading to orders.work, and a RabbitMQ user
// that may write to orders and events only, whose topic permission on events lets it publish keys
// under order.eu. and under its own name ({username}).
type refusedEnv struct {
	*env
	user, pw string
}

func newRefusedEnv(t *testing.T, n int) *refusedEnv {
	t.Helper()
	e := newEnv(t)
	e.Exchange("orders", "direct")
	e.Exchange("billing", "direct")
	e.Exchange("events", "topic")
	e.Queue("orders.work", nil)
	e.Bind("orders.work", "a", "orders")
	e.Bind("orders.work", "a", "billing")
	e.Bind("orders.work", "#", "events")
	e.Queue("orders.dlq", nil)
	for i := range n {
		e.publish("", "orders.dlq", amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), Body: []byte("{}")})
	}
	user, pw := "redrive-"+e.vhost, "pw"
	if _, err := e.mgmt.PutUser(user, rabbithole.UserSettings{Password: pw, Tags: rabbithole.UserTags{"management"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.mgmt.DeleteUser(user) })
	if _, err := e.mgmt.UpdatePermissionsIn(e.vhost, user, rabbithole.Permissions{Configure: ".*", Write: "^(orders|events)$", Read: ".*"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.mgmt.UpdateTopicPermissionsIn(e.vhost, user, rabbithole.TopicPermissions{Exchange: "events",
		Write: `^order\.eu\.|^{username}\.`, Read: ".*"}); err != nil {
		t.Fatal(err)
	}
	return &refusedEnv{env: e, user: user, pw: pw}
}

// broker is a Broker whose AMQP user is the restricted one; its management user is the test's
// administrator (who may read permissions) or, with asUser, the restricted user (who may not).
func (e *refusedEnv) broker(t *testing.T, asUser bool) *Broker {
	t.Helper()
	cfg := rabbittest.Config(t, e.vhost)
	u, err := url.Parse(string(cfg.URL))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(e.user, e.pw)
	cfg.URL = configs.Secret(u.String())
	if asUser {
		cfg.ManagementUser, cfg.ManagementPassword = e.user, configs.Secret(e.pw)
	}
	b, err := New(cfg, testIDs)
	if err != nil {
		t.Fatal(err)
	}
	b.firstWait, b.idleWait = 2*time.Second, 300*time.Millisecond
	t.Cleanup(b.Close)
	return b
}

// brokerRefuses publishes to exchange with key as the restricted user on a channel of its own and
// reports whether the broker refused it (403).
func (e *refusedEnv) brokerRefuses(t *testing.T, exchange, key string) bool {
	t.Helper()
	u, err := url.Parse(e.url)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(e.user, e.pw)
	conn, err := amqp.Dial(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	if err := ch.Tx(); err != nil { // rolled back: the probe is never routed
		t.Fatal(err)
	}
	_ = ch.PublishWithContext(context.Background(), exchange, key, false, false, amqp.Publishing{Body: []byte("probe")})
	if err := ch.TxRollback(); err == nil {
		return false
	}
	select {
	case reason := <-closed:
		return reason != nil && reason.Code == amqp.AccessRefused
	case <-time.After(5 * time.Second):
		t.Fatalf("publish to %q %q: the rollback failed and the channel did not close", exchange, key)
		return false
	}
}

// A cursor's batch with messages bound for where the console's AMQP user may not publish — an
// exchange its write pattern does not match (the default exchange is checked as amq.default), a
// routing key its topic permission on a topic exchange refuses — fails those messages alone,
// before publishing, each saying which user lacks which permission where and the command that
// grants it with the user's own patterns; the others are published once and the channel stays
// open. RabbitMQ closed the channel with 403, the batch's outcome unknown, and a job retried it
// for ever. The broker agrees with every verdict; {username} in a topic pattern is the user's
// name, as the broker expands it.
func TestRefusedPublishFailsOnlyItsMessages(t *testing.T) {
	t.Parallel()
	e := newRefusedEnv(t, 6)
	ctx := ctxT(t)
	b := e.broker(t, false)
	cur, err := b.OpenCursor(ctx, e.vhost, "orders.dlq", 6)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	ds, err := cur.Take(ctx, 6)
	if err != nil || len(ds) != 6 {
		t.Fatalf("take: %d %v", len(ds), err)
	}
	to := []Republish{{Exchange: "orders", RoutingKey: "a"}, {Exchange: "billing", RoutingKey: "a"},
		{Exchange: "events", RoutingKey: "order.eu.created"}, {Exchange: "events", RoutingKey: "order.us.created"},
		{Exchange: "events", RoutingKey: e.user + ".created"}, {Exchange: "", RoutingKey: "orders.work"}}
	want := map[int][]string{
		1: {fmt.Sprintf(`RabbitMQ user %q may not write to exchange "billing" in vhost %q`, e.user, e.vhost),
			fmt.Sprintf(`rabbitmqctl set_permissions -p '%s' '%s' '.*' '^(orders|events)$|^billing$' '.*'`, e.vhost, e.user)},
		3: {fmt.Sprintf(`RabbitMQ user %q may not publish to topic exchange "events" in vhost %q with routing key "order.us.created"`, e.user, e.vhost),
			fmt.Sprintf(`rabbitmqctl set_topic_permissions -p '%s' '%s' 'events' '^order\.eu\.|^{username}\.|^order\.us\.created$' '.*'`, e.vhost, e.user)},
		5: {fmt.Sprintf(`RabbitMQ user %q may not write to exchange "amq.default" in vhost %q`, e.user, e.vhost)},
	}
	errs, err := cur.Publish(ctx, ds, to)
	if err != nil {
		t.Fatalf("publish: %v; want only the refused messages failed", err)
	}
	for i, err := range errs {
		words, refused := want[i]
		switch {
		case !refused && err != nil:
			t.Errorf("message %d (%+v): %v; want it published", i, to[i], err)
		case refused && (!errors.Is(err, ops.ErrForbidden) || errors.Is(err, ops.ErrUnavailable)):
			t.Errorf("message %d (%+v): %v; want ops.ErrForbidden", i, to[i], err)
		case refused:
			for _, w := range words {
				if !strings.Contains(err.Error(), w) || !strings.Contains(ops.Message(err), w) {
					t.Errorf("message %d: %q does not say %q", i, err, w)
				}
			}
		}
		if got := e.brokerRefuses(t, to[i].Exchange, to[i].RoutingKey); got != refused {
			t.Errorf("message %d (%+v): the broker refuses it: %v; the check said %v", i, to[i], got, refused)
		}
	}
	// The channel is still open: the next batch publishes.
	if errs, err := cur.Publish(ctx, ds[:1], to[:1]); err != nil || errs[0] != nil {
		t.Fatalf("second batch: %v %v", errs, err)
	}
	e.waitDepth("orders.work", 4)
	if err := cur.Ack([]Delivery{ds[0], ds[2], ds[4]}); err != nil {
		t.Fatal(err)
	}
	cur.Close()
	e.waitDepth("orders.dlq", 3)
	var left []string
	for _, d := range e.drain("orders.dlq") {
		left = append(left, d.MessageId)
	}
	if fmt.Sprint(left) != "[m-1 m-3 m-5]" {
		t.Fatalf("left in the DLQ: %v; want the refused ones", left)
	}
}

// Where the console's management user may not read the AMQP user's permissions (only an
// administrator may), nothing is refused before publishing; the broker's refusal closes the
// publishing channel, and the batch fails as ops.ErrForbidden saying who lacks what, never as
// the ops.ErrUnavailable a replay job pauses and retries on — for ever, sending the batch's
// earlier messages again each time.
func TestRefusedPublishUncheckedIsForbidden(t *testing.T) {
	t.Parallel()
	e := newRefusedEnv(t, 3)
	ctx := ctxT(t)
	b := e.broker(t, true)
	if _, err := b.PermissionsOf(ctx, e.user); err == nil {
		t.Fatal("the restricted user reads permissions: the test needs one that may not")
	}
	cur, err := b.OpenCursor(ctx, e.vhost, "orders.dlq", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	ds, err := cur.Take(ctx, 3)
	if err != nil || len(ds) != 3 {
		t.Fatalf("take: %d %v", len(ds), err)
	}
	to := []Republish{{Exchange: "orders", RoutingKey: "a"}, {Exchange: "billing", RoutingKey: "a"}, {Exchange: "orders", RoutingKey: "a"}}
	_, err = cur.Publish(ctx, ds, to)
	want := fmt.Sprintf(`RabbitMQ user %q may not write to exchange "billing" in vhost %q`, e.user, e.vhost)
	if !errors.Is(err, ops.ErrForbidden) || errors.Is(err, ops.ErrUnavailable) || !strings.Contains(ops.Message(err), want) ||
		!strings.Contains(ops.Message(err), "the job stops rather than send them again") {
		t.Fatalf("publish: %v (%q); want ops.ErrForbidden saying %q", err, ops.Message(err), want)
	}
	cur.Close()
	e.waitDepth("orders.dlq", 3) // nothing acked: every message is still there
	// What was published before the refusal (at most m-0) was routed, once.
	if d := e.depth("orders.work"); d > 1 {
		t.Fatalf("orders.work holds %d messages; want at most m-0", d)
	}
}
