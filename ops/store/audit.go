package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
)

// RecordAudit appends an entry. At is set by the database.
func (s *AuditLog) RecordAudit(ctx context.Context, e audit.Entry) error {
	// Text written by others (a user agent, a reason) may hold a NUL or invalid UTF-8, which a
	// text column refuses: the entry is kept, the odd bytes are not.
	for _, f := range []*string{&e.Actor, &e.Role, &e.SourceIP, &e.UserAgent, &e.Action, &e.Target, &e.Reason, &e.Outcome} {
		*f = ops.CleanText(*f, 4096)
	}
	detail, err := json.Marshal(e.Detail)
	if err != nil || e.Detail == nil {
		detail = []byte("{}")
	}
	// jsonb refuses the NUL character even escaped.
	detail = bytes.ReplaceAll(detail, []byte(`\u0000`), []byte(`\ufffd`))
	_, err = s.pool.Exec(ctx, `INSERT INTO audit_log
		(actor, role, source_ip, user_agent, action, target, count, reason, outcome, detail)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		e.Actor, e.Role, e.SourceIP, e.UserAgent, e.Action, e.Target, e.Count, e.Reason, e.Outcome, detail)
	if err != nil {
		return unavailable(err, "audit: record %s", e.Action)
	}
	return nil
}

// ListAudit returns entries newest first: by at, then id. A page goes on after the entry its
// cursor (f.Before) names, in that same order: at is the time its transaction began, so an entry
// written in a longer transaction has a smaller at than the next id's, and "id < cursor" skipped
// such entries (or listed them twice) across pages. A cursor naming no entry (typed by hand) goes
// on below its id.
func (s *AuditLog) ListAudit(ctx context.Context, f audit.Filter) ([]audit.Entry, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	// MaxLimit and the one row more that tells a reader whether another page follows
	if f.Limit > audit.MaxLimit+1 {
		return nil, ops.Invalid("limit", fmt.Sprintf("must be between 1 and %d", audit.MaxLimit))
	}
	return collect(ctx, s.pool, scanAuditEntry, "audit: list", `SELECT id, at, actor, role, source_ip, user_agent, action, target,
			count, reason, outcome, detail
		FROM audit_log a
		WHERE ($1 = '' OR actor = $1) AND ($2 = '' OR action = $2)
		  AND ($3::timestamptz IS NULL OR at >= $3) AND ($4 = 0 OR CASE WHEN EXISTS (SELECT FROM audit_log c WHERE c.id = $4)
		      THEN (at, id) < (SELECT c.at, c.id FROM audit_log c WHERE c.id = $4) ELSE id < $4 END)
		  AND ($7 = '' OR outcome = $7) AND ($8 = '' OR target = $8) AND ($9::timestamptz IS NULL OR at < $9)
		  -- an intent is one action with its outcome: shown alone only when no outcome followed it
		  AND ($6 OR NOT (outcome = 'started' AND EXISTS (SELECT FROM audit_log o
		      WHERE o.detail ? 'intent_id' AND o.detail->>'intent_id' = a.id::text)))
		ORDER BY at DESC, id DESC LIMIT $5`,
		f.Actor, f.Action, nullTime(f.Since), f.Before, f.Limit, f.Intents, f.Outcome, f.Target, nullTime(f.Until))
}

// scanAuditEntry reads one row of the audit columns in their order (id … detail).
func scanAuditEntry(r pgx.CollectableRow) (audit.Entry, error) {
	var e audit.Entry
	var detail []byte
	err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Role, &e.SourceIP, &e.UserAgent, &e.Action, &e.Target,
		&e.Count, &e.Reason, &e.Outcome, &detail)
	if err == nil {
		err = json.Unmarshal(detail, &e.Detail)
	}
	return e, err
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// The audit log is append-only (migration 001): an intent row is never updated into an outcome.
// A change therefore writes two rows, the intent ("started") and then its outcome with
// detail.intent_id pointing back, rather than a new migration adding an updatable status.

// RecordIntent appends e with outcome "started" and returns its id, for the outcome row's
// detail.intent_id. An error (ops.ErrUnavailable) means the change must not be made.
func (s *AuditLog) RecordIntent(ctx context.Context, e audit.Entry) (int64, error) {
	e.Outcome = audit.OutcomeStarted
	sql, args := auditInsert(e, "audit_log")
	var id int64
	if err := s.pool.QueryRow(ctx, sql+" RETURNING id", args...).Scan(&id); err != nil {
		return 0, unavailable(err, "audit: record intent of %s", e.Action)
	}
	return id, nil
}

// RecordAuditIn appends e as part of tx, the open transaction of the change it describes: when tx
// runs on the store's own database (and may write its audit log), the row is inserted in tx and
// commits or rolls back with the change; otherwise it is written through the store's pool before
// the caller commits tx. Either way an error means tx must be rolled back.
func (s *AuditLog) RecordAuditIn(ctx context.Context, tx audit.Tx, e audit.Entry) error {
	// A transaction of another driver (a MySQL outbox's) is never on the store's database.
	if tx, ok := tx.(pgx.Tx); ok && tx != nil {
		same, err := s.sameDatabase(ctx, tx)
		if err != nil {
			return unavailable(err, "audit: record %s", e.Action)
		}
		if same {
			return recordInTx(ctx, tx, e)
		}
	}
	return s.RecordAudit(ctx, e)
}

// recordInTx inserts e in tx, a transaction on the store's database.
func recordInTx(ctx context.Context, tx pgx.Tx, e audit.Entry) error {
	sql, args := auditInsert(e, Schema+".audit_log")
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		return unavailable(err, "audit: record %s", e.Action)
	}
	return nil
}

// ownTxLog is the audit log of a change made in a transaction of the store's own pool: its
// outcome row goes into that transaction without RecordAuditIn's check of where the transaction
// runs, which takes a second connection while the change holds its row locks (twenty changes at
// once on a pool of 16 each held one connection and waited for another until the pool timed out).
type ownTxLog struct{ *AuditLog }

func (l ownTxLog) RecordAuditIn(ctx context.Context, tx audit.Tx, e audit.Entry) error {
	ptx, ok := tx.(pgx.Tx) // auditedChange hands it its own
	if !ok || ptx == nil {
		return fmt.Errorf("audit: record %s: not a transaction of the store (%T)", e.Action, tx)
	}
	return recordInTx(ctx, ptx, e)
}

// databaseIdentity names one database of one running server: its name and oid, and the server's
// start time, which two servers practically never share.
const databaseIdentity = `SELECT current_database() || '/' ||
	(SELECT oid FROM pg_database WHERE datname = current_database())::text || '/' ||
	pg_postmaster_start_time()::text`

// sameDatabase reports whether tx runs on the store's database with the right to insert into its
// audit log.
func (s *AuditLog) sameDatabase(ctx context.Context, tx pgx.Tx) (bool, error) {
	var theirs string
	var canInsert bool
	err := tx.QueryRow(ctx, databaseIdentity+`, CASE WHEN to_regclass('`+Schema+`.audit_log') IS NULL THEN false
		ELSE has_table_privilege(to_regclass('`+Schema+`.audit_log')::oid, 'INSERT') END`).Scan(&theirs, &canInsert)
	if err != nil {
		return false, err
	}
	if !canInsert {
		return false, nil
	}
	var ours string
	if err := s.pool.QueryRow(ctx, databaseIdentity).Scan(&ours); err != nil {
		return false, err
	}
	return ours == theirs, nil
}

// auditInsert is the INSERT of e into table, with its text made storable: text written by others
// (a user agent, a reason) may hold a NUL or invalid UTF-8, which a text column refuses; the entry
// is kept, the odd bytes are not (as RecordAudit does).
func auditInsert(e audit.Entry, table string) (string, []any) {
	for _, f := range []*string{&e.Actor, &e.Role, &e.SourceIP, &e.UserAgent, &e.Action, &e.Target, &e.Reason, &e.Outcome} {
		*f = ops.CleanText(*f, 4096)
	}
	detail, err := json.Marshal(e.Detail)
	if err != nil || e.Detail == nil {
		detail = []byte("{}")
	}
	detail = bytes.ReplaceAll(detail, []byte(`\u0000`), []byte(`\ufffd`)) // jsonb refuses it even escaped
	return `INSERT INTO ` + table + ` (actor, role, source_ip, user_agent, action, target, count, reason, outcome, detail)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		[]any{e.Actor, e.Role, e.SourceIP, e.UserAgent, e.Action, e.Target, e.Count, e.Reason, e.Outcome, detail}
}

// auditedChange makes a change to the store's own tables (any part's) with ops/audit's policy
// (audit.ChangeInTx): the intent row first, nothing changes when it cannot be written; the change
// and its outcome row (naming the intent, with change's count) commit in one transaction, so the
// log never says "ok" for a change that was rolled back; a failed change gets a "failed" row, and
// one that cannot be written is logged and counted like every other.
func (s db) auditedChange(ctx context.Context, e audit.Entry, change func(ctx context.Context, tx pgx.Tx) (int64, error)) (int64, error) {
	// The change and its rows are made even if the caller went away mid-request.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return audit.ChangeInTx(ctx, ownTxLog{&AuditLog{s}}, nil, e, func(ctx context.Context, commit audit.Commit) (int64, error) {
		var n int64
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			if n, err = change(ctx, tx); err != nil {
				return err
			}
			return commit(ctx, tx, n)
		})
		if err != nil {
			return 0, unavailable(err, "%s", e.Action)
		}
		return n, nil
	})
}

// AuditNaming lists the audit entries since since whose target, reason or detail names one of
// needles (each at least 3 characters) as a whole word, newest first, at most limit. The audit log
// has no index on its text: since bounds what is read (the at index), limit what is returned.
// Errors wrap ops.ErrUnavailable.
func (s *AuditLog) AuditNaming(ctx context.Context, needles []string, rows []audit.RowRef, since time.Time, limit int) ([]audit.Entry, error) {
	return s.auditNaming(ctx, "detail::text", needles, rows, since, limit)
}

// auditNaming is AuditNaming searching detail as the SQL expression detailText writes it (a
// constant of this package, never input).
func (s *AuditLog) auditNaming(ctx context.Context, detailText string, needles []string, rows []audit.RowRef, since time.Time, limit int) ([]audit.Entry, error) {
	var pats []string
	for _, n := range needles {
		if len(n) >= 3 {
			pats = append(pats, wholeWord(n))
		}
	}
	if len(pats) == 0 && len(rows) == 0 {
		return nil, nil
	}
	targets, ids := make([]string, len(rows)), make([]int64, len(rows))
	for i, r := range rows {
		targets[i], ids[i] = r.Target, r.ID
	}
	return collect(ctx, s.pool, scanAuditEntry, "audit: search", `SELECT id, at, actor, role, source_ip, user_agent, action, target,
			count, reason, outcome, detail
		FROM audit_log WHERE at >= $1
		  AND (target ~ ANY($2) OR reason ~ ANY($2) OR `+detailText+` ~ ANY($2)
		    OR EXISTS (SELECT FROM unnest($4::text[], $5::bigint[]) AS r(target, id)
		      WHERE audit_log.target = r.target AND audit_log.detail->'ids' @> to_jsonb(r.id)))
		ORDER BY at DESC, id DESC LIMIT $3`, since, pats, limit, targets, ids)
}

// wholeWord is a PostgreSQL regular expression matching id as a whole word: not inside a longer
// id ("evt-p1" is not found in "evt-p10" or "xevt-p1"), where ids are made of letters, digits, '_'
// and '-', and the text around them of anything else (JSON quotes, spaces, '/', '.', ','). The
// id's own characters are literal (QuoteMeta's escapes are those of PostgreSQL's ARE too).
func wholeWord(id string) string {
	const notIDChar = `[^[:alnum:]_-]`
	return `(^|` + notIDChar + `)` + regexp.QuoteMeta(id) + `($|` + notIDChar + `)`
}
