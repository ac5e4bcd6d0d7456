package rabbit

import (
	"net"
	"sync"
	"time"
)

// coalescingConn is the net.Conn an AMQP connection writes through: Write copies into a buffer and
// one writer goroutine writes whatever has accumulated each time it wakes, so the frames of many
// publishes (amqp091 flushes after each one: method, header and body frames, one write syscall per
// message) reach the socket in a few large writes — fewer syscalls here, fewer reads and TCP
// segments at the broker. Nothing waits on a timer: an idle connection's frame (a heartbeat, an
// RPC) is written as soon as the writer runs.
//
// A Write that returned has reached the buffer, not the broker, as a Write to a socket reaches the
// kernel's buffer: nothing is settled by a write returning. The replay acks a dead letter only
// after the broker confirmed its copy, and a confirm comes back only for a publish the broker read.
// The buffer is bounded (coalesceMax): past it Write waits for the writer, so the broker's flow
// control (it stops reading a publishing connection) still holds the publisher back.
//
// A failed write ends the connection: the underlying conn is closed (amqp091's reader then fails
// and shuts the connection down, as it does after a failed write of its own) and every later Write
// returns the error. Close writes what is buffered, for at most closeFlushWait, then closes.
type coalescingConn struct {
	net.Conn

	mu      sync.Mutex
	cond    *sync.Cond // signalled when the writer took the buffer, failed or stopped
	buf     []byte     // written by the caller, not yet taken by the writer
	spare   []byte     // the buffer the writer last wrote, reused
	err     error      // the first write error; every later Write returns it
	closing bool
	wake    chan struct{} // cap 1: the buffer has something, or Close was called
	done    chan struct{} // closed when the writer returns
}

const (
	// coalesceMax is how much a Write may leave buffered before it waits for the writer.
	coalesceMax = 256 << 10
	// closeFlushWait bounds how long Close waits for the buffer to reach the socket.
	closeFlushWait = 5 * time.Second
)

func newCoalescingConn(nc net.Conn) *coalescingConn {
	c := &coalescingConn{Conn: nc, wake: make(chan struct{}, 1), done: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	go c.writer()
	return c
}

// Write copies p into the buffer and wakes the writer. It returns the error of an earlier write
// that failed, and net.ErrClosed after Close.
func (c *coalescingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	for c.err == nil && !c.closing && len(c.buf) >= coalesceMax {
		c.cond.Wait()
	}
	switch {
	case c.err != nil:
		err := c.err
		c.mu.Unlock()
		return 0, err
	case c.closing:
		c.mu.Unlock()
		return 0, net.ErrClosed
	}
	c.buf = append(c.buf, p...)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // already woken: the writer takes this with the rest
	}
	return len(p), nil
}

// writer writes what accumulated each time it wakes, until Close (after the last of it: no Write
// adds to the buffer once Close began, and Close wakes it once more) or an error.
func (c *coalescingConn) writer() {
	defer close(c.done)
	for range c.wake {
		c.mu.Lock()
		out := c.buf
		c.buf, c.spare = c.spare[:0], nil
		closing := c.closing
		c.cond.Broadcast() // room for a waiting Write
		c.mu.Unlock()
		if len(out) > 0 {
			if _, err := c.Conn.Write(out); err != nil {
				c.fail(err)
				return
			}
		}
		c.mu.Lock()
		if c.spare == nil && cap(out) <= 2*coalesceMax {
			c.spare = out[:0]
		}
		c.mu.Unlock()
		if closing {
			return
		}
	}
}

// fail records err for every later Write and closes the underlying conn: a connection that lost
// bytes in the middle of its frames cannot go on.
func (c *coalescingConn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	_ = c.Conn.Close()
}

// Close writes what is buffered (for at most closeFlushWait: a broker that stopped reading does not
// hold it longer) and closes the connection. It returns the error of a write that failed.
func (c *coalescingConn) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		<-c.done
		return nil
	}
	c.closing = true
	c.cond.Broadcast()
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(closeFlushWait)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		_ = c.Conn.Close() // the blocked write returns
		<-c.done
	}
	err := c.Conn.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	return err
}
