package rabbitmodel

import (
	"slices"
	"time"
)

// Header names read by DecodeDeadLetter.
const (
	HeaderXDeath              = "x-death"
	HeaderFirstDeathQueue     = "x-first-death-queue"
	HeaderFirstDeathReason    = "x-first-death-reason"
	HeaderFirstDeathExchange  = "x-first-death-exchange"
	HeaderLastDeathQueue      = "x-last-death-queue"
	HeaderLastDeathReason     = "x-last-death-reason"
	HeaderLastDeathExchange   = "x-last-death-exchange"
	HeaderExceptionMessage    = "x-exception-message"    // Spring AMQP RepublishMessageRecoverer
	HeaderExceptionStacktrace = "x-exception-stacktrace" // Spring AMQP RepublishMessageRecoverer
	HeaderOriginalExchange    = "x-original-exchange"    // Spring AMQP RepublishMessageRecoverer
	HeaderOriginalRoutingKey  = "x-original-routingKey"  // Spring AMQP RepublishMessageRecoverer
	HeaderRetryCount          = "retry-count"
	// HeaderReplayCount is written by Redrive's replay on every republish. Since RabbitMQ 3.13 the
	// broker no longer updates an x-death header a client set, so x-death cannot count replays.
	HeaderReplayCount = "x-redrive-replay-count"
)

// Dead-letter reasons RabbitMQ writes into x-death.
const (
	ReasonRejected      = "rejected"       // basic.reject / basic.nack with requeue=false
	ReasonExpired       = "expired"        // message TTL (per queue or per message)
	ReasonMaxLen        = "maxlen"         // overflow drop-head or reject-publish-dlx
	ReasonDeliveryLimit = "delivery_limit" // quorum queue delivery limit exceeded
)

// Death is one x-death entry: how often a message died in one queue for one reason. RabbitMQ
// keeps one entry per (queue, reason), the most recent first; Time is when that entry was created,
// that is, the first death in that queue for that reason.
type Death struct {
	Queue       string
	Reason      string
	Count       int64
	Time        *time.Time
	Exchange    string   // the exchange the message had been published to before this death
	RoutingKeys []string // its routing keys then (CC included)
	// OriginalExpiration is the per-message TTL the broker removed when it dead-lettered the message.
	OriginalExpiration string

	raw *rawDestination // Exchange and RoutingKeys byte for byte, when they differ from these
}

// rawDestination is an exchange and routing keys as the headers hold them, byte for byte.
type rawDestination struct {
	exchange string
	keys     []string
}

// rawOf is the raw destination of a display one: nil when the two are the same.
func rawOf(exchange, rawExchange string, keys, rawKeys []string) *rawDestination {
	if exchange == rawExchange && slices.Equal(keys, rawKeys) {
		return nil
	}
	return &rawDestination{exchange: rawExchange, keys: rawKeys}
}

// of is r's exchange and keys, or the display ones when r is nil.
func (r *rawDestination) of(exchange string, keys []string) (string, []string) {
	if r == nil {
		return exchange, keys
	}
	return r.exchange, r.keys
}

// SetRawDestination records d's exchange and routing keys as the headers hold them, byte for byte,
// beside the display ones (Exchange, RoutingKeys), which it needs set first.
func (d *Death) SetRawDestination(exchange string, keys []string) {
	d.raw = rawOf(d.Exchange, exchange, d.RoutingKeys, keys)
}

// RawDestination is d's exchange and routing keys as the headers hold them, byte for byte: the
// display ones unless SetRawDestination said otherwise.
func (d Death) RawDestination() (exchange string, keys []string) {
	return d.raw.of(d.Exchange, d.RoutingKeys)
}

// DeadLetter is what a dead-lettered message carries about its deaths, from RabbitMQ's own headers
// (x-death, x-first-death-*, x-last-death-*) and Spring AMQP's republishing recoverer
// (x-exception-*, x-original-*), plus Redrive's replay counter. Absent headers leave fields empty.
type DeadLetter struct {
	// Reason is why the message died most recently (rejected, expired, maxlen, delivery_limit):
	// the newest x-death entry's reason, else x-last-death-reason, else x-first-death-reason.
	Reason string
	// Count is how many times the message died for Reason in that queue (the newest x-death
	// entry's count); without x-death, Spring's retry-count.
	Count int64
	// LastQueue is the queue it died in most recently; FirstReason why it died the first time.
	LastQueue   string
	FirstReason string
	// OriginalQueue, OriginalExchange and OriginalRoutingKeys are where the message was going
	// before its first death: x-first-death-queue and -exchange, and the routing keys of the
	// x-death entry of that queue. Spring's x-original-exchange and x-original-routingKey win when
	// present, since they name the destination of a message Spring republished itself.
	OriginalQueue       string
	OriginalExchange    string
	OriginalRoutingKeys []string
	FirstDeathAt        *time.Time // the earliest x-death time
	ExceptionMessage    string
	Stacktrace          string
	Deaths              []Death // every x-death entry, newest first as the broker keeps them
	ReplayCount         int     // x-redrive-replay-count: times Redrive has republished it

	// Where the message was going, byte for byte (Destination), when it differs from the display
	// fields above.
	raw *rawDestination
}

// Destination is where a replay sends the message back to: OriginalExchange and the first of
// OriginalRoutingKeys as its headers hold them, byte for byte. The display fields have bytes that
// are not UTF-8 replaced (U+FFFD), and show a routing key held as a byte array that is not UTF-8
// in hex: a replay must publish to neither, but see the key as it is (and skip it as
// unresolvable). A DeadLetter not made by DecodeDeadLetter answers with its display fields.
func (d *DeadLetter) Destination() (exchange, routingKey string) {
	exchange, keys := d.raw.of(d.OriginalExchange, d.OriginalRoutingKeys)
	if len(keys) > 0 {
		routingKey = keys[0]
	}
	return exchange, routingKey
}

// SetRawDestination records where the message was going as its headers hold it, byte for byte
// (Destination), beside OriginalExchange and OriginalRoutingKeys, which it needs set first.
func (d *DeadLetter) SetRawDestination(exchange string, keys []string) {
	d.raw = rawOf(d.OriginalExchange, exchange, d.OriginalRoutingKeys, keys)
}
