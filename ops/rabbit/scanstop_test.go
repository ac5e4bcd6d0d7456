package rabbit

import (
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/rabbittest"
)

// fillFast declares classic queue and publishes n small persistent messages, ids m-00000,
// m-00001, ….
func (e *env) fillFast(queue string, n int) {
	e.t.Helper()
	rabbittest.Fill(e.t, e.url, queue, n, func(i int) amqp.Publishing {
		return amqp.Publishing{MessageId: fastID(i), DeliveryMode: amqp.Persistent, Body: fmt.Appendf(nil, `{"n":%d}`, i)}
	})
}

func fastID(i int) string { return fmt.Sprintf("m-%05d", i) }

// TestScanStopsReading: a scan whose sink says stop after the first message of a classic queue
// of 40,000 stops reading there — it does not take (and return) the other 39,999 — and the queue
// holds every message in its order afterwards. The old Scan read all 40,000 (a filter search with
// limit=1 of a 100,000-message queue ran past the request's timeout).
func TestScanStopsReading(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	const n = 40_000
	e.fillFast("big.dlq", n)

	for _, limit := range []int{n, MaxPeek} { // one consumer's prefetch, and beyond it
		start := time.Now()
		var seen []Message
		res, err := e.b.Scan(ctx, e.vhost, "big.dlq", limit, func(m Message) bool {
			seen = append(seen, m)
			return len(seen) < 3
		})
		took := time.Since(start)
		t.Logf("limit %d: scan stopped after 3 of %d messages in %v", limit, n, took)
		if err != nil {
			t.Fatal(err)
		}
		if err := inOrderFast(seen, 3); err != nil {
			t.Fatal(err)
		}
		if res.Ready != n {
			t.Errorf("ready %d, want %d", res.Ready, n)
		}
		for _, note := range res.Notes {
			t.Logf("note: %s", note)
		}
		rabbittest.WaitDepth(t, e.ch, "big.dlq", n, 30*time.Second)
	}
	// What a browse took comes back redelivered: a scan that stopped took a window at most.
	if r := rabbittest.ReadBack(t, e.url, e.vhost, "big.dlq", n, fastID); r > 4_000 {
		t.Errorf("%d messages came back redelivered: the scans read on after their sink said stop", r)
	}
}

func inOrderFast(msgs []Message, n int) error {
	if len(msgs) != n {
		return fmt.Errorf("handed %d messages, want %d", len(msgs), n)
	}
	for i, m := range msgs {
		if m.MessageID != fastID(i) || m.Position != i {
			return fmt.Errorf("message %d is %s at position %d, want %s", i, m.MessageID, m.Position, fastID(i))
		}
	}
	return nil
}

// TestScanWindows: a scan that reads on hands every message in order across its consumers'
// windows (1,000, 4,000, 16,000, …; beyond one consumer's prefetch of 65,535 too), and one that
// stops in its third window leaves the queue whole and in order.
func TestScanWindows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	const n = 70_000
	e.fillFast("all.dlq", n)

	for _, stopAt := range []int{n, 7_000} {
		var seen []Message
		start := time.Now()
		res, err := e.b.Scan(ctx, e.vhost, "all.dlq", MaxPeek, func(m Message) bool {
			seen = append(seen, Message{MessageID: m.MessageID, Position: m.Position})
			return len(seen) < stopAt
		})
		t.Logf("scan to %d of %d: %v", stopAt, n, time.Since(start))
		if err != nil {
			t.Fatal(err)
		}
		if err := inOrderFast(seen, stopAt); err != nil {
			t.Fatal(err)
		}
		if !res.Complete || !res.Redelivered {
			t.Errorf("stop at %d: complete %v, redelivered %v, notes %q", stopAt, res.Complete, res.Redelivered, res.Notes)
		}
		// The queue applies a return of tens of thousands a moment after the channel closed.
		rabbittest.WaitDepth(t, e.ch, "all.dlq", n, 30*time.Second)
	}
	if r := rabbittest.ReadBack(t, e.url, e.vhost, "all.dlq", n, fastID); r != n {
		t.Errorf("%d of %d came back redelivered after a whole scan", r, n)
	}
}
