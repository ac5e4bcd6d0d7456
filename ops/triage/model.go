package triage

import "time"

// The triage model: what was decided about a dead letter (Resolution, in a State), which records
// (RecordKey, Mark, Span), and the notes people leave. Kept by an adapter (ops/store, in
// PostgreSQL) behind the interfaces this package declares.

// Note is a person's note on an error group of a dead-letter source (Group set), on one of a
// topic's records (Record set) or on one of a queue's messages (MessageID set).
type Note struct {
	ID        int64
	Source    string // kafka/<cluster>/<topic> or rabbitmq/<broker>/<vhost>/<queue>
	Group     *GroupKey
	Record    *RecordKey
	MessageID string
	Actor     string
	At        time.Time
	Text      string
	Link      string
}

// MaxNotes is the most notes one source lists.
const MaxNotes = 500

// Resolution states of a Kafka dead letter (migration 024). A record without a row is open, and
// so is one whose row was written for another topic of the same name (migration 041: the topic
// was deleted and created again since; its ID changed).
const (
	StateOpen     = "open"
	StateResolved = "resolved"
	StateIgnored  = "ignored"
	StateReplayed = "replayed" // set by a replay job, with its id
)

// States lists the states in the order pages offer them.
var States = []string{StateOpen, StateResolved, StateIgnored, StateReplayed}

// Resolution is what was decided about one dead letter, and by whom.
type Resolution struct {
	State  string
	Actor  string
	At     time.Time // zero for a record never marked
	Reason string
	JobID  string // the replay job that replayed it
	// Death is, for an outbox event, the death the mark is about (outbox.Event.Death); "" for any.
	Death string
}

// RecordKey names one record of a topic.
type RecordKey struct {
	Partition int32
	Offset    int64
}

// Mark is one record to mark, with its error group (from its dead-letter headers) so
// that error groups can count their open records without reading the topic again.
type Mark struct {
	RecordKey
	ExceptionType, ExceptionCause string
}

// Span is the [Start, End) offsets of one partition of a topic.
type Span struct {
	Topic string
	// TopicID is the topic's Kafka ID when the offsets were read (kafka.DLTopic.TopicID): only
	// the marks of that topic count, not those of one deleted before it under the same name.
	// "" (a broker without IDs) counts every mark.
	TopicID    string
	Partition  int32
	Start, End int64
}

// GroupKey names an error group of a topic: its exception type and cause.
type GroupKey struct{ Type, Cause string }
