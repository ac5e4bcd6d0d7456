package store

import (
	"context"
	"time"

	"github.com/redrive/redrive/ops/foureyes"
)

// MovedSince is how much person moved from source since since (foureyes.Moves). Errors wrap
// ops.ErrUnavailable.
func (s *ReplayJobs) MovedSince(ctx context.Context, person, source string, since time.Time) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(n), 0) FROM four_eyes_move WHERE person = $1 AND source = $2 AND at >= $3`,
		person, source, since).Scan(&n)
	if err != nil {
		return 0, unavailable(err, "four-eyes: moves of %s", person)
	}
	return n, nil
}

// RecordMove adds one action's volume to the ledger, and drops that person's rows for the source
// older than the longest window. Errors wrap ops.ErrUnavailable.
func (s *ReplayJobs) RecordMove(ctx context.Context, m foureyes.Move) error {
	_, err := s.pool.Exec(ctx, `WITH old AS (DELETE FROM four_eyes_move WHERE person = $1 AND source = $2 AND at < now() - interval '31 days')
		INSERT INTO four_eyes_move (person, source, action, ref, n) VALUES ($1, $2, $3, $4, $5)`,
		m.Person, m.Source, m.Action, m.Ref, m.N)
	if err != nil {
		return unavailable(err, "four-eyes: record a move of %s", m.Person)
	}
	return nil
}
