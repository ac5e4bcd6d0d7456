package rabbit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
)

// Move says what Redrive does with one message it took from a queue.
type Move struct {
	Kind MoveKind
	// Publish: where to, and the headers to send instead of the message's own (nil keeps them).
	// Redrive adds its publish id to Headers, so give each move its own table.
	Exchange   string
	RoutingKey string
	Headers    amqp.Table
}

// MoveKind is the fate of one message.
type MoveKind int

// Moves.
const (
	Keep    MoveKind = iota // return it to the queue, in its place
	Publish                 // publish it (confirmed, mandatory), then remove it from the queue
	Drop                    // remove it from the queue: a copy was already delivered
)

// RedriveBatch is one batch Redrive hands to its callbacks.
type RedriveBatch struct {
	Messages []Message // full bodies (not capped)
	Headers  []amqp.Table
}

// ErrUnroutable is a publish the broker returned: no queue is bound for its routing key.
var ErrUnroutable = errors.New("unroutable: the broker returned it (no queue bound for the routing key)")

// RedriveOptions bound a Redrive.
type RedriveOptions struct {
	Max   int // stop after this many messages were taken from the queue; required
	Batch int // messages per decide/settle round; default 100
	// Done, when it returns true after a batch, ends the run early (everything wanted was moved).
	Done func() bool
}

// Redrive takes messages from the head of a queue batch by batch, asks decide what to do with
// each, and carries it out without losing any:
//
//	take (manual ack) → publish the Publish moves with mandatory, on a confirm-mode channel →
//	wait for every confirm → settle(outcomes) → ack the published and dropped messages.
//
// A publish that is nacked or returned is a failure: its message stays in the queue. Kept and
// failed messages stay unacknowledged until the end, then go back with one basic.nack(requeue),
// in their order. If the process dies anywhere, the broker requeues every unacked message; a
// message whose publish was confirmed but not yet acked then comes back, and settle's record (the
// caller's ledger) is what lets a later run drop it instead of publishing it twice.
func (b *Broker) Redrive(ctx context.Context, vhost, queue string, o RedriveOptions,
	decide func(ctx context.Context, batch RedriveBatch) ([]Move, error),
	settle func(ctx context.Context, batch RedriveBatch, moves []Move, errs []error) error) error {
	op := fmt.Sprintf("redrive %s/%s", vhost, queue)
	if o.Max < 1 {
		return ops.Invalid("max", "must be at least 1")
	}
	if o.Batch <= 0 {
		o.Batch = 100
	}
	sub, err := b.channel(ctx, vhost)
	if err != nil {
		return b.fail(op, err)
	}
	defer sub.Close()
	// Two confirm-mode publishing channels share each batch: a channel publishes serially, and the
	// broker confirms each channel's messages independently.
	var pubs []publisher
	for range publishers {
		ch, err := b.channel(ctx, vhost)
		if err != nil {
			return b.fail(op, err)
		}
		defer ch.Close()
		if err := ch.Confirm(false); err != nil {
			return b.fail(op, fmt.Errorf("confirm.select: %w", err))
		}
		// Returns wait here until the confirming stage reads them: room for every batch in flight.
		pubs = append(pubs, publisher{ch: ch, returns: ch.NotifyReturn(make(chan amqp.Return, 4*o.Batch))})
	}
	// Held messages (kept or failed) stay unacked: the prefetch must leave room for a full batch.
	if err := sub.Qos(o.Max, 0, false); err != nil {
		return b.fail(op, fmt.Errorf("basic.qos: %w", err))
	}
	tag := "redrive-replay-" + randomHex(6)
	deliveries, err := sub.Consume(queue, tag, false, false, false, false, nil)
	if err != nil {
		return b.fail(op, fmt.Errorf("basic.consume: %w", err))
	}
	var heldMu sync.Mutex
	var held []uint64 // delivery tags to return at the end
	hold := func(ds []amqp.Delivery) {
		heldMu.Lock()
		for _, d := range ds {
			held = append(held, d.DeliveryTag)
		}
		heldMu.Unlock()
	}
	defer func() {
		// Return what is held, in order; on a broken channel the broker does it itself.
		_ = sub.Cancel(tag, false)
		for d := range deliveries {
			held = append(held, d.DeliveryTag)
		}
		sort.Slice(held, func(i, j int) bool { return held[i] < held[j] })
		for _, t := range held {
			_ = sub.Nack(t, false, true)
		}
	}()

	// Four stages overlap: batch n+3 is taken and decided while batch n+2 is published, batch n+1
	// waits for its confirms and batch n is settled and acked. Each message still goes publish → confirm →
	// settle → ack; only different batches overlap (decide and settle run concurrently for
	// neighbouring batches, never for the same one).
	type decided struct {
		batch []amqp.Delivery
		rb    RedriveBatch
		moves []Move
	}
	stageCtx, stopStage := context.WithCancel(ctx)
	defer stopStage()
	ready := make(chan decided, 1)
	var stageErr error
	go func() {
		defer close(ready)
		for taken := 0; taken < o.Max; {
			batch, err := b.take(stageCtx, deliveries, min(o.Batch, o.Max-taken))
			if err != nil || len(batch) == 0 {
				hold(batch)
				stageErr = err
				return // drained (or holding only what is kept), or stopped
			}
			taken += len(batch)
			rb := RedriveBatch{Messages: make([]Message, len(batch)), Headers: make([]amqp.Table, len(batch))}
			for i, d := range batch {
				rb.Messages[i] = b.toFullMessage(d, i)
				rb.Headers[i] = d.Headers
			}
			moves, err := decide(stageCtx, rb)
			if err == nil && len(moves) != len(batch) {
				err = fmt.Errorf("decide returned %d moves for %d messages", len(moves), len(batch))
			}
			if err != nil {
				hold(batch)
				stageErr = err
				return
			}
			select {
			case ready <- decided{batch, rb, moves}:
			case <-stageCtx.Done():
				hold(batch)
				return
			}
		}
	}()
	type sent struct {
		decided
		inflight []sentBatch // one per publishing channel
		errs     []error
	}
	published := make(chan sent, 1)
	go func() {
		defer close(published)
		for d := range ready {
			if stageCtx.Err() != nil { // stopping: publish nothing more
				hold(d.batch)
				continue
			}
			s := sent{decided: d, inflight: make([]sentBatch, len(pubs)), errs: make([]error, len(d.batch))}
			var wg sync.WaitGroup
			for k, p := range pubs {
				wg.Go(func() { s.inflight[k] = b.publish(ctx, p.ch, d.batch, d.moves, s.errs, k, len(pubs)) })
			}
			wg.Wait()
			select {
			case published <- s:
			case <-stageCtx.Done():
				hold(d.batch)
			}
		}
	}()
	// Confirms are awaited on their own goroutine, so that settling and acking batch n overlaps
	// waiting for the confirms of batch n+1.
	confirmed := make(chan sent, 1)
	go func() {
		defer close(confirmed)
		returned := map[string]amqp.Return{} // by publish id, read from the channels' return queues
		for s := range published {
			for k, p := range pubs {
				s.inflight[k].await(ctx, s.errs)
				// A return reaches the client before the confirm of the same message, so every
				// return of this batch is queued by now (later batches' returns wait in the map).
				drainReturns(p.returns, returned)
				s.inflight[k].applyReturns(returned, s.errs)
			}
			select {
			case confirmed <- s:
			case <-stageCtx.Done():
				hold(s.batch)
			}
		}
	}()
	finish := func(err error) error {
		stopStage()
		for s := range confirmed { // decided or published but not settled: they stay
			hold(s.batch)
		}
		switch {
		case err != nil:
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		case stageErr != nil && !errors.Is(stageErr, context.Canceled): // not our own stopStage
			return stageErr
		}
		return nil
	}

	for s := range confirmed {
		if err := settle(ctx, s.rb, s.moves, s.errs); err != nil {
			hold(s.batch)
			return finish(err)
		}
		if err := b.ackDone(sub, s.batch, s.moves, s.errs, hold, &heldMu, &held); err != nil {
			return finish(b.fail(op, err))
		}
		if o.Done != nil && o.Done() {
			return finish(nil)
		}
	}
	return finish(nil)
}

// ackDone acks the batch's published and dropped messages and holds the rest. When nothing is
// held on the channel and the whole batch is done, one multiple ack covers it.
func (b *Broker) ackDone(sub *amqp.Channel, batch []amqp.Delivery, moves []Move, errs []error,
	hold func([]amqp.Delivery), heldMu *sync.Mutex, held *[]uint64) error {
	done := func(i int) bool {
		return (moves[i].Kind == Publish && errs[i] == nil) || moves[i].Kind == Drop
	}
	all := true
	for i := range batch {
		all = all && done(i)
	}
	heldMu.Lock()
	nothingHeld := len(*held) == 0
	heldMu.Unlock()
	if all && nothingHeld && len(batch) > 0 {
		// Tags grow in delivery order; nothing below this batch is unacked but held — and held
		// deliveries are only ever added by this goroutine or for later batches.
		if err := sub.Ack(batch[len(batch)-1].DeliveryTag, true); err != nil {
			hold(batch)
			return fmt.Errorf("basic.ack: %w", err)
		}
		return nil
	}
	for i, dl := range batch {
		if !done(i) {
			hold(batch[i : i+1])
			continue
		}
		if err := sub.Ack(dl.DeliveryTag, false); err != nil {
			// The copy stays in the queue; the settled record lets the next run drop it.
			hold(batch[i+1:])
			return fmt.Errorf("basic.ack: %w", err)
		}
	}
	return nil
}

// take collects up to n deliveries: it stops early when none arrives for a while (the queue is
// drained, or holds only messages this run keeps) or when ctx ends (returning what it has).
func (b *Broker) take(ctx context.Context, deliveries <-chan amqp.Delivery, n int) ([]amqp.Delivery, error) {
	var batch []amqp.Delivery
	wait := time.NewTimer(b.firstWait)
	defer wait.Stop()
	for len(batch) < n {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return batch, nil
			}
			batch = append(batch, d)
			wait.Reset(b.idleWait)
		case <-wait.C:
			return batch, nil
		case <-ctx.Done():
			return batch, ctx.Err()
		}
	}
	return batch, nil
}

// publishers is how many confirm-mode channels a Redrive publishes on.
const publishers = 2

type publisher struct {
	ch      *amqp.Channel
	returns <-chan amqp.Return
}

// sentBatch is one channel's share of a published batch, waiting for its confirms.
type sentBatch struct {
	confirms map[int]*amqp.DeferredConfirmation // by index in the batch
	ids      map[string]int                     // publish id → index, to match returns
	prefix   string                             // publish ids are prefix + index
}

// publish publishes the batch's Publish moves whose index is part (mod parts) with mandatory,
// without waiting for the confirms; a publish that fails at once sets errs[i].
func (b *Broker) publish(ctx context.Context, pub *amqp.Channel, batch []amqp.Delivery, moves []Move, errs []error, part, parts int) sentBatch {
	s := sentBatch{confirms: map[int]*amqp.DeferredConfirmation{}, ids: map[string]int{}, prefix: randomHex(8) + "-"}
	for i, d := range batch {
		if moves[i].Kind != Publish || i%parts != part {
			continue
		}
		headers := moves[i].Headers // decide's own table: ours to add to
		if headers == nil {
			headers = cloneTable(d.Headers)
		}
		// A per-publish id finds the message again if the broker returns it.
		pid := s.prefix + strconv.Itoa(i)
		headers["x-redrive-publish-id"] = pid
		s.ids[pid] = i
		msg := amqp.Publishing{Headers: headers, ContentType: d.ContentType, ContentEncoding: d.ContentEncoding,
			DeliveryMode: amqp.Persistent, Priority: d.Priority, CorrelationId: d.CorrelationId, ReplyTo: d.ReplyTo,
			Expiration: d.Expiration, MessageId: d.MessageId, Timestamp: d.Timestamp, Type: d.Type, UserId: d.UserId,
			AppId: d.AppId, Body: d.Body}
		c, err := pub.PublishWithDeferredConfirmWithContext(ctx, moves[i].Exchange, moves[i].RoutingKey, true, false, msg)
		if err != nil {
			errs[i] = fmt.Errorf("publish: %w", err)
			continue
		}
		s.confirms[i] = c
	}
	return s
}

// await waits for every confirm; errs[i] stays nil only for a message the broker confirmed.
func (s sentBatch) await(ctx context.Context, errs []error) {
	for i, c := range s.confirms {
		ok, err := c.WaitContext(ctx)
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("waiting for the confirm: %w", err)
		case !ok:
			errs[i] = errors.New("the broker nacked the publish")
		}
	}
}

// applyReturns fails the batch's messages the broker returned (and forgets those returns).
func (s sentBatch) applyReturns(returned map[string]amqp.Return, errs []error) {
	for pid, i := range s.ids {
		if r, ok := returned[pid]; ok {
			errs[i] = fmt.Errorf("%w: exchange %q, routing key %q (%s)", ErrUnroutable, r.Exchange, r.RoutingKey, r.ReplyText)
			delete(returned, pid)
		}
	}
}

// drainReturns moves the returns queued so far into returned, by publish id.
func drainReturns(returns <-chan amqp.Return, returned map[string]amqp.Return) {
	for {
		select {
		case r := <-returns:
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
		Size: len(d.Body), Body: d.Body, MessageID: messageID(d.MessageId, d.Headers, d.Body, b.ids),
		DeadLetter: DecodeDeadLetter(d.Headers)}
	if !d.Timestamp.IsZero() {
		t := d.Timestamp.UTC()
		m.Properties.Timestamp = &t
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
