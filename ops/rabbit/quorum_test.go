package rabbit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbittest"
)

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
		if !strings.Contains(strings.Join(res.Notes, " "), "read all 10 ready messages") {
			t.Errorf("round %d: notes %q", round, res.Notes)
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

// A quorum queue a browse cannot read whole — a consumer would take some of it, or it holds more
// than a browse reads — is refused with the reason, and left as it was.
func TestQuorumBrowseRefusedWhenNotWhole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.quorumOf("qq.busy", 5)
	rabbittest.Consume(t, e.url, "qq.busy", "live", 1) // holds one, four stay ready
	for _, limit := range []int{2, 50} {
		_, err := e.b.Browse(ctx, e.vhost, "qq.busy", limit)
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
