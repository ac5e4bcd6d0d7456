package rabbit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
)

// Browse limits.
const (
	MaxBrowse    = 500       // largest Browse limit
	MaxBodyBytes = 256 << 10 // Message.Body is cut at this many bytes
)

// Header is one AMQP header, its value rendered for display: strings as they are, byte arrays as
// text (hex when not UTF-8), timestamps in RFC 3339, tables and arrays as compact JSON-like text.
type Header struct {
	Key   string
	Value string
}

// Properties are a message's AMQP basic properties. Empty strings and zeros mean not set.
type Properties struct {
	MessageID       string
	CorrelationID   string
	Timestamp       *time.Time
	Type            string
	ContentType     string
	ContentEncoding string
	AppID           string
	UserID          string
	DeliveryMode    uint8 // 1 transient, 2 persistent, 0 not set
	Priority        uint8
	Expiration      string // per-message TTL in milliseconds, as text
	ReplyTo         string
}

// Message is one message as Browse saw it.
type Message struct {
	// Position is the message's place in the queue when browsed, 0 being the head (the next
	// message a consumer would get), among the messages that were ready.
	Position int
	// Offset is the message's offset in a stream queue; nil for other queues.
	Offset      *int64
	Exchange    string // the exchange it was published (or dead-lettered) to; "" is the default exchange
	RoutingKey  string
	Redelivered bool // as delivered to the browser: set by any earlier requeue, including earlier browses
	Properties  Properties
	Headers     []Header // sorted by key
	Body        []byte   // at most MaxBodyBytes; see Truncated
	Truncated   bool
	Size        int // the full body length
	// MessageID is the idempotency key: the message_id property, else the first configured header
	// present (message_id.headers), else the first configured JSON path resolving in the body.
	MessageID  string
	DeadLetter *DeadLetter // nil when the message carries no dead-letter header
}

// BrowseResult is what Browse saw and what people need to know to read it correctly.
type BrowseResult struct {
	Vhost    string
	Queue    string
	Type     string
	Messages []Message
	// Ready and Consumers are the queue's ready messages and consumers (other than the browser)
	// when the browse started. For a stream, Ready is the management API's message count, which
	// lags by up to a statistics interval (AMQP reports 0 for streams).
	Ready     int64
	Consumers int64
	// Redelivered is true when the browse requeued what it read (classic and quorum queues): those
	// messages now carry redelivered=true for their next consumer, and on a quorum queue their
	// delivery count went up by one. Stream reads are not requeued and change nothing.
	Redelivered bool
	// Notes explain what the browse could not see or what it changed, in plain sentences.
	Notes []string
}

// Browse reads up to limit (1..MaxBrowse) messages from the head of a queue and leaves the queue as
// it was: same messages, same order.
//
// Classic and quorum queues are read by a consumer on a dedicated channel with manual acks and a
// prefetch of limit; the browse stops when limit or the queue's ready count is reached, or when no
// delivery arrives for a short while. The consumer is then cancelled and every delivery is
// returned with one basic.nack(multiple, requeue), which puts them back at their original
// positions. The broker marks them redelivered, and a quorum queue counts a delivery for each:
// a quorum queue with a delivery limit (argument or policy) is therefore refused with
// ops.ErrConflict, since browsing it could dead-letter or drop the messages looked at; so is a
// single-active-consumer queue that already has a consumer, where the browser would only wait.
// Messages other consumers hold unacknowledged are not visible; a Note says so.
//
// Stream queues are read non-destructively from the first offset.
//
// Errors: limit out of range or empty names → ops.ErrInvalid; a vhost that is not watched, or an
// unknown vhost or queue → ops.ErrNotFound; an exclusive queue of another connection →
// ops.ErrConflict; broker unreachable → ops.ErrUnavailable.
func (b *Broker) Browse(ctx context.Context, vhost, queue string, limit int) (BrowseResult, error) {
	msgs := []Message{}
	res, err := b.browse(ctx, vhost, queue, limit, MaxBrowse, func(d amqp.Delivery, pos int) {
		msgs = append(msgs, b.toMessage(d, pos))
	})
	if err != nil {
		return BrowseResult{}, err
	}
	res.Messages = msgs
	return res, nil
}

// MaxPeek bounds Peek, which a replay plan uses to freeze a larger selection than a page.
const MaxPeek = 100_000

// Peek is Browse with a limit up to MaxPeek, for freezing a replay plan's message set: it hands
// each message to each as it arrives (the caller works while the rest is read), and the result
// holds no messages. The messages are for moving, not showing: whole bodies, headers not
// rendered (Headers is nil). They all go back to the queue before Peek returns.
func (b *Broker) Peek(ctx context.Context, vhost, queue string, limit int, each func(Message)) (BrowseResult, error) {
	return b.browse(ctx, vhost, queue, limit, MaxPeek, func(d amqp.Delivery, pos int) { each(b.toFullMessage(d, pos)) })
}

// browse reads up to limit messages, handing each to sink with its position, and returns the
// queue's state and notes (Messages left empty).
func (b *Broker) browse(ctx context.Context, vhost, queue string, limit, maxLimit int, sink func(amqp.Delivery, int)) (BrowseResult, error) {
	op := fmt.Sprintf("browse %s/%s", vhost, queue)
	switch {
	case vhost == "":
		return BrowseResult{}, ops.Invalid("vhost", "required")
	case queue == "":
		return BrowseResult{}, ops.Invalid("queue", "required")
	case limit < 1 || limit > maxLimit:
		return BrowseResult{}, ops.Invalid("limit", fmt.Sprintf("must be in [1, %d]", maxLimit))
	case !b.watched(vhost):
		return BrowseResult{}, b.fail(op, fmt.Errorf("vhost %q is not watched: %w", vhost, ops.ErrNotFound))
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()

	q, err := b.queueInfo(ctx, vhost, queue)
	if err != nil {
		return BrowseResult{}, b.fail(op, err)
	}
	if q.Type == TypeQuorum {
		if err := b.refuseDeliveryLimit(ctx, q); err != nil {
			return BrowseResult{}, b.fail(op, err)
		}
	}

	ch, err := b.channel(ctx, vhost)
	if err != nil {
		return BrowseResult{}, b.fail(op, err)
	}
	defer ch.Close()
	// Passive declare: the live ready count and consumers (management stats lag by seconds).
	state, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
	if err != nil {
		return BrowseResult{}, b.fail(op, err)
	}
	res := BrowseResult{Vhost: vhost, Queue: queue, Type: q.Type, Messages: []Message{},
		Ready: int64(state.Messages), Consumers: int64(state.Consumers)}

	if q.Type == TypeStream {
		// A stream's queue.declare-ok always counts 0 messages; the management count lags a little.
		res.Ready = q.Ready
		if err := b.browseStream(ctx, ch, queue, limit, &res, sink); err != nil {
			return BrowseResult{}, b.fail(op, err)
		}
		return res, nil
	}

	if q.SingleActiveConsumer && state.Consumers > 0 {
		return BrowseResult{}, b.fail(op, fmt.Errorf("%w: queue %q has single active consumer enabled and a consumer attached: "+
			"a browser would be a standby consumer and receive nothing", ops.ErrConflict, queue))
	}
	if state.Consumers > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d other consumer(s) are attached: messages they hold unacknowledged "+
			"are not visible here, and they may be delivered messages while this browse holds others.", state.Consumers))
	}
	if q.Type == TypeQuorum {
		res.Notes = append(res.Notes, "Quorum queue: browsing counts one delivery for each message read "+
			"(the x-delivery-count header goes up); the queue has no delivery limit, so nothing is dead-lettered.")
	}
	if state.Messages == 0 {
		res.Notes = append(res.Notes, "The queue has no ready messages.")
		return res, nil
	}
	want := min(limit, state.Messages)
	read, err := b.browseQueue(ctx, ch, queue, want, sink)
	if err != nil {
		return BrowseResult{}, b.fail(op, err)
	}
	if q.Type == TypeQuorum && read > 0 && !b.awaitReturned(ctx, vhost, queue, state.Consumers) {
		res.Notes = append(res.Notes, "The quorum queue had not yet processed the return of the browsed messages when "+
			"the browse ended: for a moment they may still show as unacknowledged.")
	}
	if read > 0 {
		res.Redelivered = true
		res.Notes = append(res.Notes, "The messages shown were returned to the queue in their original order; "+
			"their next consumer sees them with redelivered=true.")
	}
	if q.MaxLength != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("The queue has a max-length of %d: messages published while the browse "+
			"held others can push the queue over it when they are returned, dropping or dead-lettering from the head.", *q.MaxLength))
	}
	return res, nil
}

// refuseDeliveryLimit returns an ops.ErrConflict when quorum queue q has a delivery limit, from its
// x-delivery-limit argument, from the policy the management API reports, or from the policies
// themselves (see policyDeliveryLimit): each browse counts a delivery, so enough browses would
// dead-letter or drop the messages looked at.
func (b *Broker) refuseDeliveryLimit(ctx context.Context, q Queue) error {
	limit, from := q.DeliveryLimit, ""
	if _, ok := q.Arguments["x-delivery-limit"]; ok {
		from = "the x-delivery-limit argument"
	} else if limit != nil {
		from = "policy " + strconv.Quote(q.Policy)
		if q.OperatorPolicy != "" {
			from += " / operator policy " + strconv.Quote(q.OperatorPolicy)
		}
	}
	pl, pfrom, err := b.policyDeliveryLimit(ctx, q.Vhost, q.Name)
	if err != nil {
		return err
	}
	if pl != nil && (limit == nil || *pl < *limit) {
		limit, from = pl, pfrom
	}
	if limit == nil {
		return nil
	}
	return fmt.Errorf("%w: quorum queue %q has a delivery limit of %d (from %s): a browse returns the messages it "+
		"read and RabbitMQ counts that as a delivery, so browsing would eventually dead-letter or drop them; "+
		"remove the limit, or move the messages to a classic queue (with a shovel) to look at them",
		ops.ErrConflict, q.Name, *limit, from)
}

// browseQueue consumes up to want messages with manual acks and returns all of them with one
// nack(multiple, requeue) after the consumer is cancelled, so they go back in order.
func (b *Broker) browseQueue(ctx context.Context, ch *amqp.Channel, queue string, want int, sink func(amqp.Delivery, int)) (read int, err error) {
	if err := ch.Qos(want, 0, false); err != nil {
		return 0, fmt.Errorf("basic.qos: %w", err)
	}
	tag := consumerTag()
	deliveries, err := ch.Consume(queue, tag, false, false, false, false, nil)
	if err != nil {
		return 0, fmt.Errorf("basic.consume: %w", err)
	}
	var last uint64
	var loopErr error
	collect := func(d amqp.Delivery) {
		last = max(last, d.DeliveryTag)
		if read < want {
			sink(d, read)
			read++
		}
	}
	timer := time.NewTimer(b.firstWait)
	defer timer.Stop()
loop:
	for read < want {
		select {
		case d, ok := <-deliveries:
			if !ok {
				break loop // channel closed under us; the broker requeues on close
			}
			collect(d)
			timer.Reset(b.idleWait)
		case <-timer.C:
			break loop
		case <-ctx.Done():
			loopErr = ctx.Err()
			break loop
		}
	}
	// Stop deliveries, then take what was already on its way: every delivery must be returned.
	if err := ch.Cancel(tag, false); err != nil && loopErr == nil {
		loopErr = fmt.Errorf("basic.cancel: %w", err)
	}
	for d := range deliveries {
		collect(d)
	}
	if last > 0 {
		if err := ch.Nack(last, true, true); err != nil && loopErr == nil {
			loopErr = fmt.Errorf("basic.nack: %w", err)
		}
	}
	if loopErr != nil {
		return read, loopErr
	}
	// channel.close waits for close-ok, so the requeue has been processed when Browse returns.
	if err := ch.Close(); err != nil {
		return read, fmt.Errorf("channel.close: %w", err)
	}
	return read, nil
}

// awaitReturned waits (up to a second) until a quorum queue has applied the browser's cancel and
// returns. A quorum queue applies them asynchronously, after channel.close-ok: for a few
// milliseconds it still counts the browser as a consumer and the messages as unacknowledged, and
// a browse right after would see an empty queue. The browser's consumer being gone is the sign,
// since the queue applies the channel's commands in order. It reports whether that was seen.
func (b *Broker) awaitReturned(ctx context.Context, vhost, queue string, consumersBefore int) bool {
	ch, err := b.channel(ctx, vhost)
	if err != nil {
		return false
	}
	defer ch.Close()
	deadline := time.Now().Add(time.Second)
	for {
		st, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
		if err != nil {
			return false
		}
		if st.Consumers <= consumersBefore {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// browseStream reads a stream from its first offset. Stream consumers need manual acks and a
// prefetch; reading does not remove anything, and unacked stream deliveries are only credit.
func (b *Broker) browseStream(ctx context.Context, ch *amqp.Channel, queue string, limit int, res *BrowseResult, sink func(amqp.Delivery, int)) error {
	if err := ch.Qos(limit, 0, false); err != nil {
		return fmt.Errorf("basic.qos: %w", err)
	}
	tag := consumerTag()
	deliveries, err := ch.Consume(queue, tag, false, false, false, false, amqp.Table{"x-stream-offset": "first"})
	if err != nil {
		return fmt.Errorf("basic.consume: %w", err)
	}
	timer := time.NewTimer(b.firstWait)
	defer timer.Stop()
	var loopErr error
	read := 0
loop:
	for read < limit {
		select {
		case d, ok := <-deliveries:
			if !ok {
				break loop
			}
			sink(d, read)
			read++
			timer.Reset(b.idleWait)
		case <-timer.C:
			break loop
		case <-ctx.Done():
			loopErr = ctx.Err()
			break loop
		}
	}
	if err := ch.Cancel(tag, false); err != nil && loopErr == nil {
		loopErr = fmt.Errorf("basic.cancel: %w", err)
	}
	for range deliveries { //nolint:revive // drain what was in flight
	}
	res.Notes = append(res.Notes, "Stream queue: read from the first offset; reading a stream does not change it.")
	return loopErr
}

func consumerTag() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "redrive-browse-" + hex.EncodeToString(b)
}

// toMessage copies a delivery into a Message; the body is cut at MaxBodyBytes, but the message id
// is looked for in the whole body.
func (b *Broker) toMessage(d amqp.Delivery, pos int) Message {
	m := b.toFullMessage(d, pos)
	m.Headers = headersOf(d.Headers)
	if v, ok := d.Headers["x-stream-offset"]; ok {
		if n, ok := valueInt(v); ok {
			m.Offset = &n
		}
	}
	body := d.Body
	if len(body) > MaxBodyBytes {
		body, m.Truncated = body[:MaxBodyBytes], true
	}
	m.Body = bytes.Clone(body)
	return m
}

func headersOf(t amqp.Table) []Header {
	out := make([]Header, 0, len(t))
	for k, v := range t {
		out = append(out, Header{Key: k, Value: renderValue(v)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// messageID finds the idempotency key: the message_id property, else the first configured header
// present with a string or integer value, else the first JSON path resolving in a JSON-object body.
func messageID(prop string, headers amqp.Table, body []byte, ids configs.MessageIDRules) string {
	if prop != "" {
		return prop
	}
	for _, name := range ids.Headers {
		v, ok := headers[name]
		if !ok {
			// Header names are case-sensitive in AMQP, but producers disagree on case.
			for k, hv := range headers {
				if strings.EqualFold(k, name) {
					v, ok = hv, true
					break
				}
			}
		}
		if ok {
			if s, ok := valueString(v); ok && s != "" {
				return s
			}
		}
	}
	return ops.MessageIDFromJSON(body, ids.JSONPaths)
}
