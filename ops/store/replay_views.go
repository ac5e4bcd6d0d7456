package store

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops/replay"
)

// JobsOfPlan lists the jobs that ran (or run) plan planID, newest first: the plan page says a plan
// already ran and what a second run does. An unknown plan has no jobs (no error).
// Errors: ops.ErrUnavailable when the store cannot be read.
func (s *Replays) JobsOfPlan(ctx context.Context, planID string) ([]replay.Job, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+jobColumns+` FROM replay_job j WHERE j.plan_id = $1
		ORDER BY j.created_at DESC, j.id DESC`, planID)
	if err != nil {
		return nil, unavailable(err, "jobs of plan %q", planID)
	}
	jobs, err := pgx.CollectRows(rows, scanJob)
	if err != nil {
		return nil, unavailable(err, "jobs of plan %q", planID)
	}
	return jobs, nil
}

// FailureGroups counts a job's failed messages per reason, most frequent first (then by reason),
// at most limit groups: one broken destination shows as one row, not 40,000.
// Errors: ops.ErrUnavailable when the store cannot be read.
func (s *Replays) FailureGroups(ctx context.Context, jobID string, limit int) ([]replay.FailureGroup, error) {
	rows, err := s.pool.Query(ctx, `SELECT detail, count(*) FROM replay_ledger WHERE job_id = $1 AND outcome = 'failed'
		GROUP BY detail ORDER BY count(*) DESC, detail LIMIT $2`, jobID, limit)
	if err != nil {
		return nil, unavailable(err, "failure groups of %q", jobID)
	}
	groups, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (replay.FailureGroup, error) {
		var g replay.FailureGroup
		err := r.Scan(&g.Detail, &g.Count)
		return g, err
	})
	if err != nil {
		return nil, unavailable(err, "failure groups of %q", jobID)
	}
	return groups, nil
}

// PlanRoutes reads the route of each of the plans planIDs, sampling the first sample items of
// each for its destinations. A plan that does not exist is absent from the map.
// Errors: ops.ErrUnavailable when the store cannot be read.
func (s *Replays) PlanRoutes(ctx context.Context, planIDs []string, sample int) (map[string]replay.PlanRoute, error) {
	out := make(map[string]replay.PlanRoute, len(planIDs))
	if len(planIDs) == 0 {
		return out, nil
	}
	// The sample is read by the primary key (plan_id, seq); the partition is dropped so that a
	// Kafka plan over 12 partitions of one topic shows one destination.
	rows, err := s.pool.Query(ctx, `SELECT p.id, p.source::text, d.dest FROM replay_plan p
		LEFT JOIN LATERAL (
			SELECT DISTINCT (i.destination - 'partition' - 'partition_source')::text AS dest
			FROM (SELECT destination FROM replay_plan_item WHERE plan_id = p.id ORDER BY seq LIMIT $2) i
			WHERE i.destination ->> 'kind' <> '') d ON true
		WHERE p.id = ANY($1) ORDER BY p.id, d.dest`, planIDs, sample)
	if err != nil {
		return nil, unavailable(err, "plan routes")
	}
	var id, source string
	var dest *string
	if _, err := pgx.ForEachRow(rows, []any{&id, &source, &dest}, func() error {
		r, ok := out[id]
		if !ok {
			r.Source = json.RawMessage(source)
		}
		if dest != nil {
			r.Destinations = append(r.Destinations, json.RawMessage(*dest))
		}
		out[id] = r
		return nil
	}); err != nil {
		return nil, unavailable(err, "plan routes")
	}
	return out, nil
}
