package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/triage"
)

// AddNote appends n (its ID and At are set by the store), audited before effect (auditedChange):
// the note and its audit row commit together.
func (s *Triage) AddNote(ctx context.Context, e audit.Entry, n triage.Note) (triage.Note, error) {
	var typ, cause, msgID *string
	var part *int32
	var off *int64
	if n.MessageID != "" {
		id := ops.CleanText(n.MessageID, 500)
		msgID = &id
	}
	if n.Group != nil {
		t, c := ops.CleanText(n.Group.Type, 500), ops.CleanText(n.Group.Cause, 500)
		typ, cause = &t, &c
	}
	if n.Record != nil {
		part, off = &n.Record.Partition, &n.Record.Offset
	}
	n.Actor, n.Text, n.Link = ops.CleanText(n.Actor, 500), ops.CleanText(n.Text, 4000), ops.CleanText(n.Link, 2000)
	_, err := s.auditedChange(ctx, e, func(ctx context.Context, tx pgx.Tx) (int64, error) {
		err := tx.QueryRow(ctx, `INSERT INTO dead_letter_note (source, exception_type, exception_cause, partition, "offset", message_id, actor, text, link)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id, at`, n.Source, typ, cause, part, off, msgID, n.Actor, n.Text, n.Link).Scan(&n.ID, &n.At)
		return 1, err
	})
	if err != nil {
		return triage.Note{}, fmt.Errorf("note on %s: %w", n.Source, err)
	}
	return n, nil
}

// Notes lists the notes of a source, oldest first (they read as a conversation), at most triage.MaxNotes
// (the newest).
func (s *Triage) Notes(ctx context.Context, source string) ([]triage.Note, error) {
	rows, err := s.pool.Query(ctx, `SELECT * FROM (SELECT id, source, exception_type, exception_cause, partition, "offset", coalesce(message_id, ''), actor, at, text, link
		FROM dead_letter_note WHERE source = $1 ORDER BY at DESC, id DESC LIMIT $2) n ORDER BY at, id`, source, triage.MaxNotes)
	if err != nil {
		return nil, unavailable(err, "notes of %s", source)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (triage.Note, error) {
		var n triage.Note
		var typ, cause *string
		var part *int32
		var off *int64
		if err := r.Scan(&n.ID, &n.Source, &typ, &cause, &part, &off, &n.MessageID, &n.Actor, &n.At, &n.Text, &n.Link); err != nil {
			return n, err
		}
		if typ != nil {
			n.Group = &triage.GroupKey{Type: *typ}
			if cause != nil {
				n.Group.Cause = *cause
			}
		}
		if part != nil && off != nil {
			n.Record = &triage.RecordKey{Partition: *part, Offset: *off}
		}
		return n, nil
	})
	if err != nil {
		return nil, unavailable(err, "notes of %s", source)
	}
	return out, nil
}
