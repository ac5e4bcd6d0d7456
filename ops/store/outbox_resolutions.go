package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/triage"
)

// SetOutboxResolutions puts outbox events (by row id) into state, audited before effect
// (auditedChange). It returns how many events changed state (none is written for opening an
// event that is open).
func (s *Triage) SetOutboxResolutions(ctx context.Context, e audit.Entry, outbox string, ids []int64, state, reason string) (int64, error) {
	if !validState(state) {
		return 0, ops.Invalid("state", "must be open, resolved, ignored or replayed")
	}
	n, err := s.auditedChange(ctx, e, func(ctx context.Context, tx pgx.Tx) (int64, error) {
		return setOutboxResolutions(ctx, tx, outbox, ids, state, e.Actor, reason, "")
	})
	if err != nil {
		return 0, fmt.Errorf("outbox resolutions %s: %w", outbox, err)
	}
	return n, nil
}

func setOutboxResolutions(ctx context.Context, tx pgx.Tx, outbox string, ids []int64, state, actor, reason, jobID string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	actor, reason = ops.CleanText(actor, 500), ops.CleanText(reason, 2000)
	if state == triage.StateOpen {
		tag, err := tx.Exec(ctx, `UPDATE outbox_resolution SET state = 'open', actor = $2, at = now(), reason = $3, job_id = ''
			WHERE outbox = $1 AND event = ANY($4) AND state <> 'open'`, outbox, actor, reason, ids)
		return tag.RowsAffected(), err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO outbox_resolution AS r (outbox, event, state, actor, reason, job_id)
		SELECT DISTINCT $1, u, $2, $3, $4, $5 FROM unnest($6::bigint[]) AS u
		ON CONFLICT (outbox, event) DO UPDATE SET state = EXCLUDED.state, actor = EXCLUDED.actor, at = now(),
			reason = EXCLUDED.reason, job_id = EXCLUDED.job_id
		WHERE r.state <> EXCLUDED.state OR r.job_id <> EXCLUDED.job_id`, outbox, state, actor, reason, jobID, ids)
	return tag.RowsAffected(), err
}

// MarkOutboxReplayed marks the events a replay job requeued as replayed, with the job's id,
// after the ledger has them (a mark is never ahead of it).
func (s *Triage) MarkOutboxReplayed(ctx context.Context, jobID, actor, outbox string, ids []int64) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := setOutboxResolutions(ctx, tx, outbox, ids, triage.StateReplayed, actor, "replayed by job "+jobID, jobID)
		return err
	})
	if err != nil {
		return unavailable(err, "mark replayed outbox %s", outbox)
	}
	return nil
}

// OutboxResolutions reads the resolution of each of ids that has one; an id missing from the
// answer is open, never marked.
func (s *Triage) OutboxResolutions(ctx context.Context, outbox string, ids []int64) (map[int64]triage.Resolution, error) {
	out := map[int64]triage.Resolution{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT event, state, actor, at, reason, job_id FROM outbox_resolution
		WHERE outbox = $1 AND event = ANY($2)`, outbox, ids)
	if err != nil {
		return nil, unavailable(err, "outbox resolutions %s", outbox)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var r triage.Resolution
		if err := rows.Scan(&id, &r.State, &r.Actor, &r.At, &r.Reason, &r.JobID); err != nil {
			return nil, unavailable(err, "outbox resolutions %s", outbox)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(err, "outbox resolutions %s", outbox)
	}
	return out, nil
}

// SettledOutboxEvents lists the events of an outbox marked resolved or ignored (what the
// overview stops counting while they are DEAD).
func (s *Triage) SettledOutboxEvents(ctx context.Context, outbox string) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT event FROM outbox_resolution WHERE outbox = $1 AND state IN ('resolved', 'ignored')`, outbox)
	if err != nil {
		return nil, unavailable(err, "settled outbox events %s", outbox)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, unavailable(err, "settled outbox events %s", outbox)
	}
	return ids, nil
}
