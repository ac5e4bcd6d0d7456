package kafka

import tracepages "github.com/redrive/redrive/views/pages/trace"

// recordTraceURL is the record's "Trace" action: by the dead letter's message id, else by the key
// (an aggregate id); "" when it has neither.
func recordTraceURL(r RecordView) string {
	id := ""
	if r.DeadLetter != nil {
		id = r.DeadLetter.MessageID
	}
	return tracepages.MessageURL(id, r.Key)
}
