// Package replay is Redrive's guarded replay: it puts dead messages back where they came from
// without applying a business effect twice and without losing a message.
//
// A Plan freezes the exact message set of a selection and decides, for each message, its
// destination, its idempotency key, what the consumer's inbox says about it, whether the ledger
// shows it already replayed, and so the action: publish or skip with a reason. A Job runs a plan
// at a rate, in batches, under a lease (so exactly one replica runs it and a dead replica's job is
// picked up), and records every message's outcome in the ledger, whose unique index on the
// message's locator makes concurrent replays of one message publish it once.
//
// Ordering, per message: claim in the ledger → publish → broker acknowledgement → ledger
// "published" → (RabbitMQ) ack the dead-letter copy. A crash before the broker's ack leaves the
// message where it was (Kafka: the DLT record is immutable; RabbitMQ: the unacked copy returns to
// the DLQ); a crash after it and before the ledger update leaves the claim "active", and the
// resumed job publishes again: at-least-once, with the consumer's inbox absorbing the duplicate.
package replay

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/source"
)

// Source selects the dead messages of a plan. Kind decides which fields apply.
type Source struct {
	Kind source.Kind `json:"kind"` // kafka | rabbitmq | outbox | archive
	// Action is what a job does with the selected messages: "" (or "replay") puts them back
	// where they came from; "discard" (RabbitMQ) writes each one whole to the archive and then
	// acks it from the dead-letter queue.
	Action string `json:"action,omitempty"`
	// Destination, when set, redirects every message there instead of its original destination:
	// a Kafka topic of the source's cluster, or an exchange and routing key of the source's
	// broker and vhost. Allowed only when it matches replay.allowed_destinations.
	Destination *Destination `json:"destination,omitempty"`
	// Edit, when set, changes the one message of the plan before it is published (edit and
	// retry): its value (a RabbitMQ body) and headers. The message id stays, so the consumer's
	// inbox still guards it, unless the edit asks for a new one; only the edited copy is ever
	// published.
	Edit *Edit `json:"edit,omitempty"`

	// Kafka: a topic, optionally one partition (else all) and an inclusive offset range — or
	// explicit records.
	Cluster    string      `json:"cluster,omitempty"`
	Topic      string      `json:"topic,omitempty"`
	Partition  *int32      `json:"partition,omitempty"`
	FromOffset *int64      `json:"from_offset,omitempty"`
	ToOffset   *int64      `json:"to_offset,omitempty"`
	Records    []RecordRef `json:"records,omitempty"`
	// TopicID is the dead-letter topic's ID when the plan read it (set by the planner): a job
	// refuses to read a topic that was recreated since.
	TopicID string `json:"topic_id,omitempty"`

	// RabbitMQ: the first Limit messages of a queue. (Limit also bounds an outbox filter.)
	Broker string `json:"broker,omitempty"`
	Vhost  string `json:"vhost,omitempty"`
	Queue  string `json:"queue,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	// Span is how many messages from the head the plan read (set by the planner): a job reads
	// that far to find the planned ones.
	Span int `json:"span,omitempty"`

	// Archive: the id of a message a discard job archived, replayed to where it was
	// dead-lettered from (the planner records its broker, vhost and queue).
	ArchiveID int64 `json:"archive_id,omitempty"`

	// Outbox: DEAD or FAILED event ids — or, without ids, the first Limit events matching Status
	// (DEAD or FAILED; both when empty), EventType, AggregateID and the filter.
	Outbox      string  `json:"outbox,omitempty"`
	IDs         []int64 `json:"ids,omitempty"`
	Status      string  `json:"status,omitempty"`
	EventType   string  `json:"event_type,omitempty"`
	AggregateID string  `json:"aggregate_id,omitempty"`
	// ResetAttempts sets the requeued events' attempts back to 0, so the relay retries them fully.
	ResetAttempts bool `json:"reset_attempts,omitempty"`
}

// Edit is an edit-and-retry's change to one message. Diff is set by the planner: what changed,
// for the plan's warnings and the audit.
type Edit struct {
	Value       *string           `json:"value,omitempty"` // the new value (validated as JSON when the old one was JSON)
	SetHeaders  map[string]string `json:"set_headers,omitempty"`
	DropHeaders []string          `json:"drop_headers,omitempty"`
	// NewMessageID asks for a fresh message id on the published copy (the operator's explicit
	// choice: the consumer's inbox will not know it). The planner draws it once, in FreshID, so
	// that a resumed run publishes the same one and a duplicate is still one message.
	NewMessageID bool      `json:"new_message_id,omitempty"`
	FreshID      string    `json:"fresh_message_id,omitempty"`
	Diff         *EditDiff `json:"diff,omitempty"`
}

// HeaderOriginalMessageID links a copy published under a new message id to the id it died with.
const HeaderOriginalMessageID = "x-redrive-original-message-id"

// EditDiff is what an edit changed.
type EditDiff struct {
	ValueBefore string               `json:"value_before,omitempty"` // cut at 4 KiB
	ValueAfter  string               `json:"value_after,omitempty"`
	Headers     map[string][2]string `json:"headers,omitempty"`    // key → [before, after]; "" for absent
	MessageID   *[2]string           `json:"message_id,omitempty"` // [before, after] when a new id was asked for
	// Encoding names the schema the edited value is encoded back with ("avro acme.Order with
	// schema id 3 (orders-value)") when the original is in a schema's wire format.
	Encoding string `json:"encoding,omitempty"`
	// Masked names the headers of Headers whose value the message shows masked to everyone (a
	// header quoting a hidden value, which only the whole message tells), and MessageIDMasked says
	// the same of the id before: set by the planner from PlanRequest.Shown, for the pages that
	// mask the diff (ops/redact's Edit).
	Masked          []string `json:"masked,omitempty"`
	MessageIDMasked bool     `json:"message_id_masked,omitempty"`
}

// RecordRef names one Kafka record of the source topic.
type RecordRef struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// MaxRecords bounds an explicit record list (each run of neighbouring offsets is one read).
const MaxRecords = 10_000

// Filter narrows a source; zero fields do not filter.
type Filter struct {
	// ExceptionType names an error group (ops.InErrorGroup, one rule for every source): the
	// group's key (an exception class, else the error's first line) or the class's simple name.
	ExceptionType string    `json:"exception_type,omitempty"`
	Reason        string    `json:"reason,omitempty"` // RabbitMQ x-death reason: rejected, expired, maxlen, delivery_limit
	OriginalTopic string    `json:"original_topic,omitempty"`
	MessageIDs    []string  `json:"message_ids,omitempty"`
	Since         time.Time `json:"since,omitzero"`
	Until         time.Time `json:"until,omitzero"`
	// CEL is a filter expression over each message (ops/search: Kafka key, value, headers,
	// dead_letter, …; RabbitMQ body, headers, properties, …): the plan freezes exactly the
	// messages it is true for. Compiled once per plan; a bad expression is an ops.ErrInvalid.
	CEL string `json:"cel"`

	ids map[string]bool // MessageIDs as a set (withIDSet): a plan asks it for every message it reads
	// view and shown are the plan request's (PlanRequest.View, PlanRequest.Shown); not stored.
	view, shown Views
}

// Views are what a reader may see of dead letters: content masked (ops/redact). A nil func shows
// a message as it is. A view must keep what places a message — a record's partition, offset and
// timestamp, a message's properties' timestamp and its dead-letter reason.
type Views struct {
	Kafka  func(kafkamodel.Record) kafkamodel.Record
	Rabbit func(rabbitmodel.Message) rabbitmodel.Message
}

// matchShownID is matchIDs over the id a view shows (shown) of a message whose id is id: an id
// the view hides matches no id, so that a masked id cannot be confirmed by naming it, nor one
// tick of a masked row on a page select every masked message.
func (f Filter) matchShownID(id, shown string) bool {
	if len(f.MessageIDs) == 0 {
		return true
	}
	return shown == id && f.matchIDs(id)
}

// withIDSet is f ready to match: a plan of 100,000 messages by 10,000 ids (or the copies a
// restart returned) would otherwise compare 10⁹ strings.
func (f Filter) withIDSet() Filter {
	if len(f.MessageIDs) > 0 {
		f.ids = make(map[string]bool, len(f.MessageIDs))
		for _, id := range f.MessageIDs {
			f.ids[id] = true
		}
	}
	return f
}

func (f Filter) matchIDs(id string) bool {
	if f.ids != nil {
		return f.ids[id]
	}
	return len(f.MessageIDs) == 0 || slices.Contains(f.MessageIDs, id)
}

func (f Filter) matchTime(t time.Time) bool {
	return (f.Since.IsZero() || !t.Before(f.Since)) && (f.Until.IsZero() || t.Before(f.Until))
}

// Action is what a job will do with one message.
type Action string

// Actions. Everything but Publish is a skip, with its reason in the name.
const (
	Publish             Action = "publish"
	SkipProcessed       Action = "skip_processed"
	SkipInProgress      Action = "skip_in_progress"
	SkipAlreadyReplayed Action = "skip_already_replayed"
	SkipReplayLimit     Action = "skip_replay_limit"
	SkipUnresolvable    Action = "skip_unresolvable"
	SkipNoMessageID     Action = "skip_no_message_id"
	// Discard is a discard plan's action: archive the message, then ack it from its queue.
	Discard Action = "discard"
	// DropReplayedCopy is a RabbitMQ dead letter that an earlier job already moved — published,
	// its broker confirming it, or (a discard) archived — and that is still in the queue: the
	// broker lost the ack (a crash before it wrote the ack to disk returns the message) or the job
	// ended between the ledger and the ack. The job acks this copy and sends or archives nothing;
	// it is a skip in the job's counts.
	DropReplayedCopy Action = "drop_replayed_copy"
)

// Actions lists every action in the order the plan page shows them.
var Actions = []Action{Publish, Discard, DropReplayedCopy, SkipProcessed, SkipInProgress, SkipAlreadyReplayed, SkipReplayLimit, SkipUnresolvable, SkipNoMessageID}

// Plan actions (Source.Action).
const (
	ActionReplay  = "replay"
	ActionDiscard = "discard"
)

// discards reports whether a plan of src discards its messages rather than replaying them.
func (src Source) discards() bool { return src.Action == ActionDiscard }

// dropsReplayedCopies reports whether a job of src removes a dead letter that an earlier job
// already moved (DropReplayedCopy): only RabbitMQ can, by acking it — a copy of what another
// replay published or another discard archived (twinLocator). A Kafka topic keeps
// its records, an outbox row was already set back, and an edit means to send a new version, so
// its message is never dropped in its place.
func (src Source) dropsReplayedCopies() bool { return src.Kind == source.RabbitMQ && src.Edit == nil }

// moves reports whether a job acts on an item of this action: publishes it, discards it, or (with
// force) overrides the inbox's verdict.
func (a Action) moves(force bool) bool {
	return a == Publish || a == Discard || (force && a.Forcible())
}

// Forcible reports whether force may turn this skip into a publish: only the inbox's verdicts;
// a replay limit, a missing destination or id, or an earlier replay are never overridden.
func (a Action) Forcible() bool { return a == SkipProcessed || a == SkipInProgress }

// Destination is where a message goes back to.
type Destination struct {
	Kind source.Kind `json:"kind"` // kafka | rabbitmq | outbox
	// Kafka: the original topic and partition, with where the partition comes from
	// (PartitionFromHeader or PartitionFromKey; -1 with a nil key: any partition).
	Cluster         string `json:"cluster,omitempty"`
	Topic           string `json:"topic,omitempty"`
	Partition       int32  `json:"partition,omitempty"`
	PartitionSource string `json:"partition_source,omitempty"`
	// RabbitMQ: the original exchange and routing key.
	Broker     string `json:"broker,omitempty"`
	Vhost      string `json:"vhost,omitempty"`
	Exchange   string `json:"exchange,omitempty"`
	RoutingKey string `json:"routing_key,omitempty"`
	// Outbox: the row goes back to READY for the relay.
	Outbox string `json:"outbox,omitempty"`
}

// String is the destination for people.
func (d Destination) String() string {
	switch d.Kind {
	case source.Kafka:
		if d.Partition < 0 {
			return fmt.Sprintf("kafka %s → %s (any partition: no key)", d.Cluster, d.Topic)
		}
		return fmt.Sprintf("kafka %s → %s partition %d (from the %s)", d.Cluster, d.Topic, d.Partition, d.PartitionSource)
	case source.RabbitMQ:
		ex := d.Exchange
		if ex == "" {
			ex = "(default exchange)"
		}
		return fmt.Sprintf("rabbitmq %s%s → %s, key %q", d.Broker, vhostLabel(d.Vhost), ex, d.RoutingKey)
	case source.Outbox:
		return fmt.Sprintf("outbox %s → READY", d.Outbox)
	}
	return "unresolved"
}

func vhostLabel(v string) string {
	if v == "/" || v == "" {
		return ""
	}
	return " vhost " + v
}

// Item is one message of a plan.
type Item struct {
	Seq         int           `json:"seq"`
	Locator     string        `json:"locator"`
	MessageID   string        `json:"message_id"`
	Consumer    string        `json:"consumer"`
	Destination Destination   `json:"destination"`
	Inbox       inbox.Verdict `json:"inbox"`
	Action      Action        `json:"action"`
	ErrorGroup  string        `json:"error_group"`
	ReplayCount int           `json:"replay_count"`
	// Note says why the item is skipped when its action alone does not (an id or destination
	// holding bytes that cannot be used).
	Note string `json:"note,omitempty"`
	// Position locates the message for the run: the Kafka partition and offset, or the outbox id.
	Partition *int32 `json:"-"`
	Position  *int64 `json:"-"`
	// diedIn is the queue a RabbitMQ dead letter died in, as its headers name it ("" when they
	// name none), for the plan's warnings (rabbitRoutes); it is not stored.
	diedIn string
}

// Plan is a frozen selection with its verdicts.
type Plan struct {
	ID        string
	CreatedAt time.Time
	Actor     string
	Source    Source
	Filter    Filter
	Total     int
	Counts    map[Action]int
	// ErrorGroups counts the plan's messages per error (exception type or reason) and action.
	ErrorGroups map[string]map[Action]int
	Warnings    []string
	Items       []Item // the first MaxPlanItemsShown when read back
	// State is PlanReady, or PlanPlanning while it is made in the background (Counts and Planned
	// then say how far it got, Estimate how many messages it reads at most), PlanCancelled or
	// PlanFailed (Error says why, in words for people; it holds no items).
	State             string
	Planned, Estimate int
	Error             string
	FinishedAt        *time.Time
}

// MaxPlanItems bounds one plan; MaxPlanItemsShown is how many items a plan answer carries.
const (
	MaxPlanItems      = 1_000_000
	MaxPlanItemsShown = 200
)

// decide applies the skip rules in order of precedence.
func decide(it *Item, replayed bool, maxReplays int) Action {
	switch {
	case it.Destination.Kind == "":
		return SkipUnresolvable
	case it.MessageID == "":
		return SkipNoMessageID
	case it.ReplayCount >= maxReplays:
		return SkipReplayLimit
	case replayed:
		return SkipAlreadyReplayed
	case it.Inbox == inbox.Processed:
		return SkipProcessed
	case it.Inbox == inbox.InProgress:
		return SkipInProgress
	}
	return Publish
}

// Redrive's own headers on a replayed message.
const (
	HeaderReplayID    = "x-redrive-replay-id"
	HeaderReplayCount = "x-redrive-replay-count"
	HeaderReplayedBy  = "x-redrive-replayed-by"
	HeaderSource      = "x-redrive-source"
)

func invalid(field, problem string) error { return ops.Invalid(field, problem) }

// configured is the adapter a source names in field, out of the engine's adapters of one kind
// (what says which: "kafka cluster", "outbox", "rabbitmq broker"). Errors: ErrInvalid (no name),
// ErrNotFound (a name the console's configuration does not have).
func configured[A any](adapters map[string]A, field, what, name string) (A, error) {
	var none A
	if name == "" {
		return none, invalid(field, "required")
	}
	a, ok := adapters[name]
	if !ok {
		return none, ops.NotFound("%s %q is not configured", what, name)
	}
	return a, nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
