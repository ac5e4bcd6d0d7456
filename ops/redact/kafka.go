package redact

import (
	"github.com/redrive/redrive/ops/kafka"
)

// Record is the masking pass over one record: the configured headers, the JSON paths of
// the value (a value cut for size or not JSON is masked whole when paths are configured), then
// everything derived from what was hidden — other headers quoting it and the decoded dead-letter
// fields, message id included (see messageMask). It reports whether anything was masked.
func (red *Rules) Record(r kafka.Record) (kafka.Record, bool) {
	if red == nil {
		return r, false
	}
	m := &messageMask{}
	redacted := false
	hs := make([]kafka.Header, len(r.Headers))
	for i, hd := range r.Headers {
		if red.Header(hd.Key) {
			m.secrets = append(m.secrets, string(hd.Value))
			hd.Value, redacted = []byte(Redacted), true
		}
		hs[i] = hd
	}
	if d := r.ValueSchema; d != nil && d.JSON != nil && len(red.paths) > 0 {
		// The paths apply to the decoded value; the original bytes carry every field in a form
		// no path can reach, so they are withheld whole.
		dv := *d
		var changed bool
		dv.JSON, changed = red.maskBody(d.JSON, false, m)
		r.ValueSchema, r.Value = &dv, []byte(Redacted)
		redacted = redacted || changed
	} else if v, changed := red.maskBody(r.Value, r.Truncated, m); changed {
		r.Value, redacted = v, true
	}
	for i, hd := range hs {
		if red.Header(hd.Key) {
			continue
		}
		if m.matches(string(hd.Value)) {
			hs[i].Value, redacted = []byte(Redacted), true
		} else {
			m.clear = append(m.clear, string(hd.Value))
		}
	}
	r.Headers = hs
	if d := r.DeadLetter; d != nil {
		dl := *d
		for _, f := range []*string{&dl.OriginalTopic, &dl.ConsumerGroup, &dl.ExceptionType, &dl.ExceptionCause,
			&dl.ExceptionMessage, &dl.Stacktrace, &dl.TraceID, &dl.FirstFailedAt} {
			*f = m.text(*f)
		}
		dl.MessageID = m.id(dl.MessageID)
		if dl != *d {
			redacted = true
		}
		r.DeadLetter = &dl
	}
	return r, redacted
}

// ErrorGroup masks what an error group shows of masked headers: its key when the exception
// type or cause headers are masked, its sample when the exception message header is.
func (red *Rules) ErrorGroup(g kafka.ErrorGroup) kafka.ErrorGroup {
	if red == nil {
		return g
	}
	if red.masksExceptionType() {
		g.ExceptionType, g.ExceptionCause = maskNonEmpty(g.ExceptionType), maskNonEmpty(g.ExceptionCause)
	}
	if red.masksExceptionMessage() {
		g.SampleMessage = maskNonEmpty(g.SampleMessage)
	}
	return g
}

func maskNonEmpty(s string) string {
	if s == "" {
		return s
	}
	return Redacted
}
