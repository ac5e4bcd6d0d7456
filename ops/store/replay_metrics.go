package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
)

// ReplayOutcomeCounts returns how many messages of all replay jobs have each settled outcome
// (published, skipped, failed), for the console's Prometheus counter. Messages in flight
// ("active") are left out: a settled outcome is final and ledger rows are never deleted, so each
// count only grows. It counts the whole ledger, so callers should not run it more than every few
// seconds (the exporter caches it). Errors: ops.ErrUnavailable when the store cannot be read.
func (s *Store) ReplayOutcomeCounts(ctx context.Context) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT outcome, count(*) FROM replay_ledger WHERE outcome <> 'active' GROUP BY outcome`)
	if err != nil {
		return nil, fmt.Errorf("replay outcome counts: %w: %w", ops.ErrUnavailable, err)
	}
	out := map[string]int64{}
	var outcome string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&outcome, &n}, func() error { out[outcome] = n; return nil }); err != nil {
		return nil, fmt.Errorf("replay outcome counts: %w: %w", ops.ErrUnavailable, err)
	}
	return out, nil
}
