package handlers

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/paths"
	auditpages "github.com/redrive/redrive/views/pages/audit"
)

// AuditLog reads the audit log (ops/store).
type AuditLog interface {
	ListAudit(ctx context.Context, f audit.Filter) ([]audit.Entry, error)
}

// Audit serves the audit page and API.
type Audit struct {
	log  AuditLog
	meta MetaFunc
	red  *redact.Rules // nil masks nothing
}

// NewAudit wires the audit log.
func NewAudit(log AuditLog, meta MetaFunc) *Audit { return &Audit{log: log, meta: meta} }

// Redacting masks what entries record of messages (an edit and retry's edit and diff) as the
// messages themselves are masked; an admin may reveal it (audited).
func (h *Audit) Redacting(r *redact.Rules) *Audit {
	h.red = r
	return h
}

func auditID(e audit.Entry) int64 { return e.ID }

// auditParams are the query parameters the audit list reads; any other is refused (a misspelt
// filter would otherwise list everything, which reads as "nothing of the kind happened to it").
var auditParams = []string{"actor", "action", "outcome", "target", "since", "until", "limit", "cursor", "reveal"}

// auditTextParams bound the filters matched as text, in characters: actors and actions are
// short names; a target holds a topic or queue name, which may be 255 long, after its system's.
var auditTextParams = []struct {
	name string
	max  int
	to   func(*audit.Filter) *string
}{
	{"actor", 256, func(f *audit.Filter) *string { return &f.Actor }},
	{"action", 256, func(f *audit.Filter) *string { return &f.Action }},
	{"target", 1024, func(f *audit.Filter) *string { return &f.Target }},
}

func parseAuditFilter(c echo.Context) (audit.Filter, error) {
	var f audit.Filter
	var err error
	for _, p := range auditTextParams {
		v := c.QueryParam(p.name)
		if err := textWithin(p.name, v, p.max); err != nil {
			return f, err
		}
		*p.to(&f) = v
	}
	if f.Outcome = c.QueryParam("outcome"); f.Outcome != "" && !slices.Contains(audit.Outcomes, f.Outcome) {
		return f, ops.Invalid("outcome", "must be one of "+strings.Join(audit.Outcomes, ", "))
	}
	now := time.Now()
	if f.Since, err = queryTime(c, "since", now); err != nil {
		return f, err
	}
	if f.Until, err = queryTime(c, "until", now); err != nil {
		return f, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return f, ops.Invalid("until", "must be after since")
	}
	f.Limit, f.Before, err = pageQuery(c, 100, audit.MaxLimit)
	return f, err
}

type auditJSON struct {
	ID        int64          `json:"id"`
	At        time.Time      `json:"at"`
	Actor     string         `json:"actor"`
	Role      string         `json:"role"`
	SourceIP  string         `json:"source_ip"`
	UserAgent string         `json:"user_agent"`
	Action    string         `json:"action"`
	Target    string         `json:"target"`
	Count     *int64         `json:"count"`
	Reason    string         `json:"reason"`
	Outcome   string         `json:"outcome"`
	Detail    map[string]any `json:"detail"`
}

// API: GET /api/v1/audit?actor=&action=&outcome=&target=&since=&until=&limit=&cursor=.
func (h *Audit) API(c echo.Context) error {
	if err := OnlyParams(c, auditParams); err != nil {
		return err
	}
	f, err := parseAuditFilter(c)
	if err != nil {
		return err
	}
	red, err := redactionFor(c, h.red, "audit")
	if err != nil {
		return err
	}
	entries, next, err := h.list(c, f)
	if err != nil {
		return err
	}
	resp := struct {
		Entries    []auditJSON `json:"entries"`
		NextCursor *string     `json:"next_cursor"`
	}{Entries: make([]auditJSON, 0, len(entries)), NextCursor: cursorJSON(next)}
	for _, e := range entries {
		resp.Entries = append(resp.Entries, auditJSON{ID: e.ID, At: e.At.UTC(), Actor: e.Actor, Role: e.Role,
			SourceIP: e.SourceIP, UserAgent: e.UserAgent, Action: e.Action, Target: e.Target, Count: e.Count,
			Reason: e.Reason, Outcome: e.Outcome, Detail: red.AuditDetail(e.Detail)})
	}
	return c.JSON(http.StatusOK, resp)
}

// Page: GET /audit.
func (h *Audit) Page(c echo.Context) error {
	f, err := parseAuditFilter(c)
	if err != nil {
		return err
	}
	page := auditpages.Page{Meta: h.meta(c, "Audit log", "audit"),
		Filters: auditpages.Filters{Actor: f.Actor, Action: f.Action, Outcome: f.Outcome, Target: f.Target,
			Since: c.QueryParam("since"), Until: c.QueryParam("until")}, Outcomes: audit.Outcomes}
	entries, next, err := h.list(c, f)
	if err != nil {
		page.Error = shown(c, err)
	}
	for _, e := range entries {
		row := auditpages.Row{ID: e.ID, At: e.At, Actor: e.Actor, Role: e.Role, SourceIP: e.SourceIP,
			Action: e.Action, Target: e.Target, Count: e.Count, Reason: e.Reason, Outcome: e.Outcome}
		if errText, ok := e.Detail["error"].(string); ok {
			row.Error = errText
		}
		page.Rows = append(page.Rows, row)
	}
	page.NextURL = nextPageURL(c, paths.Audit, next)
	return render(c, http.StatusOK, auditpages.List(page))
}

// list reads the page of the audit log f asks for and the cursor of the next one.
func (h *Audit) list(c echo.Context, f audit.Filter) ([]audit.Entry, int64, error) {
	return keysetPage(f.Limit, auditID, func(limit int) ([]audit.Entry, error) {
		f.Limit = limit
		return h.log.ListAudit(c.Request().Context(), f)
	})
}
