package redact

import "github.com/redrive/redrive/ops/replay"

// Archived masks an archived message for a reader who may not see its content: the configured
// headers, the message id when its property is masked, and the body by the JSON paths (hidden
// whole when it is not JSON and paths are configured). It reports whether anything was masked.
// The copy it returns is for showing; HeadersWire, what a restore publishes, is left out of it.
func (r *Rules) Archived(m replay.Archived) (replay.Archived, bool) {
	r = r.current()
	if r == nil {
		return m, false
	}
	m.HeadersWire = nil
	masked := false
	headers := make(map[string]any, len(m.Headers))
	for k, v := range m.Headers {
		if r.Header(k) {
			v, masked = Redacted, true
		}
		headers[k] = v
	}
	m.Headers = headers
	if r.Header("message_id") && m.MessageID != "" {
		props := make(map[string]any, len(m.Properties))
		for k, v := range m.Properties {
			props[k] = v
		}
		props["message_id"], m.MessageID, masked = Redacted, Redacted, true
		m.Properties = props
	}
	if b, changed := r.Body(m.Body); changed {
		m.Body, masked = b, true
	}
	return m, masked
}
