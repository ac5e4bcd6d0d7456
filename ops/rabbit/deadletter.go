package rabbit

import (
	"slices"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
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

// DecodeDeadLetter reads a message's dead-letter headers. It returns nil when the message has none
// (no x-death, x-first/last-death-*, Spring or Redrive header). It never fails: values of an
// unexpected type are skipped, so any table, however malformed, decodes without panicking.
func DecodeDeadLetter(headers amqp.Table) *DeadLetter {
	if len(headers) == 0 {
		return nil
	}
	var dl DeadLetter
	found := false
	str := func(k string) string {
		v, ok := headers[k]
		if !ok {
			return ""
		}
		found = true
		s, _ := valueString(v)
		return s
	}
	rawFirstExchange, _ := rawString(headers[HeaderFirstDeathExchange])
	if raw, ok := headers[HeaderXDeath]; ok {
		found = true
		dl.Deaths = decodeDeaths(raw)
	}
	firstQueue, firstReason, firstExchange := str(HeaderFirstDeathQueue), str(HeaderFirstDeathReason), str(HeaderFirstDeathExchange)
	lastQueue, lastReason := str(HeaderLastDeathQueue), str(HeaderLastDeathReason)
	_ = str(HeaderLastDeathExchange) // marks the message as a dead letter; the exchange is in Deaths
	dl.ExceptionMessage = str(HeaderExceptionMessage)
	dl.Stacktrace = str(HeaderExceptionStacktrace)
	springExchange, hasSpringExchange := headers[HeaderOriginalExchange]
	springKey, hasSpringKey := headers[HeaderOriginalRoutingKey]
	if v, ok := headers[HeaderRetryCount]; ok {
		found = true
		if n, ok := valueInt(v); ok {
			dl.Count = n
		}
	}
	if v, ok := headers[HeaderReplayCount]; ok {
		found = true
		if n, ok := valueInt(v); ok && n >= 0 && n <= 1<<31-1 {
			dl.ReplayCount = int(n)
		}
	}
	if !found && !hasSpringExchange && !hasSpringKey {
		return nil
	}

	dl.Reason, dl.LastQueue = lastReason, lastQueue
	if len(dl.Deaths) > 0 {
		newest := dl.Deaths[0]
		dl.Reason, dl.LastQueue, dl.Count = newest.Reason, newest.Queue, newest.Count
	}
	dl.FirstReason = firstReason
	if dl.Reason == "" {
		dl.Reason = firstReason
	}
	// The first death: the x-first-death-* headers, else the oldest x-death entry.
	// The destination byte for byte beside the display one (DeadLetter.Destination).
	var rawExchange string
	var rawKeys []string
	dl.OriginalQueue, dl.OriginalExchange, rawExchange = firstQueue, firstExchange, rawFirstExchange
	if firstQueue == "" && len(dl.Deaths) > 0 {
		oldest := dl.Deaths[len(dl.Deaths)-1]
		dl.OriginalQueue, dl.OriginalExchange = oldest.Queue, oldest.Exchange
		rawExchange, _ = oldest.raw.of(oldest.Exchange, nil)
		if dl.FirstReason == "" {
			dl.FirstReason = oldest.Reason
		}
	}
	if dl.LastQueue == "" {
		dl.LastQueue = dl.OriginalQueue
	}
	if d := firstDeathIn(dl.Deaths, dl.OriginalQueue, dl.FirstReason); d != nil {
		dl.OriginalRoutingKeys = append([]string(nil), d.RoutingKeys...)
		x, keys := d.raw.of(d.Exchange, d.RoutingKeys)
		rawKeys = append([]string(nil), keys...)
		if firstExchange == "" {
			dl.OriginalExchange, rawExchange = d.Exchange, x
		}
	}
	for _, d := range dl.Deaths {
		if d.Time != nil && (dl.FirstDeathAt == nil || d.Time.Before(*dl.FirstDeathAt)) {
			t := *d.Time
			dl.FirstDeathAt = &t
		}
	}
	if hasSpringExchange {
		if s, ok := rawString(springExchange); ok {
			dl.OriginalExchange, rawExchange = displayString(springExchange), s
		}
	}
	if hasSpringKey {
		if s, ok := rawString(springKey); ok {
			dl.OriginalRoutingKeys, rawKeys = []string{displayString(springKey)}, []string{s}
		}
	}
	dl.raw = rawOf(dl.OriginalExchange, rawExchange, dl.OriginalRoutingKeys, rawKeys)
	return &dl
}

// displayString is a string, byte-array or integer value as a page shows it: valueString, and a
// byte array that is not UTF-8 in hex (never "", which would read as no value).
func displayString(v any) string {
	if s, ok := valueString(v); ok {
		return s
	}
	return renderValue(v)
}

// firstDeathIn finds the x-death entry of queue for reason, else the oldest entry of queue.
func firstDeathIn(deaths []Death, queue, reason string) *Death {
	var match *Death
	for i := len(deaths) - 1; i >= 0; i-- {
		d := &deaths[i]
		if d.Queue != queue {
			continue
		}
		if reason == "" || d.Reason == reason {
			return d
		}
		if match == nil {
			match = d
		}
	}
	return match
}

func decodeDeaths(raw any) []Death {
	arr, ok := raw.([]any)
	if !ok {
		return nil
	}
	out := make([]Death, 0, len(arr))
	for _, e := range arr {
		var t map[string]any
		switch v := e.(type) {
		case amqp.Table:
			t = v
		case map[string]any:
			t = v
		default:
			continue
		}
		var d Death
		d.Queue, _ = valueString(t["queue"])
		d.Reason, _ = valueString(t["reason"])
		d.Exchange, _ = valueString(t["exchange"])
		rawExchange, _ := rawString(t["exchange"])
		var rawKeys []string
		d.OriginalExpiration, _ = valueString(t["original-expiration"])
		if n, ok := valueInt(t["count"]); ok && n >= 0 {
			d.Count = n
		}
		d.Time = deathTime(t["time"])
		if keys, ok := t["routing-keys"].([]any); ok {
			for _, k := range keys {
				if s, ok := rawString(k); ok {
					d.RoutingKeys, rawKeys = append(d.RoutingKeys, displayString(k)), append(rawKeys, s)
				}
			}
		}
		d.raw = rawOf(d.Exchange, rawExchange, d.RoutingKeys, rawKeys)
		out = append(out, d)
	}
	return out
}

// deathTime reads an AMQP timestamp, or whole seconds since the epoch as a client may have written;
// times outside years 1..9999 are dropped so that they encode as JSON and RFC 3339.
func deathTime(v any) *time.Time {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	default:
		n, ok := valueInt(v)
		if !ok || v == nil {
			return nil
		}
		t = time.Unix(n, 0)
	}
	t = t.UTC()
	if t.Year() < 1 || t.Year() > 9999 {
		return nil
	}
	return &t
}
