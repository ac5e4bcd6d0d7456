package search

import (
	"context"
	"log/slog"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
)

// Exports is the policy of exporting message content, one for every source: who may
// (export.min_role) and the audit of each export (content.export) — its intent written before
// the first byte is sent, its outcome once the stream ends, partial with the count when it ended
// early (the reader went away, the broker failed).
type Exports struct {
	minRole access.Role
	log     audit.Log // nil: exports are not audited (tests)
}

// NewExports is the policy for export.min_role: "" (or a name configs.Load refused) is operator.
func NewExports(minRole string, log audit.Log) *Exports {
	role, err := access.ParseRole(minRole)
	if err != nil {
		role = access.Operator
	}
	return &Exports{minRole: role, log: log}
}

// MinRole is the least role that may export; nil Exports say operator.
func (x *Exports) MinRole() access.Role {
	if x == nil {
		return access.Operator
	}
	return x.minRole
}

// Allow refuses an actor below the role (ops.ErrForbidden naming it and the key that sets it).
// Pages offer an export only to an actor it allows.
func (x *Exports) Allow(actor access.Actor) error {
	if !actor.Can(x.MinRole()) {
		return ops.Forbidden("exporting message content needs the %s role (export.min_role)", x.MinRole())
	}
	return nil
}

// Export is one export under way; Finish records how it ended.
type Export struct{ end audit.Ending }

// Begin starts an export for actor: refused below the role, then row (the request's actor and
// client, the target, the export's detail) written as its intent with the filter's text. On an
// error nothing may be sent: the log not answering is an ops.ErrUnavailable that says so.
// logger is where a lost outcome row is reported.
func (x *Exports) Begin(ctx context.Context, logger *slog.Logger, actor access.Actor, row audit.Entry, filter *Filter) (*Export, error) {
	if err := x.Allow(actor); err != nil {
		return nil, err
	}
	row.Action = "content.export"
	if row.Detail == nil {
		row.Detail = map[string]any{}
	}
	row.Detail["filter"] = ""
	if filter != nil {
		row.Detail["filter"] = filter.Text()
	}
	end, err := audit.New(x.log, logger).Begin(ctx, row)
	if err != nil {
		return nil, ops.Unavailable(err, "the audit log cannot be written, so nothing was exported")
	}
	return &Export{end: end}, nil
}

// Finish records the export's outcome: ok when it was whole, partial when it failed after n
// lines, failed when it failed before any; more is detail known only at the end (scanned). A
// lost row is logged and counted: the export was already sent.
func (e *Export) Finish(n int64, more map[string]any, failed error) {
	outcome := audit.OutcomeOK
	switch {
	case failed != nil && n == 0:
		outcome = audit.OutcomeFailed
	case failed != nil:
		outcome = audit.OutcomePartial
	}
	e.end(outcome, &n, failed, more)
}
