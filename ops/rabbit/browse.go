package rabbit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
)

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
//
// A quorum queue puts the messages returned to it at its back (RabbitMQ 3.10 and later), behind
// any it did not hand out: returning only a head would move it to the tail. So a browse of a
// quorum queue reads all its ready messages (and any published meanwhile), shows the first limit
// and returns them all at once, which leaves the order as it was. One that holds more than
// MaxQuorumBrowse ready messages (MaxPeek for Peek), or that has ready messages and consumers
// (which would take some of them), is refused with ops.ErrConflict saying why.
// Messages other consumers hold unacknowledged are not visible; Complete is false and a Note says
// so, with their count.
//
// Since a browse hides what it holds from any other reader, browses (and Peeks) of one classic or
// quorum queue take turns, with each other and with replay jobs' cursors (OpenCursor): in this
// process, and across replicas with SetQueueLock. A browse waits up to a bound (10 s) for its turn
// and then fails with ops.ErrUnavailable, saying the queue is being read by another browse or
// replay plan, or that a replay job is moving its messages.
//
// Stream queues are read non-destructively from the first offset, without taking turns.
//
// Errors: limit out of range or empty names → ops.ErrInvalid; a vhost that is not watched, or an
// unknown vhost or queue → ops.ErrNotFound; an exclusive queue of another connection →
// ops.ErrConflict; broker unreachable, or the queue busy past the bound → ops.ErrUnavailable.
func (b *Broker) Browse(ctx context.Context, vhost, queue string, limit int) (BrowseResult, error) {
	msgs := []Message{}
	res, err := b.browse(ctx, vhost, queue, limit, MaxBrowse, func(d amqp.Delivery, pos int, kept bool) bool {
		m := b.toMessage(d, pos)
		m.Kept = kept
		msgs = append(msgs, m)
		return true
	})
	if err != nil {
		return BrowseResult{}, err
	}
	for i := range msgs {
		msgs[i].DeliveriesLeft = DeliveriesLeft(res.DeliveryLimit, msgs[i].DeliveryCount+1) // after this read's return
		if msgs[i].Kept {
			msgs[i].DeliveriesLeft = 0
		}
	}
	res.Messages = msgs
	return res, nil
}

// browseWindow is the prefetch of the first consumer of a browse of a classic queue (each next one
// has four times the last's, see browseQueue): at least MaxBrowse, so that a page is read in one.
const browseWindow = 1000

// Peek is Browse with a limit up to MaxPeek, for freezing a replay plan's message set: it hands
// each message to each as it arrives (the caller works while the rest is read), and the result
// holds no messages. The messages are for moving, not showing: whole bodies, headers rendered
// as text (for a plan's filter). They all go back to the queue before Peek returns. Peek takes the
// queue's turn as Browse does, for as long as each takes; a result that is not Complete is a
// selection that may miss messages of the head.
func (b *Broker) Peek(ctx context.Context, vhost, queue string, limit int, each func(Message)) (BrowseResult, error) {
	return b.browse(ctx, vhost, queue, limit, MaxPeek, func(d amqp.Delivery, pos int, kept bool) bool {
		if kept {
			return true // in the archive now, not in the queue: a plan of the queue cannot move it
		}
		m := b.toFullMessage(d, pos)
		m.Headers = headersOf(d.Headers) // a plan's filter.cel reads them
		each(m)
		return true
	})
}

// browse reads up to limit messages, handing each to sink with its position, and returns the
// queue's state and notes (Messages left empty). Once sink returns false it is handed nothing more
// and the read stops there, but for a quorum queue's, which goes on to the queue's end (see Browse);
// what was read goes back to the queue all the same.
func (b *Broker) browse(ctx context.Context, vhost, queue string, limit, maxLimit int, sink func(d amqp.Delivery, pos int, kept bool) bool) (BrowseResult, error) {
	op := fmt.Sprintf("browse %s/%s", vhost, queue)
	switch {
	case vhost == "":
		return BrowseResult{}, ops.Invalid("vhost", "required")
	case queue == "":
		return BrowseResult{}, ops.Invalid("queue", "required")
	case limit < 1 || limit > maxLimit:
		return BrowseResult{}, ops.Invalid("limit", fmt.Sprintf("must be in [1, %d]", maxLimit))
	case !b.watched(vhost):
		return BrowseResult{}, b.fail(op, ops.NotFound("vhost %q is not watched", vhost))
	}
	q, mode, err := b.browseInfo(ctx, vhost, queue)
	if err != nil {
		return BrowseResult{}, b.fail(op, err)
	}
	var notes []string
	if q.Type != TypeStream {
		// Take the queue's turn before the broker timeout starts: waiting is bounded on its own.
		release, note, err := b.browsing.acquire(ctx, b.name, vhost, queue)
		if err != nil {
			return BrowseResult{}, b.fail(op, err)
		}
		defer release()
		if note != "" {
			notes = append(notes, note)
		}
	}
	// Reading a plan's 100,000 messages takes longer than one broker round trip: the bound grows
	// with the limit (the caller's own deadline, a request's, still applies). A quorum queue on
	// RabbitMQ 3.x is read whole.
	wholeMax := max(maxLimit, MaxQuorumBrowse)
	bound := limit
	if mode.whole {
		bound = max(limit, int(min(q.Total, int64(wholeMax))))
	}
	ctx, cancel := b.boundFor(ctx, bound)
	defer cancel()

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
	if q.Type != TypeStream && state.Consumers == 0 && heldByOthers(q, int64(state.Messages)) > 0 {
		if q, state, err = b.settledStats(ctx, ch, q, state); err != nil {
			return BrowseResult{}, b.fail(op, err)
		}
	}
	res := BrowseResult{Vhost: vhost, Queue: queue, Type: q.Type, Messages: []Message{},
		Ready: int64(state.Messages), Consumers: int64(state.Consumers), Complete: true,
		DeliveryLimit: mode.limit, DeliveryLimitFrom: mode.from}

	if q.Type == TypeStream {
		// A stream's queue.declare-ok always counts 0 messages; the management count lags a little.
		res.Ready = q.Ready
		if err := b.browseStream(ctx, ch, queue, limit, &res, sink); err != nil {
			return BrowseResult{}, b.fail(op, err)
		}
		return res, nil
	}

	if q.SingleActiveConsumer && state.Consumers > 0 {
		return BrowseResult{}, b.fail(op, ops.Conflict("queue %q has single active consumer enabled and a consumer attached: "+
			"a browser would be a standby consumer and receive nothing", queue))
	}
	if mode.whole {
		if err := quorumWhole(queue, state, wholeMax); err != nil {
			return BrowseResult{}, b.fail(op, err)
		}
	}
	if len(notes) > 0 {
		res.Complete = false
		res.Notes = append(res.Notes, notes...)
	}
	if state.Consumers > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d other consumer(s) are attached: messages they hold unacknowledged "+
			"are not visible here, and they may be delivered messages while this browse holds others.", state.Consumers))
	}
	res.Unacked = heldByOthers(q, res.Ready)
	if q.CountsUnreported && state.Consumers == 0 {
		// Consumers are known (queue.declare-ok counts them); what a channel holds after a
		// basic.get is not, without the broker's statistics. Such messages come back to the queue
		// when that channel acks, rejects or closes: a plan of what was read misses them, never moves them.
		res.Notes = append(res.Notes, "The broker reports no message counts for this queue ("+q.StatsNote()+"): messages "+
			"a channel holds unacknowledged after a basic.get cannot be told, and are not shown if there are any.")
	}
	switch {
	case res.Unacked > 0 && state.Consumers > 0:
		res.Complete = false
		res.Notes = append(res.Notes, fmt.Sprintf("%d %s held unacknowledged by %d %s and %s not shown; the list may be partial.",
			res.Unacked, plural(res.Unacked, "message is", "messages are"), state.Consumers, plural(int64(state.Consumers), "consumer", "consumers"),
			plural(res.Unacked, "is", "are")))
	case res.Unacked > 0:
		res.Complete = false
		res.Notes = append(res.Notes, fmt.Sprintf("%d %s held unacknowledged by a channel that has no consumer on the queue "+
			"(basic.get without ack, or a consumer that just left: the management statistics lag by a few seconds) and %s not shown; "+
			"the list may be partial.", res.Unacked, plural(res.Unacked, "message is", "messages are"), plural(res.Unacked, "is", "are")))
	case state.Consumers > 0:
		res.Complete = false
		res.Notes = append(res.Notes, "The management API reported no unacknowledged messages when the browse started, "+
			"but the attached consumers can take and hold messages at any moment; the list may be partial.")
	}
	if q.Type == TypeQuorum {
		res.Notes = append(res.Notes, mode.note())
	}
	if state.Messages == 0 {
		res.Notes = append(res.Notes, "The queue has no ready messages.")
		if q.Type == TypeQuorum && !q.CountsUnreported && q.Ready > 0 {
			// RabbitMQ 4's quorum queue answers a passive declare with 0 when its leader does not
			// answer within 250 ms (rabbit_quorum_queue:stat), and the management API goes on
			// reporting the last counts: an empty read may be a queue without a leader, not an
			// empty one. A drain a moment ago (the statistics lag by their interval) looks alike.
			res.Complete = false
			res.Notes = append(res.Notes, fmt.Sprintf("The management API counted %d ready %s a moment ago: unless they were "+
				"consumed since (its counts lag by a few seconds), the queue's leader may be unavailable, and a quorum queue "+
				"without one answers 0; check its members (rabbitmqctl list_queues name state, or the queue's page in the "+
				"management UI).", q.Ready, plural(q.Ready, "message", "messages")))
		}
		return res, nil
	}
	want := min(limit, state.Messages)
	whole := 0 // a quorum queue on 3.x is read to its end, up to this many
	ahead := 0 // 4.x: returned messages ahead of the others, read too to keep the order
	switch {
	case mode.whole:
		want, whole = state.Messages, wholeMax
	case mode.byClose:
		ahead = b.returnedAhead(q)
		want = min(max(limit, ahead), state.Messages)
	}
	stopped := false
	read, arrived, kept, err := b.browseQueue(ctx, ch, q, mode, want, whole, func(d amqp.Delivery, pos int, kept bool) bool {
		if pos < limit && !stopped {
			stopped = !sink(d, pos, kept)
		}
		return !stopped || whole > 0
	})
	if err != nil {
		return BrowseResult{}, b.fail(op, err)
	}
	if mode.byClose {
		b.noteReturned(q.Ref(), read+arrived-kept)
		if read > limit {
			res.Notes = append(res.Notes, fmt.Sprintf("Quorum queue: %d messages that earlier reads returned wait ahead of "+
				"the others, so this browse read %d messages, not only the page, and returned them all in order: "+
				"returning only the page would have put it behind them.", ahead, read))
		}
	}
	if res.Kept = kept; kept > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d %s had fewer than %d deliveries left before RabbitMQ would drop %s: "+
			"taken into Redrive's archive (written, then acked) instead of going back; find %s in the archive of this queue.",
			kept, plural(int64(kept), "message", "messages"), custodyReserve, plural(int64(kept), "it", "them"),
			plural(int64(kept), "it", "them")))
	}
	if read < want && !stopped {
		res.Complete = false
		res.Notes = append(res.Notes, fmt.Sprintf("Only %d of the %d messages that were ready when the browse started arrived: "+
			"another consumer took them or holds them, or they expired; the list may be partial.", read, want))
	}
	if q.Type == TypeQuorum && read > 0 && !b.awaitReturned(ctx, vhost, queue, time.Second,
		func(st amqp.Queue) bool { return st.Consumers <= state.Consumers }) {
		res.Notes = append(res.Notes, "The quorum queue had not yet processed the return of the browsed messages when "+
			"the browse ended: for a moment they may still show as unacknowledged.")
	}
	// A classic queue puts back what a browse read in more than one consumer's window a moment
	// after channel.close-ok, and answers a count before that: the turn is held (and the browse
	// waits) until every message is ready again, so that the next reader sees them all, in order.
	// With other consumers, or messages expiring (a message TTL), the count says nothing: it is
	// not waited for.
	if !mode.whole && read > 0 && state.Consumers == 0 && q.MessageTTL == nil && !b.awaitReturned(ctx, vhost, queue, 3*time.Second,
		func(st amqp.Queue) bool { return st.Messages+kept >= state.Messages || st.Consumers > 0 }) {
		res.Notes = append(res.Notes, "The queue had not yet put back all the browsed messages when the browse ended: "+
			"for a moment fewer messages may show as ready.")
	}
	if read+arrived > kept { // some went back (all may have been kept)
		res.Redelivered = true
		res.Notes = append(res.Notes, "The messages shown were returned to the queue in their original order; "+
			"their next consumer sees them with redelivered=true.")
	}
	if mode.whole && read > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("Quorum queue: RabbitMQ 3.x puts returned messages at the back, so the "+
			"browse read all %d ready messages (%d published meanwhile) and returned them all at once, which keeps their order.",
			read+arrived, arrived))
	}
	if q.MaxLength != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("The queue has a max-length of %d: messages published while the browse "+
			"held others can push the queue over it when they are returned, dropping or dead-lettering from the head.", *q.MaxLength))
	}
	return res, nil
}

// boundFor is bound for reading n messages: the broker's timeout plus a millisecond a message.
func (b *Broker) boundFor(ctx context.Context, n int) (context.Context, context.CancelFunc) {
	return ops.Bound(ctx, b.timeout+time.Duration(n)*time.Millisecond)
}

// browseInfo reads the queue's settings and statistics and how a read of it goes on this broker
// (readMode), within the broker's timeout.
func (b *Broker) browseInfo(ctx context.Context, vhost, queue string) (Queue, readMode, error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	q, err := b.queueInfo(ctx, vhost, queue)
	if err != nil {
		return Queue{}, readMode{}, err
	}
	mode, err := b.readModeOf(ctx, &q)
	if err != nil {
		return Queue{}, readMode{}, err
	}
	return q, mode, nil
}

// readMode is how a read of a classic or quorum queue (a browse, a Peek, a Cursor) goes on the
// broker in front of the console. The zero readMode is a classic queue's: the head is read, and
// what was read goes back to the head with one basic.nack(multiple, requeue).
type readMode struct {
	// whole: read and return the queue whole (quorum queues on RabbitMQ 3.x put returned
	// messages at their back, behind any not handed out).
	whole bool
	// byClose: return what was read by closing its channel, not with a nack (quorum queues on
	// 4.x put those back at the head, in order; a nack of an unlimited one puts them at the back).
	byClose bool
	// limit is the delivery limit each return counts against (quorum queues on 4.x); nil: none.
	// from says where it comes from; keeper keeps what a return would bring too near it.
	limit  *int64
	from   string
	keeper Custodian
}

// readModeOf is how q is read on this broker. It sets q.DeliveryLimit to the limit reads count
// against, policies applied a moment ago included. A quorum queue with a delivery limit is refused
// (ops.ErrConflict, with the fix) on 3.x, where a browse reads it whole, and on 4.x when no
// Custodian is set.
func (b *Broker) readModeOf(ctx context.Context, q *Queue) (readMode, error) {
	if q.AutoDelete {
		// A read consumes and cancels: the last consumer to go, when no other reads it, and the
		// broker deletes the queue with every message — the ones the read holds to give back too.
		return readMode{}, fmt.Errorf("%w: queue %q is auto-delete: RabbitMQ deletes it, with its messages, when its last "+
			"consumer goes, and a read here is a consumer that goes; move its messages to a durable queue that is not "+
			"auto-delete (with a shovel) to look at them", ops.ErrConflict, q.Name)
	}
	if q.Exclusive {
		// RabbitMQ answers any other connection's consume or get with RESOURCE_LOCKED (405), closing
		// the channel, and deletes the queue with its messages when its owner's connection closes.
		return readMode{}, fmt.Errorf("%w: queue %q is exclusive: it belongs to the connection that declared it, "+
			"RabbitMQ lets no other connection read it and deletes it, with its messages, when that connection "+
			"closes; have its owner move its messages to a durable queue that is not exclusive (with a shovel, "+
			"before it disconnects) to look at them", ops.ErrConflict, q.Name)
	}
	if q.Type != TypeQuorum {
		return readMode{}, nil
	}
	rules := b.rules(ctx)
	limit, from, err := b.deliveryLimit(ctx, *q, rules)
	if err != nil {
		return readMode{}, err
	}
	q.DeliveryLimit = limit
	if !rules.headReturns {
		if limit != nil {
			return readMode{}, fmt.Errorf("%w: quorum queue %q has a delivery limit of %d (from %s): a browse reads and "+
				"returns the whole queue, and RabbitMQ counts each return as a delivery, so browsing would eventually "+
				"dead-letter or drop its messages; remove the limit (on RabbitMQ 3.x a queue without one is unlimited), "+
				"or move the messages to a classic queue (with a shovel) to look at them", ops.ErrConflict, q.Name, *limit, from)
		}
		return readMode{whole: true}, nil
	}
	m := readMode{byClose: true, limit: limit, from: from}
	if limit != nil {
		if m.keeper, err = b.custodian(ctx, *q); err != nil {
			return readMode{}, err
		}
	}
	return m, nil
}

// note is what a browse of a quorum queue read in mode m tells people about its cost.
func (m readMode) note() string {
	switch {
	case m.whole:
		return "Quorum queue: browsing counts one delivery for each message read (the x-delivery-count header " +
			"goes up); the queue has no delivery limit, so nothing is dead-lettered."
	case m.limit == nil:
		return "Quorum queue: the messages read went back to the head in their order; each counts one more delivery " +
			"(x-delivery-count), and the queue has no delivery limit (-1), so nothing is dropped."
	}
	return fmt.Sprintf("Quorum queue with a delivery limit of %d (from %s): this browse cost each message it read "+
		"one delivery, and only those (the page, not the queue). A message a return would leave with fewer than %d "+
		"deliveries is taken into Redrive's archive instead, so RabbitMQ never drops one because of a read. "+
		"To browse without cost, give dead-letter queues delivery-limit -1 with a policy.", *m.limit, m.from, custodyReserve)
}

// deliveryLimit is quorum queue q's delivery limit and where it comes from: its argument, the
// policy the management API reports, the broker's default, or a policy the API does not report
// yet (policyDeliveryLimit), whichever is lowest.
func (b *Broker) deliveryLimit(ctx context.Context, q Queue, rules quorumRules) (*int64, string, error) {
	limit, from := q.DeliveryLimit, ""
	switch {
	case limit == nil:
	case q.Arguments["x-delivery-limit"] != "":
		from = "the x-delivery-limit argument"
	case q.Policy != "" || q.OperatorPolicy != "":
		from = "policy " + strconv.Quote(q.Policy)
		if q.OperatorPolicy != "" {
			from += " / operator policy " + strconv.Quote(q.OperatorPolicy)
		}
	default:
		from = "RabbitMQ's default for quorum queues"
	}
	pl, pfrom, err := b.policyDeliveryLimit(ctx, q.Vhost, q.Name, rules)
	if err != nil {
		return nil, "", err
	}
	if pl != nil && (limit == nil || *pl < *limit) {
		limit, from = pl, pfrom
	}
	return limit, from, nil
}

// statsLag is how long the management API's statistics may trail the broker: RabbitMQ samples them
// every collect_statistics_interval, 5 s by default.
const statsLag = 5500 * time.Millisecond

// settledStats waits, while the statistics count messages unacknowledged that no consumer can be
// holding (none is attached), for a sample that no longer does, for at most statsLag. Such a
// count is most often a job or a consumer that just acked or returned them — a plan made right
// after a job would otherwise be refused as partial — and only otherwise a channel that took
// them with basic.get and holds them, which the sample still shows after the wait.
func (b *Broker) settledStats(ctx context.Context, ch *amqp.Channel, q Queue, state amqp.Queue) (Queue, amqp.Queue, error) {
	deadline := time.Now().Add(statsLag)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return q, state, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		fresh, err := b.queueInfo(ctx, q.Vhost, q.Name)
		if err != nil {
			return q, state, err
		}
		live, err := ch.QueueDeclarePassive(q.Name, false, false, false, false, nil)
		if err != nil {
			return q, state, err
		}
		q, state = fresh, live
		if state.Consumers > 0 || heldByOthers(q, int64(state.Messages)) == 0 {
			break
		}
	}
	return q, state, nil
}

// heldByOthers estimates how many of queue q's messages others hold unacknowledged now, ready
// being the live ready count. The management API's unacked count can be a sample taken while an
// earlier browse held the messages (browses take turns, so that one has returned them by now):
// only messages the sample counted that are missing from the live ready count can still be held.
func heldByOthers(q Queue, ready int64) int64 {
	return max(0, min(q.Unacked, q.Total-ready))
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// browseQueue consumes up to want messages of q with manual acks and returns all of them with one
// nack(multiple, requeue) after the consumer is cancelled, so they go back in order (in mode
// byClose, by closing the channel). A message a return would bring too near the queue's delivery
// limit is kept instead (mode.keeper: archive, then ack), and sink is told so; kept is how many
// were. With whole
// (a quorum queue, which puts returned messages at its back) it also reads the messages published
// while it read, up to whole in all, so that what it returns is the queue's whole ready list; a
// message published after its last look goes ahead of them. sink gets the first want; read is
// how many of those came, arrived how many it read after them.
//
// Without whole, the head is read in windows: a consumer with a prefetch of browseWindow, then
// each next one (on the same channel, behind the messages it holds) with four times the last's,
// up to maxPrefetch. Once sink returns false the read stops: what was already on its way is at
// most the rest of one window, and goes back with the others.
func (b *Broker) browseQueue(ctx context.Context, ch *amqp.Channel, q Queue, mode readMode, want, whole int,
	sink func(d amqp.Delivery, pos int, kept bool) bool) (read, arrived, kept int, err error) {
	vhost, queue := q.Vhost, q.Name
	if want > maxPrefetch && (whole > 0 || mode.byClose) {
		return b.browseWindows(ctx, vhost, queue, want, whole > 0, sink)
	}
	var last uint64
	stop := false
	var keep []Delivery
	collect := func(d amqp.Delivery) bool {
		last = max(last, d.DeliveryTag)
		low := mode.keeper != nil && lowBudget(mode.limit, d.Headers)
		if low {
			keep = append(keep, Delivery{Message: b.toFullMessage(d, read), Headers: d.Headers, d: d})
		}
		switch {
		case stop: // on its way when sink said stop: only returned (or kept)
		case read < want:
			stop = !sink(d, read, low)
			read++
		default:
			arrived++
		}
		return !stop
	}
	drained := func(d amqp.Delivery) { collect(d) }
	// Fewer than were ready so far: a pause is a busy broker, not the queue's end. What was
	// already on its way is collected too: every delivery must be returned.
	pause := max(b.firstWait, 6*b.idleWait)
	window := browseWindow
	if whole > 0 || mode.byClose {
		// A quorum queue is read in one consumer: read whole in one go on 3.x; on 4.x returned by
		// closing the channel, which returns one consumer's messages in their order.
		window = want
	}
	var loopErr error
	for loopErr == nil && !stop && read < want {
		n, before := min(window, want-read), read
		loopErr = b.consume(ctx, ch, queue, n, nil, pause, collect, drained)
		if read-before < n {
			break // nothing more came: the queue's end, or others took the rest
		}
		window = min(4*window, maxPrefetch)
	}
	for round := 0; whole > 0 && loopErr == nil && round < 3; round++ {
		st, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
		if err != nil {
			loopErr = err
			break
		}
		if st.Messages == 0 || read+arrived+st.Messages > whole {
			break
		}
		loopErr = b.consume(ctx, ch, queue, st.Messages, nil, b.idleWait, collect, drained)
	}
	if len(keep) > 0 && !ch.IsClosed() {
		// Kept before anything goes back, and whether or not the read ended well: what it holds
		// goes back all the same (a read cut short by its caller, a failed passive declare), and
		// each return counts against the limit. So the keep has a bound of its own, not the
		// caller's context, as Cursor.keepLow's. A failed keep returns them with the rest.
		keepCtx, cancel := b.bound(context.WithoutCancel(ctx))
		err := b.keep(keepCtx, mode.keeper, q, keep, func(d Delivery) error { return ch.Ack(d.d.DeliveryTag, false) })
		cancel()
		if err == nil {
			kept = len(keep)
		} else if loopErr == nil {
			loopErr = err
		}
	}
	if last > 0 && !mode.byClose {
		if err := ch.Nack(last, true, true); err != nil && loopErr == nil {
			loopErr = fmt.Errorf("basic.nack: %w", err)
		}
	}
	if loopErr != nil {
		return read, arrived, kept, loopErr
	}
	// channel.close waits for close-ok, so the requeue has been processed when Browse returns.
	if err := ch.Close(); err != nil {
		return read, arrived, kept, fmt.Errorf("channel.close: %w", err)
	}
	return read, arrived, kept, nil
}

// quorumWhole refuses a browse of a quorum queue that it could not read whole (see Browse).
func quorumWhole(queue string, state amqp.Queue, most int) error {
	const why = "RabbitMQ puts the messages a browse returns at the back of a quorum queue, so the console reads and " +
		"returns all of its ready messages at once to keep their order"
	switch {
	case state.Consumers > 0 && state.Messages > 0: // with nothing ready, nothing is read or returned
		return ops.Conflict("quorum queue %q has %d consumer(s), which would take some of its messages while a browse "+
			"reads it: %s; stop the consumers to browse it, or move the messages to a classic queue (with a shovel)",
			queue, state.Consumers, why)
	case state.Messages > most:
		return ops.Conflict("quorum queue %q holds %d ready messages, more than the %d a browse reads: %s; "+
			"move the messages to a classic queue (with a shovel) to look at them", queue, state.Messages, most, why)
	}
	return nil
}

// browseWindows reads more messages than one consumer's prefetch can hold unacked (basic.qos
// counts in 16 bits): a Cursor reads them in windows and returns them all, in order, when it
// closes (on a quorum queue after reading the rest of it too: Cursor.Close).
func (b *Broker) browseWindows(ctx context.Context, vhost, queue string, want int, whole bool,
	sink func(amqp.Delivery, int, bool) bool) (read, arrived, kept int, err error) {
	cur, err := b.openCursor(ctx, vhost, queue, want) // the browse holds the queue's turn
	if err != nil {
		return 0, 0, 0, err
	}
	defer func() {
		cur.Close()
		if whole {
			arrived = max(cur.Read()-want, 0)
		}
		if kept = cur.kept; err == nil {
			err = cur.keepErr
		}
	}()
	for !cur.Ended() {
		ds, err := cur.Take(ctx, 1000)
		for _, d := range ds {
			if d.Message.Position < want {
				// Read whole however sink answers (a quorum queue on 3.x, or a span past one prefetch).
				sink(d.d, d.Message.Position, cur.keeps(d.d))
			}
		}
		if err != nil {
			return min(cur.Read(), want), 0, 0, err
		}
	}
	return min(cur.Read(), want), 0, 0, nil
}

// awaitReturned waits (up to within) until the queue has applied the browser's cancel and
// returns, which done tells from the queue's live state. A quorum queue applies them
// asynchronously, after channel.close-ok: for a few milliseconds it still counts the browser as a
// consumer and the messages as unacknowledged, and a browse right after would see an empty queue.
// The browser's consumer being gone is the sign, since the queue applies the channel's commands in
// order. It reports whether done was seen.
func (b *Broker) awaitReturned(ctx context.Context, vhost, queue string, within time.Duration, done func(amqp.Queue) bool) bool {
	ch, err := b.channel(ctx, vhost)
	if err != nil {
		return false
	}
	defer ch.Close()
	deadline := time.Now().Add(within)
	for {
		st, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
		if err != nil {
			return false
		}
		if done(st) {
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
func (b *Broker) browseStream(ctx context.Context, ch *amqp.Channel, queue string, limit int, res *BrowseResult, sink func(amqp.Delivery, int, bool) bool) error {
	read := 0
	loopErr := b.consume(ctx, ch, queue, limit, amqp.Table{"x-stream-offset": "first"}, b.idleWait, func(d amqp.Delivery) bool {
		read++
		more := sink(d, read-1, false)
		_ = d.Ack(false) // credit for the next: an ack on a stream removes nothing
		return more
	}, func(amqp.Delivery) {}) // what was in flight is dropped: a stream's deliveries are only credit
	res.Notes = append(res.Notes, "Stream queue: read from the first offset; reading a stream does not change it.")
	return loopErr
}

// consume reads a queue through a consumer of its own with manual acks and a prefetch of want:
// each delivery goes to take until want came, take returned false, none came for pause (firstWait
// before the first), or ctx ended (its error); then the consumer is cancelled and what was already
// on its way goes to drained. Both browses (a queue's head, a stream) read this way.
func (b *Broker) consume(ctx context.Context, ch *amqp.Channel, queue string, want int, args amqp.Table, pause time.Duration,
	take func(amqp.Delivery) bool, drained func(amqp.Delivery)) error {
	// AMQP's prefetch count is 16 bits: amqp091 refuses more (a stream's read of 100,000 was a
	// 503). A queue's head is read in windows below it; a stream is acked as read, for credit.
	if err := ch.Qos(min(want, math.MaxUint16), 0, false); err != nil {
		return fmt.Errorf("basic.qos: %w", err)
	}
	tag := consumerTag()
	deliveries, err := ch.Consume(queue, tag, false, false, false, false, args)
	if err != nil {
		return fmt.Errorf("basic.consume: %w", err)
	}
	timer := time.NewTimer(b.firstWait)
	defer timer.Stop()
	var loopErr error
loop:
	for n := 0; n < want; n++ {
		select {
		case d, ok := <-deliveries:
			if !ok {
				break loop // channel closed under us; the broker requeues on close
			}
			if !take(d) {
				break loop
			}
			timer.Reset(pause)
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
	for d := range deliveries {
		drained(d)
	}
	return loopErr
}

func consumerTag() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "redrive-browse-" + hex.EncodeToString(b)
}

// toMessage copies a delivery into a Message; the body is cut at MaxBodyBytes, but the message id
// is looked for in the whole body, and BodyDigest is the whole body's.
func (b *Broker) toMessage(d amqp.Delivery, pos int) Message {
	m := b.toFullMessage(d, pos)
	m.Headers = headersOf(d.Headers)
	if v, ok := d.Headers["x-stream-offset"]; ok {
		if n, ok := valueInt(v); ok {
			m.Offset = &n
		}
	}
	m.SetBody(d.Body)
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

// QueueLocker serializes work on a queue across replicas of the console; *store.Store implements
// it with a PostgreSQL advisory lock.
type QueueLocker interface {
	// Lock blocks until it holds the lock named key, or ctx ends, and returns the function that
	// releases it. Errors: the lock still held elsewhere when ctx's deadline passes →
	// ops.ErrConflict; the lock service unreachable → ops.ErrUnavailable; ctx cancelled → ctx's error.
	Lock(ctx context.Context, key string) (unlock func(), err error)
}

// DefaultBrowseWait bounds how long a browse (or a replay job's cursor) waits for its turn on a
// queue (other browses, replay plans and replay jobs of the same queue, in this process and in
// other replicas) before it gives up.
const DefaultBrowseWait = 10 * time.Second

// SetQueueLock makes browses, Peeks and cursors of a queue take turns with those of other replicas,
// through l (nil: only within this process). Call it before the Broker is used.
func (b *Broker) SetQueueLock(l QueueLocker) {
	b.browsing.mu.Lock()
	b.browsing.locker = l
	b.browsing.mu.Unlock()
}

// browseGuard gives one browse at a time its turn on a queue. The in-process turn comes first, so
// that however many browses of a queue wait here, at most one of them waits for (and holds) the
// cross-replica lock, and its database connection.
type browseGuard struct {
	mu     sync.Mutex
	turns  map[QueueRef]*queueTurn
	locker QueueLocker
	wait   time.Duration // 0: DefaultBrowseWait; tests shorten it
}

// queueTurn is a one-slot semaphore with the number of browses holding or waiting for it, so the
// map forgets queues nobody browses, and who holds it, so that those who wait in vain are told.
type queueTurn struct {
	slot   chan struct{}
	refs   int
	holder turnHolder // guarded by browseGuard.mu
}

// turnHolder is who takes a queue's turn.
type turnHolder int

const (
	holderBrowse turnHolder = iota // a browse, search, trace or replay plan: reads and returns the head
	holderJob                      // a replay job's cursor: holds the messages it moves for the job's run
)

// acquire is acquireAs for a browse.
func (g *browseGuard) acquire(ctx context.Context, broker, vhost, queue string) (release func(), note string, err error) {
	return g.acquireAs(ctx, broker, vhost, queue, holderBrowse)
}

// acquireAs waits for vhost/queue's turn in this process, then for the cross-replica lock, within
// the bound, for who. It returns the release function, and a note when the cross-replica lock could not be
// taken because its database is unreachable: the browse then goes ahead (the page stays useful
// while the database is down) but cannot promise that no other replica reads the queue meanwhile.
// A wait in vain says who held the turn when that is known (in this process).
func (g *browseGuard) acquireAs(ctx context.Context, broker, vhost, queue string, who turnHolder) (release func(), note string, err error) {
	g.mu.Lock()
	wait, locker := g.wait, g.locker
	if wait <= 0 {
		wait = DefaultBrowseWait
	}
	if g.turns == nil {
		g.turns = map[QueueRef]*queueTurn{}
	}
	ref := QueueRef{Vhost: vhost, Name: queue}
	t := g.turns[ref]
	if t == nil {
		t = &queueTurn{slot: make(chan struct{}, 1)}
		g.turns[ref] = t
	}
	t.refs++
	g.mu.Unlock()
	done := func() {
		g.mu.Lock()
		if t.refs--; t.refs == 0 {
			delete(g.turns, ref)
		}
		g.mu.Unlock()
	}

	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	busy := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		g.mu.Lock()
		holder := t.holder
		g.mu.Unlock()
		if holder == holderJob {
			return &ops.Error{Kind: ops.ErrUnavailable, Message: fmt.Sprintf(
				"a replay job is moving the messages of queue %q (waited %s); try again once it is done", queue, wait)}
		}
		return &ops.Error{Kind: ops.ErrUnavailable, Message: fmt.Sprintf(
			"another browse or replay plan of queue %q is reading it, or a replay job is moving its messages (waited %s); try again", queue, wait)}
	}
	select {
	case t.slot <- struct{}{}:
	case <-wctx.Done():
		done()
		return nil, "", busy()
	}
	g.mu.Lock()
	t.holder = who
	g.mu.Unlock()
	unlockLocal := func() {
		<-t.slot
		done()
	}
	if locker == nil {
		return unlockLocal, "", nil
	}
	unlock, err := locker.Lock(wctx, "rabbitmq-browse:"+broker+"/"+vhost+"/"+queue)
	switch {
	case err == nil:
		return func() { unlock(); unlockLocal() }, "", nil
	case ctx.Err() != nil:
		unlockLocal()
		return nil, "", ctx.Err()
	case errors.Is(err, ops.ErrConflict):
		unlockLocal()
		return nil, "", busy()
	default:
		return unlockLocal, "Browses from other console replicas could not be excluded (the console's database " +
			"did not answer): if one read this queue at the same moment, this list misses what it held; the list may be partial.", nil
	}
}
