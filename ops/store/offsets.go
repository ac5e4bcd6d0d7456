package store

import (
	"context"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/offsets"
)

// CreateOffsetPlan stores a new plan. A duplicate id is ops.ErrConflict.
func (s *OffsetPlans) CreateOffsetPlan(ctx context.Context, p offsets.StoredPlan) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO offset_move_plan (id, cluster, group_name, topic, created_by, body)
		VALUES ($1, $2, $3, $4, $5, $6)`, p.ID, p.Cluster, p.Group, p.Topic, p.CreatedBy, p.Body)
	if err != nil {
		return unavailable(err, "offset plan %s: create", p.ID)
	}
	return nil
}

// OffsetPlan reads one plan; an unknown id is ops.ErrNotFound.
func (s *OffsetPlans) OffsetPlan(ctx context.Context, id string) (offsets.StoredPlan, error) {
	p := offsets.StoredPlan{ID: id}
	var appliedBy, approvedBy *string
	err := s.pool.QueryRow(ctx, `SELECT cluster, group_name, topic, created_by, created_at, body, applied_at, applied_by, approved_by
		FROM offset_move_plan WHERE id = $1`, id).
		Scan(&p.Cluster, &p.Group, &p.Topic, &p.CreatedBy, &p.CreatedAt, &p.Body, &p.AppliedAt, &appliedBy, &approvedBy)
	if isNoRows(err) {
		return p, ops.NotFound("offset plan %q not found", ops.Echo(id))
	}
	if err != nil {
		return p, unavailable(err, "offset plan %q", id)
	}
	if appliedBy != nil {
		p.AppliedBy = *appliedBy
	}
	if approvedBy != nil {
		p.ApprovedBy = *approvedBy
	}
	return p, nil
}

// ApproveOffsetPlan records the second person of a four-eyes plan. A plan already applied or
// approved is ops.ErrConflict; an unknown one ops.ErrNotFound.
func (s *OffsetPlans) ApproveOffsetPlan(ctx context.Context, id, approver string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE offset_move_plan SET approved_by = $2
		WHERE id = $1 AND applied_at IS NULL AND approved_by IS NULL`, id, approver)
	if err != nil {
		return unavailable(err, "offset plan %q: approve", id)
	}
	if tag.RowsAffected() == 0 {
		if _, err := s.OffsetPlan(ctx, id); err != nil {
			return err
		}
		return ops.Conflict("offset plan %q was already approved or applied", id)
	}
	return nil
}

// MarkOffsetPlanApplied records that the plan's offsets were committed. A plan already applied
// is ops.ErrConflict.
func (s *OffsetPlans) MarkOffsetPlanApplied(ctx context.Context, id, actor string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE offset_move_plan SET applied_at = now(), applied_by = $2
		WHERE id = $1 AND applied_at IS NULL`, id, actor)
	if err != nil {
		return unavailable(err, "offset plan %q: mark applied", id)
	}
	if tag.RowsAffected() == 0 {
		return ops.Conflict("offset plan %q was already applied", id)
	}
	return nil
}
