package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/replay"
)

const jobColumns = `j.id, j.plan_id, j.status, j.actor, j.reason, j.force, j.rate_per_second, j.total, j.next_seq,
	j.cancel_requested, coalesce(j.lease_owner, ''), j.error, j.created_at, j.started_at, j.finished_at, j.approved_by,
	j.published, j.skipped, j.failed, j.paused, j.source_key, j.person`

func scanJob(r pgx.CollectableRow) (replay.Job, error) {
	var j replay.Job
	err := r.Scan(&j.ID, &j.PlanID, &j.Status, &j.Actor, &j.Reason, &j.Force, &j.RatePerSecond, &j.Total, &j.NextSeq,
		&j.CancelRequested, &j.LeaseOwner, &j.Error, &j.CreatedAt, &j.StartedAt, &j.FinishedAt, &j.ApprovedBy, &j.Published, &j.Skipped, &j.Failed, &j.Paused, &j.SourceKey, &j.Person)
	return j, err
}

// CreateJob stores a pending job.
func (s *ReplayJobs) CreateJob(ctx context.Context, j replay.Job) error {
	status := j.Status
	if status == "" {
		status = replay.JobPending
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO replay_job (id, plan_id, status, actor, reason, force, rate_per_second, total, source_key, person)
		VALUES ($1, $2, $8, $3, $4, $5, $6, $7, $9, $10)`, j.ID, j.PlanID, j.Actor, j.Reason, j.Force, j.RatePerSecond, j.Total, status,
		j.SourceKey, j.Person)
	if isUniqueViolation(err) {
		return s.busySource(ctx, j.SourceKey)
	}
	if err != nil {
		return unavailable(err, "create job")
	}
	return nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == uniqueViolation
}

// busySource is the conflict of a second job on a source another job is moving, naming that job.
func (s *ReplayJobs) busySource(ctx context.Context, key string) error {
	var id, actor, status string
	err := s.pool.QueryRow(ctx, `SELECT id, actor, status FROM replay_job WHERE source_key = $1 AND status IN ('pending', 'running')`,
		key).Scan(&id, &actor, &status)
	if err != nil {
		return ops.Conflict("another replay job is moving %s; wait for it to finish or cancel it", key)
	}
	return ops.Conflict("replay job %s (started by %s, %s) is moving %s; one job moves a source at a time: wait for it "+
		"to finish or cancel it, then run this plan", id, actor, status, key)
}

// Job reads a job with its ledger counts. Unknown id → ops.ErrNotFound.
func (s *ReplayJobs) Job(ctx context.Context, id string) (replay.Job, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+jobColumns+` FROM replay_job j WHERE j.id = $1`, id)
	j, err := pgx.CollectExactlyOneRow(rows, scanJob)
	if isNoRows(err) {
		return j, ops.NotFound("replay job %q not found", ops.Echo(id))
	}
	if err != nil {
		return j, unavailable(err, "replay job %q", id)
	}
	return j, nil
}

// Jobs lists recent jobs, newest first.
func (s *ReplayJobs) Jobs(ctx context.Context, limit int) ([]replay.Job, error) {
	return collect(ctx, s.pool, scanJob, "replay jobs", `SELECT `+jobColumns+` FROM replay_job j ORDER BY j.created_at DESC LIMIT $1`, limit)
}

// ClaimJob leases the oldest pending job, or a running one whose runner's lease expired (its
// replica died), to owner. FOR UPDATE SKIP LOCKED makes two replicas claim different jobs.
// Returns ops.ErrNotFound when there is nothing to run.
func (s *ReplayJobs) ClaimJob(ctx context.Context, owner string, lease time.Duration) (replay.Job, error) {
	var id string
	err := s.pool.QueryRow(ctx, `UPDATE replay_job SET status = 'running', lease_owner = $1,
			lease_until = now() + $2::interval, started_at = coalesce(started_at, now())
		WHERE id = (SELECT id FROM replay_job
			WHERE status = 'pending' OR (status = 'running' AND lease_until < now())
			ORDER BY created_at FOR UPDATE SKIP LOCKED LIMIT 1)
		RETURNING id`, owner, lease.String()).Scan(&id)
	if isNoRows(err) {
		return replay.Job{}, ops.ErrNotFound
	}
	if err != nil {
		return replay.Job{}, unavailable(err, "claim job")
	}
	return s.Job(ctx, id)
}

// RenewLease extends owner's lease and records progress. It reports false when the lease was lost
// (another replica took the job over), and whether cancellation was requested.
func (s *ReplayJobs) RenewLease(ctx context.Context, jobID, owner string, lease time.Duration, nextSeq int) (held, cancel bool, err error) {
	return s.holdLease(ctx, "renew lease", "next_seq = greatest(next_seq, $4), paused = ''", jobID, owner, lease, nextSeq)
}

// holdLease extends owner's lease of its running job with one UPDATE that also sets set (its
// parameter $4 is arg) and reads whether cancellation was requested; held is false when another
// replica took the job over.
func (s *ReplayJobs) holdLease(ctx context.Context, what, set, jobID, owner string, lease time.Duration, arg any) (held, cancel bool, err error) {
	err = s.pool.QueryRow(ctx, `UPDATE replay_job SET lease_until = now() + $3::interval, `+set+`
		WHERE id = $1 AND lease_owner = $2 AND status = 'running' RETURNING cancel_requested`,
		jobID, owner, lease.String(), arg).Scan(&cancel)
	if isNoRows(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, unavailable(err, "%s", what)
	}
	return true, cancel, nil
}

// PauseJob records why owner's running job waits (a dependency went away) and extends its lease;
// the next RenewLease clears it. It reports, like RenewLease, whether the lease is still held and
// whether cancellation was requested.
func (s *ReplayJobs) PauseJob(ctx context.Context, jobID, owner string, lease time.Duration, why string) (held, cancel bool, err error) {
	return s.holdLease(ctx, "pause job", "paused = $4", jobID, owner, lease, why)
}

// FinishJob ends a job this owner holds with status. Messages it still holds in flight — claimed
// before an interruption and never settled, as when an operator cancels a job paused on a broker
// that stopped answering — are settled failed in the same statement, releasing their claims:
// left active they would hold those messages against every later replay, which would call them
// replayed although the job may never have published them. Failed, not skipped: the job may have
// published them before the interruption, so a later plan checks the consumer's inbox again.
func (s *ReplayJobs) FinishJob(ctx context.Context, jobID, owner, status, errText string) error {
	// The job's row first, in a statement of its own: a claim under way holds it (Claim), and
	// read committed gives the release below a snapshot taken after that claim committed. In one
	// statement the release would use a snapshot from before the wait and miss the claim's rows.
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT FROM replay_job WHERE id = $1 AND lease_owner = $2 FOR UPDATE`, jobID, owner); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `WITH released AS (
				UPDATE replay_ledger SET outcome = 'failed', holds = false, at = now(),
					detail = 'the job ended (' || $3 || ') with this message in flight after an interruption: it may have been published before it'
				WHERE job_id = $1 AND outcome = 'active' AND EXISTS (SELECT FROM replay_job WHERE id = $1 AND lease_owner = $2) RETURNING 1)
			UPDATE replay_job SET status = $3, error = $4, finished_at = now(), lease_until = NULL, paused = '',
				failed = failed + (SELECT count(*) FROM released)
			WHERE id = $1 AND lease_owner = $2`, jobID, owner, status, errText)
		return err
	})
	if err != nil {
		return unavailable(err, "finish job")
	}
	return nil
}

// RequestCancel asks a job to stop; a pending job is cancelled at once. Returns the job's status.
func (s *ReplayJobs) RequestCancel(ctx context.Context, jobID string) (string, error) {
	var status string
	err := s.pool.QueryRow(ctx, `UPDATE replay_job SET cancel_requested = true,
			status = CASE WHEN status IN ('pending', 'awaiting_approval') THEN 'cancelled' ELSE status END,
			finished_at = CASE WHEN status IN ('pending', 'awaiting_approval') THEN now() ELSE finished_at END
		WHERE id = $1 RETURNING status`, jobID).Scan(&status)
	if isNoRows(err) {
		return "", ops.NotFound("replay job %q not found", ops.Echo(jobID))
	}
	if err != nil {
		return "", unavailable(err, "cancel job")
	}
	return status, nil
}

// uniqueViolation is PostgreSQL's SQLSTATE for a duplicate key.
const uniqueViolation = "23505"

// ApproveJob moves an awaiting job to pending, recording who approved it. It reports false when
// the job was not awaiting approval.
func (s *ReplayJobs) ApproveJob(ctx context.Context, jobID, approver string) (bool, error) {
	var key string
	err := s.pool.QueryRow(ctx, `UPDATE replay_job SET status = 'pending', approved_by = $2
		WHERE id = $1 AND status = 'awaiting_approval' RETURNING source_key`, jobID, approver).Scan(&key)
	if isNoRows(err) {
		return false, nil
	}
	if isUniqueViolation(err) {
		return false, s.busySource(ctx, jobKeyOf(ctx, s.db, jobID))
	}
	if err != nil {
		return false, unavailable(err, "approve job")
	}
	return true, nil
}

func jobKeyOf(ctx context.Context, s db, jobID string) string {
	var key string
	_ = s.pool.QueryRow(ctx, `SELECT source_key FROM replay_job WHERE id = $1`, jobID).Scan(&key)
	return key
}

// JobsOfPlan lists the jobs that ran (or run) plan planID, newest first: the plan page says a plan
// already ran and what a second run does. An unknown plan has no jobs (no error).
// Errors: ops.ErrUnavailable when the store cannot be read.
func (s *ReplayJobs) JobsOfPlan(ctx context.Context, planID string) ([]replay.Job, error) {
	return collect(ctx, s.pool, scanJob, fmt.Sprintf("jobs of plan %q", planID), `SELECT `+jobColumns+` FROM replay_job j WHERE j.plan_id = $1
		ORDER BY j.created_at DESC, j.id DESC`, planID)
}
