package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/replay"
)

// planWriter stores a plan as it is made: items go in chunks (COPY) and the header last, all in
// one transaction, so a plan is visible whole or not at all and its items never sit in memory.
type planWriter struct {
	tx pgx.Tx
	id string
}

// BeginPlan opens the transaction of plan id.
func (s *Replays) BeginPlan(ctx context.Context, id string) (replay.PlanWriter, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, unavailable(err, "save plan")
	}
	return &planWriter{tx: tx, id: id}, nil
}

// Add copies a chunk of items.
func (w *planWriter) Add(ctx context.Context, items []replay.StoredItem) error {
	_, err := w.tx.CopyFrom(ctx, pgx.Identifier{"replay_plan_item"},
		[]string{"plan_id", "seq", "locator", "message_id", "consumer", "destination", "inbox", "action", "error_group", "replay_count", "position", "partition", "note"},
		pgx.CopyFromSlice(len(items), func(i int) ([]any, error) {
			it := items[i]
			return []any{w.id, it.Seq, it.Locator, it.MessageID, it.Consumer, it.Destination, it.Inbox, it.Action,
				it.ErrorGroup, it.ReplayCount, it.Position, it.Partition, it.Note}, nil
		}))
	if err != nil {
		return unavailable(err, "save plan items")
	}
	return nil
}

// Commit writes the header and commits.
func (w *planWriter) Commit(ctx context.Context, p replay.StoredPlan) error {
	actions, _ := json.Marshal(p.Actions)
	warnings, _ := json.Marshal(p.Warnings)
	if p.Warnings == nil {
		warnings = []byte("[]")
	}
	filter := p.Filter
	if filter == nil {
		filter = json.RawMessage("{}")
	}
	groups, _ := json.Marshal(p.ErrorGroups)
	if p.ErrorGroups == nil {
		groups = []byte("{}")
	}
	if _, err := w.tx.Exec(ctx, `INSERT INTO replay_plan (id, actor, source, filter, total, actions, warnings, error_groups)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, w.id, p.Actor, p.Source, filter, p.Total, actions, warnings, groups); err != nil {
		return unavailable(err, "save plan")
	}
	if err := w.tx.Commit(ctx); err != nil {
		return unavailable(err, "save plan")
	}
	return nil
}

// Rollback abandons the plan; after Commit it does nothing.
func (w *planWriter) Rollback(ctx context.Context) { _ = w.tx.Rollback(context.WithoutCancel(ctx)) }

// Plan reads a plan's header. Unknown id → ops.ErrNotFound.
func (s *Replays) Plan(ctx context.Context, id string) (replay.StoredPlan, error) {
	var p replay.StoredPlan
	var actions, warnings, groups []byte
	err := s.pool.QueryRow(ctx, `SELECT id, created_at, actor, source, filter, total, actions, warnings, error_groups
		FROM replay_plan WHERE id = $1`, id).Scan(&p.ID, &p.CreatedAt, &p.Actor, &p.Source, &p.Filter, &p.Total, &actions, &warnings, &groups)
	if isNoRows(err) {
		return p, ops.NotFound("replay plan %q not found", id)
	}
	if err != nil {
		return p, unavailable(err, "replay plan %q", id)
	}
	_ = json.Unmarshal(actions, &p.Actions)
	_ = json.Unmarshal(warnings, &p.Warnings)
	_ = json.Unmarshal(groups, &p.ErrorGroups)
	return p, nil
}

// PlanItems reads up to limit items with seq ≥ from, in seq order.
func (s *Replays) PlanItems(ctx context.Context, planID string, from, limit int) ([]replay.StoredItem, error) {
	// destination as text: scanning jsonb into json.RawMessage validates it, for nothing.
	rows, err := s.pool.Query(ctx, `SELECT seq, locator, message_id, consumer, destination::text, inbox, action, error_group,
			replay_count, position, partition, note
		FROM replay_plan_item WHERE plan_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`, planID, from, limit)
	if err != nil {
		return nil, unavailable(err, "plan items")
	}
	return collectPlanItems(rows)
}

func collectPlanItems(rows pgx.Rows) ([]replay.StoredItem, error) {
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (replay.StoredItem, error) {
		var it replay.StoredItem
		var dest []byte
		err := r.Scan(&it.Seq, &it.Locator, &it.MessageID, &it.Consumer, &dest, &it.Inbox, &it.Action,
			&it.ErrorGroup, &it.ReplayCount, &it.Position, &it.Partition, &it.Note)
		it.Destination = dest
		return it, err
	})
	if err != nil {
		return nil, fmt.Errorf("plan items: %w", err)
	}
	return items, nil
}

// PlanItemsByLocator reads the items of a plan with these locators (RabbitMQ and outbox items:
// Kafka items are found by seq).
func (s *Replays) PlanItemsByLocator(ctx context.Context, planID string, locators []string) ([]replay.StoredItem, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, locator, message_id, consumer, destination::text, inbox, action, error_group,
			replay_count, position, partition, note
		FROM replay_plan_item WHERE plan_id = $1 AND locator = ANY($2) AND partition IS NULL`, planID, locators)
	if err != nil {
		return nil, unavailable(err, "plan items")
	}
	return collectPlanItems(rows)
}

// AnalyzePlanItems refreshes the planner's statistics of the plan items. A job that looks its
// items up by locator runs right after its plan was copied in, long before autovacuum analyzes
// the table; without statistics PostgreSQL reads the whole plan by its primary key for every batch.
func (s *Replays) AnalyzePlanItems(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `ANALYZE replay_plan_item`); err != nil {
		return unavailable(err, "analyze plan items")
	}
	return nil
}

// RecordUnsettled settles as failed, with detail, every item of the job's plan that has no ledger
// row yet, in one statement, and returns how many there were.
func (s *Replays) RecordUnsettled(ctx context.Context, jobID, planID, detail string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `WITH ins AS (
			INSERT INTO replay_ledger (job_id, seq, locator, message_id, outcome, detail, holds)
			SELECT $1, p.seq, p.locator, p.message_id, 'failed', $3, false FROM replay_plan_item p
			WHERE p.plan_id = $2 AND NOT EXISTS (SELECT FROM replay_ledger l WHERE l.job_id = $1 AND l.seq = p.seq)
			ON CONFLICT DO NOTHING RETURNING 1),
		counted AS (UPDATE replay_job SET failed = failed + (SELECT count(*) FROM ins) WHERE id = $1)
		SELECT count(*) FROM ins`, jobID, planID, detail).Scan(&n)
	if err != nil {
		return 0, unavailable(err, "ledger")
	}
	return n, nil
}

// ReplayedLocators returns which of the locators the ledger shows published or in flight. It reads
// on the plan's own transaction: a plan that waited for a second pooled connection while holding
// one deadlocked the pool once as many plans ran as it had connections.
func (w *planWriter) ReplayedLocators(ctx context.Context, locators []string) (map[string]bool, error) {
	rows, err := w.tx.Query(ctx, `SELECT locator FROM replay_ledger
		WHERE holds AND locator = ANY($1)`, locators)
	if err != nil {
		return nil, unavailable(err, "ledger lookup")
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("ledger lookup: %w", err)
	}
	out := make(map[string]bool, len(found))
	for _, l := range found {
		out[l] = true
	}
	return out, nil
}

const jobColumns = `j.id, j.plan_id, j.status, j.actor, j.reason, j.force, j.rate_per_second, j.total, j.next_seq,
	j.cancel_requested, coalesce(j.lease_owner, ''), j.error, j.created_at, j.started_at, j.finished_at, j.approved_by,
	j.published, j.skipped, j.failed, j.paused, j.source_key`

func scanJob(r pgx.CollectableRow) (replay.Job, error) {
	var j replay.Job
	err := r.Scan(&j.ID, &j.PlanID, &j.Status, &j.Actor, &j.Reason, &j.Force, &j.RatePerSecond, &j.Total, &j.NextSeq,
		&j.CancelRequested, &j.LeaseOwner, &j.Error, &j.CreatedAt, &j.StartedAt, &j.FinishedAt, &j.ApprovedBy, &j.Published, &j.Skipped, &j.Failed, &j.Paused, &j.SourceKey)
	return j, err
}

// CreateJob stores a pending job.
func (s *Replays) CreateJob(ctx context.Context, j replay.Job) error {
	status := j.Status
	if status == "" {
		status = replay.JobPending
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO replay_job (id, plan_id, status, actor, reason, force, rate_per_second, total, source_key)
		VALUES ($1, $2, $8, $3, $4, $5, $6, $7, $9)`, j.ID, j.PlanID, j.Actor, j.Reason, j.Force, j.RatePerSecond, j.Total, status, j.SourceKey)
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
func (s *Replays) busySource(ctx context.Context, key string) error {
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
func (s *Replays) Job(ctx context.Context, id string) (replay.Job, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+jobColumns+` FROM replay_job j WHERE j.id = $1`, id)
	j, err := pgx.CollectExactlyOneRow(rows, scanJob)
	if isNoRows(err) {
		return j, ops.NotFound("replay job %q not found", id)
	}
	if err != nil {
		return j, unavailable(err, "replay job %q", id)
	}
	return j, nil
}

// Jobs lists recent jobs, newest first.
func (s *Replays) Jobs(ctx context.Context, limit int) ([]replay.Job, error) {
	return collect(ctx, s.pool, scanJob, "replay jobs", `SELECT `+jobColumns+` FROM replay_job j ORDER BY j.created_at DESC LIMIT $1`, limit)
}

// ClaimJob leases the oldest pending job, or a running one whose runner's lease expired (its
// replica died), to owner. FOR UPDATE SKIP LOCKED makes two replicas claim different jobs.
// Returns ops.ErrNotFound when there is nothing to run.
func (s *Replays) ClaimJob(ctx context.Context, owner string, lease time.Duration) (replay.Job, error) {
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
func (s *Replays) RenewLease(ctx context.Context, jobID, owner string, lease time.Duration, nextSeq int) (held, cancel bool, err error) {
	return s.holdLease(ctx, "renew lease", "next_seq = greatest(next_seq, $4), paused = ''", jobID, owner, lease, nextSeq)
}

// holdLease extends owner's lease of its running job with one UPDATE that also sets set (its
// parameter $4 is arg) and reads whether cancellation was requested; held is false when another
// replica took the job over.
func (s *Replays) holdLease(ctx context.Context, what, set, jobID, owner string, lease time.Duration, arg any) (held, cancel bool, err error) {
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
func (s *Replays) PauseJob(ctx context.Context, jobID, owner string, lease time.Duration, why string) (held, cancel bool, err error) {
	return s.holdLease(ctx, "pause job", "paused = $4", jobID, owner, lease, why)
}

// FinishJob ends owner's run with a final status.
func (s *Replays) FinishJob(ctx context.Context, jobID, owner, status, errText string) error {
	_, err := s.pool.Exec(ctx, `UPDATE replay_job SET status = $3, error = $4, finished_at = now(), lease_until = NULL, paused = ''
		WHERE id = $1 AND lease_owner = $2`, jobID, owner, status, errText)
	if err != nil {
		return unavailable(err, "finish job")
	}
	return nil
}

// RequestCancel asks a job to stop; a pending job is cancelled at once. Returns the job's status.
func (s *Replays) RequestCancel(ctx context.Context, jobID string) (string, error) {
	var status string
	err := s.pool.QueryRow(ctx, `UPDATE replay_job SET cancel_requested = true,
			status = CASE WHEN status IN ('pending', 'awaiting_approval') THEN 'cancelled' ELSE status END,
			finished_at = CASE WHEN status IN ('pending', 'awaiting_approval') THEN now() ELSE finished_at END
		WHERE id = $1 RETURNING status`, jobID).Scan(&status)
	if isNoRows(err) {
		return "", ops.NotFound("replay job %q not found", jobID)
	}
	if err != nil {
		return "", unavailable(err, "cancel job")
	}
	return status, nil
}

// Claim claims messages for jobID and records final outcomes (skips, failures) of messages it
// will not move, in one statement. The partial unique index on locator guarantees that, however
// many jobs race, one claim per message succeeds. A claim that loses is looked up once more to
// tell a resumed run's own rows from another job's.
func (s *Replays) Claim(ctx context.Context, jobID string, claims []replay.LedgerClaim, finals []replay.LedgerOutcome) (map[int]replay.LedgerState, error) {
	n := len(claims) + len(finals)
	if n == 0 {
		return nil, nil
	}
	seqs := make([]int32, 0, n)
	locators, ids, outcomes, details := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	for _, c := range claims {
		seqs, locators, ids = append(seqs, int32(c.Seq)), append(locators, c.Locator), append(ids, c.MessageID)
		outcomes, details = append(outcomes, replay.LedgerActive), append(details, "")
	}
	for _, f := range finals {
		seqs, locators, ids = append(seqs, int32(f.Seq)), append(locators, f.Locator), append(ids, f.MessageID)
		outcomes, details = append(outcomes, f.Outcome), append(details, f.Detail)
	}
	args := []any{jobID, seqs, locators, ids, outcomes, details}
	// Conflicts are rare (a resumed run, a concurrent replay of the same message): try the plain
	// insert, half the cost of a speculative one, and only on a unique violation — which rolls the
	// whole statement back — insert again with ON CONFLICT DO NOTHING.
	rows, err := s.pool.Query(ctx, fmt.Sprintf(claimSQL, ""), args...)
	var won []int32
	if err == nil {
		won, err = pgx.CollectRows(rows, pgx.RowTo[int32])
	}
	if isUniqueViolation(err) {
		rows, err = s.pool.Query(ctx, fmt.Sprintf(claimSQL, "ON CONFLICT DO NOTHING"), args...)
		if err == nil {
			won, err = pgx.CollectRows(rows, pgx.RowTo[int32])
		}
	}
	if err != nil {
		return nil, unavailable(err, "ledger claim")
	}
	out := make(map[int]replay.LedgerState, len(claims))
	for _, seq := range won {
		out[int(seq)] = replay.Claimed
	}
	if len(won) == len(claims) {
		return out, nil
	}
	var lost []int32
	for _, c := range claims {
		if _, ok := out[c.Seq]; !ok {
			lost = append(lost, int32(c.Seq))
			out[c.Seq] = replay.ReplayedByOther // unless this job's own row says otherwise
		}
	}
	rows, err = s.pool.Query(ctx, `SELECT seq, outcome FROM replay_ledger WHERE job_id = $1 AND seq = ANY($2)`, jobID, lost)
	if err != nil {
		return nil, unavailable(err, "ledger claim")
	}
	var seq int
	var outcome string
	if _, err := pgx.ForEachRow(rows, []any{&seq, &outcome}, func() error {
		if outcome == replay.LedgerActive {
			out[seq] = replay.MineInFlight
		} else {
			out[seq] = replay.AlreadyMine
		}
		return nil
	}); err != nil {
		return nil, unavailable(err, "ledger claim")
	}
	return out, nil
}

// uniqueViolation is PostgreSQL's SQLSTATE for a duplicate key.
const uniqueViolation = "23505"

// claimSQL inserts claims ("active", holding the locator) and final rows, counts the final ones
// in the job, and returns the claims it inserted. %s is the conflict clause.
const claimSQL = `WITH ins AS (
		INSERT INTO replay_ledger (job_id, seq, locator, message_id, outcome, detail, holds)
		SELECT $1, s, l, m, o, d, o = 'active' FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u(s, l, m, o, d)
		%s
		RETURNING seq, outcome),
	counted AS (
		UPDATE replay_job SET skipped = skipped + (SELECT count(*) FROM ins WHERE outcome = 'skipped'),
			failed = failed + (SELECT count(*) FROM ins WHERE outcome = 'failed')
		WHERE id = $1 AND EXISTS (SELECT FROM ins WHERE outcome <> 'active'))
	SELECT seq FROM ins WHERE outcome = 'active'`

// Holders names, for each locator the ledger holds (published or in flight), the job holding it.
func (s *Replays) Holders(ctx context.Context, locators []string) (map[string]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT locator, job_id FROM replay_ledger WHERE holds AND locator = ANY($1)`, locators)
	if err != nil {
		return nil, unavailable(err, "ledger holders")
	}
	out := map[string]string{}
	var locator, job string
	if _, err := pgx.ForEachRow(rows, []any{&locator, &job}, func() error { out[locator] = job; return nil }); err != nil {
		return nil, unavailable(err, "ledger holders")
	}
	return out, nil
}

// Record writes final outcomes of messages this job never claimed (skips, messages that were gone).
// A message already recorded keeps its first outcome.
func (s *Replays) Record(ctx context.Context, jobID string, finals []replay.LedgerOutcome) error {
	_, err := s.Claim(ctx, jobID, nil, finals)
	return err
}

// Settle records the outcome of messages this job claimed. Plain publishes (no detail) are the
// common case and take one update by primary key that, touching no indexed column, is a HOT
// update; failures and annotated publishes carry their detail. Only rows still active change: an
// outcome, once recorded, is final. The job's counts move in the same transaction.
func (s *Replays) Settle(ctx context.Context, jobID string, outcomes []replay.LedgerOutcome) error {
	if len(outcomes) == 0 {
		return nil
	}
	var plain []int32
	var seqs []int32
	var results, details []string
	for _, o := range outcomes {
		if o.Outcome == replay.LedgerPublished && o.Detail == "" {
			plain = append(plain, int32(o.Seq))
			continue
		}
		seqs, results, details = append(seqs, int32(o.Seq)), append(results, o.Outcome), append(details, o.Detail)
	}
	b := &pgx.Batch{}
	if len(plain) > 0 {
		b.Queue(`WITH upd AS (
				UPDATE replay_ledger SET outcome = 'published', at = now()
				WHERE job_id = $1 AND seq = ANY($2) AND outcome = 'active' RETURNING 1)
			UPDATE replay_job SET published = published + (SELECT count(*) FROM upd) WHERE id = $1`, jobID, plain)
	}
	if len(seqs) > 0 {
		b.Queue(`WITH upd AS (
				UPDATE replay_ledger r SET outcome = u.o, detail = u.d, holds = u.o = 'published', at = now()
				FROM unnest($2::int[], $3::text[], $4::text[]) AS u(s, o, d)
				WHERE r.job_id = $1 AND r.seq = u.s AND r.outcome = 'active' RETURNING r.outcome)
			UPDATE replay_job SET published = published + (SELECT count(*) FROM upd WHERE outcome = 'published'),
				failed = failed + (SELECT count(*) FROM upd WHERE outcome = 'failed'),
				skipped = skipped + (SELECT count(*) FROM upd WHERE outcome = 'skipped')
			WHERE id = $1`, jobID, seqs, results, details)
	}
	// One round trip, one implicit transaction: the ledger and the counts move together.
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return unavailable(err, "ledger settle")
	}
	return nil
}

// Ledger lists a job's rows (failed and skipped first when problemsFirst), up to limit.
func (s *Replays) Ledger(ctx context.Context, jobID string, limit int) ([]replay.LedgerEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, locator, message_id, outcome, detail, at FROM replay_ledger
		WHERE job_id = $1 ORDER BY CASE outcome WHEN 'failed' THEN 0 WHEN 'active' THEN 1 WHEN 'skipped' THEN 2 ELSE 3 END, seq
		LIMIT $2`, jobID, limit)
	if err != nil {
		return nil, unavailable(err, "ledger")
	}
	entries, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (replay.LedgerEntry, error) {
		var e replay.LedgerEntry
		err := r.Scan(&e.Seq, &e.Locator, &e.MessageID, &e.Outcome, &e.Detail, &e.At)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return entries, nil
}

// LedgerOutcomes returns the recorded outcome of some of a job's items.
func (s *Replays) LedgerOutcomes(ctx context.Context, jobID string, seqs []int) (map[int]string, error) {
	s32 := make([]int32, len(seqs))
	for i, v := range seqs {
		s32[i] = int32(v)
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, outcome FROM replay_ledger WHERE job_id = $1 AND seq = ANY($2)`, jobID, s32)
	if err != nil {
		return nil, unavailable(err, "ledger outcomes")
	}
	out := map[int]string{}
	var seq int
	var outcome string
	_, err = pgx.ForEachRow(rows, []any{&seq, &outcome}, func() error { out[seq] = outcome; return nil })
	if err != nil {
		return nil, fmt.Errorf("ledger outcomes: %w", err)
	}
	return out, nil
}

// ApproveJob moves an awaiting job to pending, recording who approved it. It reports false when
// the job was not awaiting approval.
func (s *Replays) ApproveJob(ctx context.Context, jobID, approver string) (bool, error) {
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
func (s *Replays) JobsOfPlan(ctx context.Context, planID string) ([]replay.Job, error) {
	return collect(ctx, s.pool, scanJob, fmt.Sprintf("jobs of plan %q", planID), `SELECT `+jobColumns+` FROM replay_job j WHERE j.plan_id = $1
		ORDER BY j.created_at DESC, j.id DESC`, planID)
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

// ReplaysOf lists the ledger rows of these message ids with their jobs, oldest first, at most
// limit. Errors wrap ops.ErrUnavailable.
func (s *Replays) ReplaysOf(ctx context.Context, ids []string, limit int) ([]replay.Traced, error) {
	rows, err := s.pool.Query(ctx, `SELECT l.seq, l.locator, l.message_id, l.outcome, l.detail, l.at,
			j.id, j.status, j.actor, j.plan_id
		FROM replay_ledger l JOIN replay_job j ON j.id = l.job_id
		WHERE l.message_id = ANY($1) AND l.message_id <> '' ORDER BY l.at, l.job_id, l.seq LIMIT $2`, ids, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w: %w", ops.ErrUnavailable, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (replay.Traced, error) {
		var e replay.Traced
		err := r.Scan(&e.Seq, &e.Locator, &e.MessageID, &e.Outcome, &e.Detail, &e.At, &e.JobID, &e.JobStatus, &e.Actor, &e.PlanID)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: %w: %w", ops.ErrUnavailable, err)
	}
	return out, nil
}
