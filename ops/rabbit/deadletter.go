package rabbit

import (
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
	dl.OriginalQueue, dl.OriginalExchange = firstQueue, firstExchange
	if firstQueue == "" && len(dl.Deaths) > 0 {
		oldest := dl.Deaths[len(dl.Deaths)-1]
		dl.OriginalQueue, dl.OriginalExchange = oldest.Queue, oldest.Exchange
		if dl.FirstReason == "" {
			dl.FirstReason = oldest.Reason
		}
	}
	if dl.LastQueue == "" {
		dl.LastQueue = dl.OriginalQueue
	}
	if d := firstDeathIn(dl.Deaths, dl.OriginalQueue, dl.FirstReason); d != nil {
		dl.OriginalRoutingKeys = append([]string(nil), d.RoutingKeys...)
		if firstExchange == "" {
			dl.OriginalExchange = d.Exchange
		}
	}
	for _, d := range dl.Deaths {
		if d.Time != nil && (dl.FirstDeathAt == nil || d.Time.Before(*dl.FirstDeathAt)) {
			t := *d.Time
			dl.FirstDeathAt = &t
		}
	}
	if hasSpringExchange {
		if s, ok := valueString(springExchange); ok {
			dl.OriginalExchange = s
		}
	}
	if hasSpringKey {
		if s, ok := valueString(springKey); ok {
			dl.OriginalRoutingKeys = []string{s}
		}
	}
	return &dl
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
		d.OriginalExpiration, _ = valueString(t["original-expiration"])
		if n, ok := valueInt(t["count"]); ok && n >= 0 {
			d.Count = n
		}
		d.Time = deathTime(t["time"])
		if keys, ok := t["routing-keys"].([]any); ok {
			for _, k := range keys {
				if s, ok := valueString(k); ok {
					d.RoutingKeys = append(d.RoutingKeys, s)
				}
			}
		}
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
