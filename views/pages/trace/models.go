// Package trace renders the /trace page: one message's (or one aggregate's) timeline across the
// outboxes, Kafka, RabbitMQ, the inboxes, the replay ledger and the audit log, with the verdict.
package trace

import (
	"time"

	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/layout"
)

// Page is the trace page: the form, and when an id was given the result (or, while the page's
// script streams it, the place it arrives in).
type Page struct {
	Meta    layout.Meta
	Form    Form
	Subject string // what is traced ("message e-1"); "" shows only the form
	// StreamURL is the trace's event stream; WholeURL the page answered at once (no script).
	StreamURL, WholeURL string
	Result              *Result // the whole trace when answered at once (wait=1); nil streams it
}

// Form holds what was asked, to fill the form again.
type Form struct {
	MessageID, EventID, AggregateID, TraceID, ID string
	Since, Until                                 string
}

// Any reports whether an id was given.
func (f Form) Any() bool {
	return f.MessageID != "" || f.EventID != "" || f.AggregateID != "" || f.TraceID != "" || f.ID != ""
}

// Result is a trace's verdict and timeline.
type Result struct {
	Verdict string
	Steps   []StepView
}

// StepView is one step of the timeline.
type StepView struct {
	Kind   string // outbox, kafka, rabbitmq, inbox, replay, audit
	Source string
	Found  bool
	Down   bool
	At     *time.Time
	Place  string
	Detail string
	Link   string // "" when the place has no page
}

// URL is the trace page of an id given as param (message_id, event_id, aggregate_id, trace_id,
// or q for an id of unknown kind): the "Trace" action of the pages where a message appears.
func URL(param, id string) string {
	return paths.TraceOf(param, id)
}

// redacted is what the redaction rules put in place of a hidden value (redact.Redacted): a
// masked id is not one to trace.
const redacted = "••• redacted •••"

// MessageURL traces a message by its message id, else by its key as an aggregate id, else "".
func MessageURL(messageID, key string) string {
	if messageID == redacted {
		messageID = ""
	}
	if key == redacted {
		key = ""
	}
	switch {
	case messageID != "":
		return URL("message_id", messageID)
	case key != "":
		return URL("aggregate_id", key)
	}
	return ""
}

// stepTone is the class of a step's state (stepState): timeline-down, timeline-found or
// timeline-missing.
func stepTone(s StepView) string {
	if st := stepState(s); st != "not found" {
		return "timeline-" + st
	}
	return "timeline-missing"
}

// stepState is what a step came to, in the page's words: down, found or not found.
func stepState(s StepView) string {
	switch {
	case s.Down:
		return "down"
	case s.Found:
		return "found"
	}
	return "not found"
}
