package redact

import "github.com/redrive/redrive/ops/outbox"

// OutboxEvent is the masking pass over an outbox event for a reader who may not see its content:
// the payload by the JSON paths (hidden whole when it is not JSON and paths are configured), then
// last_error when it repeats what the payload hid (a relay's "card 4000… declined" for a masked
// $.card.number). The event must carry its payload (outbox.Outbox.Event): without it nothing the
// payload hides is known, and last_error is hidden whole when paths are configured. It reports
// whether the payload was masked.
func (r *Rules) OutboxEvent(e outbox.Event) (outbox.Event, bool) {
	r = r.current()
	if r == nil || len(r.paths) == 0 {
		return e, false
	}
	mask := &messageMask{}
	masked := false
	if e.Payload != "" {
		if b, changed := r.maskBody([]byte(e.Payload), false, mask); changed {
			e.Payload, masked = string(b), true
		}
	}
	if e.LastError != nil && *e.LastError != "" {
		if e.Payload == "" || mask.matches(*e.LastError) {
			s := Redacted
			e.LastError = &s
		}
	}
	return e, masked
}

// MasksPayloads reports whether a payload's masking may hide something (JSON paths are
// configured): only then does what repeats a payload (an outbox event's last_error) need the
// payload read to be shown.
func (r *Rules) MasksPayloads() bool {
	r = r.current()
	return r != nil && len(r.paths) > 0
}
