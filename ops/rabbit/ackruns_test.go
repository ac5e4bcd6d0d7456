package rabbit

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// A cursor acks each call's deliveries with one basic.ack(multiple) over the run of tags from the
// lowest unacked one, and one ack each past a gap (issue 38: 20,000 single acks were a frame, a
// flush and a queue operation each). A multiple ack acks every unacked tag up to its own, so a run
// must never reach over a message left in the queue. Acks come out of order and around gaps, as a
// job's batches do (a later batch's message read early, a skipped one left in place); afterwards
// exactly the messages never acked are back in the DLQ, in their order, and no window's channel
// was closed by the broker (an ack of an unknown tag is a 406). Checked with the test's own client.
func TestCursorAcksRunsNeverOverAGap(t *testing.T) {
	const n = 300
	e := newEnv(t)
	e.Queue("orders.dlq", nil)
	for i := range n {
		e.publish("", "orders.dlq", amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), Body: []byte("{}")})
	}
	e.waitDepth("orders.dlq", n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := e.b.OpenCursor(ctx, e.vhost, "orders.dlq", n)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Take(ctx, n)
	if err != nil || len(got) != n {
		t.Fatalf("took %d of %d: %v", len(got), n, err)
	}
	var closes []chan *amqp.Error
	c.mu.Lock()
	for _, w := range c.windows {
		closes = append(closes, w.ch.NotifyClose(make(chan *amqp.Error, 1)))
	}
	c.mu.Unlock()
	span := func(from, to int, skip ...int) []Delivery { // got[from:to] but the skipped indexes
		var out []Delivery
		for i := from; i < to; i++ {
			if !slices.Contains(skip, i) {
				out = append(out, got[i])
			}
		}
		return out
	}
	var left []int // never acked: back in the queue
	for i := 60; i < 70; i++ {
		left = append(left, i)
	}
	for i := 200; i < 250; i++ {
		left = append(left, i)
	}
	for _, call := range [][]Delivery{
		span(100, 200),              // ahead of an unacked run: one ack each
		span(0, 50),                 // from the start: one multiple ack
		span(50, 100, left[:10]...), // up to a gap (a multiple ack to 59), then single acks
		span(250, 300),              // past the second gap
	} {
		if err := c.Ack(call); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	floor := c.windows[0].floor
	c.mu.Unlock()
	if want := got[59].d.DeliveryTag; floor != want {
		t.Errorf("window floor %d, want %d (every tag below the first gap acked)", floor, want)
	}
	c.Close()
	for i, ch := range closes {
		select {
		case err, ok := <-ch:
			if ok && err != nil {
				t.Errorf("window %d's channel was closed by the broker: %v (code %d, server %v)", i, err, err.Code, err.Server)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("window %d's channel is still open after Close", i)
		}
	}
	e.waitDepth("orders.dlq", len(left))
	var back []string
	for range left {
		d, ok, err := e.ch.Get("orders.dlq", true)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		back = append(back, strings.TrimPrefix(d.MessageId, "m-"))
	}
	var want []string
	for _, i := range left {
		want = append(want, strconv.Itoa(i))
	}
	if strings.Join(back, ",") != strings.Join(want, ",") {
		t.Errorf("back in the DLQ: %v\nwant %v", back, want)
	}
}
