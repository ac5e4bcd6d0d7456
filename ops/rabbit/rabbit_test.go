package rabbit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/waittest"
)

func ctxT(t *testing.T) context.Context { return waittest.Context(t, 60*time.Second) }

// TestDeadLetteredByBroker has the broker itself dead-letter messages — a consumer's reject with
// requeue=false, and a per-queue TTL expiry — and checks what the console decodes from x-death.
func TestDeadLetteredByBroker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.Exchange("orders", "direct")
	e.Exchange("dlx", "topic")
	e.Queue("orders.work", amqp.Table{"x-dead-letter-exchange": "dlx"})
	e.Bind("orders.work", "order.created", "orders")
	e.Queue("slow", amqp.Table{"x-message-ttl": int32(20), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "orders.dlq"})
	e.Queue("orders.dlq", nil)
	e.Bind("orders.dlq", "order.#", "dlx")

	before := time.Now().Add(-time.Second)
	t.Run("Rejected", func(t *testing.T) {
		e.publish("orders", "order.created", amqp.Publishing{Body: []byte(`{"meta":{"id":"m-1"}}`), ContentType: "application/json"})
		e.waitDepth("orders.work", 1)
		e.reject(t, "orders.work")
		e.waitDepth("orders.dlq", 1)
	})
	t.Run("Expired", func(t *testing.T) {
		e.publish("", "slow", amqp.Publishing{Body: []byte("late"), MessageId: "prop-id", Headers: amqp.Table{"messageId": "hdr-id"}})
		e.waitDepth("orders.dlq", 2)
	})

	res, err := e.b.Browse(ctx, e.vhost, "orders.dlq", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 2 {
		t.Fatalf("browsed %d messages, want 2", len(res.Messages))
	}
	rej, exp := res.Messages[0], res.Messages[1]

	dl := rej.DeadLetter
	if dl == nil {
		t.Fatal("rejected message: no dead letter decoded")
	}
	if dl.Reason != ReasonRejected || dl.Count != 1 || dl.OriginalQueue != "orders.work" || dl.OriginalExchange != "orders" ||
		strings.Join(dl.OriginalRoutingKeys, ",") != "order.created" || dl.LastQueue != "orders.work" || dl.FirstReason != ReasonRejected {
		t.Errorf("rejected: got %+v", *dl)
	}
	if dl.FirstDeathAt == nil || dl.FirstDeathAt.Before(before.Truncate(time.Second)) || dl.FirstDeathAt.After(time.Now().Add(time.Second)) {
		t.Errorf("rejected: first death at %v, want about now", dl.FirstDeathAt)
	}
	if len(dl.Deaths) != 1 || dl.Deaths[0].Queue != "orders.work" {
		t.Errorf("rejected: deaths %+v", dl.Deaths)
	}
	// Dead letters keep their routing key when the queue sets no dead-letter routing key.
	if rej.Exchange != "dlx" || rej.RoutingKey != "order.created" {
		t.Errorf("rejected: delivered via %q/%q, want dlx/order.created", rej.Exchange, rej.RoutingKey)
	}
	if rej.MessageID != "m-1" {
		t.Errorf("rejected: message id %q, want m-1 from the JSON path meta.id", rej.MessageID)
	}

	dl = exp.DeadLetter
	if dl == nil {
		t.Fatal("expired message: no dead letter decoded")
	}
	if dl.Reason != ReasonExpired || dl.Count != 1 || dl.OriginalQueue != "slow" || dl.OriginalExchange != "" ||
		strings.Join(dl.OriginalRoutingKeys, ",") != "slow" {
		t.Errorf("expired: got %+v", *dl)
	}
	if exp.RoutingKey != "orders.dlq" {
		t.Errorf("expired: routing key %q, want the dead-letter routing key orders.dlq", exp.RoutingKey)
	}
	if exp.MessageID != "prop-id" {
		t.Errorf("expired: message id %q, want the message_id property", exp.MessageID)
	}
	var sawXDeath bool
	for _, h := range exp.Headers {
		if h.Key == "x-death" {
			sawXDeath = true
			if !strings.HasPrefix(h.Value, `[{"count":1,"exchange":"","queue":"slow","reason":"expired","routing-keys":["slow"],"time":"`) {
				t.Errorf("x-death rendered as %s", h.Value)
			}
		}
	}
	if !sawXDeath {
		t.Errorf("no x-death header among %+v", exp.Headers)
	}

	groups := ErrorGroups(res.Messages)
	if len(groups) != 2 || groups[0].Count != 1 || groups[1].Count != 1 {
		t.Fatalf("groups: %+v", groups)
	}
}

// TestDeadLetterCountInRetryLoop lets a message go round a work queue / retry queue loop three
// times: x-death keeps one entry per (queue, reason) and counts.
func TestDeadLetterCountInRetryLoop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.Queue("work", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "work.retry"})
	e.Queue("work.retry", amqp.Table{"x-message-ttl": int32(10), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "work"})
	e.publish("", "work", amqp.Publishing{Body: []byte("x")})
	for i := 0; i < 3; i++ {
		e.waitDepth("work", 1)
		e.reject(t, "work")
	}
	e.waitDepth("work", 1)
	res, err := e.b.Browse(ctx, e.vhost, "work", 1)
	if err != nil {
		t.Fatal(err)
	}
	dl := res.Messages[0].DeadLetter
	if dl == nil || dl.Reason != ReasonExpired || dl.Count != 3 || dl.LastQueue != "work.retry" || dl.OriginalQueue != "work" ||
		dl.FirstReason != ReasonRejected || len(dl.Deaths) != 2 || dl.Deaths[1].Count != 3 || dl.Deaths[1].Reason != ReasonRejected {
		t.Fatalf("dead letter after 3 rounds: %+v", dl)
	}

	topo, err := e.b.Topology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.RetryLoops) != 1 || topo.RetryLoops[0] != (RetryLoop{Vhost: e.vhost, RetryQueue: "work.retry", WorkQueue: "work", Delay: 10 * time.Millisecond}) {
		t.Errorf("retry loops: %+v", topo.RetryLoops)
	}
	if len(topo.DLQs) != 0 {
		t.Errorf("a retry loop has no DLQ, got %v", topo.DLQs)
	}
}

// TestBrowseLeavesQueueAsItWas browses 200 messages (and then 50 of them) while another consumer
// is attached to a different queue on the same broker, and reads everything back with basic.get:
// same depth, same order.
func TestBrowseLeavesQueueAsItWas(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.Queue("dlq", nil)
	e.Queue("busy", nil)
	const n = 200
	for i := 0; i < n; i++ {
		e.publish("", "dlq", amqp.Publishing{Body: []byte(strconv.Itoa(i)), MessageId: fmt.Sprintf("id-%d", i), Timestamp: time.Unix(1700000000, 0)})
	}
	// Another consumer, on another connection, busy with another queue throughout.
	_, otherDeliveries := rabbittest.Consume(t, e.url, "busy", "other", 10)
	got := make(chan int, 1000)
	go func() {
		for d := range otherDeliveries {
			_ = d.Ack(false)
			got <- 1
		}
	}()
	for i := 0; i < 20; i++ {
		e.publish("", "busy", amqp.Publishing{Body: []byte("work")})
	}

	for _, limit := range []int{n, 50} {
		res, err := e.b.Browse(ctx, e.vhost, "dlq", limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != limit || res.Ready != n || !res.Redelivered {
			t.Fatalf("limit %d: got %d messages, ready %d, redelivered %v", limit, len(res.Messages), res.Ready, res.Redelivered)
		}
		for i, m := range res.Messages {
			if string(m.Body) != strconv.Itoa(i) || m.Position != i || m.MessageID != fmt.Sprintf("id-%d", i) {
				t.Fatalf("limit %d: message %d is %q (position %d, id %q)", limit, i, m.Body, m.Position, m.MessageID)
			}
		}
		if d := e.depth("dlq"); d != n {
			t.Fatalf("after browsing %d: depth %d, want %d", limit, d, n)
		}
	}
	back := e.drain("dlq")
	if len(back) != n {
		t.Fatalf("read back %d messages, want %d", len(back), n)
	}
	for i, d := range back {
		if string(d.Body) != strconv.Itoa(i) {
			t.Fatalf("read back: message %d is %q: order changed", i, d.Body)
		}
		// The broker marks every requeued message redelivered: browsing is visible in this flag.
		if !d.Redelivered {
			t.Errorf("message %d: redelivered=false after a browse", i)
		}
	}
	if len(got) != 20 {
		t.Errorf("the other consumer received %d of its 20 messages", len(got))
	}
}

func TestBrowseNotes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.Queue("shared", nil)
	e.Queue("empty", nil)
	e.Queue("sac", amqp.Table{"x-single-active-consumer": true})
	for i := 0; i < 5; i++ {
		e.publish("", "shared", amqp.Publishing{Body: []byte(strconv.Itoa(i))})
	}
	// A consumer holding two messages unacked.
	other, ds := rabbittest.Consume(t, e.url, "shared", "holder", 2)
	<-ds
	<-ds
	if _, err := other.Consume("sac", "active", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}

	res, err := e.b.Browse(ctx, e.vhost, "shared", 10)
	if err != nil {
		t.Fatal(err)
	}
	if res.Consumers != 1 || res.Ready != 3 || len(res.Messages) != 3 || string(res.Messages[0].Body) != "2" {
		t.Errorf("shared: consumers %d ready %d messages %d", res.Consumers, res.Ready, len(res.Messages))
	}
	if !strings.Contains(strings.Join(res.Notes, " "), "not visible") {
		t.Errorf("shared: notes %q do not say held messages are not visible", res.Notes)
	}

	res, err = e.b.Browse(ctx, e.vhost, "empty", 10)
	if err != nil || len(res.Messages) != 0 || res.Redelivered {
		t.Errorf("empty: %+v, %v", res, err)
	}

	_, err = e.b.Browse(ctx, e.vhost, "sac", 10)
	if !errors.Is(err, ops.ErrConflict) {
		t.Errorf("single active consumer queue with a consumer: err %v, want ErrConflict", err)
	}
}

func TestBrowseStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.Queue("events", amqp.Table{"x-queue-type": "stream"})
	for i := 0; i < 30; i++ {
		e.publish("", "events", amqp.Publishing{Body: []byte(strconv.Itoa(i))})
	}
	for _, limit := range []int{10, 100} {
		res, err := e.b.Browse(ctx, e.vhost, "events", limit)
		if err != nil {
			t.Fatal(err)
		}
		want := min(limit, 30)
		if len(res.Messages) != want || res.Redelivered || res.Type != TypeStream {
			t.Fatalf("limit %d: %d messages (want %d), redelivered %v, type %s", limit, len(res.Messages), want, res.Redelivered, res.Type)
		}
		for i, m := range res.Messages {
			if string(m.Body) != strconv.Itoa(i) || m.Offset == nil || *m.Offset != int64(i) {
				t.Fatalf("limit %d: message %d is %q at offset %v", limit, i, m.Body, m.Offset)
			}
		}
	}
}

func TestBrowseErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.Queue("q", nil)
	for _, tc := range []struct {
		name         string
		vhost, queue string
		limit        int
		want         error
		says         string // what a person reads (ops.Message), when the case checks it
	}{
		{"LimitZero", e.vhost, "q", 0, ops.ErrInvalid, ""},
		{"LimitTooBig", e.vhost, "q", 501, ops.ErrInvalid, ""},
		{"NoQueue", e.vhost, "", 1, ops.ErrInvalid, ""},
		// Not the management API's "HTTP 404: Not Found", which names no queue.
		{"UnknownQueue", e.vhost, "nope", 1, ops.ErrNotFound, fmt.Sprintf(`queue "nope" not found in vhost %q of rabbitmq broker`, e.vhost)},
		{"UnwatchedVhost", "/", "q", 1, ops.ErrNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.b.Browse(ctx, tc.vhost, tc.queue, tc.limit)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if !strings.HasPrefix(ops.Message(err), tc.says) {
				t.Errorf("a person reads %q; want %q", ops.Message(err), tc.says)
			}
		})
	}
	t.Run("UnknownVhost", func(t *testing.T) {
		cfg := rabbittest.Config(t, "no-such-vhost")
		b, err := New(cfg, testIDs)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if _, err := b.Browse(ctx, "no-such-vhost", "q", 1); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("browse: err %v, want ErrNotFound", err)
		}
		if _, err := b.Queues(ctx); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("queues: err %v, want ErrNotFound", err)
		}
	})
}

// TestUnavailable: New does not dial; a broker that is down is ErrUnavailable per call.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	amqpURL, mgmtURL := rabbittest.Env(t)
	vhost, _, _ := rabbittest.NewVhost(t)

	cfg := rabbittest.Config(t, vhost)
	cfg.URL, cfg.ManagementURL = configs.Secret("amqp://guest:guest@"+dead+"/"), "http://"+dead
	b, err := New(cfg, testIDs)
	if err != nil {
		t.Fatalf("New dialled: %v", err)
	}
	defer b.Close()
	if err := b.Ping(ctx); !errors.Is(err, ops.ErrUnavailable) {
		t.Errorf("ping: %v", err)
	}
	if _, err := b.Queues(ctx); !errors.Is(err, ops.ErrUnavailable) {
		t.Errorf("queues: %v", err)
	}
	if _, err := b.Topology(ctx); !errors.Is(err, ops.ErrUnavailable) {
		t.Errorf("topology: %v", err)
	}

	// Management up, AMQP down: browsing fails, the rest works.
	cfg.ManagementURL = mgmtURL
	b2, err := New(cfg, testIDs)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	_, ch := rabbittest.Channel(t, strings.TrimSuffix(amqpURL, "/")+"/"+vhost)
	if _, err := ch.QueueDeclare("q", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := b2.Ping(ctx); err != nil {
		t.Errorf("ping: %v", err)
	}
	if _, err := b2.Browse(ctx, vhost, "q", 1); !errors.Is(err, ops.ErrUnavailable) {
		t.Errorf("browse with AMQP down: %v", err)
	}
}

// TestQueues checks depths, consumers and rates and the effective dead-letter settings,
// including RabbitMQ's precedence between a queue argument and a policy.
func TestQueues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.Exchange("dlx-arg", "fanout")
	e.Exchange("dlx-pol", "fanout")
	e.Queue("got-arg", nil)
	e.Queue("got-pol", nil)
	e.Bind("got-arg", "", "dlx-arg")
	e.Bind("got-pol", "", "dlx-pol")
	e.Queue("both", amqp.Table{"x-dead-letter-exchange": "dlx-arg", "x-message-ttl": int32(60000), "x-max-length": int32(100)})
	e.Queue("pol-only", amqp.Table{"x-queue-type": "quorum"})
	e.Queue("orders.dlq", nil)
	// RabbitMQ 3.10 does not apply a policy with a key the queue type does not support at all
	// (delivery-limit on a classic queue): one policy per type.
	e.policy("dl", "^both$", rabbithole.PolicyDefinition{
		"dead-letter-exchange": "dlx-pol", "dead-letter-routing-key": "rk", "message-ttl": 30000, "max-length": 1000,
		"overflow": "reject-publish",
	}, "both")
	e.policy("dl-quorum", "^pol-only$", rabbithole.PolicyDefinition{"dead-letter-exchange": "dlx-pol", "delivery-limit": 7}, "pol-only")
	for i := 0; i < 3; i++ {
		e.publish("", "both", amqp.Publishing{Body: []byte("x")})
	}

	check := func(t *testing.T, b *Broker) {
		qs, err := b.Queues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		by := map[string]Queue{}
		for _, q := range qs {
			by[q.Name] = q
		}
		both := by["both"]
		// Argument wins for the dead-letter exchange; the smaller TTL and max-length win.
		if both.DeadLetterExchange != "dlx-arg" || both.DeadLetterSource != SourceArgument || both.DeadLetterRoutingKey != "rk" ||
			*both.MessageTTL != 30000 || *both.MaxLength != 100 || both.Overflow != "reject-publish" || both.DeliveryLimit != nil {
			t.Errorf("both: %+v", both)
		}
		if both.Arguments["x-message-ttl"] != "60000" || both.Arguments["x-dead-letter-exchange"] != "dlx-arg" {
			t.Errorf("both: arguments %v", both.Arguments)
		}
		pol := by["pol-only"]
		if pol.Type != TypeQuorum || pol.DeadLetterExchange != "dlx-pol" || pol.DeadLetterSource != SourcePolicy ||
			pol.DeliveryLimit == nil || *pol.DeliveryLimit != 7 || pol.Policy != "dl-quorum" {
			t.Errorf("pol-only: %+v", pol)
		}
		if !by["orders.dlq"].IsDeadLetterQueue || both.IsDeadLetterQueue {
			t.Errorf("dead-letter queue by name: orders.dlq %v, both %v", by["orders.dlq"].IsDeadLetterQueue, both.IsDeadLetterQueue)
		}
	}
	t.Run("EffectivePolicyDefinition", func(t *testing.T) { check(t, e.b) })
	t.Run("PolicyFallback", func(t *testing.T) {
		b, err := New(rabbittest.Config(t, e.vhost), testIDs)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		b.noEffectivePolicy = true
		check(t, b)
	})
	t.Run("BrokerAgrees", func(t *testing.T) {
		// Reject one message from "both": the broker's own choice of dead-letter exchange.
		e.reject(t, "both")
		e.waitDepth("got-arg", 1)
		if n := e.depth("got-pol"); n != 0 {
			t.Errorf("the policy's dead-letter exchange got %d messages", n)
		}
	})
	t.Run("CountsAndRates", func(t *testing.T) {
		rabbittest.Consume(t, e.url, "both", "c", 1)
		// A steady trickle into another queue, for a publish rate.
		e.Queue("rated", amqp.Table{"x-max-length": int32(10)})
		_, pub := rabbittest.Channel(t, e.url)
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
					_ = pub.Publish("", "rated", false, false, amqp.Publishing{Body: []byte("r")})
				}
			}
		}()
		rabbittest.WaitFor(t, 15*time.Second, "stats for both and rated", func(ctx context.Context) bool {
			qs, err := e.b.Queues(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var okBoth, okRated bool
			for _, q := range qs {
				switch q.Name {
				case "both":
					okBoth = q.Consumers == 1 && q.Unacked == 1 && q.Ready == 1 && q.Total == 2 && q.State != ""
				case "rated":
					okRated = q.PublishRate > 0
				}
			}
			return okBoth && okRated
		})
	})
}

func TestTopology(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.Exchange("dlx", "topic")
	e.Exchange("dlx.fan", "fanout")
	e.Exchange("dlx.hdr", "headers")
	e.Exchange("orders", "direct")
	// From arguments: a → dlx with key a.dead → a.dlq (topic a.#) and all.dlq (#).
	e.Queue("a", amqp.Table{"x-dead-letter-exchange": "dlx", "x-dead-letter-routing-key": "a.dead"})
	e.Queue("a.dlq", nil)
	e.Queue("all-dead", nil)
	e.Bind("a.dlq", "a.#", "dlx")
	e.Bind("all-dead", "#", "dlx")
	// From a policy: b → dlx with its own keys (b.created via orders) → b.parking (b.*) and all-dead.
	e.Queue("b", nil)
	e.Bind("b", "b.created", "orders")
	e.Queue("b.parking", nil)
	e.Bind("b.parking", "b.*", "dlx")
	e.policy("dl-b", "^b$", rabbithole.PolicyDefinition{"dead-letter-exchange": "dlx"}, "b")
	// Exchange-to-exchange: c → dlx.fan → (exchange) dlx with key c → all-dead.
	e.Queue("c", amqp.Table{"x-dead-letter-exchange": "dlx.fan", "x-dead-letter-routing-key": "c"})
	if err := e.ch.ExchangeBind("dlx", "", "dlx.fan", false, nil); err != nil {
		t.Fatal(err)
	}
	// Headers exchange: every bound queue.
	e.Queue("h", amqp.Table{"x-dead-letter-exchange": "dlx.hdr"})
	e.Queue("h.one", nil)
	e.Queue("h.two", nil)
	if err := e.ch.QueueBind("h.one", "", "dlx.hdr", false, amqp.Table{"x-match": "all", "kind": "one"}); err != nil {
		t.Fatal(err)
	}
	if err := e.ch.QueueBind("h.two", "", "dlx.hdr", false, amqp.Table{"x-match": "all", "kind": "two"}); err != nil {
		t.Fatal(err)
	}
	// A missing exchange.
	e.Queue("lost", amqp.Table{"x-dead-letter-exchange": "nowhere"})
	// A retry loop through the default exchange.
	e.Queue("w", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "w.retry"})
	e.Queue("w.retry", amqp.Table{"x-message-ttl": int32(5000), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "w"})

	topo, err := e.b.Topology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	edges := map[string]Edge{}
	for _, ed := range topo.Edges {
		edges[ed.FromQueue] = ed
	}
	want := map[string]string{
		"a":       "a.dlq,all-dead",
		"b":       "all-dead,b.parking",
		"c":       "all-dead",
		"h":       "h.one,h.two",
		"lost":    "",
		"w":       "w.retry",
		"w.retry": "w",
	}
	if len(edges) != len(want) {
		t.Errorf("edges from %d queues, want %d: %+v", len(edges), len(want), topo.Edges)
	}
	for q, to := range want {
		if got := strings.Join(edges[q].ToQueues, ","); got != to {
			t.Errorf("%s dead-letters to %q, want %q (%+v)", q, got, to, edges[q])
		}
	}
	if ed := edges["b"]; ed.RoutingKey != "" || strings.Join(ed.OwnKeys, ",") != "b,b.created" || ed.Exchange != "dlx" {
		t.Errorf("b: %+v", ed)
	}
	if !edges["h"].AllBound || !strings.Contains(edges["h"].Note, "headers") {
		t.Errorf("h: %+v", edges["h"])
	}
	if !edges["lost"].Missing {
		t.Errorf("lost: %+v", edges["lost"])
	}
	for _, q := range []string{"a.dlq", "all-dead", "b.parking", "h.one", "h.two"} {
		if !topo.DLQs[QueueRef{Vhost: e.vhost, Name: q}] {
			t.Errorf("%s is not a DLQ", q)
		}
	}
	for _, q := range []string{"a", "b", "w", "w.retry"} {
		if topo.DLQs[QueueRef{Vhost: e.vhost, Name: q}] {
			t.Errorf("%s is a DLQ", q)
		}
	}
	for _, q := range topo.Queues {
		if q.IsDeadLetterQueue != topo.DLQs[q.Ref()] {
			t.Errorf("%s: IsDeadLetterQueue %v disagrees with DLQs", q.Name, q.IsDeadLetterQueue)
		}
	}
	if !topo.RetryQueues[QueueRef{Vhost: e.vhost, Name: "w.retry"}] || len(topo.RetryLoops) != 1 || topo.RetryLoops[0].WorkQueue != "w" ||
		topo.RetryLoops[0].Delay != 5*time.Second {
		t.Errorf("retry loops: %+v", topo.RetryLoops)
	}
	if got := strings.Join(DeadLettersFrom(topo, e.vhost, "all-dead"), ","); got != "a,b,c" {
		t.Errorf("dead letters into all-dead come from %q, want a,b,c", got)
	}
}

// A scan of a stream past 65,535 messages reads them all: AMQP's prefetch count is 16 bits, and
// the read asked for its whole limit as its prefetch, which amqp091 refused — a 503 for a scan of
// 70,000. The stream is acked as read, for credit; it keeps every message.
func TestScanAStreamPastAPrefetchWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.Queue("events", amqp.Table{"x-queue-type": "stream"})
	const n = 65_600
	var last *amqp.DeferredConfirmation
	for i := range n {
		dc, err := e.ch.PublishWithDeferredConfirmWithContext(ctx, "", "events", false, false, amqp.Publishing{Body: []byte(strconv.Itoa(i))})
		if err != nil {
			t.Fatal(err)
		}
		last = dc
	}
	if ok, err := last.WaitContext(ctx); !ok || err != nil {
		t.Fatalf("the broker did not confirm the stream's messages: %v", err)
	}
	read := 0
	res, err := e.b.Scan(ctx, e.vhost, "events", 70_000, func(m Message) bool {
		if string(m.Body) != strconv.Itoa(read) {
			t.Fatalf("message %d is %q", read, m.Body)
		}
		read++
		return true
	})
	if err != nil || read != n {
		t.Fatalf("scan of a stream of %d: read %d, %v", n, read, err)
	}
	again, err := e.b.Browse(ctx, e.vhost, "events", 5)
	if err != nil || len(again.Messages) != 5 || string(again.Messages[0].Body) != "0" || res.Type != TypeStream {
		t.Fatalf("after the scan: %+v, %v; want the stream from its first message", again.Messages, err)
	}
}
