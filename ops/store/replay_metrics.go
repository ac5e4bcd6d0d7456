package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// ReplayOutcomeCounts returns how many messages of all replay jobs have each settled outcome
// (published, skipped, failed), for the console's Prometheus counter. Messages in flight
// ("active") are left out: a settled outcome is final and ledger rows are never deleted, so each
// count only grows. It sums the jobs' counts, which the ledger's transactions keep. Errors: ops.ErrUnavailable when the store cannot be read.
func (s *Replays) ReplayOutcomeCounts(ctx context.Context) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT o, n FROM (SELECT sum(published) AS p, sum(skipped) AS s, sum(failed) AS f FROM replay_job) t,
		LATERAL (VALUES ('published', coalesce(p, 0)), ('skipped', coalesce(s, 0)), ('failed', coalesce(f, 0))) AS v(o, n) WHERE n > 0`)
	if err != nil {
		return nil, unavailable(err, "replay outcome counts")
	}
	out := map[string]int64{}
	var outcome string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&outcome, &n}, func() error { out[outcome] = n; return nil }); err != nil {
		return nil, unavailable(err, "replay outcome counts")
	}
	return out, nil
}
