// Package rabbittest gives each test its own vhost on the real RabbitMQ that `make test` starts
// (REDRIVE_TEST_AMQP_URL and REDRIVE_TEST_RABBIT_MGMT_URL). Tests never share queues, so they run
// in parallel and leave nothing behind: the vhost, and everything in it, is deleted at cleanup.
package rabbittest

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/testenv"
	"github.com/redrive/redrive/ops/waittest"
)

// Environment variables set by `make test` (cmd/devstack).
const (
	EnvAMQPURL = "REDRIVE_TEST_AMQP_URL"        // amqp://guest:guest@127.0.0.1:PORT/
	EnvMgmtURL = "REDRIVE_TEST_RABBIT_MGMT_URL" // http://127.0.0.1:PORT (user and password from the AMQP URL)
)

// Env returns the AMQP URL (default vhost) and the management URL, failing the test (never
// skipping it) when they are missing.
func Env(tb testing.TB) (amqpURL, mgmtURL string) {
	tb.Helper()
	return testenv.Var(tb, EnvAMQPURL, "RabbitMQ"), testenv.Var(tb, EnvMgmtURL, "RabbitMQ")
}

// Admin returns a management client for the test broker, authenticated as the AMQP URL's user.
func Admin(tb testing.TB) *rabbithole.Client {
	tb.Helper()
	amqpURL, mgmtURL := Env(tb)
	u, err := amqp.ParseURI(amqpURL)
	if err != nil {
		tb.Fatalf("rabbittest: parse %s: %v", EnvAMQPURL, err)
	}
	c, err := rabbithole.NewClient(mgmtURL, u.Username, u.Password)
	if err != nil {
		tb.Fatalf("rabbittest: management client: %v", err)
	}
	c.SetTimeout(30 * time.Second)
	return c
}

// NewVhost creates an empty vhost for this test with full permissions for the test user, deletes
// it at cleanup, and returns its name, an AMQP URL for it and a management client.
func NewVhost(tb testing.TB) (vhost, amqpURL string, mgmt *rabbithole.Client) {
	tb.Helper()
	base, _ := Env(tb)
	mgmt = Admin(tb)
	vhost = testenv.Name()
	if _, err := mgmt.PutVhost(vhost, rabbithole.VhostSettings{Description: "redrive test " + tb.Name()}); err != nil {
		tb.Fatalf("rabbittest: create vhost: %v", err)
	}
	tb.Cleanup(func() { _, _ = mgmt.DeleteVhost(vhost) })
	if _, err := mgmt.UpdatePermissionsIn(vhost, mgmt.Username, rabbithole.Permissions{Configure: ".*", Write: ".*", Read: ".*"}); err != nil {
		tb.Fatalf("rabbittest: grant permissions: %v", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("rabbittest: parse %s: %v", EnvAMQPURL, err)
	}
	u.Path, u.RawPath = "/"+vhost, "/"+url.PathEscape(vhost)
	return vhost, u.String(), mgmt
}

// Config is a broker configuration for the test RabbitMQ that watches only vhost.
func Config(tb testing.TB, vhost string) configs.RabbitMQBroker {
	tb.Helper()
	amqpURL, mgmtURL := Env(tb)
	u, err := amqp.ParseURI(amqpURL)
	if err != nil {
		tb.Fatalf("rabbittest: parse %s: %v", EnvAMQPURL, err)
	}
	return configs.RabbitMQBroker{
		Name:               "test",
		URL:                configs.Secret(amqpURL),
		ManagementURL:      mgmtURL,
		ManagementUser:     u.Username,
		ManagementPassword: configs.Secret(u.Password),
		Vhosts:             []string{vhost},
		DeadLetterQueues:   []string{"*.dlq", "*.DLQ", "dead-letter*"},
	}
}

// Channel dials amqpURL and opens a channel; both are closed at cleanup.
func Channel(tb testing.TB, amqpURL string) (*amqp.Connection, *amqp.Channel) {
	tb.Helper()
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		tb.Fatalf("rabbittest: dial: %v", err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		tb.Fatalf("rabbittest: channel: %v", err)
	}
	return conn, ch
}

// WaitFor waits until cond is true, failing the test after timeout; cond's context ends with the
// timeout, for the management calls it makes. Management statistics lag the broker by up to a
// sampling interval; use this instead of sleeping.
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) bool) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	waittest.Until(tb, timeout, what, func() bool { return cond(ctx) })
}

// Depth is the number of ready messages in queue as the broker has it now: a passive declare on the
// AMQP channel, which does not lag as the management API's statistics do.
func Depth(tb testing.TB, ch *amqp.Channel, queue string) int {
	tb.Helper()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		tb.Fatalf("rabbittest: passive declare %s: %v", queue, err)
	}
	return q.Messages
}

// WaitDepth waits until queue holds exactly n ready messages, failing the test after within with
// the count it last saw.
func WaitDepth(tb testing.TB, ch *amqp.Channel, queue string, n int, within time.Duration) {
	tb.Helper()
	waittest.For(tb, within, fmt.Sprintf("%d messages in %s", n, queue), func() (int, bool) {
		d := Depth(tb, ch, queue)
		return d, d == n
	})
}

// Topology declares a test's exchanges, queues and bindings on Ch, failing TB on an error. Test
// environments embed it.
type Topology struct {
	TB testing.TB
	Ch *amqp.Channel
}

// Queue declares a durable queue with args.
func (d Topology) Queue(name string, args amqp.Table) {
	d.TB.Helper()
	if _, err := d.Ch.QueueDeclare(name, true, false, false, false, args); err != nil {
		d.TB.Fatalf("declare %s: %v", name, err)
	}
}

// Exchange declares a durable exchange of kind (direct, fanout, topic, headers).
func (d Topology) Exchange(name, kind string) {
	d.TB.Helper()
	if err := d.Ch.ExchangeDeclare(name, kind, true, false, false, false, nil); err != nil {
		d.TB.Fatalf("declare exchange %s: %v", name, err)
	}
}

// Bind binds queue to exchange with key.
func (d Topology) Bind(queue, key, exchange string) {
	d.TB.Helper()
	if err := d.Ch.QueueBind(queue, key, exchange, false, nil); err != nil {
		d.TB.Fatalf("bind %s: %v", queue, err)
	}
}

// Orders declares the topology the tests dead-letter through: the orders exchange (direct) routes
// key to the queue work, which dead-letters through orders.dlx (fanout) into orders.dlq.
func (d Topology) Orders(work, key string) { d.OrdersWith(work, key, nil) }

// OrdersWith is Orders with orders.dlq declared with dlqArgs (a quorum DLQ: x-queue-type quorum).
func (d Topology) OrdersWith(work, key string, dlqArgs amqp.Table) {
	d.TB.Helper()
	d.Exchange("orders", "direct")
	d.Exchange("orders.dlx", "fanout")
	d.Queue(work, amqp.Table{"x-dead-letter-exchange": "orders.dlx"})
	d.Bind(work, key, "orders")
	d.Queue("orders.dlq", dlqArgs)
	d.Bind("orders.dlq", "", "orders.dlx")
}

// Consume starts a consumer of queue, named tag, on a connection of its own that may hold
// prefetch messages unacked: another client of the broker. It returns the consumer's channel
// (closed at cleanup with its connection) and its deliveries.
func Consume(tb testing.TB, amqpURL, queue, tag string, prefetch int) (*amqp.Channel, <-chan amqp.Delivery) {
	tb.Helper()
	_, ch := Channel(tb, amqpURL)
	if err := ch.Qos(prefetch, 0, false); err != nil {
		tb.Fatalf("rabbittest: qos: %v", err)
	}
	ds, err := ch.Consume(queue, tag, false, false, false, false, nil)
	if err != nil {
		tb.Fatalf("rabbittest: consume %s: %v", queue, err)
	}
	return ch, ds
}
