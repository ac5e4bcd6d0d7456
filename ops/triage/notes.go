package triage

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
)

// Limits of a note.
const (
	MaxNoteText = 2000
	MaxNoteLink = 2000
)

// NoteRequest is a note on an error group (Group) or one record (Record) of a Kafka dead-letter
// topic.
type NoteRequest struct {
	Cluster, Topic string
	Group          *GroupKey
	Record         *RecordKey
	Text, Link     string
	Actor          access.Actor // the note's author, and the audit row's actor and role
}

// NoteSource names a Kafka topic's notes.
func NoteSource(cluster, topic string) string { return "kafka/" + cluster + "/" + topic }

// AddNote validates and appends a note, audited (action kafka.note) with its text and link.
// The topic must exist and a noted record be in it now, as for a resolution. Errors:
// ErrNotFound (cluster, topic), ErrInvalid (in the user's words), ErrUnavailable.
func (t *Triage) AddNote(ctx context.Context, r NoteRequest) (Note, error) {
	c, ok := t.clusters[r.Cluster]
	if !ok {
		return Note{}, ops.NotFound("kafka cluster %q is not configured", r.Cluster)
	}
	switch {
	case (r.Group == nil) == (r.Record == nil):
		return Note{}, ops.Invalid("body", "give exactly one of error_group or record")
	case r.Record != nil && (r.Record.Partition < 0 || r.Record.Offset < 0):
		return Note{}, ops.Invalid("record", "partition and offset must not be negative")
	}
	text, err := noteText(r.Text, r.Link)
	if err != nil {
		return Note{}, err
	}
	parts, err := c.Partitions(ctx, r.Topic)
	if err != nil {
		return Note{}, err
	}
	if r.Record != nil {
		if err := inTopic(parts, r.Topic, "record", *r.Record); err != nil {
			return Note{}, err
		}
	}
	n := Note{Source: NoteSource(r.Cluster, r.Topic), Group: r.Group, Record: r.Record, Actor: r.Actor.Name, Text: text, Link: r.Link}
	detail := map[string]any{"cluster": r.Cluster, "topic": r.Topic, "text": text, "link": r.Link}
	if r.Group != nil {
		detail["error_group"] = map[string]any{"exception_type": r.Group.Type, "exception_cause": r.Group.Cause}
	} else {
		detail["record"] = map[string]any{"partition": r.Record.Partition, "offset": r.Record.Offset}
	}
	return t.addNote(ctx, r.Actor, "kafka.note", n, detail)
}

// noteText checks a note's text (required, bounded) and link (a web link, or none) and returns
// the text trimmed.
func noteText(text, link string) (string, error) {
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return "", ops.Invalid("text", "required: what is known, e.g. \"investigating: INC-2231, fix in 4.2.1\"")
	case utf8.RuneCountInString(text) > MaxNoteText:
		return "", ops.Invalid("text", fmt.Sprintf("at most %d characters", MaxNoteText))
	}
	if link != "" {
		u, err := url.Parse(link)
		// Only web links: a note is shown as a link to everyone who reads it.
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(link) > MaxNoteLink {
			return "", ops.Invalid("link", fmt.Sprintf("must be an http or https URL of at most %d characters", MaxNoteLink))
		}
	}
	return text, nil
}

// addNote appends n audited as action on its source, by actor, from where the request came.
func (t *Triage) addNote(ctx context.Context, actor access.Actor, action string, n Note, detail map[string]any) (Note, error) {
	e := audit.WithClient(ctx, audit.Entry{Actor: actor.Name, Role: actor.Role.String(), Action: action, Target: n.Source, Detail: detail})
	return t.store.AddNote(ctx, e, n)
}

// QueueNoteRequest is a note on an error group of a RabbitMQ dead-letter queue (Group: its
// reason as Type and its exception message as Cause) or on one of its messages (MessageID: a
// queue has no offsets; the id is how the page and the trace name a message).
type QueueNoteRequest struct {
	Broker, Vhost, Queue string
	Group                *GroupKey
	MessageID            string
	Text, Link           string
	Actor                access.Actor
}

// QueueNoteSource names a queue's notes.
func QueueNoteSource(broker, vhost, queue string) string {
	return "rabbitmq/" + broker + "/" + vhost + "/" + queue
}

// WithBrokers names the RabbitMQ brokers whose queues take notes.
func (t *Triage) WithBrokers(names ...string) *Triage {
	t.brokers = map[string]bool{}
	for _, n := range names {
		t.brokers[n] = true
	}
	return t
}

// AddQueueNote validates and appends a note on a queue's error group or message, audited
// (action rabbitmq.note) with its text and link. Errors: ErrNotFound (broker), ErrInvalid,
// ErrUnavailable.
func (t *Triage) AddQueueNote(ctx context.Context, r QueueNoteRequest) (Note, error) {
	if !t.brokers[r.Broker] {
		return Note{}, ops.NotFound("rabbitmq broker %q is not configured", r.Broker)
	}
	if (r.Group == nil) == (r.MessageID == "") {
		return Note{}, ops.Invalid("body", "give exactly one of error_group or message_id")
	}
	text, err := noteText(r.Text, r.Link)
	if err != nil {
		return Note{}, err
	}
	n := Note{Source: QueueNoteSource(r.Broker, r.Vhost, r.Queue), Group: r.Group, MessageID: r.MessageID, Actor: r.Actor.Name,
		Text: text, Link: r.Link}
	detail := map[string]any{"broker": r.Broker, "vhost": r.Vhost, "queue": r.Queue, "text": text, "link": r.Link}
	if r.Group != nil {
		detail["error_group"] = map[string]any{"reason": r.Group.Type, "exception_message": r.Group.Cause}
	} else {
		detail["message_id"] = r.MessageID
	}
	return t.addNote(ctx, r.Actor, "rabbitmq.note", n, detail)
}

// QueueNotes lists a queue's notes, oldest first.
func (t *Triage) QueueNotes(ctx context.Context, broker, vhost, queue string) ([]Note, error) {
	return t.store.Notes(ctx, QueueNoteSource(broker, vhost, queue))
}

// Notes lists a topic's notes, oldest first.
func (t *Triage) Notes(ctx context.Context, cluster, topic string) ([]Note, error) {
	return t.store.Notes(ctx, NoteSource(cluster, topic))
}
