package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/replay"
)

// ArchiveMessages writes ms in one transaction: all or none. A message a job archived before
// (same job, same locator: a resumed run) is not written twice.
func (s *Archive) ArchiveMessages(ctx context.Context, ms []replay.Archived) error {
	if len(ms) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, m := range ms {
			props, err := json.Marshal(m.Properties)
			if err != nil {
				return err
			}
			headers, err := json.Marshal(m.Headers)
			if err != nil {
				return err
			}
			b.Queue(`INSERT INTO archived_message (job_id, locator, message_id, broker, vhost, queue, actor, reason, exchange,
					routing_key, original_exchange, original_routing_key, properties, headers, headers_wire, body)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
				ON CONFLICT (job_id, locator) DO NOTHING`,
				m.JobID, m.Locator, ops.CleanText(m.MessageID, 500), m.Broker, m.Vhost, m.Queue, ops.CleanText(m.Actor, 500),
				ops.CleanText(m.Reason, 2000), ops.CleanText(m.Exchange, 500), ops.CleanText(m.RoutingKey, 500),
				ops.CleanText(m.OriginalExchange, 500), ops.CleanText(m.OriginalRoutingKey, 500), jsonb(props), jsonb(headers),
				m.HeadersWire, m.Body)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("archive %d message(s): %w: %w", len(ms), ops.ErrUnavailable, err)
	}
	return nil
}

// jsonb makes encoded JSON storable in a jsonb column, which refuses NUL even escaped
// (json.Marshal already made invalid UTF-8 valid).
func jsonb(b []byte) []byte { return bytes.ReplaceAll(b, []byte(`\u0000`), []byte(`\ufffd`)) }

const archiveColumns = `id, job_id, locator, message_id, broker, vhost, queue, archived_at, actor, reason, exchange, routing_key,
	original_exchange, original_routing_key, properties, headers, headers_wire, body, restored_at, coalesce(restored_by, ''),
	coalesce(restored_to, '')`

func scanArchived(r pgx.CollectableRow) (replay.Archived, error) { return scanArchivedAnd(r, false) }

// scanArchivedAnd scans archiveColumns, then, when restoring, the restoring job's id and status.
func scanArchivedAnd(r pgx.CollectableRow, restoring bool) (replay.Archived, error) {
	var m replay.Archived
	var props, headers []byte
	dest := []any{&m.ID, &m.JobID, &m.Locator, &m.MessageID, &m.Broker, &m.Vhost, &m.Queue, &m.ArchivedAt, &m.Actor, &m.Reason,
		&m.Exchange, &m.RoutingKey, &m.OriginalExchange, &m.OriginalRoutingKey, &props, &headers, &m.HeadersWire, &m.Body,
		&m.RestoredAt, &m.RestoredBy, &m.RestoredTo}
	if restoring {
		dest = append(dest, &m.Restoring, &m.RestoringStatus)
	}
	err := r.Scan(dest...)
	if err == nil {
		err = json.Unmarshal(props, &m.Properties)
	}
	if err == nil {
		err = json.Unmarshal(headers, &m.Headers)
	}
	return m, err
}

// ArchivedMessages lists archived messages, newest first.
func (s *Archive) ArchivedMessages(ctx context.Context, f replay.ArchiveFilter) ([]replay.Archived, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	// MaxArchiveLimit and the one row more that tells a reader whether another page follows
	if f.Limit > replay.MaxArchiveLimit+1 {
		return nil, ops.Invalid("limit", fmt.Sprintf("must be between 1 and %d", replay.MaxArchiveLimit))
	}
	return collect(ctx, s.pool, scanArchived, "archive", `SELECT `+archiveColumns+` FROM archived_message
		WHERE ($1 = '' OR broker = $1) AND ($2 = '' OR queue = $2) AND ($3::timestamptz IS NULL OR archived_at >= $3)
		  AND ($4 = 0 OR id < $4)
		ORDER BY id DESC LIMIT $5`, f.Broker, f.Queue, nullTime(f.Since), f.Before, f.Limit)
}

// ArchivedMessageByID reads one archived message, with the replay job restoring it if there is one
// (Restoring): ops.ErrNotFound when there is none.
func (s *Archive) ArchivedMessageByID(ctx context.Context, id int64) (replay.Archived, error) {
	return archivedByID(ctx, s.pool, id, "")
}

// archivedByID reads one archived message on q (the pool, or a transaction), with the replay job
// restoring it, locking its row with lock (" FOR UPDATE OF a", or "").
func archivedByID(ctx context.Context, q querier, id int64, lock string) (replay.Archived, error) {
	rows, err := q.Query(ctx, `SELECT `+archiveColumns+`, coalesce(r.job, ''), coalesce(r.job_status, '')
		FROM archived_message a LEFT JOIN LATERAL (SELECT j.id AS job, j.status AS job_status FROM replay_job j
			WHERE j.source_key = $2 AND j.status IN ('awaiting_approval', 'pending', 'running')
			ORDER BY j.created_at DESC LIMIT 1) r ON true
		WHERE a.id = $1`+lock, id, replay.ArchiveSourceKey(id))
	if err != nil {
		return replay.Archived{}, fmt.Errorf("archive: %w: %w", ops.ErrUnavailable, err)
	}
	m, err := pgx.CollectExactlyOneRow(rows, func(r pgx.CollectableRow) (replay.Archived, error) { return scanArchivedAnd(r, true) })
	switch {
	case err == pgx.ErrNoRows:
		return m, ops.NotFound("archived message %d not found", id)
	case err != nil:
		return m, fmt.Errorf("archive: %w: %w", ops.ErrUnavailable, err)
	}
	return m, nil
}

// RestoreArchived publishes an archived message again (publish) and records it restored, holding
// the row locked meanwhile so that two operators restoring it at once publish it once. Publish
// first, record after: a crash between the two leaves a copy that shows as not restored (it may
// then be restored twice: at-least-once), never a message marked restored that was not published.
// ops.ErrNotFound: no such message; ops.ErrConflict: restored already, or (to the DLQ) a replay job
// is restoring it to its original destination.
func (s *Archive) RestoreArchived(ctx context.Context, id int64, actor, to string, publish func(replay.Archived) error) (replay.Archived, error) {
	var m replay.Archived
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if m, err = archivedByID(ctx, tx, id, " FOR UPDATE OF a"); err != nil {
			return err
		}
		// A restore to the DLQ meeting a job that restores the message to its original
		// destination is refused (replay.RestoreRefused); that job's own restore is not.
		if m.RestoredAt != nil || to != replay.RestoredToOriginal && m.Restoring != "" {
			return replay.RestoreRefused(m)
		}
		if err := publish(m); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE archived_message SET restored_at = now(), restored_by = $2, restored_to = $3 WHERE id = $1`,
			id, ops.CleanText(actor, 500), ops.CleanText(to, 500))
		if err != nil {
			return fmt.Errorf("the message was published but its restore could not be recorded: %w: %w", ops.ErrUnavailable, err)
		}
		return nil
	})
	return m, err
}
