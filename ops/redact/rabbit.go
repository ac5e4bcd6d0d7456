package redact

import (
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// Message is a browsed message with what the reader may not see masked.
type Message struct {
	rabbitmodel.Message
	Headers      []rabbitmodel.Header
	Redacted     bool // something in the message was masked
	BodyRedacted bool // the body itself was
}

// Message is the masking pass over one message for a non-admin: the configured headers,
// the JSON paths of the body (a body cut at rabbitmodel.MaxBodyBytes or not JSON is masked whole when
// paths are configured), then everything derived from what was hidden — other headers quoting
// it, the properties and the routing key (quoting, as the archive shows the same message), the
// decoded dead-letter fields and the message id (see messageMask).
func (r *Rules) Message(m rabbitmodel.Message) Message {
	out := Message{Message: m, Headers: m.Headers}
	if r == nil {
		return out
	}
	mask := &messageMask{}
	hs := make([]rabbitmodel.Header, len(m.Headers))
	for i, hd := range m.Headers {
		if r.Header(hd.Key) {
			mask.secrets = append(mask.secrets, hd.Value)
			hd.Value, out.Redacted = Redacted, true
		}
		hs[i] = hd
	}
	if r.Header("message_id") && m.Properties.MessageID != "" {
		mask.secrets = append(mask.secrets, m.Properties.MessageID)
		out.Properties.MessageID, out.Redacted = Redacted, true
	}
	if body, changed := r.maskBody(m.Body, m.Truncated, mask); changed {
		// Masking reveals no length: the size is what is shown, and a body hidden whole is not cut.
		out.Body, out.Redacted, out.BodyRedacted = body, true, true
		out.Size, out.Truncated = len(body), false
	}
	for i, hd := range hs {
		if r.Header(hd.Key) {
			continue
		}
		if mask.matches(hd.Value) {
			hs[i].Value, out.Redacted = Redacted, true
		} else {
			mask.clear = append(mask.clear, hd.Value)
		}
	}
	out.Headers = hs
	if out.Properties.MessageID != Redacted {
		mask.clear = append(mask.clear, m.Properties.MessageID)
	}
	props := rabbitmodel.PropertiesMap(out.Properties)
	if mask.quoting(props, &out.RoutingKey) {
		out.Properties, out.Redacted = shownProperties(props), true
	}
	if id := mask.id(m.MessageID); id != m.MessageID {
		out.MessageID, out.Redacted = id, true
		if out.Properties.MessageID != "" { // the id is the property when there is one
			out.Properties.MessageID = id
		}
	}
	if d := m.DeadLetter; d != nil {
		dl := *d
		for _, f := range []*string{&dl.ExceptionMessage, &dl.Stacktrace, &dl.OriginalQueue, &dl.OriginalExchange, &dl.LastQueue} {
			if v := mask.text(*f); v != *f {
				*f, out.Redacted = v, true
			}
		}
		if len(dl.OriginalRoutingKeys) > 0 {
			keys := make([]string, len(dl.OriginalRoutingKeys))
			for i, k := range dl.OriginalRoutingKeys {
				if keys[i] = mask.text(k); keys[i] != k {
					out.Redacted = true
				}
			}
			dl.OriginalRoutingKeys = keys
		}
		out.DeadLetter = &dl
	}
	return out
}

// quoting masks what a RabbitMQ message carries besides its headers, body and message id that
// repeats hidden content: any property but message_id (props, rabbitmodel.PropertiesMap's keys,
// each read as archivedText reads it) and the routing keys. It is the rule of a browsed message
// (Message) and of the same message archived (Archived), which must show it alike. It reports
// whether anything was masked.
func (m *messageMask) quoting(props map[string]any, routingKeys ...*string) bool {
	masked := false
	for k, v := range props {
		if k != "message_id" && m.matches(archivedText(v)) {
			props[k], masked = Redacted, true
		}
	}
	for _, f := range routingKeys {
		if v := m.text(*f); v != *f {
			*f, masked = v, true
		}
	}
	return masked
}

// shownProperties is props (rabbitmodel.PropertiesMap's, masked by quoting) as Properties: a
// masked text shows the mark; a masked number or time, which cannot, shows none.
func shownProperties(props map[string]any) rabbitmodel.Properties {
	for k, v := range props {
		if v == Redacted {
			if _, err := rabbitmodel.PropertiesFromMap(map[string]any{k: v}); err != nil {
				props[k] = nil
			}
		}
	}
	p, _ := rabbitmodel.PropertiesFromMap(props) // every value is now its field's type, or nil
	return p
}

// Messages masks every message of a browse, for the list and for the error groups built
// from it: a group's key is the masked exception message, so masked text never shows there.
func (r *Rules) Messages(msgs []rabbitmodel.Message) ([]Message, []rabbitmodel.Message) {
	shown := make([]Message, len(msgs))
	masked := make([]rabbitmodel.Message, len(msgs))
	for i, m := range msgs {
		shown[i] = r.Message(m)
		masked[i] = shown[i].Message
		masked[i].Headers = shown[i].Headers
	}
	return shown, masked
}

// View is a RabbitMQ scan's View for a reader that sees content masked by red: each message as
// masked, its Message kept in *last for the caller's answer.
func (red *Rules) View(last *Message) func(rabbitmodel.Message) rabbitmodel.Message {
	return func(m rabbitmodel.Message) rabbitmodel.Message {
		*last = red.Message(m)
		v := last.Message
		v.Headers = last.Headers
		return v
	}
}

// Shown is Message as the message itself: what a reader who may not see content sees of it,
// for code that works on rabbitmodel.Message (a plan's error groups, a trace's steps).
func (r *Rules) Shown(m rabbitmodel.Message) rabbitmodel.Message {
	s := r.current().Message(m)
	out := s.Message
	out.Headers = s.Headers
	return out
}
