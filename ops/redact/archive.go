package redact

import (
	"encoding/json"
	"maps"

	"github.com/redrive/redrive/ops/replay"
)

// Archived is the masking pass over an archived message, for a reader who may not see its
// content, as over the message it was (Message): the configured headers, the message id when its
// property is masked, the body by the JSON paths (hidden whole when it is not JSON and paths are
// configured), then what repeats what was hidden — another header (a stack trace quoting a masked
// exception message), a property, the routing keys — and the message id when it may come from
// the hidden body. It reports whether anything was masked. The copy it returns is for showing;
// HeadersWire, what a restore publishes, is left out of it.
func (r *Rules) Archived(m replay.Archived) (replay.Archived, bool) {
	r = r.current()
	if r == nil {
		return m, false
	}
	m.HeadersWire = nil
	mask := &messageMask{}
	masked := false
	headers := make(map[string]any, len(m.Headers))
	for k, v := range m.Headers {
		if r.Header(k) {
			mask.secrets = append(mask.secrets, archivedText(v))
			v, masked = Redacted, true
		}
		headers[k] = v
	}
	props := make(map[string]any, len(m.Properties))
	for k, v := range m.Properties {
		props[k] = v
	}
	if r.Header("message_id") && m.MessageID != "" {
		mask.secrets = append(mask.secrets, m.MessageID)
		props["message_id"], m.MessageID, masked = Redacted, Redacted, true
	}
	if b, changed := r.maskBody(m.Body, false, mask); changed {
		m.Body, masked = b, true
	}
	for k, v := range headers {
		if r.Header(k) {
			continue
		}
		if t := archivedText(v); mask.matches(t) {
			headers[k], masked = Redacted, true
		} else {
			mask.clear = append(mask.clear, t)
		}
	}
	if id, ok := props["message_id"].(string); ok && id != Redacted {
		mask.clear = append(mask.clear, id) // a message id the broker carried, not read from the body
	}
	if mask.quoting(props, &m.RoutingKey, &m.OriginalRoutingKey) {
		masked = true
	}
	if id := mask.id(m.MessageID); id != m.MessageID {
		m.MessageID, masked = id, true
		if _, ok := props["message_id"]; ok {
			props["message_id"] = id
		}
	}
	m.Headers, m.Properties = headers, props
	return m, masked
}

// archivedText is an archived header or property value as text: a string as it is, anything else
// (a number, an x-death table) as its JSON.
func archivedText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// AuditDetail masks what an audit entry's detail records of a message. A replay plan's entry
// records its source, and an edit and retry's source holds the edit and its diff — the message's
// value and headers before and after: they show no more than the message would (Edit). An edit
// that cannot be read back is left out whole rather than shown. Nil rules mask nothing.
func (r *Rules) AuditDetail(d map[string]any) map[string]any {
	src, ok := d["source"].(map[string]any)
	if r == nil || !ok || src["edit"] == nil {
		return d
	}
	masked := maps.Clone(src)
	masked["edit"] = Redacted
	var ed replay.Edit
	if b, err := json.Marshal(src["edit"]); err == nil && json.Unmarshal(b, &ed) == nil && ed.Diff != nil {
		var m any
		if b, err := json.Marshal(r.Edit(ed)); err == nil && json.Unmarshal(b, &m) == nil {
			masked["edit"] = m
		}
	}
	out := maps.Clone(d)
	out["source"] = masked
	return out
}
