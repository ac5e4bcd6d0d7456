package handlers

import (
	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/redact"
)

// redactionFor is the redaction rules that apply to the request's reader of target (see
// redact.Rules.For): masked by default; ?reveal=true asks to see content unmasked, which only an
// admin may, audited with the request's actor, client and path.
func redactionFor(c echo.Context, rules *redact.Rules, target string) (*redact.Rules, error) {
	reveal, err := queryBool(c, "reveal")
	if err != nil {
		return nil, err
	}
	var row audit.Entry // the audit row is only for a reveal: most reads need none
	if reveal {
		row = auditEntry(c, "content.reveal", target, "", map[string]any{"path": c.Request().URL.Path})
	}
	return rules.For(c.Request().Context(), ActorOf(c), reveal, row)
}

// Redacting makes the replay pages and API mask plans with r (see redact.Rules.Plan); nil masks
// nothing.
func (h *Replays) Redacting(r *redact.Rules) *Replays {
	h.redact = r
	return h
}
