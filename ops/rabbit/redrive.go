package rabbit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// maxPrefetch is the largest prefetch AMQP can express: basic.qos carries a 16-bit count.
const maxPrefetch = 65_535

// Cursor reads a queue from its head for a replay: every message it passes stays unacknowledged,
// so the queue keeps it, until the caller acks it (moved) or the cursor closes (everything else
// goes back, in order). The ordering per moved message is the caller's: take → publish (mandatory,
// confirmed) → record → Ack.
//
// A span of any size is read in windows: each window is a channel whose consumer has a prefetch of
// at most 65,535 and is cancelled once it has received that many, so the next window's consumer
// gets the messages behind it. Deliveries are handed out in queue order across windows.
//
// If the connection or a channel closes, Take returns an ops.ErrUnavailable: the broker requeues
// every unacked message by itself, and the caller opens a new cursor later.
//
// A quorum queue on RabbitMQ 3.x puts the messages returned to it at its back, behind those not
// handed out: a cursor of one reads the whole queue (its span is at least the ready count when it
// opens), and Close reads what is left of it before returning what it holds, so the order stays as
// it was. On 4.x Close returns them to the head by closing their channels; what a return would
// bring too near the queue's delivery limit is kept instead (Custody: archive, then ack).
//
// A cursor takes the queue's turn as a browse does (see Browse) and holds it until it closes:
// a browse, search, trace or replay plan of the queue reads its head with a prefetch of all of it,
// and one that came while a job's cursor read would take, and hold, part of what the job moves.
type Cursor struct {
	b            *Broker
	op           string
	vhost, queue string
	span         int // read at most this many messages
	pubs         []publisher

	read   int  // messages handed out
	ended  bool // span reached or queue drained
	cur    *window
	buf    []Delivery // delivered after a window's consumer was cancelled, not yet handed out
	others int        // the most consumers other than this cursor seen: when it opened, or when it last looked
	ready  int        // ready messages when it opened: until that many arrived, a pause is not the end
	mode   readMode   // how the queue is read and returned (whole: read to its end before returning anything)
	q      Queue

	low     []Delivery      // handed out with too few deliveries left: kept at Close unless acked
	acked   map[ackKey]bool // of low, those Ack acked
	ackedN  int             // how many Ack acked
	kept    int             // how many Close kept
	keepErr error           // why Close could not keep them (they went back)

	mu      sync.Mutex // guards windows and closed against Ack running beside Take
	windows []*window
	closed  bool
	release func() // gives up the queue's turn (nil: the caller holds it, as a browse does)

	retMu    sync.Mutex             // one confirm wait at a time
	returned map[string]amqp.Return // returns read but not yet matched to their batch

	exchanges map[string]bool // destination exchanges seen to exist (checkExchanges)
	rights    *publishRights  // may the console's user publish there (checkRights); nil until the first send
}

type window struct {
	ch         *amqp.Channel
	tag        string
	deliveries <-chan amqp.Delivery
	want       int // the consumer's prefetch: it is cancelled after this many deliveries
	got        int
	last       uint64 // highest delivery tag seen on ch
	// settled marks, by delivery tag, what was acked on ch (guarded by Cursor.mu): Close returns
	// the rest with one basic.nack(multiple) up to the highest tag not settled — a nack naming a
	// tag already acked is a channel error (406 PRECONDITION_FAILED "unknown delivery tag").
	settled   []uint64 // bit set
	floor     uint64   // every tag up to it is settled (ackTags)
	consuming bool     // guarded by Cursor.mu
	// pending are moved messages Ack left unacked while the consumer still consumed (readMode
	// byClose): an ack gives the consumer credit, and a 4.x quorum queue then delivers a message
	// past the span that a cancel returns ahead of the rest. stopWindow acks them after the
	// cancel. Guarded by Cursor.mu.
	pending []Delivery
}

// settle records that tag was acked on w.ch. Called with Cursor.mu held.
func (w *window) settle(tag uint64) {
	i := int(tag / 64)
	if i >= len(w.settled) {
		w.settled = append(w.settled, make([]uint64, i+1-len(w.settled))...)
	}
	w.settled[i] |= 1 << (tag % 64)
}

// isSettled reports whether tag was acked on w.ch. Called with Cursor.mu held.
func (w *window) isSettled(tag uint64) bool {
	i := int(tag / 64)
	return i < len(w.settled) && w.settled[i]&(1<<(tag%64)) != 0
}

// ackTags acks tags (delivered on w.ch, none acked yet) with as few frames as it can: one
// basic.ack(multiple) up to the highest of them below which every tag on the channel is then
// acked — a multiple ack acks every unacked tag up to its own, so it may cover only tags being
// acked now or acked before — and one basic.ack each for the rest (past a message left in the
// queue). Called with Cursor.mu held.
func (w *window) ackTags(tags []uint64) error {
	for _, t := range tags {
		w.settle(t)
	}
	floor := w.floor
	for w.isSettled(floor + 1) { // only delivered tags are ever settled
		floor++
	}
	var multiple uint64 // the highest of tags at or below floor
	for _, t := range tags {
		if t <= floor {
			multiple = max(multiple, t)
		}
	}
	w.floor = floor
	if multiple > 0 {
		if err := w.ch.Ack(multiple, true); err != nil {
			return err
		}
	}
	for _, t := range tags {
		if t > floor {
			if err := w.ch.Ack(t, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// unsettled is the highest delivery tag on w.ch not acked, 0 when every delivery was. Delivery
// tags on a channel run 1, 2, … and the window's consumer is the only one on it. Called with
// Cursor.mu held.
func (w *window) unsettled() uint64 {
	for tag := w.last; tag > 0; tag-- {
		if i := int(tag / 64); i >= len(w.settled) || w.settled[i]&(1<<(tag%64)) == 0 {
			return tag
		}
	}
	return 0
}

// Delivery is one message a Cursor took: the whole message and its raw headers.
type Delivery struct {
	Message Message
	Headers amqp.Table
	d       amqp.Delivery
	w       *window
}

// modelDelivery is a Delivery as the model sees it (rabbitmodel.Delivery), for the replay engine
// and the Custodian, which import no client. It holds a copy of its own: pointing into the slice
// Take returned would keep a whole chunk alive for one message a job keeps aside.
type modelDelivery struct{ d *Delivery }

func (m modelDelivery) Message() Message        { return m.d.Message }
func (m modelDelivery) Headers() map[string]any { return m.d.Headers }
func (m modelDelivery) Whole() (Whole, error)   { return m.d.Whole() }
func (m modelDelivery) CustodyLocator(broker, vhost, queue string) string {
	return m.d.CustodyLocator(broker, vhost, queue)
}

func modelDeliveries(ds []Delivery) []rabbitmodel.Delivery {
	out := make([]rabbitmodel.Delivery, len(ds))
	for i := range ds {
		d := ds[i]
		out[i] = modelDelivery{&d}
	}
	return out
}

// ownDeliveries is the model's deliveries back as this adapter's, not copied: only a Cursor can
// publish or ack what it took, so one taken elsewhere is an error, not a guess.
func ownDeliveries(ds []rabbitmodel.Delivery) ([]*Delivery, error) {
	out := make([]*Delivery, len(ds))
	for i, d := range ds {
		m, ok := d.(modelDelivery)
		if !ok {
			return nil, fmt.Errorf("a %T is not a delivery a RabbitMQ cursor took", d)
		}
		out[i] = m.d
	}
	return out, nil
}

// refs points at each of ds: what Send and Ack work on, so that the model's deliveries (each a
// copy of its own) are not copied again per call.
func refs(ds []Delivery) []*Delivery {
	out := make([]*Delivery, len(ds))
	for i := range ds {
		out[i] = &ds[i]
	}
	return out
}

// ReplayCursor is OpenCursor as the replay engine's port has it (rabbitmodel.Cursor): the same
// cursor, its deliveries seen as the model's.
func (b *Broker) ReplayCursor(ctx context.Context, vhost, queue string, span int) (rabbitmodel.Cursor, error) {
	c, err := b.OpenCursor(ctx, vhost, queue, span)
	if err != nil {
		return nil, err
	}
	return modelCursor{c}, nil
}

// modelCursor is a Cursor as rabbitmodel.Cursor: Take, Send and Ack convert, the rest is the
// Cursor's own.
type modelCursor struct{ *Cursor }

var _ rabbitmodel.Cursor = modelCursor{}

func (m modelCursor) Take(ctx context.Context, n int) ([]rabbitmodel.Delivery, error) {
	// Each a copy of its own (modelDelivery), handed out straight from the cursor; what was taken
	// before an error is handed out with it.
	out := make([]rabbitmodel.Delivery, 0, min(n, 1024))
	err := m.take(ctx, n, func(d Delivery) { out = append(out, modelDelivery{&d}) })
	return out, err
}

func (m modelCursor) Send(ctx context.Context, ds []rabbitmodel.Delivery, to []Republish) (func(context.Context) ([]error, error), error) {
	own, err := ownDeliveries(ds)
	if err != nil {
		return nil, err
	}
	return m.send(ctx, own, to)
}

func (m modelCursor) Ack(ds []rabbitmodel.Delivery) error {
	own, err := ownDeliveries(ds)
	if err != nil {
		return err
	}
	return m.ack(own)
}

// ArchivedHeaders is DecodeHeaders for a caller without the client: Whole.Headers back as a
// table, with their AMQP types.
func (b *Broker) ArchivedHeaders(wire []byte) (map[string]any, error) { return DecodeHeaders(wire) }

// DeadLetterOf is DecodeDeadLetter for a caller without the client; nil when headers say nothing
// of a death.
func (b *Broker) DeadLetterOf(headers map[string]any) *DeadLetter { return DecodeDeadLetter(headers) }

// OpenCursor starts reading queue from its head, up to span messages (≥ 1), once it has the
// queue's turn: it waits for the browses, plans and other cursors of the queue (in this process,
// and in other replicas with SetQueueLock) as a browse does, and they wait for it until it closes.
// It reports, through OthersNow, how many other consumers the queue has: messages they hold
// unacked are not in the queue for the cursor to see. Errors: ops.ErrInvalid, ops.ErrNotFound
// (queue), ops.ErrUnavailable (also: the queue's turn not had within DefaultBrowseWait).
func (b *Broker) OpenCursor(ctx context.Context, vhost, queue string, span int) (*Cursor, error) {
	if span < 1 {
		return nil, ops.Invalid("span", "must be at least 1")
	}
	op := fmt.Sprintf("replay from %s/%s", vhost, queue)
	// Without the cross-replica lock (its database down) the cursor still reads: OthersNow sees
	// a browse of another replica that holds messages, and the job waits for it.
	release, _, err := b.browsing.acquireAs(ctx, b.name, vhost, queue, holderJob)
	if err != nil {
		if errors.Is(err, ops.ErrUnavailable) && ctx.Err() == nil {
			err = &ops.Error{Kind: ops.ErrUnavailable, Err: err, Message: fmt.Sprintf("waiting for its turn on queue %q: "+
				"another browse, search, trace, replay plan or replay job is reading it, and would hold some of its messages; "+
				"the job tries again by itself", queue)}
		}
		return nil, b.fail(op, err)
	}
	c, err := b.openCursor(ctx, vhost, queue, span)
	if err != nil {
		release()
		return nil, err
	}
	c.release = release
	return c, nil
}

// openCursor is OpenCursor for a caller that holds the queue's turn (a browse of more than one
// window).
func (b *Broker) openCursor(ctx context.Context, vhost, queue string, span int) (*Cursor, error) {
	op := fmt.Sprintf("replay from %s/%s", vhost, queue)
	c := &Cursor{b: b, op: op, vhost: vhost, queue: queue, span: span}
	// At least DefaultTimeout: a job's broker timeout may be short, but its first look is not a read.
	ictx, cancel := ops.Bound(ctx, max(b.timeout, DefaultTimeout))
	defer cancel()
	q, err := b.queueInfo(ictx, vhost, queue)
	if err != nil {
		return nil, b.fail(op, err)
	}
	mode, err := b.readModeOf(ictx, &q)
	if err != nil {
		return nil, b.fail(op, err)
	}
	c.q, c.mode = q, mode
	probe, err := b.channel(ctx, vhost)
	if err != nil {
		return nil, b.fail(op, err)
	}
	st, err := probe.QueueDeclarePassive(queue, false, false, false, false, nil)
	_ = probe.Close()
	if err != nil {
		return nil, b.fail(op, err)
	}
	c.others, c.ready = st.Consumers, st.Messages
	switch {
	case c.mode.whole:
		c.span = max(c.span, st.Messages)
	case c.mode.byClose:
		c.span = max(c.span, min(b.returnedAhead(q), st.Messages)) // to keep the order (returnedAhead)
	}
	return c, nil
}

// openPublishers opens, on first use, the confirm-mode publishing channels that share each batch
// (publishers of them): a channel publishes serially, and the broker confirms each channel's
// messages independently.
func (c *Cursor) openPublishers(ctx context.Context) error {
	if len(c.pubs) > 0 {
		return nil
	}
	for range publishers {
		ch, err := c.b.channel(ctx, c.vhost)
		if err != nil {
			return c.b.fail(c.op, err)
		}
		c.mu.Lock()
		c.pubs = append(c.pubs, publisher{ch: ch, returns: ch.NotifyReturn(make(chan amqp.Return, 4096)),
			closes: ch.NotifyClose(make(chan *amqp.Error, 1)), closed: &closeNote{}})
		c.mu.Unlock()
		if err := ch.Confirm(false); err != nil {
			return c.b.fail(c.op, fmt.Errorf("confirm.select: %w", err))
		}
	}
	return nil
}

// OthersNow is how many consumers besides the cursor the queue has now, or had when the cursor
// opened or last found no delivery, whichever is most: any of them may hold messages of the
// cursor's span unacknowledged, which the cursor then cannot see although they are in the queue.
func (c *Cursor) OthersNow(ctx context.Context) (int, error) {
	if _, _, err := c.queueNow(ctx); err != nil {
		return 0, err
	}
	return c.others, nil
}

// ReadAgain is for a cursor that ended with messages it was looking for still missing and no other
// consumer seen: it waits firstWait, looks at the queue, and when messages are ready (returned by a
// reader that cancelled its consumer before returning what it held, as a browse does with one nack
// after the cancel, or new ones) extends its span over them and says so: Take reads them next.
func (c *Cursor) ReadAgain(ctx context.Context) (bool, error) {
	select {
	case <-ctx.Done():
		return false, c.b.fail(c.op, ctx.Err())
	case <-time.After(c.b.firstWait):
	}
	_, ready, err := c.queueNow(ctx)
	if err != nil || ready == 0 {
		return false, err
	}
	c.span, c.ended = c.read+ready, false // c.read counts what is buffered too
	return true, nil
}

// Read is how many messages the cursor has handed out.
func (c *Cursor) Read() int { return c.read }

// Ended reports whether the span was read or the queue ran out of ready messages.
func (c *Cursor) Ended() bool { return c.ended && len(c.buf) == 0 }

// Take hands out up to n of the next messages, in queue order. It returns fewer when the span is
// read or the queue has no more ready messages (then Ended is true). A closed channel or
// connection is an ops.ErrUnavailable, never an empty queue.
func (c *Cursor) Take(ctx context.Context, n int) ([]Delivery, error) {
	out := make([]Delivery, 0, min(n, 1024))
	err := c.take(ctx, n, func(d Delivery) { out = append(out, d) })
	return out, err
}

// take is Take handing each delivery to add.
func (c *Cursor) take(ctx context.Context, n int, add func(Delivery)) error {
	for taken := 0; taken < n; {
		if len(c.buf) > 0 {
			add(c.buf[0])
			c.buf = c.buf[1:]
			taken++
			continue
		}
		if c.ended {
			break
		}
		if c.cur == nil {
			if err := c.openWindow(ctx); err != nil {
				return err
			}
		}
		w := c.cur
		// The queue is drained when no delivery comes for a while; but while fewer messages have
		// arrived than were ready, or than the plan read with no one else consuming the queue, a
		// pause is a busy broker or machine, not the end of the queue: messages a plan's browse
		// released become ready only when the queue process has requeued them, which for 100,000
		// can take seconds after the browse's channel closed.
		wait := c.b.idleWait
		switch {
		case c.read < min(c.span, c.ready), c.read < c.span && c.others == 0:
			wait = max(c.b.timeout, c.b.firstWait)
		case w.got == 0:
			wait = c.b.firstWait
		}
		d, ok, err := c.next(ctx, w, wait)
		if err != nil {
			return err
		}
		if !ok && c.read < c.span {
			// No delivery came and the span is not read. When no one else consumes the queue, the
			// messages are still there — ready now, or on their way to this consumer (fewer have
			// arrived than were ready when the job began, or messages a plan's browse was still
			// requeueing have become ready since) — and the silence is a busy broker: the job pauses
			// and reads again, never reports them "not found in the queue". With another consumer
			// they may have gone to it: the queue has ended for the cursor.
			others, ready, err := c.queueNow(ctx)
			if err != nil {
				return err
			}
			if others == 0 && (ready > 0 || c.read < c.ready) {
				return c.b.fail(c.op, fmt.Errorf("%w: no delivery for %s with %d of %d messages read and %d ready", ops.ErrUnavailable, wait, c.read, c.span, ready))
			}
		}
		if !ok { // nothing more is ready
			c.ended = true
			if err := c.stopWindow(w); err != nil {
				return err
			}
			continue // hand out what arrived while cancelling
		}
		add(c.delivery(d, w))
		taken++
		switch {
		case c.read >= c.span:
			c.ended = true
			if err := c.stopWindow(w); err != nil {
				return err
			}
		case w.got >= w.want:
			if err := c.stopWindow(w); err != nil {
				return err
			}
		}
	}
	return nil
}

// queueNow is how many consumers besides the cursor's window the queue has now and how many of
// its messages are ready, read on a channel of its own; the most others seen is kept (OthersNow).
func (c *Cursor) queueNow(ctx context.Context) (others, ready int, err error) {
	probe, err := c.b.channel(ctx, c.vhost)
	if err != nil {
		return 0, 0, c.b.fail(c.op, err)
	}
	defer probe.Close()
	st, err := probe.QueueDeclarePassive(c.queue, false, false, false, false, nil)
	if err != nil {
		return 0, 0, c.b.fail(c.op, err)
	}
	mine := 0
	if c.cur != nil && c.cur.consuming {
		mine = 1
	}
	others = max(st.Consumers-mine, 0)
	c.others = max(c.others, others)
	return others, st.Messages, nil
}

func (c *Cursor) delivery(d amqp.Delivery, w *window) Delivery {
	w.got++
	w.last = max(w.last, d.DeliveryTag)
	pos := c.read
	c.read++
	dl := Delivery{Message: c.b.toFullMessage(d, pos), Headers: d.Headers, d: d, w: w}
	if c.keeps(d) {
		c.mu.Lock()
		c.low = append(c.low, dl)
		c.mu.Unlock()
	}
	return dl
}

// keeps reports whether Close keeps d, unless it is acked: too few deliveries are left for a return.
func (c *Cursor) keeps(d amqp.Delivery) bool {
	return c.mode.keeper != nil && lowBudget(c.mode.limit, d.Headers)
}

// ackKey names one delivery of a cursor: its channel's window and its tag.
type ackKey struct {
	w   *window
	tag uint64
}

// next waits up to wait for the window's next delivery; false when none came.
func (c *Cursor) next(ctx context.Context, w *window, wait time.Duration) (amqp.Delivery, bool, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case d, ok := <-w.deliveries:
		if !ok {
			return d, false, c.b.fail(c.op, errors.New("the channel closed while reading the queue (connection lost?)"))
		}
		return d, true, nil
	case <-t.C:
		return amqp.Delivery{}, false, nil
	case <-ctx.Done():
		return amqp.Delivery{}, false, ctx.Err()
	}
}

// openWindow starts a consumer on a new channel for the next part of the span.
func (c *Cursor) openWindow(ctx context.Context) error {
	ch, err := c.b.channel(ctx, c.vhost)
	if err != nil {
		return c.b.fail(c.op, err)
	}
	w := &window{ch: ch, want: min(maxPrefetch, c.span-c.read), tag: "redrive-replay-" + randomHex(6)}
	c.mu.Lock()
	c.windows = append(c.windows, w)
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return c.b.fail(c.op, errors.New("cursor closed"))
	}
	if err := ch.Qos(w.want, 0, false); err != nil {
		return c.b.fail(c.op, fmt.Errorf("basic.qos: %w", err))
	}
	if w.deliveries, err = ch.Consume(c.queue, w.tag, false, false, false, false, nil); err != nil {
		return c.b.fail(c.op, fmt.Errorf("basic.consume: %w", err))
	}
	c.mu.Lock()
	w.consuming = true
	c.mu.Unlock()
	c.cur = w
	return nil
}

// stopWindow cancels the window's consumer and buffers what was already on its way, so that the
// next window's consumer only gets messages behind this one's. The unacked ones stay on w.ch.
func (c *Cursor) stopWindow(w *window) error {
	c.cur = nil
	c.mu.Lock()
	consuming := w.consuming
	c.mu.Unlock()
	if !consuming {
		return nil
	}
	if err := w.ch.Cancel(w.tag, false); err != nil {
		return c.b.fail(c.op, fmt.Errorf("basic.cancel: %w", err))
	}
	for d := range w.deliveries {
		c.buf = append(c.buf, c.delivery(d, w))
	}
	c.mu.Lock()
	w.consuming = false
	pending := w.pending
	w.pending = nil
	c.mu.Unlock()
	if len(pending) > 0 {
		tags := make([]uint64, len(pending))
		for i, d := range pending {
			tags[i] = d.d.DeliveryTag
		}
		c.mu.Lock()
		err := w.ackTags(tags)
		c.mu.Unlock()
		if err != nil {
			return c.b.fail(c.op, fmt.Errorf("basic.ack: %w", err)) // the copies stay; the caller's record drops them later
		}
	}
	return nil
}

// Publish republishes taken messages with mandatory on the confirm channels and waits for every
// confirm; errs[i] is nil only for a message the broker confirmed and did not return. A connection
// lost while waiting is an ops.ErrUnavailable for the whole call: whether the broker took those
// publishes is unknown.
func (c *Cursor) Publish(ctx context.Context, ds []Delivery, to []Republish) ([]error, error) {
	wait, err := c.Send(ctx, ds, to)
	if err != nil {
		return nil, err
	}
	return wait(ctx)
}

// Send is Publish without the wait: it publishes and returns the function that waits for the
// confirms, so that the next batch can be taken and published meanwhile. Waits run in the order
// their Sends did (the returns of later batches are kept for their own wait).
func (c *Cursor) Send(ctx context.Context, ds []Delivery, to []Republish) (wait func(context.Context) ([]error, error), err error) {
	return c.send(ctx, refs(ds), to)
}

func (c *Cursor) send(ctx context.Context, ds []*Delivery, to []Republish) (wait func(context.Context) ([]error, error), err error) {
	if err := c.openPublishers(ctx); err != nil {
		return nil, err
	}
	errs := make([]error, len(ds))
	if err := c.checkExchanges(ctx, to, errs); err != nil {
		return nil, err
	}
	c.checkRights(ctx, to, errs)
	sent := make([]sentBatch, len(c.pubs))
	var wg sync.WaitGroup
	for k, p := range c.pubs {
		wg.Go(func() { sent[k] = publish(ctx, p.ch, ds, to, errs, k, len(c.pubs)) })
	}
	wg.Wait()
	// A channel or connection that closed while publishing is not a failure of these messages:
	// some may have reached the broker, so the whole batch's outcome is unknown (the caller
	// resumes it), never "failed".
	for _, p := range c.pubs {
		if p.ch.IsClosed() {
			return nil, c.publishClosed(p, "the channel closed while publishing: whether the broker took the publishes is unknown")
		}
	}
	for _, err := range errs {
		if errors.Is(err, amqp.ErrClosed) {
			return nil, c.b.fail(c.op, fmt.Errorf("publishing: %w", err))
		}
	}
	return func(ctx context.Context) ([]error, error) {
		c.retMu.Lock()
		defer c.retMu.Unlock()
		if c.returned == nil {
			c.returned = map[string]amqp.Return{}
		}
		for k, p := range c.pubs {
			if err := sent[k].await(ctx, errs); err != nil {
				return nil, c.b.fail(c.op, err)
			}
			// amqp091 resolves a closed channel's outstanding confirms as nacks: tell them apart.
			if sent[k].n > 0 && p.ch.IsClosed() {
				return nil, c.publishClosed(p, "the channel closed before the broker confirmed the publishes: they may or may not have been taken")
			}
			// A return reaches the client before the confirm of the same message, so every return
			// of this batch is queued by now (a later batch's wait in the map for their own wait).
			drainReturns(p.returns, c.returned)
			sent[k].applyReturns(c.returned, errs)
		}
		return errs, nil
	}, nil
}

// checkExchanges fails, in errs, the messages bound for an exchange that does not exist, before
// anything is published: RabbitMQ answers a publish to a missing exchange by closing the channel
// (404 NOT_FOUND), which would leave the whole batch's outcome unknown — the publishes confirmed
// before it included, which a retry of the batch would publish again. Each exchange is looked up
// once per cursor (a passive declare on a channel of its own; the ones that exist are remembered,
// a missing one is asked again by the next batch); the default exchange always exists.
func (c *Cursor) checkExchanges(ctx context.Context, to []Republish, errs []error) error {
	var names []string
	asked := map[string]bool{}
	for _, r := range to {
		if r.Exchange != "" && !c.exchanges[r.Exchange] && !asked[r.Exchange] {
			asked[r.Exchange] = true
			names = append(names, r.Exchange)
		}
	}
	if len(names) == 0 {
		return nil
	}
	missing, err := c.b.missingExchanges(ctx, c.vhost, names)
	if err != nil {
		return c.b.fail(c.op, err)
	}
	if c.exchanges == nil {
		c.exchanges = map[string]bool{}
	}
	for _, n := range names {
		if !missing[n] {
			c.exchanges[n] = true
		}
	}
	for i, r := range to {
		if missing[r.Exchange] {
			errs[i] = noExchange(c.vhost, r.Exchange)
		}
	}
	return nil
}

// checkRights fails, in errs, the messages bound for an exchange (or, on a topic exchange, with a
// routing key) the console's AMQP user may not publish to, before anything is published, for the
// reason checkExchanges fails those bound for a missing one: RabbitMQ answers such a publish by
// closing the channel (403 ACCESS_REFUSED). Each such message fails with the words of its refusal
// and stays in the queue; the others are published. The permissions are read once per cursor
// (publishRights); where they cannot be, nothing is refused here and a refusal ends the job
// (refusedPublish).
func (c *Cursor) checkRights(ctx context.Context, to []Republish, errs []error) {
	if c.rights == nil {
		c.rights = c.b.publishRightsIn(c.vhost)
	}
	for i, r := range to {
		if errs[i] == nil {
			errs[i] = c.rights.refused(ctx, r.Exchange, r.RoutingKey)
		}
	}
}

// publishClosed is the error of a batch whose publishing channel p closed: its outcome is unknown,
// an ops.ErrUnavailable the job resumes — unless the broker closed it refusing a publish, which
// no retry gets past (refusedPublish).
func (c *Cursor) publishClosed(p publisher, what string) error {
	reason := p.closeReason()
	if reason != nil && reason.Code == amqp.AccessRefused {
		return c.b.refusedPublish(c.op, reason)
	}
	if reason != nil {
		what += " (" + reason.Error() + ")"
	}
	return c.b.fail(c.op, errors.New(what))
}

// missingExchanges says which of names do not exist in vhost, asking with passive declares
// (which need no permission) on a channel of its own: a missing one's 404 closes that channel,
// and the next name is asked on a new one. "" (the default exchange) always exists.
func (b *Broker) missingExchanges(ctx context.Context, vhost string, names []string) (map[string]bool, error) {
	missing := map[string]bool{}
	var ch *amqp.Channel
	defer func() {
		if ch != nil {
			_ = ch.Close()
		}
	}()
	for _, n := range names {
		if n == "" {
			continue
		}
		if ch == nil {
			var err error
			if ch, err = b.channel(ctx, vhost); err != nil {
				return nil, err
			}
		}
		// The kind is not compared by a passive declare.
		err := ch.ExchangeDeclarePassive(n, amqp.ExchangeDirect, false, false, false, false, nil)
		var amqpErr *amqp.Error
		switch {
		case err == nil:
		case errors.As(err, &amqpErr) && amqpErr.Code == amqp.NotFound:
			missing[n] = true
			ch = nil // the broker closed it
		default:
			return nil, fmt.Errorf("exchange.declare(passive) %q: %w", n, err)
		}
	}
	return missing, nil
}

// noExchange is the error of a message bound for exchange, which vhost does not have: an
// ops.ErrNotFound whose text says so.
func noExchange(vhost, exchange string) error {
	return ops.NotFound("exchange %q does not exist in vhost %q", exchange, vhost)
}

// Ack removes moved (or already delivered) messages from the queue.
//
// The acks of one call go out per window as one basic.ack(multiple) over the run of tags from the
// lowest one not yet acked on its channel (window.ackTags), and one basic.ack each past a gap (a
// message the caller leaves in the queue): a batch of moved messages costs the broker one frame,
// not one per message.
func (c *Cursor) Ack(ds []Delivery) error { return c.ack(refs(ds)) }

func (c *Cursor) ack(ds []*Delivery) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var byWindow map[*window][]uint64
	for _, d := range ds {
		if c.mode.byClose && d.w.consuming {
			d.w.pending = append(d.w.pending, *d) // acked once its consumer is cancelled (window.pending)
		} else {
			if byWindow == nil {
				byWindow = map[*window][]uint64{}
			}
			byWindow[d.w] = append(byWindow[d.w], d.d.DeliveryTag)
		}
	}
	for w, tags := range byWindow {
		if err := w.ackTags(tags); err != nil {
			// The copies stay in the queue; the caller's record lets a later run drop them.
			return c.b.fail(c.op, fmt.Errorf("basic.ack: %w", err))
		}
	}
	for _, d := range ds {
		c.ackedN++
		if len(c.low) > 0 {
			if c.acked == nil {
				c.acked = map[ackKey]bool{}
			}
			c.acked[ackKey{d.w, d.d.DeliveryTag}] = true
		}
	}
	return nil
}

// Close returns every message the cursor holds unacked to the queue, window by window in queue
// order (one basic.nack(multiple, requeue) each, up to the window's highest unacked tag, none when
// everything was acked: a job that moved everything settles nothing twice), and closes its
// channels. On a broken connection the broker does it by itself.
func (c *Cursor) Close() {
	if c.mode.whole && !c.closed {
		c.readRest()
	}
	if c.cur != nil {
		_ = c.stopWindow(c.cur)
	}
	if c.closeChannels() && c.release != nil {
		c.release() // once every message it held is back in the queue
	}
}

// closeChannels returns what the cursor holds and closes its channels, the first time only
// (reported by closed).
func (c *Cursor) closeChannels() (closed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.closed = true
	c.keepLow()
	if c.mode.byClose {
		c.b.noteReturned(c.q.Ref(), c.read-c.ackedN-c.kept)
	}
	for _, w := range c.windows {
		// Up to the highest tag not acked: a nack of w.last after it was acked (every job that
		// moved all it read) made the broker close the channel with 406 "unknown delivery tag".
		if top := w.unsettled(); top > 0 && !c.mode.byClose {
			_ = w.ch.Nack(top, true, true)
		}
		_ = w.ch.Close() // waits for close-ok: the requeue is processed when Close returns
	}
	for _, p := range c.pubs {
		_ = p.ch.Close()
	}
	return true
}

// keepLow keeps what the cursor holds with too few deliveries left for a return (Custody), before
// everything else goes back. A failed keep leaves them to go back with the rest (keepErr).
func (c *Cursor) keepLow() {
	var keep []Delivery
	for _, d := range c.low {
		if !c.acked[ackKey{d.w, d.d.DeliveryTag}] && !d.w.ch.IsClosed() {
			keep = append(keep, d)
		}
	}
	if len(keep) == 0 {
		return
	}
	ctx, cancel := c.b.bound(context.Background())
	defer cancel()
	c.keepErr = c.b.keep(ctx, c.mode.keeper, c.q, keep, func(d Delivery) error {
		err := d.w.ch.Ack(d.d.DeliveryTag, false)
		if err == nil {
			d.w.settle(d.d.DeliveryTag) // Cursor.mu is held (closeChannels)
		}
		return err
	})
	if c.keepErr == nil {
		c.kept = len(keep)
	}
}

// Kept is how many messages Close took into Redrive's archive instead of returning them, and why
// it could not when it could not.
func (c *Cursor) Kept() (int, error) { return c.kept, c.keepErr }

// readRest reads, from a quorum queue, the ready messages the cursor has not read (those past its
// span, those published since it opened, those a cancelled job did not reach), so that what Close
// returns is the whole queue, in order. Within the broker's timeout and a millisecond a message;
// when it cannot (connection lost, time up) what the cursor holds goes back behind the rest:
// reordered, nothing lost.
func (c *Cursor) readRest() {
	ctx, cancel := c.b.boundFor(context.Background(), c.span)
	defer cancel()
	for range 3 { // rounds: messages published while it reads
		_, ready, err := c.queueNow(ctx)
		if err != nil || ready == 0 {
			return
		}
		c.span, c.ended = c.read+ready, false // c.read counts what is buffered too
		for !c.Ended() {
			if _, err := c.Take(ctx, rabbitTake); err != nil {
				return
			}
		}
	}
}

// rabbitTake is how many messages readRest takes at a time.
const rabbitTake = 1000

// publishers is how many confirm-mode channels a Cursor publishes on: one, because a channel is
// what keeps publishes in order. Two channels sharing each batch made the broker enqueue
// neighbours swapped (2,996 of 3,000 out of the DLQ's order), and a consumer that relies on a
// queue's order would see "updated" before "created". One channel measured as fast within this
// machine's noise (docs/benchmarks.md): the confirm wait already overlaps the next batch.
const publishers = 1

type publisher struct {
	ch      *amqp.Channel
	returns <-chan amqp.Return
	closes  <-chan *amqp.Error // the channel's close, as the broker sent it (NotifyClose)
	closed  *closeNote         // what closes gave, kept for every batch the close fails
}

// closeNote is the broker's close of a publishing channel, once read: the move of one batch and
// the confirm wait of the one before it both see the channel closed, and both must read why.
type closeNote struct {
	mu     sync.Mutex
	read   bool
	reason *amqp.Error
}

// closeReason is why the broker closed p's channel; nil when the client closed it or the reason does
// not come. amqp091 marks a channel closed before it sends the reason, and closes the notification
// channel once it has (or at once when there is none to send).
func (p publisher) closeReason() *amqp.Error {
	p.closed.mu.Lock()
	defer p.closed.mu.Unlock()
	if !p.closed.read {
		select {
		case p.closed.reason = <-p.closes:
		case <-time.After(time.Second):
		}
		p.closed.read = true
	}
	return p.closed.reason
}

// sentBatch is one channel's share of a published batch, waiting for its confirms. The
// confirms are the channel's publisher confirms, matched by delivery tag (amqp091 resolves a
// multiple ack for every tag it covers); a batch waits for its own while later batches are
// published behind it, so a window of up to two batches is outstanding (the run's pipeline).
type sentBatch struct {
	confirms []*amqp.DeferredConfirmation // by index in the batch; nil: not published
	n        int                          // how many were published
	prefix   string                       // publish ids are prefix + index, to match returns
}

// publish publishes the messages whose index is part (mod parts) and whose errs[i] is not set
// yet, with mandatory, without waiting for the confirms; a publish that fails at once sets errs[i].
func publish(ctx context.Context, pub *amqp.Channel, ds []*Delivery, to []Republish, errs []error, part, parts int) sentBatch {
	s := sentBatch{confirms: make([]*amqp.DeferredConfirmation, len(ds)), prefix: randomHex(8) + "-"}
	for i := part; i < len(ds); i += parts {
		if errs[i] != nil { // failed before publishing (checkExchanges)
			continue
		}
		d := ds[i].d
		headers := to[i].Headers // the caller's own table: ours to add to
		if headers == nil {
			headers = cloneTable(d.Headers)
		}
		dropBrokerHeaders(headers)
		// A per-publish id finds the message again if the broker returns it.
		headers["x-redrive-publish-id"] = s.prefix + strconv.Itoa(i)
		// user_id is checked against the publishing connection's user: the original producer's
		// made the broker close the channel (406), the batch's outcome unknown, and every retry
		// sent its batch-mates again. It travels as a header instead.
		if d.UserId != "" {
			headers[HeaderOriginalUserID] = d.UserId
		}
		msg := amqp.Publishing{Headers: headers, ContentType: d.ContentType, ContentEncoding: d.ContentEncoding,
			DeliveryMode: amqp.Persistent, Priority: d.Priority, CorrelationId: d.CorrelationId, ReplyTo: d.ReplyTo,
			Expiration: d.Expiration, MessageId: d.MessageId, Timestamp: d.Timestamp, Type: d.Type,
			AppId: d.AppId, Body: d.Body}
		if to[i].Body != nil {
			msg.Body = to[i].Body
		}
		if to[i].MessageID != "" {
			msg.MessageId = to[i].MessageID
		}
		c, err := pub.PublishWithDeferredConfirmWithContext(ctx, to[i].Exchange, to[i].RoutingKey, true, false, msg)
		if err != nil {
			errs[i] = fmt.Errorf("publish: %w", err)
			continue
		}
		s.confirms[i] = c
		s.n++
	}
	return s
}

// await waits for every confirm; errs[i] stays nil only for a message the broker confirmed. A
// channel that closed before confirming is an error for the whole batch (outcome unknown).
func (s sentBatch) await(ctx context.Context, errs []error) error {
	for i, c := range s.confirms {
		if c == nil {
			continue
		}
		ok, err := c.WaitContext(ctx)
		switch {
		case err != nil:
			return fmt.Errorf("waiting for the confirm: %w", err)
		case !ok:
			errs[i] = errors.New("the broker nacked the publish")
		}
	}
	return nil
}

// applyReturns fails the batch's messages the broker returned (and forgets those returns): its
// publish ids are its prefix and the message's index, so the cost is the returns', not the batch's.
func (s sentBatch) applyReturns(returned map[string]amqp.Return, errs []error) {
	for pid, r := range returned {
		rest, ok := strings.CutPrefix(pid, s.prefix)
		if !ok {
			continue // a later batch's
		}
		if i, err := strconv.Atoi(rest); err == nil && i >= 0 && i < len(s.confirms) && s.confirms[i] != nil {
			errs[i] = fmt.Errorf("%w: exchange %q, routing key %q (%s)", ErrUnroutable, r.Exchange, r.RoutingKey, r.ReplyText)
			delete(returned, pid)
		}
	}
}

// drainReturns moves the returns queued so far into returned, by publish id. amqp091 closes the
// returns channel with the channel: a closed channel has nothing more to give (reading it again
// would spin).
func drainReturns(returns <-chan amqp.Return, returned map[string]amqp.Return) {
	for {
		select {
		case r, ok := <-returns:
			if !ok {
				return
			}
			if pid, ok := r.Headers["x-redrive-publish-id"].(string); ok {
				returned[pid] = r
			}
		default:
			return
		}
	}
}

// toFullMessage is a delivery as a replay needs it: what identifies and routes it, and its whole
// body (shared with the delivery, not copied), without the rendered headers a page shows.
func (b *Broker) toFullMessage(d amqp.Delivery, pos int) Message {
	m := Message{Position: pos, Exchange: d.Exchange, RoutingKey: d.RoutingKey, Redelivered: d.Redelivered,
		Properties: Properties{MessageID: d.MessageId, CorrelationID: d.CorrelationId, Type: d.Type,
			ContentType: d.ContentType, ContentEncoding: d.ContentEncoding, AppID: d.AppId, UserID: d.UserId,
			DeliveryMode: d.DeliveryMode, Priority: d.Priority, Expiration: d.Expiration, ReplyTo: d.ReplyTo},
		Size: len(d.Body), Body: d.Body, MessageID: messageID(d.MessageId, d.Headers, d.Body, b.ids), DeliveryCount: DeliveryCount(d.Headers),
		DeadLetter: DecodeDeadLetter(d.Headers), RestoredFrom: restoredFrom(d.Headers)}
	if !d.Timestamp.IsZero() {
		t := d.Timestamp.UTC()
		m.Properties.Timestamp = &t
	}
	if m.MessageID == "" {
		m.Envelope = envelopeDigest(d) // what tells apart id-less messages of one body (rabbitmodel.Message.Envelope)
	}
	return m
}

func cloneTable(t amqp.Table) amqp.Table {
	out := make(amqp.Table, len(t)+1)
	for k, v := range t {
		out[k] = v
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// HeaderOriginalUserID carries a republished message's user_id: the broker takes user_id only
// from the user who publishes.
const HeaderOriginalUserID = "x-redrive-original-user-id"
