package store

import (
	"context"
	"time"

	"github.com/redrive/redrive/ops/audit"
)

// AuditNamingMasked is AuditNaming for a reader who may not see message content: an entry's
// detail is searched without what it records of a message (an edit and retry's source.edit: the
// value and headers before and after), so that a trace by a guessed value finds nothing the
// reader's masked view would not show. Errors wrap ops.ErrUnavailable.
func (s *AuditLog) AuditNamingMasked(ctx context.Context, needles []string, rows []audit.RowRef, since time.Time, limit int) ([]audit.Entry, error) {
	var pats []string
	for _, n := range needles {
		if len(n) >= 3 {
			pats = append(pats, wholeWord(n))
		}
	}
	if len(pats) == 0 && len(rows) == 0 {
		return nil, nil
	}
	targets, ids := make([]string, len(rows)), make([]int64, len(rows))
	for i, r := range rows {
		targets[i], ids[i] = r.Target, r.ID
	}
	return collect(ctx, s.pool, scanAuditEntry, "audit: search", `SELECT id, at, actor, role, source_ip, user_agent, action, target,
			count, reason, outcome, detail
		FROM audit_log WHERE at >= $1
		  AND (target ~ ANY($2) OR reason ~ ANY($2) OR (detail #- '{source,edit}')::text ~ ANY($2)
		    OR EXISTS (SELECT FROM unnest($4::text[], $5::bigint[]) AS r(target, id)
		      WHERE audit_log.target = r.target AND audit_log.detail->'ids' @> to_jsonb(r.id)))
		ORDER BY at DESC, id DESC LIMIT $3`, since, pats, limit, targets, ids)
}
