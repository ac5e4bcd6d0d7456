package rabbit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// Custody is how the console reads a quorum queue with a delivery limit (RabbitMQ 4.x gives
// every quorum queue one, 20 by default) without ever making the broker drop a message.
//
// Every read of such a queue (a browse, a plan, a job that moves only some of what it read, a
// trace, a search, the tidy after a restart) returns what it read, and RabbitMQ 4.0 counts each
// return against the limit (the x-delivery-count header: returns so far); a message returned
// with x-delivery-count equal to the limit is dropped, or dead-lettered with reason
// delivery_limit. So a message that a return would leave with fewer than custodyReserve
// deliveries is not returned: it is taken into the console's archive (written whole, committed)
// and only then acked — archive → ack, the ordering the discard jobs prove. From the archive
// it is browsed, searched, replayed and restored like any archived message. A crash between the
// two leaves it in both places (the archive row is written once per message: custodyLocator),
// never in neither.

// custodyReserve is how many deliveries a message keeps after a read returned it
// (rabbitmodel.CustodyReserve, which BrowseCost quotes).
const custodyReserve = rabbitmodel.CustodyReserve

// Custodian (rabbitmodel.Custodian) keeps messages a read must not return: it writes them whole,
// durably, and records who took them and why, before the read acks them from their queue. The
// console's store implements it (ops/replay.Custody); it sees the deliveries as the model's.

// SetCustodian makes reads of delivery-limited quorum queues take messages near their limit into
// c's keeping. Without one (nil), such a queue is not read: a browse is refused saying why.
// Call it before the Broker is used.
func (b *Broker) SetCustodian(c Custodian) {
	b.custody.mu.Lock()
	b.custody.c = c
	b.custody.mu.Unlock()
}

// custodyState is the Broker's Custodian and the queues whose custody failed: those are not read
// again until the Custodian answers (custodyOwed), since their messages went back one delivery
// closer to the limit.
type custodyState struct {
	mu   sync.Mutex
	c    Custodian
	owed map[QueueRef]bool
}

// DeliveryCount is how many times RabbitMQ has had the message back (the x-delivery-count header
// a quorum queue sets; 0 when absent).
func DeliveryCount(h amqp.Table) int64 {
	n, _ := valueInt(h["x-delivery-count"])
	return max(n, 0)
}

// lowBudget reports whether returning a message delivered with headers h to a queue with this
// delivery limit would leave it with fewer than custodyReserve deliveries.
func lowBudget(limit *int64, h amqp.Table) bool {
	return limit != nil && *limit-DeliveryCount(h)-1 < custodyReserve
}

// DeliveriesLeft is how many more times a message delivered with count deliveries can go back to a
// queue with limit before RabbitMQ drops it; -1 when the queue has no limit.
func DeliveriesLeft(limit *int64, count int64) int64 {
	if limit == nil {
		return -1
	}
	return max(*limit-count, 0)
}

// CustodyLocator names a kept message: a digest of where it was and what it is — its id, its
// headers but the broker's of the delivery (brokerHeaders, which a second read after a crash
// raises), its body — so that keeping it twice writes one row, while two different messages of
// one id stay two.
func (d Delivery) CustodyLocator(broker, vhost, queue string) string {
	return custodyLocator(broker, vhost, queue, d.d)
}

func custodyLocator(broker, vhost, queue string, d amqp.Delivery) string {
	h := sha256.New()
	for _, s := range []string{broker, vhost, queue, d.MessageId, d.Exchange, d.RoutingKey} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	writeHeaders(h, d.Headers)
	h.Write(d.Body)
	return "custody/" + hex.EncodeToString(h.Sum(nil))
}

// custodian is the Broker's Custodian, or an ops.ErrConflict saying why queue, which has a
// delivery limit, cannot be read without one, or an ops.ErrUnavailable while an earlier custody of
// the queue failed and the Custodian still does not answer.
func (b *Broker) custodian(ctx context.Context, q Queue) (Custodian, error) {
	b.custody.mu.Lock()
	c, owed := b.custody.c, b.custody.owed[q.Ref()]
	b.custody.mu.Unlock()
	if c == nil {
		return nil, ops.Conflict("quorum queue %q has a delivery limit of %d and this console has no archive to keep "+
			"messages near it: a read returns what it read and RabbitMQ counts that as a delivery; %s",
			q.Name, *q.DeliveryLimit, b.unlimitAdvice(ctx, q))
	}
	if owed {
		if err := c.Ping(ctx); err != nil {
			return nil, &ops.Error{Kind: ops.ErrUnavailable, Err: err, Message: fmt.Sprintf("quorum queue %q is not read "+
				"while the console's archive does not answer: messages of it near its delivery limit could not be taken "+
				"into the archive and went back; another read would bring them closer to being dropped", q.Name)}
		}
	}
	return c, nil
}

// keep takes ds (read from vhost/queue on ch, unacked) into custody: Keep, then one ack each.
// A failed Keep leaves them unacked (they go back with the rest) and is returned.
func (b *Broker) keep(ctx context.Context, c Custodian, q Queue, ds []Delivery, ack func(Delivery) error) error {
	if len(ds) == 0 {
		return nil
	}
	why := fmt.Sprintf("custody: fewer than %d of the queue's delivery limit of %d left; a read returning it "+
		"would bring RabbitMQ closer to dropping it", custodyReserve, *q.DeliveryLimit)
	if err := c.Keep(ctx, b.name, q.Vhost, q.Name, modelDeliveries(ds), why); err != nil {
		b.custody.mu.Lock()
		if b.custody.owed == nil {
			b.custody.owed = map[QueueRef]bool{}
		}
		b.custody.owed[q.Ref()] = true
		b.custody.mu.Unlock()
		return &ops.Error{Kind: ops.ErrUnavailable, Err: err, Message: fmt.Sprintf("%d message(s) of quorum queue %q are "+
			"near its delivery limit and could not be taken into the console's archive (its database did not answer): "+
			"they went back to the queue; try again once the database answers", len(ds), q.Name)}
	}
	for _, d := range ds {
		if err := ack(d); err != nil {
			// Kept and still in the queue: a copy, never a loss; the next read keeps it again (one row).
			return fmt.Errorf("basic.ack of a kept message: %w", err)
		}
	}
	b.custody.mu.Lock()
	delete(b.custody.owed, q.Ref())
	b.custody.mu.Unlock()
	return nil
}

// Returned messages wait ahead: RabbitMQ 4.x delivers a quorum queue's returned messages (its
// returns queue) before the others, first returned first. A read that returns a page taken from
// the front of that queue puts the page behind the rest of it: the queue's order changes. So a
// read of a quorum queue on 4.x reads at least as far as the messages returned ahead of the
// others reach (returnedAhead), and returns them all, in order: what it returns then is the whole
// returns queue again. The management API's count lags by a statistics interval, so the count
// this process itself returned last is remembered beside it, for as long as the count may lag.

// returnedMark is how many messages a read of a queue returned, and when.
type returnedMark struct {
	n  int
	at time.Time
}

// returnedAhead is how many of q's ready messages wait ahead of the others, as far as is known.
func (b *Broker) returnedAhead(q Queue) int {
	n := int(q.ReadyReturned)
	if v, ok := b.returned.Load(q.Ref()); ok {
		if m := v.(returnedMark); time.Since(m.at) < 2*statsLag {
			n = max(n, m.n)
		}
	}
	return n
}

// noteReturned records that a read returned n messages of ref to the head of its queue.
func (b *Broker) noteReturned(ref QueueRef, n int) {
	b.returned.Store(ref, returnedMark{n: n, at: time.Now()})
}
