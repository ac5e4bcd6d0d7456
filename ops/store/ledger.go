package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/replay"
)

// Claim claims messages for jobID and records final outcomes (skips, failures) of messages it
// will not move, in one statement. The partial unique index on locator guarantees that, however
// many jobs race, one claim per message succeeds. A claim that loses is looked up once more to
// tell a resumed run's own rows from another job's. A job that has ended (finished, or cancelled
// before it ran) claims nothing: replay.ErrJobEnded. The statement holds the job's row (FOR SHARE)
// while it inserts, so FinishJob, which locks the row before it releases the job's claims, waits
// for a claim under way and then sees it: a claim written into an ended job, by a replica whose
// lease had run out, would otherwise hold its messages against every later replay for good.
func (s *ReplayLedger) Claim(ctx context.Context, jobID string, claims []replay.LedgerClaim, finals []replay.LedgerOutcome) (map[int]replay.LedgerState, error) {
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
	conflicted := isUniqueViolation(err)
	if conflicted {
		rows, err = s.pool.Query(ctx, fmt.Sprintf(claimSQL, "ON CONFLICT DO NOTHING"), args...)
		if err == nil {
			won, err = pgx.CollectRows(rows, pgx.RowTo[int32])
		}
	}
	if err != nil {
		return nil, unavailable(err, "ledger claim")
	}
	if slices.Contains(won, jobEnded) {
		return nil, replay.ErrJobEnded
	}
	if conflicted && len(finals) > 0 {
		// A final outcome can meet this job's own claim of the message: a resumed run whose
		// earlier run claimed it and never settled, and which now skips it (the consumer's inbox
		// has it by now). The insert above dropped that row; the claim, left in flight, would end
		// the job calling the message failed. Settle changes only rows still in flight.
		if err := s.Settle(ctx, jobID, finals); err != nil {
			return nil, err
		}
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

// claimSQL inserts claims ("active", holding the locator) and final rows, counts the final ones
// in the job, and returns the claims it inserted — or only jobEnded, inserting nothing, when the
// job has ended. %s is the conflict clause. The rows go in in the locators' order, whatever the
// batch's: two jobs claiming the same messages in different orders then wait for each other on
// the first one they share, rather than each holding a locator the other waits for (a deadlock,
// which PostgreSQL ends by failing one claim). The job's row is read FOR SHARE: a FinishJob
// holding it makes the claim wait and then read the job ended (read committed re-reads a locked
// row's newest version).
const claimSQL = `WITH job AS (
		SELECT finished_at IS NOT NULL AS ended FROM replay_job WHERE id = $1 FOR SHARE),
	ins AS (
		INSERT INTO replay_ledger (job_id, seq, locator, message_id, outcome, detail, holds)
		SELECT $1, s, l, m, o, d, o = 'active' FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u(s, l, m, o, d)
		WHERE NOT EXISTS (SELECT FROM job WHERE ended)
		ORDER BY l COLLATE "C"
		%s
		RETURNING seq, outcome),
	counted AS (
		UPDATE replay_job SET skipped = skipped + (SELECT count(*) FROM ins WHERE outcome = 'skipped'),
			failed = failed + (SELECT count(*) FROM ins WHERE outcome = 'failed')
		WHERE id = $1 AND EXISTS (SELECT FROM ins WHERE outcome <> 'active'))
	SELECT seq FROM ins WHERE outcome = 'active'
	UNION ALL SELECT -1 FROM job WHERE ended`

// jobEnded is what claimSQL returns instead of claims when the job has ended (a seq is never
// negative).
const jobEnded = -1

// Holders names, for each locator the ledger holds (published or in flight), the job holding it.
func (s *ReplayLedger) Holders(ctx context.Context, locators []string) (map[string]string, error) {
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
func (s *ReplayLedger) Record(ctx context.Context, jobID string, finals []replay.LedgerOutcome) error {
	_, err := s.Claim(ctx, jobID, nil, finals)
	return err
}

// Settle records the outcome of messages this job claimed. Plain publishes (no detail) are the
// common case and take one update by primary key that, touching no indexed column, is a HOT
// update; failures and annotated publishes carry their detail. Only rows still active change: an
// outcome, once recorded, is final. The job's counts move in the same transaction.
func (s *ReplayLedger) Settle(ctx context.Context, jobID string, outcomes []replay.LedgerOutcome) error {
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

// InFlight counts jobID's claims that are not settled yet.
func (s *ReplayLedger) InFlight(ctx context.Context, jobID string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM replay_ledger WHERE job_id = $1 AND outcome = 'active'`, jobID).Scan(&n); err != nil {
		return 0, unavailable(err, "ledger")
	}
	return n, nil
}

// Ledger lists a job's rows (failed and skipped first when problemsFirst), up to limit.
func (s *ReplayLedger) Ledger(ctx context.Context, jobID string, limit int) ([]replay.LedgerEntry, error) {
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
func (s *ReplayLedger) LedgerOutcomes(ctx context.Context, jobID string, seqs []int) (map[int]string, error) {
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

// FailureGroups counts a job's failed messages per reason, most frequent first (then by reason),
// at most limit groups: one broken destination shows as one row, not 40,000.
// Errors: ops.ErrUnavailable when the store cannot be read.
func (s *ReplayLedger) FailureGroups(ctx context.Context, jobID string, limit int) ([]replay.FailureGroup, error) {
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

// ReplayOutcomeCounts returns how many messages of all replay jobs have each settled outcome
// (published, skipped, failed), for the console's Prometheus counter. Messages in flight
// ("active") are left out: a settled outcome is final and ledger rows are never deleted, so each
// count only grows. It sums the jobs' counts, which the ledger's transactions keep. Errors: ops.ErrUnavailable when the store cannot be read.
func (s *ReplayLedger) ReplayOutcomeCounts(ctx context.Context) (map[string]int64, error) {
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
func (s *ReplayLedger) ReplaysOf(ctx context.Context, ids []string, limit int) ([]replay.Traced, error) {
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
