package audit

import (
	"context"
	"errors"
	"log/slog"

	"github.com/redrive/redrive/ops"
)

// Tx is the open transaction of the change an outcome row describes, as the adapter of the
// change's database holds it (a pgx.Tx from a PostgreSQL adapter, a *sql.Tx from a MySQL one; nil
// when there is none). Only the log's own adapter can tell whether it may write into it: ops/store
// does when it is a transaction of the store's own PostgreSQL database, and writes through its own
// connection otherwise. Everyone else passes it on untouched.
type Tx = any

// TxLog is a Log that can also write a row inside the open transaction of the change it records
// (ops/store's RecordAuditIn: in that transaction when it runs on the store's own database,
// through the store before the caller commits otherwise).
type TxLog interface {
	Log
	RecordAuditIn(ctx context.Context, tx Tx, e Entry) error
}

// Commit writes a change's outcome row while the change's transaction is still open; an error
// means the change must be rolled back (outbox.AuditFunc has this shape).
type Commit func(ctx context.Context, tx Tx, changed int64) error

// ChangeInTx makes a change that runs in one transaction of another database (an outbox repair:
// the outbox is in a service's database, the audit log in the console's), with the package's
// policy taken one step further:
//
//   - the intent row first; when it cannot be written, run is not called (ops.ErrUnavailable);
//   - run makes the change and calls commit before committing it: the "ok" row with the count is
//     written then, so a change whose outcome cannot be written is rolled back and reported as not
//     made (ops.ErrUnavailable), with a "failed" row for the intent when the log answers again;
//   - a change that fails otherwise (or whose commit fails after its "ok" row was written
//     elsewhere) gets a "failed" row and its error is returned.
//
// The rows are written even if ctx is cancelled midway (a client that went away).
func ChangeInTx(ctx context.Context, log TxLog, logger *slog.Logger, e Entry, run func(ctx context.Context, commit Commit) (int64, error)) (int64, error) {
	if log == nil {
		return 0, NotWritten(errors.New("no audit log is configured"))
	}
	e = WithClient(ctx, e)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	intent, err := log.RecordIntent(wctx, e)
	if err != nil {
		return 0, NotWritten(err)
	}
	var commitErr error
	n, err := run(ctx, func(ctx context.Context, tx Tx, changed int64) error {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
		defer cancel()
		commitErr = log.RecordAuditIn(cctx, tx, OutcomeOf(e, intent, OutcomeOK, &changed, nil))
		return commitErr
	})
	if err == nil {
		return n, nil
	}
	if commitErr != nil {
		// Rolled back. The intent row stays with no outcome, or gets this one if the log answers.
		Record(wctx, log, logger, OutcomeOf(e, intent, OutcomeFailed, nil, commitErr))
		return 0, NotWritten(commitErr)
	}
	Record(wctx, log, logger, OutcomeOf(e, intent, OutcomeFailed, nil, err))
	return 0, err
}

// NotWritten is the answer (503) to a change whose audit row could not be written, which was
// therefore not made; err is the cause, for the log.
func NotWritten(err error) error {
	return ops.Unavailable(err, "the audit log cannot be written, so nothing was changed")
}
