package rabbit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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
	pub, err := b.channel(ctx, vhost)
	if err != nil {
		return b.fail(op, err)
	}
	defer pub.Close()
	if err := pub.Confirm(false); err != nil {
		return b.fail(op, fmt.Errorf("confirm.select: %w", err))
	}
	returns := pub.NotifyReturn(make(chan amqp.Return, o.Batch))
	// Held messages (kept or failed) stay unacked: the prefetch must leave room for a full batch.
	if err := sub.Qos(o.Max, 0, false); err != nil {
		return b.fail(op, fmt.Errorf("basic.qos: %w", err))
	}
	tag := "redrive-replay-" + randomHex(6)
	deliveries, err := sub.Consume(queue, tag, false, false, false, false, nil)
	if err != nil {
		return b.fail(op, fmt.Errorf("basic.consume: %w", err))
	}
	var held []uint64 // delivery tags to return at the end
	taken := 0
	defer func() {
		// Return what is held, in order; on a broken channel the broker does it itself.
		_ = sub.Cancel(tag, false)
		for d := range deliveries {
			held = append(held, d.DeliveryTag)
		}
		for _, t := range held {
			_ = sub.Nack(t, false, true)
		}
	}()

	for taken < o.Max {
		var batch []amqp.Delivery
		wait := time.NewTimer(b.firstWait)
	collect:
		for len(batch) < o.Batch && taken+len(batch) < o.Max {
			select {
			case d, ok := <-deliveries:
				if !ok {
					break collect
				}
				batch = append(batch, d)
				wait.Reset(b.idleWait)
			case <-wait.C:
				break collect
			case <-ctx.Done():
				wait.Stop()
				for _, d := range batch {
					held = append(held, d.DeliveryTag)
				}
				return ctx.Err()
			}
		}
		wait.Stop()
		if len(batch) == 0 {
			return nil // the queue is drained (or holds only what we keep)
		}
		taken += len(batch)
		rb := RedriveBatch{Messages: make([]Message, len(batch)), Headers: make([]amqp.Table, len(batch))}
		for i, d := range batch {
			rb.Messages[i] = b.toFullMessage(d, i)
			rb.Headers[i] = d.Headers
		}
		moves, err := decide(ctx, rb)
		if err != nil || len(moves) != len(batch) {
			for _, d := range batch {
				held = append(held, d.DeliveryTag)
			}
			if err == nil {
				err = fmt.Errorf("decide returned %d moves for %d messages", len(moves), len(batch))
			}
			return err
		}
		errs := b.publishConfirmed(ctx, pub, returns, batch, moves)
		if err := settle(ctx, rb, moves, errs); err != nil {
			for _, d := range batch {
				held = append(held, d.DeliveryTag)
			}
			return err
		}
		for i, d := range batch {
			done := (moves[i].Kind == Publish && errs[i] == nil) || moves[i].Kind == Drop
			if !done {
				held = append(held, d.DeliveryTag)
				continue
			}
			if err := sub.Ack(d.DeliveryTag, false); err != nil {
				// The copy stays in the queue; the settled record lets the next run drop it.
				return b.fail(op, fmt.Errorf("basic.ack: %w", err))
			}
		}
		if o.Done != nil && o.Done() {
			return nil
		}
	}
	return nil
}

// publishConfirmed publishes the batch's Publish moves and waits for each confirm; errs[i] is nil
// only for a message the broker confirmed and did not return.
func (b *Broker) publishConfirmed(ctx context.Context, pub *amqp.Channel, returns <-chan amqp.Return,
	batch []amqp.Delivery, moves []Move) []error {
	errs := make([]error, len(batch))
	confirms := make([]*amqp.DeferredConfirmation, len(batch))
	ids := make(map[string]int)
	for i, d := range batch {
		if moves[i].Kind != Publish {
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
			return errs
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
