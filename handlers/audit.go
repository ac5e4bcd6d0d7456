package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/paths"
	auditpages "github.com/redrive/redrive/views/pages/audit"
)

// AuditLog reads the audit log (ops/store).
type AuditLog interface {
	ListAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditEntry, error)
}

// Audit serves the audit page and API.
type Audit struct {
	log  AuditLog
	meta MetaFunc
}

// NewAudit wires the audit log.
func NewAudit(log AuditLog, meta MetaFunc) *Audit { return &Audit{log: log, meta: meta} }

func parseAuditFilter(c echo.Context) (store.AuditFilter, error) {
	var f store.AuditFilter
	var err error
	f.Actor = c.QueryParam("actor")
	f.Action = c.QueryParam("action")
	if len(f.Actor) > 256 || len(f.Action) > 256 {
		return f, ops.Invalid("actor", "and action must be at most 256 characters")
	}
	if f.Since, err = queryTime(c, "since", time.Now()); err != nil {
		return f, err
	}
	limit, err := queryInt(c, "limit", 100, 1, store.MaxAuditLimit)
	if err != nil {
		return f, err
	}
	f.Limit = int(limit)
	if f.Before, err = queryInt(c, "cursor", 0, 1, 1<<62); err != nil {
		return f, ops.Invalid("cursor", "must be the next_cursor value of a previous page")
	}
	return f, nil
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

// API: GET /api/v1/audit?actor=&action=&since=&limit=&cursor=.
func (h *Audit) API(c echo.Context) error {
	f, err := parseAuditFilter(c)
	if err != nil {
		return err
	}
	entries, err := h.log.ListAudit(c.Request().Context(), f)
	if err != nil {
		return err
	}
	resp := struct {
		Entries    []auditJSON `json:"entries"`
		NextCursor *string     `json:"next_cursor"`
	}{Entries: make([]auditJSON, 0, len(entries))}
	for _, e := range entries {
		resp.Entries = append(resp.Entries, auditJSON{ID: e.ID, At: e.At.UTC(), Actor: e.Actor, Role: e.Role,
			SourceIP: e.SourceIP, UserAgent: e.UserAgent, Action: e.Action, Target: e.Target, Count: e.Count,
			Reason: e.Reason, Outcome: e.Outcome, Detail: e.Detail})
	}
	if len(entries) == f.Limit && len(entries) > 0 {
		s := strconv.FormatInt(entries[len(entries)-1].ID, 10)
		resp.NextCursor = &s
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
		Filters: auditpages.Filters{Actor: f.Actor, Action: f.Action, Since: c.QueryParam("since")}}
	entries, err := h.log.ListAudit(c.Request().Context(), f)
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
	if len(entries) == f.Limit && len(entries) > 0 {
		q := c.QueryParams()
		q.Set("cursor", strconv.FormatInt(entries[len(entries)-1].ID, 10))
		page.NextURL = paths.WithQuery(paths.Audit, url.Values(q))
	}
	return render(c, http.StatusOK, auditpages.List(page))
}
