package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops/replay"
)

// StartPlanning writes the header of a plan being made in the background: state planning, its
// replica and a first heartbeat. Its totals are written when it is ready (planWriter.Commit).
func (s *ReplayPlans) StartPlanning(ctx context.Context, p replay.StoredPlan) error {
	filter := p.Filter
	if filter == nil {
		filter = json.RawMessage("{}")
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO replay_plan (id, actor, source, filter, total, actions, state, estimate, owner, heartbeat)
		VALUES ($1, $2, $3, $4, 0, '{}', 'planning', $5, $6, now())`, p.ID, p.Actor, p.Source, filter, p.Estimate, p.Owner); err != nil {
		return unavailable(err, "save plan")
	}
	return nil
}

// PlanProgress records how far a planning plan got, beats its heartbeat, and returns its state
// (unchanged when it is no longer planning). Unknown id → "" and no error: the plan was refused.
func (s *ReplayPlans) PlanProgress(ctx context.Context, id string, planned int, actions map[string]int) (string, error) {
	counts, _ := json.Marshal(actions)
	if actions == nil {
		counts = []byte("{}")
	}
	var state string
	err := s.pool.QueryRow(ctx, `WITH beat AS (
			UPDATE replay_plan SET planned = $2, actions = $3, heartbeat = now() WHERE id = $1 AND state = 'planning' RETURNING state)
		SELECT state FROM beat UNION ALL SELECT state FROM replay_plan WHERE id = $1 AND NOT EXISTS (SELECT FROM beat)`,
		id, planned, counts).Scan(&state)
	if isNoRows(err) {
		return "", nil
	}
	if err != nil {
		return "", unavailable(err, "plan progress")
	}
	return state, nil
}

// EndPlanning ends a planning plan as state (cancelled or failed) with why and drops its items;
// false when it was no longer planning.
func (s *ReplayPlans) EndPlanning(ctx context.Context, id, state, why string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE replay_plan SET state = $2, error = $3, finished_at = now()
		WHERE id = $1 AND state = 'planning'`, id, state, why)
	if err != nil {
		return false, unavailable(err, "end plan %q", id)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	return true, s.dropPlanItems(ctx, id)
}

// FailStalePlans ends as failed every planning plan whose heartbeat is older than olderThan.
func (s *ReplayPlans) FailStalePlans(ctx context.Context, olderThan time.Duration, why string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `UPDATE replay_plan SET state = 'failed', error = $2, finished_at = now()
		WHERE state = 'planning' AND heartbeat < now() - make_interval(secs => $1) RETURNING id`, olderThan.Seconds(), why)
	if err != nil {
		return nil, unavailable(err, "fail stale plans")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, unavailable(err, "fail stale plans")
	}
	for _, id := range ids {
		if err := s.dropPlanItems(ctx, id); err != nil {
			return ids, err
		}
	}
	return ids, nil
}

// DeletePlan removes a plan header and its items.
func (s *ReplayPlans) DeletePlan(ctx context.Context, id string) error {
	if err := s.dropPlanItems(ctx, id); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM replay_plan WHERE id = $1 AND NOT EXISTS (SELECT FROM replay_job WHERE plan_id = $1)`, id); err != nil {
		return unavailable(err, "delete plan %q", id)
	}
	return nil
}

func (s *ReplayPlans) dropPlanItems(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(context.WithoutCancel(ctx), `DELETE FROM replay_plan_item WHERE plan_id = $1`, id); err != nil {
		return unavailable(err, "drop plan items of %q", id)
	}
	return nil
}
