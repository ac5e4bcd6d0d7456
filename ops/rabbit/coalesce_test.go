package rabbit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbittest"
)

// countingConn counts the writes that reach it.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// The coalescing writer hands the peer every byte in the order written, in fewer writes than the
// caller made, and Close writes what is still buffered before it closes.
func TestCoalescingConnKeepsOrderAndFlushesOnClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer s.Close()
		b, _ := io.ReadAll(s)
		got <- b
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	raw := &countingConn{Conn: nc}
	c := newCoalescingConn(raw)
	const n = 20_000
	var want bytes.Buffer
	for i := range n {
		p := []byte(strconv.Itoa(i) + ":" + string(bytes.Repeat([]byte{'x'}, i%300)) + ";")
		want.Write(p)
		if k, err := c.Write(p); err != nil || k != len(p) {
			t.Fatalf("write %d: %d, %v", i, k, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if !bytes.Equal(<-got, want.Bytes()) {
		t.Fatalf("the peer did not read the %d bytes written, in order", want.Len())
	}
	if w := raw.writes.Load(); w > n/2 {
		t.Errorf("%d writes reached the socket for %d Writes: not coalesced", w, n)
	}
	t.Logf("%d Writes, %d writes to the socket", n, raw.writes.Load())
	if _, err := c.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close: %v, want net.ErrClosed", err)
	}
}

// A write that fails (the peer is gone) is returned by a later Write and by Close, and the
// connection under it is closed: nothing more is taken to be sent.
func TestCoalescingConnWriteErrorSurfaces(t *testing.T) {
	a, b := net.Pipe()
	c := newCoalescingConn(a)
	_ = b.Close()
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for err == nil && time.Now().Before(deadline) {
		_, err = c.Write([]byte("frame"))
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Write after the peer closed: %v, want io.ErrClosedPipe", err)
	}
	if _, err := a.Read(make([]byte, 1)); err == nil {
		t.Error("the connection under a failed write is still open")
	}
	if err := c.Close(); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Close after a failed write: %v, want io.ErrClosedPipe", err)
	}
}

// heldConn holds every Write while held is set, until release is closed: what the AMQP client
// writes above it stays in the coalescing writer's buffer, never reaching the broker.
type heldConn struct {
	net.Conn
	held    atomic.Bool
	release chan struct{}
}

func (h *heldConn) Write(p []byte) (int, error) {
	if h.held.Load() {
		<-h.release
	}
	return h.Conn.Write(p)
}

// A replay's connection killed while a batch's publishes sit in the coalescing writer's buffer
// acks nothing that was not confirmed: batches publish → confirm → ack; the third batch's frames
// are held under the buffer and the TCP connection is closed under them. The cursor reports the
// batch's outcome unknown (ErrUnavailable), not confirmed; afterwards an independent client finds
// every message either still in the DLQ or, once, in the work queue, the held batch's all in the
// DLQ and none in the work queue, and each confirmed batch in the work queue. (An ack written just
// before the kill may be lost with it, as over any TCP connection: that message is then in both,
// the copy a job's ledger drops.)
func TestKilledWithPublishesBufferedAcksOnlyConfirmed(t *testing.T) {
	const n, batch, killed = 2000, 400, 2 // killed: the batch whose publishes are held
	e := newEnv(t)
	e.Queue("orders.dlq", nil)
	e.Queue("orders.work", nil)
	id := func(i int) string { return fmt.Sprintf("m-%d", i) }
	rabbittest.Fill(t, e.url, "orders.dlq", n, func(i int) amqp.Publishing {
		return amqp.Publishing{MessageId: id(i), Body: []byte(`{"n":` + strconv.Itoa(i) + `}`)}
	})
	var mu sync.Mutex
	var held []*heldConn
	e.b.rawConn = func(nc net.Conn) net.Conn {
		h := &heldConn{Conn: nc, release: make(chan struct{})}
		mu.Lock()
		held = append(held, h)
		mu.Unlock()
		return h
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := e.b.OpenCursor(ctx, e.vhost, "orders.dlq", n)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for k := 0; k <= killed; k++ {
		ds, err := c.Take(ctx, batch)
		if err != nil || len(ds) != batch {
			t.Fatalf("batch %d: took %d: %v", k, len(ds), err)
		}
		var h *heldConn
		if k == killed {
			mu.Lock()
			if len(held) != 1 {
				t.Fatalf("%d connections dialled, want the vhost's one", len(held))
			}
			h = held[0]
			mu.Unlock()
			h.held.Store(true)
		}
		to := make([]Republish, len(ds))
		for i := range to {
			to[i] = Republish{RoutingKey: "orders.work"} // through the default exchange
		}
		wait, err := c.Send(ctx, ds, to)
		if err != nil {
			t.Fatalf("batch %d: send: %v", k, err)
		}
		if h != nil {
			_ = h.Conn.Close() // killed under the buffered frames
			close(h.release)
		}
		errs, err := wait(ctx)
		if k == killed {
			if err == nil || !errors.Is(err, ops.ErrUnavailable) {
				t.Fatalf("the batch written into a killed connection: %v (errs %v), want ErrUnavailable", err, errs)
			}
			break
		}
		if err != nil {
			t.Fatalf("batch %d: confirms: %v", k, err)
		}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("batch %d: message %d not confirmed: %v", k, i, err)
			}
		}
		if err := c.Ack(ds); err != nil {
			t.Fatalf("batch %d: ack: %v", k, err)
		}
	}
	c.Close()

	mgmt := rabbittest.Admin(t)
	rabbittest.WaitFor(t, time.Minute, "the DLQ's unacked messages back", func(context.Context) bool {
		q, err := mgmt.GetQueue(e.vhost, "orders.dlq")
		return err == nil && q.MessagesUnacknowledged == 0 && q.MessagesReady >= n-killed*batch
	})
	inDLQ := map[string]int{}
	for _, d := range e.drain("orders.dlq") {
		inDLQ[d.MessageId]++
	}
	inWork := map[string]int{}
	for _, d := range e.drain("orders.work") {
		inWork[d.MessageId]++
	}
	back := 0
	for i := range n {
		m := id(i)
		switch confirmed := i < killed*batch; {
		case inWork[m] > 1:
			t.Errorf("%s is in the work queue %d times", m, inWork[m])
		case inDLQ[m] == 0 && inWork[m] == 0:
			t.Errorf("%s is lost: in neither queue", m)
		case !confirmed && inWork[m] > 0:
			t.Errorf("%s, held in the buffer when the connection died, reached the work queue", m)
		case !confirmed && inDLQ[m] != 1:
			t.Errorf("%s, never confirmed, is %d times in the DLQ", m, inDLQ[m])
		case confirmed && inWork[m] != 1:
			t.Errorf("%s was confirmed but is not in the work queue", m)
		case confirmed && inDLQ[m] > 0:
			back++ // its ack was lost with the connection
		}
	}
	t.Logf("%d confirmed and acked, %d of them back in the DLQ (acks lost with the connection), %d held and returned",
		killed*batch, back, n-killed*batch)
}
