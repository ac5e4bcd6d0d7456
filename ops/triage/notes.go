package triage

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/store"
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
	Group          *store.ErrorGroupKey
	Record         *store.RecordKey
	Text, Link     string
	Actor          access.Actor // the note's author, and the audit row's actor and role
}

// NoteSource names a Kafka topic's notes.
func NoteSource(cluster, topic string) string { return "kafka/" + cluster + "/" + topic }

// AddNote validates and appends a note, audited (action kafka.note) with its text and link.
// Errors: ErrNotFound (cluster), ErrInvalid (in the user's words), ErrUnavailable.
func (t *Triage) AddNote(ctx context.Context, r NoteRequest) (store.Note, error) {
	if _, ok := t.clusters[r.Cluster]; !ok {
		return store.Note{}, ops.NotFound("kafka cluster %q is not configured", r.Cluster)
	}
	text := strings.TrimSpace(r.Text)
	switch {
	case (r.Group == nil) == (r.Record == nil):
		return store.Note{}, ops.Invalid("body", "give exactly one of error_group or record")
	case r.Record != nil && (r.Record.Partition < 0 || r.Record.Offset < 0):
		return store.Note{}, ops.Invalid("record", "partition and offset must not be negative")
	case text == "":
		return store.Note{}, ops.Invalid("text", "required: what is known, e.g. \"investigating: INC-2231, fix in 4.2.1\"")
	case utf8.RuneCountInString(text) > MaxNoteText:
		return store.Note{}, ops.Invalid("text", fmt.Sprintf("at most %d characters", MaxNoteText))
	}
	if r.Link != "" {
		u, err := url.Parse(r.Link)
		// Only web links: a note is shown as a link to everyone who reads it.
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(r.Link) > MaxNoteLink {
			return store.Note{}, ops.Invalid("link", fmt.Sprintf("must be an http or https URL of at most %d characters", MaxNoteLink))
		}
	}
	n := store.Note{Source: NoteSource(r.Cluster, r.Topic), Group: r.Group, Record: r.Record, Actor: r.Actor.Name, Text: text, Link: r.Link}
	detail := map[string]any{"cluster": r.Cluster, "topic": r.Topic, "text": text, "link": r.Link}
	if r.Group != nil {
		detail["error_group"] = map[string]any{"exception_type": r.Group.Type, "exception_cause": r.Group.Cause}
	} else {
		detail["record"] = map[string]any{"partition": r.Record.Partition, "offset": r.Record.Offset}
	}
	e := store.AuditEntry{Actor: r.Actor.Name, Role: r.Actor.Role.String(), Action: "kafka.note", Target: n.Source, Detail: detail}
	cl := ops.ClientOf(ctx)
	e.SourceIP, e.UserAgent = cl.Addr, cl.UserAgent
	return t.store.AddNote(ctx, e, n)
}

// Notes lists a topic's notes, oldest first.
func (t *Triage) Notes(ctx context.Context, cluster, topic string) ([]store.Note, error) {
	return t.store.Notes(ctx, NoteSource(cluster, topic))
}
