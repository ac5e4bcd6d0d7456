package rabbitmodel

import (
	"context"
	"errors"
)

// What a replay needs of a RabbitMQ queue it moves messages out of, without a client: the
// deliveries a cursor took, where each goes, the cursor itself, and the keeper of messages a read
// must not return. ops/rabbit (amqp091) implements them; the order per moved message is the
// caller's: take → publish (mandatory, confirmed) → record → ack.

// ErrUnroutable is a publish the broker returned: no queue is bound for its routing key.
var ErrUnroutable = errors.New("unroutable: the broker returned it (no queue bound for the routing key)")

// Delivery is one message a cursor (or a read keeping messages) took and holds unacknowledged.
// Only the adapter that took it can publish or ack it.
type Delivery interface {
	// Message is the whole message: what identifies and routes it, and its whole body.
	Message() Message
	// Headers are its headers as delivered, with their AMQP types (a table).
	Headers() map[string]any
	// Whole is the message as an archive keeps it.
	Whole() (Whole, error)
	// CustodyLocator names it for the archive when a read keeps it: a digest of where it was and
	// what it is, so that keeping it twice writes one row.
	CustodyLocator(broker, vhost, queue string) string
}

// Republish says where a taken message goes and with which headers (nil keeps its own). The
// adapter adds its publish id to Headers, so give each one its own table.
type Republish struct {
	Exchange   string
	RoutingKey string
	Headers    map[string]any
	// Body and MessageID, when set, replace the message's own (an edit and retry): what is
	// published is then the edited message, never the taken one as well.
	Body      []byte
	MessageID string
}

// Cursor reads a queue from its head for a replay: every message it passes stays unacknowledged,
// so the queue keeps it, until Ack (moved) or Close (everything else goes back, in order).
type Cursor interface {
	// Take hands out up to n of the next messages, in queue order; fewer when the span is read or
	// the queue has no more ready messages (then Ended is true).
	Take(ctx context.Context, n int) ([]Delivery, error)
	// Ended reports whether the span was read or the queue ran out of ready messages.
	Ended() bool
	// Read is how many messages the cursor has handed out.
	Read() int
	// OthersNow is how many consumers besides the cursor the queue has (or had): they may hold
	// messages of the span unacknowledged.
	OthersNow(ctx context.Context) (int, error)
	// ReadAgain looks at the queue again after a pause and extends the span over what became
	// ready; true when it did.
	ReadAgain(ctx context.Context) (bool, error)
	// Send publishes ds[i] as to[i] (mandatory, on confirm channels) and returns the wait for the
	// confirms: errs[i] is nil only for a message the broker confirmed and did not return.
	Send(ctx context.Context, ds []Delivery, to []Republish) (wait func(context.Context) ([]error, error), err error)
	// Ack removes moved (or already delivered) messages from the queue.
	Ack(ds []Delivery) error
	// Close returns every message the cursor holds unacknowledged to the queue.
	Close()
}

// Custodian keeps messages a read must not return: it writes them whole, durably, and records
// who took them and why, before the read acks them from their queue. The console's store
// implements it (ops/replay.Custody).
type Custodian interface {
	// Keep writes ds, in one transaction, as messages taken from broker's vhost/queue for why,
	// once each: a message kept before under the same CustodyLocator is not written again.
	// Errors: the store unreachable → ops.ErrUnavailable (nothing written).
	Keep(ctx context.Context, broker, vhost, queue string, ds []Delivery, why string) error
	// Ping reports whether Keep can write now (ops.ErrUnavailable when not).
	Ping(ctx context.Context) error
}
