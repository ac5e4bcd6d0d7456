package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/replay"
)

// ReplaysOf lists the ledger rows of these message ids with their jobs, oldest first, at most
// limit. Errors wrap ops.ErrUnavailable.
func (s *Replays) ReplaysOf(ctx context.Context, ids []string, limit int) ([]replay.Traced, error) {
	rows, err := s.pool.Query(ctx, `SELECT l.seq, l.locator, l.message_id, l.outcome, l.detail, l.at,
			j.id, j.status, j.actor, j.plan_id
		FROM replay_ledger l JOIN replay_job j ON j.id = l.job_id
		WHERE l.message_id = ANY($1) AND l.message_id <> '' ORDER BY l.at, l.job_id, l.seq LIMIT $2`, ids, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w: %w", ops.ErrUnavailable, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (replay.Traced, error) {
		var e replay.Traced
		err := r.Scan(&e.Seq, &e.Locator, &e.MessageID, &e.Outcome, &e.Detail, &e.At, &e.JobID, &e.JobStatus, &e.Actor, &e.PlanID)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: %w: %w", ops.ErrUnavailable, err)
	}
	return out, nil
}

// AuditNaming lists the audit entries since since whose target, reason or detail contains one of
// needles (each at least 3 characters), newest first, at most limit. The audit log has no index on
// its text: since bounds what is read (the at index), limit what is returned. Errors wrap
// ops.ErrUnavailable.
func (s *AuditLog) AuditNaming(ctx context.Context, needles []string, since time.Time, limit int) ([]audit.Entry, error) {
	var pats []string
	for _, n := range needles {
		if len(n) >= 3 {
			// LIKE's own characters in an id are literal.
			pats = append(pats, "%"+strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(n)+"%")
		}
	}
	if len(pats) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, at, actor, role, source_ip, user_agent, action, target,
			count, reason, outcome, detail
		FROM audit_log WHERE at >= $1
		  AND (target LIKE ANY($2) OR reason LIKE ANY($2) OR detail::text LIKE ANY($2))
		ORDER BY at DESC, id DESC LIMIT $3`, since, pats, limit)
	if err != nil {
		return nil, fmt.Errorf("audit: search: %w: %w", ops.ErrUnavailable, err)
	}
	out, err := pgx.CollectRows(rows, scanAuditEntry)
	if err != nil {
		return nil, fmt.Errorf("audit: search: %w: %w", ops.ErrUnavailable, err)
	}
	return out, nil
}
