package rabbit

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

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
		rawExchange, _ = oldest.RawDestination()
		if dl.FirstReason == "" {
			dl.FirstReason = oldest.Reason
		}
	}
	if dl.LastQueue == "" {
		dl.LastQueue = dl.OriginalQueue
	}
	if d := firstDeathIn(dl.Deaths, dl.OriginalQueue, dl.FirstReason); d != nil {
		dl.OriginalRoutingKeys = append([]string(nil), d.RoutingKeys...)
		x, keys := d.RawDestination()
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
	dl.SetRawDestination(rawExchange, rawKeys)
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
		d.SetRawDestination(rawExchange, rawKeys)
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
