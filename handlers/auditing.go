package handlers

// The request's side of the audit log: who made the request (auditEntry), and ops/audit's one
// policy for what it changes (intend). A reveal's row is written by redact.Rules.For.

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops/audit"
)

// Auditor appends to the audit log (ops/store).
type Auditor interface {
	RecordAudit(ctx context.Context, e audit.Entry) error
}

// auditEntry is an audit row of the request's actor, with outcome ok.
func auditEntry(c echo.Context, action, target, reason string, detail map[string]any) audit.Entry {
	actor := ActorOf(c)
	ip, ua := clientInfo(c)
	if detail == nil {
		detail = map[string]any{}
	}
	return audit.Entry{Actor: actor.Name, Role: actor.Role.String(), SourceIP: ip, UserAgent: ua, Action: action,
		Target: target, Reason: reason, Outcome: audit.OutcomeOK, Detail: detail}
}

// intend writes e as the intent of a change the request makes, with ops/audit's one policy: an
// error means the change must not be made; the Done writes its outcome (a lost row is logged and
// counted, never the request's failure).
func intend(c echo.Context, log audit.Log, e audit.Entry) (audit.Done, error) {
	return audit.New(log, loggerOf(c)).Intend(c.Request().Context(), e)
}
