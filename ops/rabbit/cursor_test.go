package rabbit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
)

// A broker too slow to deliver within the cursor's wait (here: a wait of a nanosecond) makes Take
// fail with ops.ErrUnavailable — the job pauses and reads again — and never end the span early,
// which a job would report as "not found in the queue" for messages still in it. Nothing is lost:
// a cursor with the usual waits then reads every message.
func TestCursorSlowBrokerIsNotAnEmptyQueue(t *testing.T) {
	e := newEnv(t)
	e.Queue("orders.dlq", nil)
	const n = 5000
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, pub := rabbittest.Channel(t, e.url) // no confirms: the depth below is the check
	for i := range n {
		if err := pub.PublishWithContext(ctx, "", "orders.dlq", false, false, amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), Body: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitDepth("orders.dlq", n)
	impatient, err := New(rabbittest.Config(t, e.vhost), testIDs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(impatient.Close)
	warm, err := impatient.OpenCursor(ctx, e.vhost, "orders.dlq", n) // dials with the usual timeout
	if err != nil {
		t.Fatal(err)
	}
	warm.Close()
	impatient.timeout, impatient.firstWait, impatient.idleWait = time.Nanosecond, time.Nanosecond, time.Nanosecond
	unavailable := 0
	for range 20 {
		c, err := impatient.OpenCursor(ctx, e.vhost, "orders.dlq", n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Take(ctx, n)
		switch {
		case errors.Is(err, ops.ErrUnavailable):
			unavailable++
		case err != nil:
			t.Fatal(err)
		case len(got) < n || c.Ended() && c.Read() < n:
			t.Fatalf("the cursor ended after %d of %d messages with no one else consuming", c.Read(), n)
		}
		c.Close()
	}
	if unavailable == 0 {
		t.Log("every impatient read got all messages: the broker was faster than a nanosecond each time")
	}
	c, err := e.b.OpenCursor(ctx, e.vhost, "orders.dlq", n)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.Take(ctx, n); err != nil || len(got) != n {
		t.Fatalf("after the impatient reads: %d messages, %v", len(got), err)
	}
}

// A cursor's batch with a message bound for an exchange that does not exist fails that message
// alone, before publishing, with the reason; the others are published once and the channels stay
// open. A restore from the archive to a missing exchange says so as a not-found error, never
// "unavailable", and publishes nothing. Counted with the test's own client.
func TestPublishToAMissingExchange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	e.Exchange("orders", "topic")
	e.Queue("orders.work", nil)
	e.Bind("orders.work", "#", "orders")
	e.Queue("orders.dlq", nil)
	for i := range 4 {
		e.publish("", "orders.dlq", amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), Body: []byte("{}")})
	}
	cur, err := e.b.OpenCursor(ctx, e.vhost, "orders.dlq", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	ds, err := cur.Take(ctx, 4)
	if err != nil || len(ds) != 4 {
		t.Fatalf("take: %d %v", len(ds), err)
	}
	to := []Republish{{Exchange: "orders", RoutingKey: "a"}, {Exchange: "gone", RoutingKey: "a"},
		{Exchange: "", RoutingKey: "orders.work"}, {Exchange: "orders", RoutingKey: "b"}}
	errs, err := cur.Publish(ctx, ds, to)
	if err != nil {
		t.Fatalf("publish: %v; want only the message for the missing exchange failed", err)
	}
	want := fmt.Sprintf(`exchange "gone" does not exist in vhost %q`, e.vhost)
	for i, err := range errs {
		switch {
		case i == 1 && (err == nil || err.Error() != want || !errors.Is(err, ops.ErrNotFound)):
			t.Errorf("message 1: %v; want %s", err, want)
		case i != 1 && err != nil:
			t.Errorf("message %d: %v", i, err)
		}
	}
	// The exchanges seen to exist are not asked again; the next batch still publishes.
	if errs, err := cur.Publish(ctx, ds[:1], to[:1]); err != nil || errs[0] != nil {
		t.Fatalf("second batch: %v %v", errs, err)
	}
	e.waitDepth("orders.work", 4)

	w, err := ds[0].Whole()
	if err != nil {
		t.Fatal(err)
	}
	err = e.b.PublishWholeWith(ctx, e.vhost, "gone", "a", w, amqp.Table{})
	if !errors.Is(err, ops.ErrNotFound) || errors.Is(err, ops.ErrUnavailable) || ops.Message(err) != want {
		t.Fatalf("restore to a missing exchange: %v (%q); want not found: %s", err, ops.Message(err), want)
	}
	if err := e.b.PublishWholeWith(ctx, e.vhost, "orders", "a", w, amqp.Table{}); err != nil {
		t.Fatalf("restore to orders: %v", err)
	}
	e.waitDepth("orders.work", 5)
}

// A replay job's cursor takes the queue's turn as a browse does, for as long as it is open: a
// browse (search, trace, plan) that comes meanwhile would take, with its prefetch of the whole
// queue, part of what the job moves and hold it (a 20,000-message job once settled 9,950 of them
// "not found in the queue" while they were still in it). The browse waits, then says a replay job
// is moving the queue's messages; a second cursor says what the job waits for; and a cursor waits
// for a browse that holds the turn. Across replicas too, through the queue lock.
func TestCursorTakesTheQueuesTurn(t *testing.T) {
	t.Parallel()
	const n = 10
	e := newEnv(t)
	e.fillDLQ(n)
	ctx := context.Background()
	e.b.browsing.wait = 300 * time.Millisecond

	cur, err := e.b.OpenCursor(ctx, e.vhost, concurrentDLQ, n)
	if err != nil {
		t.Fatal(err)
	}
	if ds, err := cur.Take(ctx, 3); err != nil || len(ds) != 3 {
		t.Fatalf("take: %d %v", len(ds), err)
	}
	wantBusy := fmt.Sprintf("a replay job is moving the messages of queue %q", concurrentDLQ)
	if _, err := e.b.Browse(ctx, e.vhost, concurrentDLQ, 10); !errors.Is(err, ops.ErrUnavailable) || !strings.Contains(ops.Message(err), wantBusy) {
		t.Fatalf("browse while a cursor is open: %v; want ops.ErrUnavailable saying %q", err, wantBusy)
	}
	if _, err := e.b.Peek(ctx, e.vhost, concurrentDLQ, 10, func(Message) { t.Error("the peek read a message the cursor holds the turn of") }); !errors.Is(err, ops.ErrUnavailable) {
		t.Fatalf("peek while a cursor is open: %v", err)
	}
	wantWait := fmt.Sprintf("waiting for its turn on queue %q", concurrentDLQ)
	if _, err := e.b.OpenCursor(ctx, e.vhost, concurrentDLQ, n); !errors.Is(err, ops.ErrUnavailable) || !strings.HasPrefix(ops.Message(err), wantWait) {
		t.Fatalf("second cursor: %v (%q); want ops.ErrUnavailable saying %q", err, ops.Message(err), wantWait)
	} else {
		t.Logf("second cursor: %s", ops.Message(err))
	}
	if others, err := cur.OthersNow(ctx); err != nil || others != 0 {
		t.Fatalf("others: %d %v; want 0 (the cursor's own consumer is not another)", others, err)
	}
	cur.Close()
	cur.Close() // a second Close gives up nothing more
	res, err := e.b.Browse(ctx, e.vhost, concurrentDLQ, 10)
	if err != nil || inOrder(res.Messages, 0, n) != nil {
		t.Fatalf("browse after the cursor closed: %v %v", err, inOrder(res.Messages, 0, n))
	}

	t.Run("CursorWaitsForABrowse", func(t *testing.T) {
		release, _, err := e.b.browsing.acquire(ctx, e.b.name, e.vhost, concurrentDLQ)
		if err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(100*time.Millisecond, release)
		start := time.Now()
		cur, err := e.b.OpenCursor(ctx, e.vhost, concurrentDLQ, n)
		if err != nil {
			t.Fatalf("cursor after the browse: %v", err)
		}
		defer cur.Close()
		if waited := time.Since(start); waited < 90*time.Millisecond {
			t.Errorf("the cursor opened after %v, while the browse held the turn for 100ms", waited)
		}
		if ds, err := cur.Take(ctx, n); err != nil || len(ds) != n {
			t.Fatalf("take: %d %v", len(ds), err)
		}
	})

	t.Run("OtherReplica", func(t *testing.T) {
		other := e.replica(t, locker(t, pgtest.NewDatabase(t)))
		cur, err := e.b.OpenCursor(ctx, e.vhost, concurrentDLQ, n)
		if err != nil {
			t.Fatal(err)
		}
		wantMsg := fmt.Sprintf("another browse or replay plan of queue %q is reading it, or a replay job is moving its messages", concurrentDLQ)
		if _, err := other.Browse(ctx, e.vhost, concurrentDLQ, 10); !errors.Is(err, ops.ErrUnavailable) || !strings.Contains(ops.Message(err), wantMsg) {
			t.Fatalf("the other replica's browse while a cursor is open: %v; want %q", err, wantMsg)
		}
		cur.Close()
		// The browse that must go through waits as a console's does (DefaultBrowseWait): the
		// test's 300 ms is for the refusal above, and connecting for the cross-replica lock alone
		// took longer on a loaded machine (the browse then went ahead, saying it could not
		// exclude other replicas: not Complete).
		other.browsing.wait = DefaultBrowseWait
		res, err := other.Browse(ctx, e.vhost, concurrentDLQ, 10)
		if err != nil || !res.Complete || inOrder(res.Messages, 0, n) != nil {
			t.Fatalf("after the cursor closed: %v complete=%v %v notes %q", err, res.Complete, inOrder(res.Messages, 0, n), res.Notes)
		}
	})
}

// A consumer that comes after a cursor opened is counted by OthersNow, however long the cursor
// has been open; the cursor's own consumer never is.
func TestCursorOthersNow(t *testing.T) {
	t.Parallel()
	const n = 10
	e := newEnv(t)
	e.fillDLQ(n)
	ctx := ctxT(t)
	cur, err := e.b.OpenCursor(ctx, e.vhost, concurrentDLQ, n)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	if others, err := cur.OthersNow(ctx); err != nil || others != 0 {
		t.Fatalf("before anyone else: %d %v", others, err)
	}
	ch, deliveries := rabbittest.Consume(t, e.url, concurrentDLQ, "holder", 4)
	for range 4 {
		<-deliveries
	}
	if others, err := cur.OthersNow(ctx); err != nil || others != 1 {
		t.Fatalf("with a consumer holding 4: %d %v; want 1", others, err)
	}
	ds, err := cur.Take(ctx, n)
	if err != nil || len(ds) != n-4 || !cur.Ended() {
		t.Fatalf("take: %d %v ended=%v; want the %d the other consumer does not hold", len(ds), err, cur.Ended(), n-4)
	}
	_ = ch.Close() // returns its 4
	if others, err := cur.OthersNow(ctx); err != nil || others != 1 {
		t.Fatalf("after the consumer left: %d %v; want still 1: it may have held messages the cursor passed", others, err)
	}
}
