package handlers

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/layout"
	outboxpages "github.com/redrive/redrive/views/pages/outboxes"
)

// A registry-format outbox (spring-modulith, namastack, debezium: outbox.Format with no repairs)
// is served by the same routes as the seed's: its page, panel and API present it from its
// Format, its records by their string ids; nothing here names a format.

// registryOf reports whether o is a registry-format outbox.
func registryOf(o OutboxService) bool { return !o.Format().Repairs }

// registryJSON is a registry's own overview in the API.
type registryJSON struct {
	Title                   string              `json:"title"`
	States                  []string            `json:"states"`
	Attention               []string            `json:"attention_states"`
	AttentionCount          int64               `json:"attention"`
	Rows                    int64               `json:"rows"`
	OldestIncompleteSeconds *float64            `json:"oldest_incomplete_age_seconds"`
	RowsPerMinute           *float64            `json:"rows_per_minute"`
	Groups                  []registryGroupJSON `json:"groups"`
	Note                    string              `json:"note,omitempty"`
	CompletedDeleted        bool                `json:"completed_deleted,omitempty"`
	CompletedIsEstimate     bool                `json:"completed_is_estimate,omitempty"`
	ReadOnly                string              `json:"read_only"`
}

type registryGroupJSON struct {
	State         string  `json:"state"`
	Key           string  `json:"key"`
	Type          string  `json:"type"`
	Count         int64   `json:"count"`
	OldestSeconds float64 `json:"oldest_age_seconds"`
	MaxAttempts   int     `json:"max_attempts"`
}

func toRegistryJSON(f outbox.Format, st outbox.Stats) *registryJSON {
	j := &registryJSON{Title: f.Title, States: names(f.States), Attention: names(f.Attention), AttentionCount: st.Attention,
		ReadOnly: f.ReadOnlyWhy, Groups: []registryGroupJSON{}}
	rs := st.Records
	if rs == nil {
		return j
	}
	j.Rows, j.Note, j.CompletedDeleted, j.CompletedIsEstimate = rs.Total, rs.Note, rs.CompletedGone, rs.CompletedIsEstimate
	if rs.OldestAge != nil {
		s := rs.OldestAge.Seconds()
		j.OldestIncompleteSeconds = &s
	}
	if rs.RecentRows != nil {
		r := float64(*rs.RecentRows) / outbox.RateWindow.Minutes()
		j.RowsPerMinute = &r
	}
	for _, g := range rs.Groups {
		j.Groups = append(j.Groups, registryGroupJSON{State: string(g.State), Key: g.Key, Type: g.Type, Count: g.Count,
			OldestSeconds: g.Oldest.Seconds(), MaxAttempts: g.MaxAttempts})
	}
	return j
}

func names(ss []outbox.Status) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// registryRecordJSON is one record of a registry in the API.
type registryRecordJSON struct {
	ID        string     `json:"id"`
	State     string     `json:"state,omitempty"`
	Type      string     `json:"type"`
	Key       string     `json:"key"`
	Aggregate string     `json:"aggregate,omitempty"`
	Created   time.Time  `json:"created_at"`
	Completed *time.Time `json:"completed_at"`
	NextRetry *time.Time `json:"next_retry_at,omitempty"`
	Resubmit  *time.Time `json:"last_resubmission_at,omitempty"`
	Attempts  int        `json:"attempts"`
	Error     *string    `json:"error,omitempty"`
}

func toRegistryRecordJSON(r outbox.Record) registryRecordJSON {
	return registryRecordJSON{ID: r.ID, State: string(r.State), Type: r.Type, Key: r.Key, Aggregate: r.Aggregate, Created: r.Created.UTC(),
		Completed: inUTC(r.Completed), NextRetry: inUTC(r.NextRetry), Resubmit: inUTC(r.Resubmit), Attempts: r.Attempts, Error: r.Error}
}

// recordFilter reads a registry's list query: status (one of its states), event_type, key,
// limit and cursor (an opaque value a previous page gave).
func recordFilter(c echo.Context, f outbox.Format) (outbox.RecordFilter, error) {
	var rf outbox.RecordFilter
	if s := c.QueryParam("status"); s != "" {
		st, err := f.ParseState(s)
		if err != nil {
			return rf, err
		}
		rf.State = st
	}
	rf.Type, rf.Key = c.QueryParam("event_type"), c.QueryParam("key")
	if err := filterTexts(formFilterFields, rf.Type, rf.Key); err != nil {
		return rf, err
	}
	rf.Limit = outbox.DefaultLimit
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > outbox.MaxLimit {
			return rf, ops.Invalid("limit", fmt.Sprintf("must be a whole number 1..%d", outbox.MaxLimit))
		}
		rf.Limit = n
	}
	if s := c.QueryParam("cursor"); s != "" {
		cur, ok := decodeRecordCursor(s)
		if !ok {
			return rf, ops.Invalid("cursor", "is not a cursor this list gave (use next_cursor as it is)")
		}
		rf.Cursor = cur
	}
	return rf, nil
}

func encodeRecordCursor(r outbox.Record) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(r.Created.UnixNano(), 10) + "|" + r.ID))
}

func decodeRecordCursor(s string) (*outbox.RecordCursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) > 600 {
		return nil, false
	}
	at, id, ok := strings.Cut(string(b), "|")
	n, err := strconv.ParseInt(at, 10, 64)
	// An id no list gave (a NUL, invalid UTF-8) reached the database, which refused it: a 503
	// blaming the table and the account's rights.
	if !ok || err != nil || id == "" || ops.TextProblem(id) != "" {
		return nil, false
	}
	return &outbox.RecordCursor{Created: time.Unix(0, n).UTC(), ID: id}, true
}

// records reads one page of a registry's records: the page and the next page's cursor ("" at
// the end).
func records(c echo.Context, o OutboxService, f outbox.RecordFilter) ([]outbox.Record, string, error) {
	limit := f.Limit
	f.Limit = limit + 1
	rs, err := o.Records(c.Request().Context(), f)
	if err != nil || len(rs) <= limit {
		return rs, "", err
	}
	rs = rs[:limit]
	return rs, encodeRecordCursor(rs[len(rs)-1]), nil
}

// apiRecords: GET /api/v1/outboxes/:name/events of a registry: its records, newest first.
func (h *Outboxes) apiRecords(c echo.Context, o OutboxService) error {
	f, err := recordFilter(c, o.Format())
	if err != nil {
		return err
	}
	rs, next, err := records(c, o, f)
	if err != nil {
		return err
	}
	resp := struct {
		Format     string               `json:"format"`
		Records    []registryRecordJSON `json:"records"`
		NextCursor *string              `json:"next_cursor"`
	}{Format: o.Format().Name, Records: make([]registryRecordJSON, 0, len(rs))}
	for _, r := range rs {
		resp.Records = append(resp.Records, toRegistryRecordJSON(r))
	}
	if next != "" {
		resp.NextCursor = &next
	}
	return c.JSON(http.StatusOK, resp)
}

// record is a registry's record of the path, its payload and error masked unless an admin
// reveals them (audited), its payload cut to maxPayload.
func (h *Outboxes) record(c echo.Context, o OutboxService) (outbox.Record, shownPayload, error) {
	r, err := o.Record(c.Request().Context(), c.Param("id"))
	if err != nil {
		return r, shownPayload{}, err
	}
	red, err := redactionFor(c, h.redact, fmt.Sprintf("outbox/%s/record/%s", o.Name(), ops.Echo(r.ID)))
	if err != nil {
		return r, shownPayload{}, err
	}
	masked, redacted := red.OutboxEvent(outbox.Event{Payload: r.Payload, LastError: r.Error, EventType: r.Type})
	r.Payload, r.Error = masked.Payload, masked.LastError
	text, truncated := capText(r.Payload, maxPayload)
	return r, shownPayload{text, truncated, redacted}, nil
}

// apiRecord: GET /api/v1/outboxes/:name/events/:id of a registry: the record with its payload.
func (h *Outboxes) apiRecord(c echo.Context, o OutboxService) error {
	r, shown, err := h.record(c, o)
	if err != nil {
		return err
	}
	var raw any = shown.text
	if !shown.truncated {
		raw = payload.Value([]byte(shown.text))
	}
	return c.JSON(http.StatusOK, struct {
		registryRecordJSON
		Payload          any  `json:"payload"`
		PayloadTruncated bool `json:"payload_truncated,omitempty"`
		PayloadRedacted  bool `json:"payload_redacted,omitempty"`
		PayloadSize      int  `json:"payload_size"`
	}{toRegistryRecordJSON(r), raw, shown.truncated, shown.redacted, len(r.Payload)})
}

// registrySummary is the panel's view of a registry.
func registrySummary(f outbox.Format, st outbox.Stats) *outboxpages.Registry {
	v := &outboxpages.Registry{Format: f.Name, Title: f.Title, ReadOnlyWhy: f.ReadOnlyWhy, KeyLabel: f.KeyLabel,
		Attention: st.Attention}
	for _, s := range f.Attention {
		v.AttentionStates = append(v.AttentionStates, string(s))
	}
	if rs := st.Records; rs != nil {
		v.Rows, v.OldestAge, v.Note, v.CompletedDeleted = rs.Total, rs.OldestAge, rs.Note, rs.CompletedGone
		v.CompletedIsEstimate = rs.CompletedIsEstimate
		if rs.RecentRows != nil {
			r := float64(*rs.RecentRows) / outbox.RateWindow.Minutes()
			v.PerMinute = &r
		}
		for _, g := range rs.Groups {
			v.Groups = append(v.Groups, outboxpages.RecordGroup{State: string(g.State), Key: g.Key, Type: g.Type, Count: g.Count,
				Oldest: g.Oldest, MaxAttempts: g.MaxAttempts, Attention: f.NeedsAttention(g.State)})
		}
	}
	return v
}

// showRegistry: GET /outboxes/:name of a registry: its panel, its incomplete rows per key and
// type, its records, and what does the work instead of the console.
func (h *Outboxes) showRegistry(c echo.Context, o OutboxService) error {
	f, err := recordFilter(c, o.Format())
	if err != nil {
		return err
	}
	st, statsErr := o.CachedStats(c.Request().Context(), outbox.StatsMaxAge)
	page := outboxpages.RegistryPage{
		Meta:    h.meta(c, "Outbox "+o.Name(), "outboxes"),
		Summary: toSummaryView(c, summary{outbox: o, stats: st, err: statsErr}),
		Filters: outboxpages.RecordFilters{Status: string(f.State), EventType: f.Type, Key: f.Key},
	}
	page.Meta.Breadcrumbs = []layout.Crumb{{Label: "Outboxes", Href: paths.Outboxes}, {Label: o.Name()}}
	rs, next, err := records(c, o, f)
	if err != nil {
		page.ListError = shown(c, err)
	}
	for _, r := range rs {
		page.Records = append(page.Records, toRecordRow(o.Format(), r))
	}
	if next != "" {
		q := c.QueryParams()
		q.Set("cursor", next)
		page.NextURL = paths.WithQuery(paths.Outbox(o.Name()), q)
	}
	return render(c, http.StatusOK, outboxpages.ShowRegistry(page))
}

func toRecordRow(f outbox.Format, r outbox.Record) outboxpages.RecordRow {
	row := outboxpages.RecordRow{ID: r.ID, State: string(r.State), Type: r.Type, Key: r.Key, Aggregate: r.Aggregate,
		Created: r.Created, Completed: r.Completed, NextRetry: r.NextRetry, Resubmit: r.Resubmit, Attempts: r.Attempts,
		Attention: f.NeedsAttention(r.State)}
	if r.Error != nil {
		row.Error, _ = capText(*r.Error, 64<<10)
	}
	return row
}

// recordPage: GET /outboxes/:name/events/:id of a registry: one record with its payload.
func (h *Outboxes) recordPage(c echo.Context, o OutboxService) error {
	r, shown, err := h.record(c, o)
	if err != nil {
		return err
	}
	pretty, isJSON := shown.text, false
	if !shown.truncated {
		pretty, isJSON = payload.Indent([]byte(shown.text))
	}
	page := outboxpages.RecordPage{
		Meta:      h.meta(c, fmt.Sprintf("Record %s · %s", ops.Echo(r.ID), o.Name()), "outboxes"),
		Outbox:    o.Name(),
		Format:    registrySummary(o.Format(), outbox.Stats{}),
		Record:    toRecordRow(o.Format(), r),
		Payload:   pretty,
		IsJSON:    isJSON,
		Truncated: shown.truncated,
		Size:      len(r.Payload),
		Redacted:  shown.redacted,
		CanReveal: shown.redacted && ActorOf(c).Can(access.Admin),
	}
	page.Meta.Breadcrumbs = []layout.Crumb{{Label: "Outboxes", Href: paths.Outboxes},
		{Label: o.Name(), Href: paths.Outbox(o.Name())}, {Label: "record " + ops.Echo(r.ID)}}
	return render(c, http.StatusOK, outboxpages.Record(page))
}
