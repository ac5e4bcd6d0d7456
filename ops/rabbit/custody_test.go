package rabbit

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
)

// deadLetterInto fills quorum DLQ "orders.dlq" (its own dead letters go to "parking", where a
// message RabbitMQ drops at the delivery limit would land, reason delivery_limit) with n messages
// "0" … "n-1" rejected from "orders". limit, when not nil, is the DLQ's x-delivery-limit.
func (e *env) deadLetterInto(n int, limit any) {
	e.t.Helper()
	e.Exchange("parking.dlx", "fanout")
	e.Queue("parking", nil)
	e.Bind("parking", "", "parking.dlx")
	args := amqp.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": "parking.dlx"}
	if limit != nil {
		args["x-delivery-limit"] = limit
	}
	e.Queue("orders.dlq", args)
	e.Queue("orders", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "orders.dlq"})
	for i := range n {
		e.publish("", "orders", amqp.Publishing{MessageId: strconv.Itoa(i), Body: []byte(strconv.Itoa(i))})
	}
	for range n {
		e.reject(e.t.(*testing.T), "orders")
	}
	e.waitDepth("orders.dlq", n)
}

// accountFor checks, with the test's own AMQP client, that every one of n ids is in exactly one
// place — still in orders.dlq (in their order) or in custody — and none in parking, where the
// broker would have put what it dropped. It returns how many were kept.
func (e *env) accountFor(n int) int {
	e.t.Helper()
	if d := e.depth("parking"); d != 0 {
		e.t.Fatalf("%d message(s) dead-lettered to parking: RabbitMQ dropped them at the delivery limit", d)
	}
	var left []int
	for _, d := range e.drain("orders.dlq") {
		i, _ := strconv.Atoi(d.MessageId)
		left = append(left, i)
	}
	if !slices.IsSorted(left) {
		e.t.Errorf("the DLQ's order changed: %v", left)
	}
	kept := e.kept.keptIDs()
	seen := map[string]int{}
	for _, i := range left {
		seen[strconv.Itoa(i)]++
	}
	for _, id := range kept {
		seen[id]++
	}
	for i := range n {
		if c := seen[strconv.Itoa(i)]; c != 1 {
			e.t.Errorf("message %d is in %d places (queue %v, kept %v)", i, c, left, kept)
		}
	}
	if len(seen) != n {
		e.t.Errorf("%d distinct ids accounted for, want %d", len(seen), n)
	}
	return len(kept)
}

// Reading a quorum DLQ over and over — 25 browses of a page, 20 plans of the whole queue, 5
// searches — never makes RabbitMQ drop a message. On RabbitMQ 4.x, whose quorum queues have a
// delivery limit of 20 by default and count every return against it, a message the next return
// would bring within two of the limit is taken into custody (archive, then ack) instead; the rest
// stay in the queue in their order. On 3.x the queue has no limit and keeps them all.
func TestQuorumDLQSurvivesRepeatedReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	const n = 40
	e.deadLetterInto(n, nil)
	v4 := e.rules().headReturns

	first, err := e.b.Browse(ctx, e.vhost, "orders.dlq", 10)
	if err != nil {
		t.Fatal(err)
	}
	if v4 {
		m := first.Messages[0]
		if first.DeliveryLimit == nil || *first.DeliveryLimit != 20 || m.DeliveryCount != 0 || m.DeliveriesLeft != 19 {
			t.Fatalf("4.x first browse: limit %s, message 0 count %d left %d; want 20, 0, 19",
				ptrText(first.DeliveryLimit), m.DeliveryCount, m.DeliveriesLeft)
		}
	} else if first.DeliveryLimit != nil || first.Messages[0].DeliveriesLeft != -1 {
		t.Fatalf("3.x: limit %s, left %d; want none", ptrText(first.DeliveryLimit), first.Messages[0].DeliveriesLeft)
	}
	for range 24 {
		if _, err := e.b.Browse(ctx, e.vhost, "orders.dlq", 10); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		if _, err := e.b.Peek(ctx, e.vhost, "orders.dlq", 500, func(Message) {}); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		if _, err := e.b.Scan(ctx, e.vhost, "orders.dlq", 500, func(Message) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
	last, err := e.b.Browse(ctx, e.vhost, "orders.dlq", 500)
	if err != nil {
		t.Fatal(err)
	}
	kept := e.accountFor(n)
	switch {
	case v4 && kept < 10:
		t.Fatalf("4.x: %d kept; the 10 messages of the page were read 51 times and must have been kept", kept)
	case !v4 && kept != 0:
		t.Fatalf("3.x: %d kept from a queue without a delivery limit", kept)
	}
	for _, m := range last.Messages {
		if v4 && !m.Kept && m.DeliveriesLeft < custodyReserve {
			t.Errorf("message %s went back with %d deliveries left", m.MessageID, m.DeliveriesLeft)
		}
	}
	t.Logf("kept %d of %d; the last browse read %d, kept %d", kept, n, len(last.Messages), last.Kept)
}

// A job's cursor returns what it did not move; on 4.x what a return would bring too near the limit
// is kept instead, unless the job moved (acked) it.
func TestCursorKeepsWhatItMayNotReturn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.deadLetterInto(6, int32(3))
	if !e.rules().headReturns {
		if _, err := e.b.OpenCursor(ctx, e.vhost, "orders.dlq", 6); !errors.Is(err, ops.ErrConflict) {
			t.Fatalf("3.x: %v, want a refusal of a delivery-limited quorum queue", err)
		}
		return
	}
	for round := range 2 { // limit 3: a second return would leave one delivery, under the reserve
		cur, err := e.b.OpenCursor(ctx, e.vhost, "orders.dlq", 6)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := cur.Take(ctx, 6)
		if err != nil || len(ds) == 0 {
			t.Fatalf("round %d: %d, %v", round, len(ds), err)
		}
		if round == 1 {
			if err := cur.Ack(ds[:1]); err != nil { // "moved" by the job: neither kept nor returned
				t.Fatal(err)
			}
		}
		cur.Close()
		if n, err := cur.Kept(); err != nil {
			t.Fatalf("round %d: kept %d: %v", round, n, err)
		}
	}
	kept := e.kept.keptIDs()
	if d, q := e.depth("parking"), e.depth("orders.dlq"); d != 0 || q != 0 || len(kept) != 5 || slices.Contains(kept, "0") {
		t.Fatalf("parking %d, queue %d, kept %v; want the 5 not moved kept, none dropped", d, q, kept)
	}
}

// When the archive does not answer, what could not be kept goes back (one delivery closer), the
// read fails saying so, and the queue is not read again until the archive answers: the limit is
// never reached by reads.
func TestCustodyWaitsForTheArchive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	const n = 4
	e.deadLetterInto(n, int32(4))
	if !e.rules().headReturns {
		t.Logf("3.x refuses a delivery-limited quorum queue outright (TestBrowseQuorum)")
		if _, err := e.b.Browse(ctx, e.vhost, "orders.dlq", 10); !errors.Is(err, ops.ErrConflict) {
			t.Fatalf("3.x: %v", err)
		}
		return
	}
	e.kept.mu.Lock()
	e.kept.down = true
	e.kept.mu.Unlock()
	var failed, refused int
	for range 10 {
		_, err := e.b.Browse(ctx, e.vhost, "orders.dlq", 10)
		switch {
		case err == nil:
		case errors.Is(err, ops.ErrUnavailable) && failed == 0:
			failed++
		case errors.Is(err, ops.ErrUnavailable):
			refused++
		default:
			t.Fatal(err)
		}
	}
	if failed != 1 || refused == 0 {
		t.Fatalf("failed %d, refused %d: want one failed custody, then refusals", failed, refused)
	}
	e.kept.mu.Lock()
	e.kept.down = false
	e.kept.mu.Unlock()
	res, err := e.b.Browse(ctx, e.vhost, "orders.dlq", 10)
	if err != nil || res.Kept != n {
		t.Fatalf("with the archive back: kept %d, %v; want %d", res.Kept, err, n)
	}
	if kept := e.accountFor(n); kept != n {
		t.Fatalf("kept %d", kept)
	}
}

// A copy published from a dead letter — a replay (Cursor.Publish), or a restore from the archive
// (PublishWhole) — carries no x-delivery-count: it starts fresh, whatever the DLQ counted. Read
// on the destination with the test's own client.
func TestCopiesStartFresh(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.deadLetterInto(2, nil)
	e.Queue("work", nil)
	for range 3 { // three reads: on a quorum queue each counts one delivery
		if _, err := e.b.Browse(ctx, e.vhost, "orders.dlq", 10); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := e.b.OpenCursor(ctx, e.vhost, "orders.dlq", 2)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := cur.Take(ctx, 2)
	if err != nil || len(ds) != 2 {
		t.Fatalf("take %d: %v", len(ds), err)
	}
	if DeliveryCount(ds[0].Headers) != 3 {
		t.Fatalf("the dead letter's x-delivery-count is %v, want 3 after three reads", ds[0].Headers["x-delivery-count"])
	}
	errs, err := cur.Publish(ctx, ds[:1], []Republish{{RoutingKey: "work"}})
	if err != nil || errs[0] != nil {
		t.Fatalf("publish: %v %v", err, errs)
	}
	w, err := ds[1].Whole()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.b.PublishWhole(ctx, e.vhost, "", "work", w, nil); err != nil {
		t.Fatal(err)
	}
	cur.Close()
	e.waitDepth("work", 2)
	for _, d := range e.drain("work") {
		for k := range d.Headers {
			if strings.EqualFold(k, "x-delivery-count") {
				t.Errorf("copy %s carries %s=%v", d.MessageId, k, d.Headers[k])
			}
		}
		if _, ok := d.Headers["x-death"]; !ok {
			t.Errorf("copy %s lost its x-death (only broker-owned delivery headers go)", d.MessageId)
		}
	}
}

// RabbitMQ 3.10 accepts x-delivery-limit -1 as a queue argument and then drops a message the
// first time it goes back: to the console such a queue has a limit of 0 and is not browsed; on
// 4.x -1 means unlimited and it is. Either way its messages stay.
func TestNegativeDeliveryLimitArgument(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.Queue("neg.dlq", amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(-1)})
	for i := range 3 {
		e.publish("", "neg.dlq", amqp.Publishing{MessageId: strconv.Itoa(i), Body: []byte("x")})
	}
	e.waitDepth("neg.dlq", 3)
	for range 3 {
		res, err := e.b.Browse(ctx, e.vhost, "neg.dlq", 10)
		if e.rules().negativeUnlimits {
			if err != nil || res.DeliveryLimit != nil || len(res.Messages) != 3 {
				t.Fatalf("4.x: %d messages, limit %s, %v", len(res.Messages), ptrText(res.DeliveryLimit), err)
			}
			continue
		}
		if !errors.Is(err, ops.ErrConflict) || !strings.Contains(err.Error(), "delivery limit of 0") {
			t.Fatalf("3.x: %v, want a refusal naming a delivery limit of 0", err)
		}
	}
	if d := e.depth("neg.dlq"); d != 3 {
		t.Fatalf("%d of 3 messages left", d)
	}
}
