package rabbit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbittest"
)

// A quorum queue with a delivery limit (from its argument, a policy or an operator policy) is not
// browsed on RabbitMQ 3.x, where a browse reads it whole: each browse counts a delivery. On 4.x
// it is, at the cost of the page read, and the browse says which limit it counted against. One
// without a limit of its own is browsed twice and left in order.
func TestBrowseQuorum(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	v4 := e.rules().headReturns
	limited := func(t *testing.T, queue string, want int64, from string) {
		t.Helper()
		res, err := e.b.Browse(ctx, e.vhost, queue, 10)
		switch {
		case !v4 && (!errors.Is(err, ops.ErrConflict) || !strings.Contains(err.Error(), fmt.Sprintf("delivery limit of %d", want)) ||
			!strings.Contains(err.Error(), from)):
			t.Fatalf("3.x: err %v, want ErrConflict naming the delivery limit and %s", err, from)
		case v4 && err != nil:
			t.Fatalf("4.x: %v", err)
		case v4 && (res.DeliveryLimit == nil || *res.DeliveryLimit != want || !strings.Contains(res.DeliveryLimitFrom, from)):
			t.Fatalf("4.x: limit %v from %q, want %d from %s", ptrText(res.DeliveryLimit), res.DeliveryLimitFrom, want, from)
		}
	}
	e.Queue("qq.limited", amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(5)})
	e.Queue("qq.policy", amqp.Table{"x-queue-type": "quorum"})
	e.Queue("qq.free", amqp.Table{"x-queue-type": "quorum"})
	for i := 0; i < 30; i++ {
		e.publish("", "qq.free", amqp.Publishing{Body: []byte(strconv.Itoa(i))})
	}

	t.Run("DeliveryLimitArgument", func(t *testing.T) { limited(t, "qq.limited", 5, "x-delivery-limit argument") })
	t.Run("DeliveryLimitPolicy", func(t *testing.T) {
		// Browse right after the policy is set: the management API reports a quorum queue's policy
		// from statistics emitted every 5 s, so this relies on reading the policies themselves.
		if _, err := e.mgmt.PutPolicy(e.vhost, "limit", rabbithole.Policy{Pattern: "^qq\\.policy$", ApplyTo: "queues",
			Definition: rabbithole.PolicyDefinition{"delivery-limit": 3}}); err != nil {
			t.Fatal(err)
		}
		limited(t, "qq.policy", 3, `policy "limit"`)
	})
	t.Run("DeliveryLimitOperatorPolicy", func(t *testing.T) {
		e.Queue("qq.op", amqp.Table{"x-queue-type": "quorum"})
		if _, err := e.mgmt.PutOperatorPolicy(e.vhost, "op-limit", rabbithole.OperatorPolicy{Pattern: "^qq\\.op$", ApplyTo: "queues",
			Definition: rabbithole.PolicyDefinition{"delivery-limit": 4}}); err != nil {
			t.Fatal(err)
		}
		limited(t, "qq.op", 4, `operator policy "op-limit"`)
	})
	t.Run("NoLimit", func(t *testing.T) {
		for round := 0; round < 2; round++ {
			res, err := e.b.Browse(ctx, e.vhost, "qq.free", 30)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Messages) != 30 {
				t.Fatalf("round %d: browsed %d, want 30 (ready %d, notes %q)", round, len(res.Messages), res.Ready, res.Notes)
			}
			for i, m := range res.Messages {
				if string(m.Body) != strconv.Itoa(i) {
					t.Fatalf("round %d: message %d is %q", round, i, m.Body)
				}
			}
		}
		back := e.drain("qq.free")
		if len(back) != 30 {
			t.Fatalf("read back %d", len(back))
		}
		for i, d := range back {
			if string(d.Body) != strconv.Itoa(i) {
				t.Fatalf("read back: message %d is %q: order changed", i, d.Body)
			}
			// Two browses returned each message twice.
			if c, _ := valueInt(d.Headers["x-delivery-count"]); c != 2 {
				t.Errorf("message %d: x-delivery-count %v, want 2", i, d.Headers["x-delivery-count"])
			}
		}
	})
}

// A quorum queue puts returned messages at its back: browsing its head twice once showed two
// different heads and left it reordered. A browse of part of it reads it whole and returns it all,
// so the head stays the head; a replay cursor that moves one message returns the rest in order.
// Read back with the test's own client.
func TestQuorumBrowseOfPartKeepsTheOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.quorumOf("qq", 10)
	for round := range 2 {
		res, err := e.b.Browse(ctx, e.vhost, "qq", 3)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range res.Messages {
			got = append(got, string(m.Body))
		}
		if fmt.Sprint(got) != "[0 1 2]" {
			t.Fatalf("round %d: browsed %v: the head moved", round, got)
		}
		// 3.x puts returns at the back, so the browse read the queue whole; 4.x puts them back at the
		// head, so only the page was read.
		want := "read all 10 ready messages"
		if e.rules().headReturns {
			want = "only those (the page, not the queue)"
		}
		if !strings.Contains(strings.Join(res.Notes, " "), want) {
			t.Errorf("round %d: notes %q, want %q", round, res.Notes, want)
		}
	}
	// A plan's Peek of part of it, too.
	var peeked []string
	if _, err := e.b.Peek(ctx, e.vhost, "qq", 4, func(m Message) { peeked = append(peeked, string(m.Body)) }); err != nil ||
		fmt.Sprint(peeked) != "[0 1 2 3]" {
		t.Fatalf("peek: %v %v", peeked, err)
	}

	// A job's cursor reads 3, moves the second and returns the others: in their places.
	cur, err := e.b.OpenCursor(ctx, e.vhost, "qq", 3)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := cur.Take(ctx, 3)
	if err != nil || len(ds) != 3 {
		t.Fatalf("take: %d %v", len(ds), err)
	}
	if err := cur.Ack(ds[1:2]); err != nil {
		t.Fatal(err)
	}
	cur.Close()
	rabbittest.WaitDepth(t, e.ch, "qq", 9, 10e9)
	var back []string
	for _, d := range e.drain("qq") {
		back = append(back, string(d.Body))
	}
	if fmt.Sprint(back) != "[0 2 3 4 5 6 7 8 9]" {
		t.Fatalf("read back %v: order changed", back)
	}
}

// On RabbitMQ 3.x a quorum queue a browse cannot read whole — a consumer would take some of it, or
// it holds more than a browse reads — is refused with the reason, and left as it was. On 4.x,
// which returns to the head, it is read as a classic queue is: a partial list that says so.
func TestQuorumBrowseRefusedWhenNotWhole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.quorumOf("qq.busy", 5)
	rabbittest.Consume(t, e.url, "qq.busy", "live", 1) // holds one, four stay ready
	for _, limit := range []int{2, 50} {
		res, err := e.b.Browse(ctx, e.vhost, "qq.busy", limit)
		if e.rules().headReturns {
			if err != nil || res.Complete {
				t.Fatalf("4.x, limit %d: complete %v, %v; want a partial list", limit, res.Complete, err)
			}
			continue
		}
		if !errors.Is(err, ops.ErrConflict) || !strings.Contains(ops.Message(err), "at the back of a quorum queue") {
			t.Fatalf("limit %d: %v; want a conflict saying why", limit, err)
		}
	}
	err := quorumWhole("qq.big", amqp.Queue{Messages: MaxQuorumBrowse + 1}, MaxQuorumBrowse)
	if !errors.Is(err, ops.ErrConflict) || !strings.Contains(err.Error(), "holds 10001 ready messages, more than the 10000") {
		t.Fatalf("a larger queue: %v", err)
	}
}

// quorumOf declares quorum queue name holding n messages, "0" … "n-1" (id and body).
func (e *env) quorumOf(name string, n int) {
	e.t.Helper()
	e.Queue(name, amqp.Table{"x-queue-type": "quorum"})
	for i := range n {
		e.publish("", name, amqp.Publishing{MessageId: strconv.Itoa(i), Body: []byte(strconv.Itoa(i))})
	}
	e.waitDepth(name, n)
}
