package rabbit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
)

// Move says what Redrive does with one message it took from a queue.
type Move struct {
	Kind MoveKind
	// Publish: where to, and the headers to send instead of the message's own (nil keeps them).
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
		pubs = append(pubs, publisher{ch: ch, returns: ch.NotifyReturn(make(chan amqp.Return, o.Batch))})
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

	// Two stages overlap: while batch n is published, confirmed, settled and acked, batch n+1 is
	// taken and decided (decide and settle are never called concurrently for the same batch, but
	// they are for neighbouring ones).
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
	finish := func(err error) error {
		stopStage()
		for d := range ready { // decided but not moved: they stay
			hold(d.batch)
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

	for d := range ready {
		batch, moves := d.batch, d.moves
		errs := make([]error, len(batch))
		var wg sync.WaitGroup
		for k, p := range pubs {
			wg.Go(func() { b.publishConfirmed(ctx, p.ch, p.returns, batch, moves, errs, k, len(pubs)) })
		}
		wg.Wait()
		if err := settle(ctx, d.rb, moves, errs); err != nil {
			hold(batch)
			return finish(err)
		}
		for i, dl := range batch {
			done := (moves[i].Kind == Publish && errs[i] == nil) || moves[i].Kind == Drop
			if !done {
				hold(batch[i : i+1])
				continue
			}
			if err := sub.Ack(dl.DeliveryTag, false); err != nil {
				// The copy stays in the queue; the settled record lets the next run drop it.
				hold(batch[i+1:])
				return finish(b.fail(op, fmt.Errorf("basic.ack: %w", err)))
			}
		}
		if o.Done != nil && o.Done() {
			return finish(nil)
		}
	}
	return finish(nil)
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

// publishConfirmed publishes the batch's Publish moves whose index is part (mod parts) and waits
// for each confirm; errs[i] is left nil only for a message the broker confirmed and did not return.
func (b *Broker) publishConfirmed(ctx context.Context, pub *amqp.Channel, returns <-chan amqp.Return,
	batch []amqp.Delivery, moves []Move, errs []error, part, parts int) {
	confirms := make([]*amqp.DeferredConfirmation, len(batch))
	ids := make(map[string]int)
	for i, d := range batch {
		if moves[i].Kind != Publish || i%parts != part {
			continue
		}
		headers := moves[i].Headers
		if headers == nil {
			headers = d.Headers
		}
		// A per-publish id finds the message again if the broker returns it.
		pid := randomHex(8)
		headers = cloneTable(headers)
		headers["x-redrive-publish-id"] = pid
		ids[pid] = i
		msg := amqp.Publishing{Headers: headers, ContentType: d.ContentType, ContentEncoding: d.ContentEncoding,
			DeliveryMode: amqp.Persistent, Priority: d.Priority, CorrelationId: d.CorrelationId, ReplyTo: d.ReplyTo,
			Expiration: d.Expiration, MessageId: d.MessageId, Timestamp: d.Timestamp, Type: d.Type, UserId: d.UserId,
			AppId: d.AppId, Body: d.Body}
		c, err := pub.PublishWithDeferredConfirmWithContext(ctx, moves[i].Exchange, moves[i].RoutingKey, true, false, msg)
		if err != nil {
			errs[i] = fmt.Errorf("publish: %w", err)
			continue
		}
		confirms[i] = c
	}
	for i, c := range confirms {
		if c == nil {
			continue
		}
		ok, err := c.WaitContext(ctx)
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("waiting for the confirm: %w", err)
		case !ok:
			errs[i] = errors.New("the broker nacked the publish")
		}
	}
	// A return reaches the client before the confirm of the same message.
	for {
		select {
		case r := <-returns:
			if pid, ok := r.Headers["x-redrive-publish-id"].(string); ok {
				if i, ok := ids[pid]; ok {
					errs[i] = fmt.Errorf("%w: exchange %q, routing key %q (%s)", ErrUnroutable, r.Exchange, r.RoutingKey, r.ReplyText)
				}
			}
		default:
			return
		}
	}
}

func (b *Broker) toFullMessage(d amqp.Delivery, pos int) Message {
	m := b.toMessage(d, pos)
	m.Body, m.Truncated = d.Body, false
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
