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
	return s.auditNaming(ctx, "(detail #- '{source,edit}')::text", needles, rows, since, limit)
}
