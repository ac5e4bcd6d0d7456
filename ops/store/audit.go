package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
)

// RecordAudit appends an entry. At is set by the database.
func (s *AuditLog) RecordAudit(ctx context.Context, e audit.Entry) error {
	// Text written by others (a user agent, a reason) may hold a NUL or invalid UTF-8, which a
	// text column refuses: the entry is kept, the odd bytes are not.
	for _, f := range []*string{&e.Actor, &e.Role, &e.SourceIP, &e.UserAgent, &e.Action, &e.Target, &e.Reason, &e.Outcome} {
		*f = ops.CleanText(*f, 4096)
	}
	detail, err := json.Marshal(e.Detail)
	if err != nil || e.Detail == nil {
		detail = []byte("{}")
	}
	// jsonb refuses the NUL character even escaped.
	detail = bytes.ReplaceAll(detail, []byte(`\u0000`), []byte(`\ufffd`))
	_, err = s.pool.Exec(ctx, `INSERT INTO audit_log
		(actor, role, source_ip, user_agent, action, target, count, reason, outcome, detail)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		e.Actor, e.Role, e.SourceIP, e.UserAgent, e.Action, e.Target, e.Count, e.Reason, e.Outcome, detail)
	if err != nil {
		return unavailable(err, "audit: record %s", e.Action)
	}
	return nil
}

// ListAudit returns entries newest first.
func (s *AuditLog) ListAudit(ctx context.Context, f audit.Filter) ([]audit.Entry, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	if f.Limit > audit.MaxLimit {
		return nil, ops.Invalid("limit", fmt.Sprintf("must be between 1 and %d", audit.MaxLimit))
	}
	rows, err := s.pool.Query(ctx, `SELECT id, at, actor, role, source_ip, user_agent, action, target,
			count, reason, outcome, detail
		FROM audit_log a
		WHERE ($1 = '' OR actor = $1) AND ($2 = '' OR action = $2)
		  AND ($3::timestamptz IS NULL OR at >= $3) AND ($4 = 0 OR id < $4)
		  -- an intent is one action with its outcome: shown alone only when no outcome followed it
		  AND ($6 OR NOT (outcome = 'started' AND EXISTS (SELECT FROM audit_log o
		      WHERE o.detail ? 'intent_id' AND o.detail->>'intent_id' = a.id::text)))
		ORDER BY at DESC, id DESC LIMIT $5`,
		f.Actor, f.Action, nullTime(f.Since), f.Before, f.Limit, f.Intents)
	if err != nil {
		return nil, unavailable(err, "audit: list")
	}
	entries, err := pgx.CollectRows(rows, scanAuditEntry)
	if err != nil {
		return nil, fmt.Errorf("audit: list: %w", err)
	}
	return entries, nil
}

// scanAuditEntry reads one row of the audit columns in their order (id … detail).
func scanAuditEntry(r pgx.CollectableRow) (audit.Entry, error) {
	var e audit.Entry
	var detail []byte
	err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Role, &e.SourceIP, &e.UserAgent, &e.Action, &e.Target,
		&e.Count, &e.Reason, &e.Outcome, &detail)
	if err == nil {
		err = json.Unmarshal(detail, &e.Detail)
	}
	return e, err
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
