package handlers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/triage"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/layout"
	outboxpages "github.com/redrive/redrive/views/pages/outboxes"
)

// OutboxService is one outbox as these handlers use it; *outbox.Outbox implements it.
// Errors are ops kinds: ErrInvalid for bad filters, ErrNotFound for an unknown event,
// ErrUnavailable when the service's database cannot be reached.
type OutboxService interface {
	triage.OutboxTable // the DEAD events people resolve (Events, CountDead)
	Name() string
	MaxAttempts() int
	StaleReadyAfter() time.Duration
	CachedStats(ctx context.Context, maxAge time.Duration) (outbox.Stats, error)
	List(ctx context.Context, f outbox.Filter) (outbox.Page, error)
	Event(ctx context.Context, id int64) (outbox.Event, error)
	// ReleaseStuckAudited and RequeueAudited commit the change only after audit wrote its row;
	// an audit failure is an *outbox.ErrAudit and nothing was changed.
	ReleaseStuckAudited(ctx context.Context, ids []int64, audit outbox.AuditFunc) (int64, error)
	// RequeueAudited returns the ids it moved.
	RequeueAudited(ctx context.Context, ids []int64, resetAttempts bool, audit outbox.AuditFunc) ([]int64, error)
	// Format is the table's layout: its states, and whether the console repairs it (the seed)
	// or reads its records (a registry format), with Records and Record.
	Format() outbox.Format
	Records(ctx context.Context, f outbox.RecordFilter) ([]outbox.Record, error)
	Record(ctx context.Context, id string) (outbox.Record, error)
}

// ChangeAuditor is the audit log as a change in another database writes it (ops/store): the
// intent first, then the outcome inside the change's transaction (in it when the databases are
// the same one). Errors are ops.ErrUnavailable.
type ChangeAuditor interface{ audit.TxLog }

// MetaFunc builds the layout's per-request data (CSRF token, banners) for a page.
type MetaFunc func(c echo.Context, title, section string) layout.Meta

// Outboxes serves the outbox pages and API.
type Outboxes struct {
	list   []OutboxService
	byName map[string]OutboxService
	audit  ChangeAuditor
	meta   MetaFunc
	redact *redact.Rules
	triage OutboxTriage  // nil: every event is open
	rule   foureyes.Rule // replay.four_eyes; the zero value needs nobody
}

// GuardedBy puts direct requeues under the two-person rule (replay.four_eyes): one that would make
// what its person moved from the outbox within the window pass the threshold is refused, pointing
// at a plan, whose job waits for a second person; those it allows count in the rule's ledger.
func (h *Outboxes) GuardedBy(rule foureyes.Rule) *Outboxes {
	h.rule = rule
	return h
}

// NewOutboxes wires the configured outboxes (in config order). redact masks event payloads for
// everyone but admins; nil masks nothing.
func NewOutboxes(list []OutboxService, audit ChangeAuditor, meta MetaFunc, red *redact.Rules) *Outboxes {
	return &Outboxes{list: list, byName: byName(list), audit: audit, meta: meta, redact: red}
}

func (h *Outboxes) find(name string) (OutboxService, error) {
	return lookup(h.byName, name, "outbox")
}

// summary is one outbox's stats or the error that prevented them: panels degrade one by one.
type summary struct {
	outbox OutboxService
	stats  outbox.Stats
	err    error
}

// summaries collects every outbox's stats concurrently.
func (h *Outboxes) summaries(ctx context.Context) []summary {
	out := make([]summary, len(h.list))
	var wg sync.WaitGroup
	for i, o := range h.list {
		wg.Go(func() {
			st, err := o.CachedStats(ctx, outbox.StatsMaxAge)
			out[i] = summary{outbox: o, stats: st, err: err}
		})
	}
	wg.Wait()
	return out
}

// ---- JSON API ----

type outboxJSON struct {
	Name string `json:"name"`
	// Format is outboxes[].format; Counts are keyed by its own state names (the seed's READY,
	// PROCESSING, SENT, FAILED, DEAD; an empty object for a format without states).
	Format                string           `json:"format"`
	Counts                map[string]int64 `json:"counts"`
	StuckLeases           int64            `json:"stuck_leases"`
	OldestReadyAgeSeconds float64          `json:"oldest_ready_age_seconds"`
	OldestStuckAgeSeconds float64          `json:"oldest_stuck_age_seconds"`
	SentIsEstimate        bool             `json:"sent_is_estimate"`
	MaxAttempts           int              `json:"max_attempts"`
	CheckedAt             time.Time        `json:"checked_at"`
	Error                 string           `json:"error,omitempty"`
	// Registry is a registry format's own overview; absent for the seed.
	Registry *registryJSON `json:"registry,omitempty"`
}

func toOutboxJSON(c echo.Context, s summary) outboxJSON {
	f := s.outbox.Format()
	j := outboxJSON{Name: s.outbox.Name(), Format: f.Name, MaxAttempts: s.outbox.MaxAttempts(), CheckedAt: s.stats.CheckedAt.UTC()}
	if s.err != nil {
		j.Error = shown(c, s.err)
		j.CheckedAt = time.Now().UTC()
		return j
	}
	j.Counts = map[string]int64{}
	for _, st := range f.States {
		j.Counts[string(st)] = s.stats.Counts[st]
	}
	if registryOf(s.outbox) {
		j.Registry = toRegistryJSON(f, s.stats)
	}
	j.StuckLeases = s.stats.StuckLeases
	j.SentIsEstimate = s.stats.SentIsEstimate
	if s.stats.OldestReadyAge != nil {
		j.OldestReadyAgeSeconds = s.stats.OldestReadyAge.Seconds()
	}
	if s.stats.OldestStuckAge != nil {
		j.OldestStuckAgeSeconds = s.stats.OldestStuckAge.Seconds()
	}
	return j
}

// APIList: GET /api/v1/outboxes. An outbox whose database is down carries "error" and null counts.
func (h *Outboxes) APIList(c echo.Context) error {
	resp := struct {
		Outboxes []outboxJSON `json:"outboxes"`
	}{Outboxes: []outboxJSON{}}
	for _, s := range h.summaries(c.Request().Context()) {
		resp.Outboxes = append(resp.Outboxes, toOutboxJSON(c, s))
	}
	return c.JSON(http.StatusOK, resp)
}

// APIOne: GET /api/v1/outboxes/:name.
func (h *Outboxes) APIOne(c echo.Context) error {
	o, err := h.find(pathParam(c, "name"))
	if err != nil {
		return err
	}
	st, err := o.CachedStats(c.Request().Context(), outbox.StatsMaxAge)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toOutboxJSON(c, summary{outbox: o, stats: st}))
}

type eventJSON struct {
	ID            int64      `json:"id"`
	EventID       string     `json:"event_id"`
	AggregateType string     `json:"aggregate_type"`
	AggregateID   string     `json:"aggregate_id"`
	EventType     string     `json:"event_type"`
	SchemaVersion int        `json:"schema_version"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	AvailableAt   time.Time  `json:"available_at"`
	LockedUntil   *time.Time `json:"locked_until"`
	Stuck         bool       `json:"stuck"`
	LastError     *string    `json:"last_error"`
	CreatedAt     time.Time  `json:"created_at"`
	SentAt        *time.Time `json:"sent_at"`
}

func toEventJSON(e outbox.Event, now time.Time) eventJSON {
	return eventJSON{ID: e.ID, EventID: e.EventID, AggregateType: e.AggregateType, AggregateID: e.AggregateID,
		EventType: e.EventType, SchemaVersion: e.SchemaVersion, Status: string(e.Status), Attempts: e.Attempts,
		AvailableAt: e.AvailableAt.UTC(), LockedUntil: inUTC(e.LockedUntil), Stuck: e.Stuck(now),
		LastError: e.LastError, CreatedAt: e.CreatedAt.UTC(), SentAt: inUTC(e.SentAt)}
}

// parseFilter reads the event-list query parameters shared by the API and the page.
func parseFilter(c echo.Context, now time.Time) (outbox.Filter, error) {
	var f outbox.Filter
	var err error
	if s := c.QueryParam("status"); s != "" {
		if f.Status, err = outbox.ParseStatus(s); err != nil {
			return f, err
		}
	}
	f.EventType = c.QueryParam("event_type")
	f.AggregateID = c.QueryParam("aggregate_id")
	if err := filterTexts(formFilterFields, f.EventType, f.AggregateID); err != nil {
		return f, err
	}
	// The page shows the created range as given: "000…01h" is an age like "1h", but not 100 KB of it.
	for _, name := range []string{"created_from", "created_to"} {
		if len(c.QueryParam(name)) > outbox.EchoLimit {
			return f, ops.Invalid(name, fmt.Sprintf("must be at most %d characters", outbox.EchoLimit))
		}
	}
	if f.StuckOnly, err = queryBool(c, "stuck"); err != nil {
		return f, err
	}
	if err := f.Check(); err != nil { // before the page shows a status the list does not hold to
		return f, err
	}
	if f.CreatedFrom, err = queryTime(c, "created_from", now); err != nil {
		return f, err
	}
	if f.CreatedTo, err = queryTime(c, "created_to", now); err != nil {
		return f, err
	}
	f.Limit, f.Before, err = pageQuery(c, outbox.DefaultLimit, outbox.MaxLimit)
	return f, err
}

// APIEvents: GET /api/v1/outboxes/:name/events.
func (h *Outboxes) APIEvents(c echo.Context) error {
	o, err := h.find(pathParam(c, "name"))
	if err != nil {
		return err
	}
	now := time.Now()
	if registryOf(o) {
		return h.apiRecords(c, o)
	}
	f, err := parseFilter(c, now)
	if err != nil {
		return err
	}
	page, err := o.List(c.Request().Context(), f)
	if err != nil {
		return err
	}
	if page.Events, err = h.shownEvents(c, o, page.Events); err != nil {
		return err
	}
	resp := struct {
		Events     []eventJSON `json:"events"`
		NextCursor *string     `json:"next_cursor"`
	}{Events: make([]eventJSON, 0, len(page.Events)), NextCursor: cursorJSON(page.NextCursor)}
	for _, e := range page.Events {
		resp.Events = append(resp.Events, toEventJSON(e, now))
	}
	return c.JSON(http.StatusOK, resp)
}

// maxPayload caps the payload returned or rendered: message content is untrusted and unbounded.
const maxPayload = 256 << 10

// shownPayload is an event's payload as the caller may see it: masked unless an admin reveals it
// (redactPayload), then cut to maxPayload.
type shownPayload struct {
	text                string
	truncated, redacted bool
}

// event is the event of the path (/outboxes/:name/events/:id) as the caller may see it (its
// payload and last_error masked unless an admin reveals it, redact.Rules.OutboxEvent), its payload
// as shown.
func (h *Outboxes) event(c echo.Context) (OutboxService, outbox.Event, shownPayload, error) {
	o, err := h.find(pathParam(c, "name"))
	if err != nil {
		return nil, outbox.Event{}, shownPayload{}, err
	}
	id, err := eventID(c.Param("id"))
	if err != nil {
		return nil, outbox.Event{}, shownPayload{}, err
	}
	e, err := o.Event(c.Request().Context(), id)
	if err != nil {
		return nil, outbox.Event{}, shownPayload{}, err
	}
	// The whole payload is masked before it is cut to size: a cut JSON document could no longer
	// be parsed, and so not be masked.
	red, err := redactionFor(c, h.redact, fmt.Sprintf("outbox/%s/event/%d", o.Name(), e.ID))
	if err != nil {
		return nil, outbox.Event{}, shownPayload{}, err
	}
	e, redacted := red.OutboxEvent(e)
	text, truncated := capText(e.Payload, maxPayload)
	return o, e, shownPayload{text, truncated, redacted}, nil
}

// APIEvent: GET /api/v1/outboxes/:name/events/:id — the event plus its payload (a JSON value when
// the payload is JSON, else a string), with the configured paths masked ("payload_redacted": true
// then), and last_error where it repeats them, unless an admin asks ?reveal=true, which is audited.
// payload_size is the size of the payload as shown: masking reveals no length.
func (h *Outboxes) APIEvent(c echo.Context) error {
	if o, err := h.find(pathParam(c, "name")); err == nil && registryOf(o) {
		return h.apiRecord(c, o)
	}
	_, e, shown, err := h.event(c)
	if err != nil {
		return err
	}
	var raw any = shown.text // a cut document is a string even where its head happens to parse ("12" of "1234")
	if !shown.truncated {
		raw = payload.Value([]byte(shown.text))
	}
	return c.JSON(http.StatusOK, eventPayloadJSON{toEventJSON(e, time.Now()), raw, shown.truncated, shown.redacted, len(e.Payload)})
}

// eventPayloadJSON is one event with its payload: a JSON value when it is JSON, else a string.
type eventPayloadJSON struct {
	eventJSON
	Payload          any  `json:"payload"`
	PayloadTruncated bool `json:"payload_truncated,omitempty"`
	PayloadRedacted  bool `json:"payload_redacted,omitempty"`
	PayloadSize      int  `json:"payload_size"`
}

// shownEvents are a list's events with last_error as the caller may see it: where the payload
// masking may hide something, each last_error is shown only as its event's masking leaves it (the
// payload is read for it: a list carries none), and hidden whole when the payload cannot be read.
// ?reveal=true is an admin's, audited.
func (h *Outboxes) shownEvents(c echo.Context, o OutboxService, events []outbox.Event) ([]outbox.Event, error) {
	red, err := redactionFor(c, h.redact, fmt.Sprintf("outbox/%s/events", o.Name()))
	if err != nil || !red.MasksPayloads() {
		return events, err
	}
	ctx := c.Request().Context()
	for i, e := range events {
		if e.LastError == nil || *e.LastError == "" {
			continue
		}
		full, err := o.Event(ctx, e.ID)
		if err != nil || full.Payload == "" {
			hidden := redact.Redacted
			events[i].LastError = &hidden
			continue
		}
		m, _ := red.OutboxEvent(full)
		events[i].LastError = m.LastError
	}
	return events, nil
}

// capText cuts s to at most n bytes on a character boundary.
func capText(s string, n int) (string, bool) { return payload.Cut(s, n) }

type releaseRequest struct {
	IDs      []int64 `json:"ids"`
	AllStuck bool    `json:"all_stuck"`
	Reason   string  `json:"reason"`
}

// APIRelease: POST /api/v1/outboxes/:name/leases/release {"ids":[…]} or {"all_stuck":true}.
func (h *Outboxes) APIRelease(c echo.Context) error {
	return repairAPI(h, c, h.release, func(n int64) releasedJSON { return releasedJSON{Released: n} })
}

// repairAPI answers a repair's API route: the outbox named in the path, the request body decoded
// into R, the repair done (its own checks, its audit), and the count of events it changed
// answered as answer makes it.
func repairAPI[R, A any](h *Outboxes, c echo.Context, repair func(echo.Context, OutboxService, R) (int64, error), answer func(int64) A) error {
	o, err := h.find(pathParam(c, "name"))
	if err != nil {
		return err
	}
	return answerJSON(c, func(c echo.Context, req R) (int64, error) { return repair(c, o, req) }, answer)
}

// releasedJSON and requeuedJSON count the events a repair changed.
type (
	releasedJSON struct {
		Released int64 `json:"released"`
	}
	requeuedJSON struct {
		Requeued int64 `json:"requeued"`
	}
)

func (h *Outboxes) release(c echo.Context, o OutboxService, req releaseRequest) (int64, error) {
	switch {
	case req.AllStuck && len(req.IDs) > 0:
		return 0, ops.Invalid("ids", "give either ids or all_stuck, not both")
	case !req.AllStuck && len(req.IDs) == 0:
		return 0, ops.Invalid("ids", `give the event ids to release, or {"all_stuck": true}`)
	}
	if err := checkIDs(req.IDs); err != nil {
		return 0, err
	}
	ids := req.IDs
	if req.AllStuck {
		ids = nil
	}
	detail := map[string]any{"all_stuck": req.AllStuck, "ids": req.IDs}
	return h.repairs(c).Release(c.Request().Context(), o, auditEntry(c, "", "", req.Reason, detail), ids)
}

// repairs is the outboxes' direct repairs (replay.OutboxRepairs) for this request's log.
func (h *Outboxes) repairs(c echo.Context) replay.OutboxRepairs {
	return replay.OutboxRepairs{Audit: h.audit, Rule: h.rule, Triage: h.triage, Log: loggerOf(c), PlanAt: paths.APIPlanReplay}
}

type requeueRequest struct {
	IDs           []int64 `json:"ids"`
	Reason        string  `json:"reason"`
	ResetAttempts bool    `json:"reset_attempts"`
}

// APIRequeue: POST /api/v1/outboxes/:name/events/requeue {"ids":[…],"reason":"…"}.
func (h *Outboxes) APIRequeue(c echo.Context) error {
	return repairAPI(h, c, h.requeue, func(n int64) requeuedJSON { return requeuedJSON{Requeued: n} })
}

func (h *Outboxes) requeue(c echo.Context, o OutboxService, req requeueRequest) (int64, error) {
	if len(req.IDs) == 0 {
		return 0, ops.Invalid("ids", "give the ids of the DEAD or FAILED events to requeue")
	}
	if err := checkIDs(req.IDs); err != nil {
		return 0, err
	}
	reason, err := requiredReason(req.Reason, "say why these events are requeued (it goes to the audit log)")
	if err != nil {
		return 0, err
	}
	detail := map[string]any{"ids": req.IDs, "reset_attempts": req.ResetAttempts}
	return h.repairs(c).Requeue(c.Request().Context(), o, auditEntry(c, "", "", reason, detail), ActorOf(c), req.IDs, req.ResetAttempts)
}

// ---- HTML pages ----

func toSummaryView(c echo.Context, s summary) outboxpages.Summary {
	f := s.outbox.Format()
	v := outboxpages.Summary{Name: s.outbox.Name(), MaxAttempts: s.outbox.MaxAttempts(), CheckedAt: s.stats.CheckedAt}
	if registryOf(s.outbox) {
		v.Registry = registrySummary(f, s.stats)
	}
	if s.err != nil {
		v.Error = shown(c, s.err)
		return v
	}
	for _, st := range f.States {
		v.Counts = append(v.Counts, outboxpages.StatusCount{Status: string(st), Count: s.stats.Counts[st]})
	}
	v.SentIsEstimate = s.stats.SentIsEstimate
	v.Stuck = s.stats.StuckLeases
	v.Dead = s.stats.Counts[outbox.Dead]
	v.OldestReadyAge, v.OldestStuckAge = s.stats.OldestReadyAge, s.stats.OldestStuckAge
	return v
}

// Index: GET /outboxes.
func (h *Outboxes) Index(c echo.Context) error {
	var views []outboxpages.Summary
	for _, s := range h.summaries(c.Request().Context()) {
		views = append(views, toSummaryView(c, s))
	}
	return render(c, http.StatusOK, outboxpages.Index(outboxpages.IndexPage{
		Meta: h.meta(c, "Outboxes", "outboxes"), Outboxes: views}))
}

// Panel: GET /outboxes/:name/panel — the stats panel alone, for htmx refresh.
func (h *Outboxes) Panel(c echo.Context) error {
	o, err := h.find(pathParam(c, "name"))
	if err != nil {
		return err
	}
	st, err := o.CachedStats(c.Request().Context(), outbox.StatsMaxAge)
	return render(c, http.StatusOK, outboxpages.Panel(toSummaryView(c, summary{outbox: o, stats: st, err: err})))
}

// Show: GET /outboxes/:name — stats, filters, the event list and the repair actions.
func (h *Outboxes) Show(c echo.Context) error {
	o, err := h.find(pathParam(c, "name"))
	if err != nil {
		return err
	}
	if registryOf(o) {
		return h.showRegistry(c, o)
	}
	ctx := c.Request().Context()
	now := time.Now()
	f, err := parseFilter(c, now)
	if err != nil {
		return err
	}
	st, statsErr := o.CachedStats(ctx, outbox.StatsMaxAge)
	page := outboxpages.ShowPage{
		Meta:    h.meta(c, "Outbox "+o.Name(), "outboxes"),
		Summary: toSummaryView(c, summary{outbox: o, stats: st, err: statsErr}),
		Filters: outboxpages.Filters{Status: string(f.Status), EventType: f.EventType, AggregateID: f.AggregateID,
			Stuck: f.StuckOnly, CreatedFrom: c.QueryParam("created_from"), CreatedTo: c.QueryParam("created_to"),
			Limit: f.Limit},
		Notice:    readFlash(c),
		Self:      paths.WithQuery(c.Request().URL.EscapedPath(), c.QueryParams()),
		FirstPage: f.Before == 0,
		CanAct:    h.meta(c, "", "").CanOperate,
	}
	page.Meta.Breadcrumbs = []layout.Crumb{{Label: "Outboxes", Href: paths.Outboxes}, {Label: o.Name()}}
	list, err := o.List(ctx, f)
	if err == nil {
		if list.Events, err = h.shownEvents(c, o, list.Events); errors.Is(err, ops.ErrForbidden) {
			return err // a refused reveal is the request's answer, not the panel's
		}
	}
	if err != nil {
		page.ListError = shown(c, err)
		list.Events = nil
	}
	var dead []int64
	for _, e := range list.Events {
		if e.Status == outbox.Dead {
			dead = append(dead, e.ID)
		}
	}
	resolutions := h.eventResolutions(ctx, o.Name(), dead)
	for _, e := range list.Events {
		r := toEventRow(e, now)
		if res, ok := resolutions[e.ID]; ok && triage.Marks(res, e) { // a mark of an earlier death is none of this one
			r.Resolution = outboxpages.Resolution{State: res.State, By: res.Actor, At: res.At, Reason: res.Reason, JobID: res.JobID}
		}
		page.Events = append(page.Events, r)
	}
	page.Resolvable = h.triage != nil
	page.NextURL = nextPageURL(c, paths.Outbox(o.Name()), list.NextCursor)
	return render(c, http.StatusOK, outboxpages.Show(page))
}

func toEventRow(e outbox.Event, now time.Time) outboxpages.EventRow {
	r := outboxpages.EventRow{ID: e.ID, EventID: e.EventID, AggregateType: e.AggregateType, AggregateID: e.AggregateID,
		EventType: e.EventType, Status: string(e.Status), Attempts: e.Attempts, AvailableAt: e.AvailableAt,
		LockedUntil: e.LockedUntil, CreatedAt: e.CreatedAt, SentAt: e.SentAt, Stuck: e.Stuck(now),
		SchemaVersion: e.SchemaVersion}
	if e.LastError != nil {
		r.LastError, _ = capText(*e.LastError, 64<<10)
	}
	r.Requeueable = e.Status == outbox.Dead || e.Status == outbox.Failed
	return r
}

// EventPage: GET /outboxes/:name/events/:id.
func (h *Outboxes) EventPage(c echo.Context) error {
	if o, err := h.find(pathParam(c, "name")); err == nil && registryOf(o) {
		return h.recordPage(c, o)
	}
	o, e, shown, err := h.event(c)
	if err != nil {
		return err
	}
	truncated, redacted := shown.truncated, shown.redacted
	pretty, isJSON := shown.text, false
	if !truncated {
		pretty, isJSON = payload.Indent([]byte(shown.text))
	}
	page := outboxpages.EventPage{
		Meta:             h.meta(c, fmt.Sprintf("Event %d · %s", e.ID, o.Name()), "outboxes"),
		Outbox:           o.Name(),
		MaxAttempts:      o.MaxAttempts(),
		Event:            toEventRow(e, time.Now()),
		Payload:          pretty,
		PayloadIsJSON:    isJSON,
		PayloadTruncated: truncated,
		PayloadSize:      len(e.Payload),
		CanAct:           h.meta(c, "", "").CanOperate,
		Redacted:         redacted,
		CanReveal:        redacted && ActorOf(c).Can(access.Admin),
		Notice:           readFlash(c),
	}
	page.Meta.Breadcrumbs = []layout.Crumb{{Label: "Outboxes", Href: paths.Outboxes},
		{Label: o.Name(), Href: paths.Outbox(o.Name())}, {Label: fmt.Sprintf("event %d", e.ID)}}
	return render(c, http.StatusOK, outboxpages.Event(page))
}

// FormRelease: POST /outboxes/:name/release (form: id=…&id=… or all_stuck=1).
func (h *Outboxes) FormRelease(c echo.Context) error {
	return repairForm(h, c, h.release, func(ids []int64) releaseRequest {
		return releaseRequest{IDs: ids, AllStuck: c.FormValue("all_stuck") != "", Reason: c.FormValue("reason")}
	}, "released")
}

// FormRequeue: POST /outboxes/:name/requeue (form: id=…&id=…, reason, reset_attempts).
func (h *Outboxes) FormRequeue(c echo.Context) error {
	return repairForm(h, c, h.requeue, func(ids []int64) requeueRequest {
		return requeueRequest{IDs: ids, Reason: c.FormValue("reason"), ResetAttempts: c.FormValue("reset_attempts") != ""}
	}, "requeued")
}

// repairForm answers a repair's page form, as repairAPI its API route: the outbox named in the
// path, the ticked events (id=…) made into R by request with the form's other fields, the repair
// done (its own checks, its audit), and back to the outbox page saying how many events it
// changed (done: "released", "requeued").
func repairForm[R any](h *Outboxes, c echo.Context, repair func(echo.Context, OutboxService, R) (int64, error), request func(ids []int64) R, done string) error {
	o, err := h.find(pathParam(c, "name"))
	if err != nil {
		return err
	}
	ids, err := formIDs(c)
	if err != nil {
		return err
	}
	n, err := repair(c, o, request(ids))
	if err != nil {
		return err
	}
	doneFlash(c, done, n)
	return c.Redirect(http.StatusSeeOther, backTo(c, o.Name()))
}

func formIDs(c echo.Context) ([]int64, error) {
	form, err := c.FormParams()
	if err != nil {
		return nil, ops.Invalid("form", "could not be read")
	}
	var ids []int64
	for _, raw := range form["id"] {
		id, err := eventID(raw)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// eventID reads an event's id as a path or a form gives it: a positive integer, at most int64's
// largest. What it quotes back is cut to outbox.EchoLimit bytes.
func eventID(raw string) (int64, error) {
	id, err := strconv.ParseInt(raw, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) && id > 0:
		return 0, ops.Invalid("id", fmt.Sprintf("%s is too large for an event id (at most %d)", payload.Clip(raw, outbox.EchoLimit), int64(math.MaxInt64)))
	case err != nil || id < 1:
		return 0, ops.Invalid("id", fmt.Sprintf("%q is not an event id (a positive integer)", payload.Clip(raw, outbox.EchoLimit)))
	}
	return id, nil
}

// checkIDs refuses a repair's list of event ids with one that cannot be an event's (0, a negative,
// a JSON null, which decodes as 0), as the forms do, and more than outbox.MaxIDs of them.
func checkIDs(ids []int64) error {
	if len(ids) > outbox.MaxIDs {
		return ops.Invalid("ids", fmt.Sprintf("at most %d per request", outbox.MaxIDs))
	}
	for _, id := range ids {
		if id < 1 {
			return ops.Invalid("ids", "each id must be a positive integer")
		}
	}
	return nil
}

// backTo is the page to return to after a form action: only ever one of this outbox's own pages.
// What the action did goes with it as a flash (doneFlash), never in the URL.
func backTo(c echo.Context, name string) string {
	// Back to the page the form was on, with its filters (status, error group…), when it is this
	// outbox's page or one below it; anywhere else is not followed.
	if u, ok := below(c.FormValue("return"), paths.Outbox(name)); ok {
		return paths.WithQuery(u.EscapedPath(), u.Query())
	}
	return paths.Outbox(name)
}

// doneFlash keeps what a form action did for the page it goes back to (setFlash: a signed,
// one-time cookie). The notice was read from the URL (?done=requeued&n=500), so a crafted link
// showed "Requeued 500 events" though nothing had happened.
func doneFlash(c echo.Context, done string, n int64) {
	switch done {
	case "released":
		setFlash(c, fmt.Sprintf("Released %d stuck lease(s): those events are READY for the relay again.", n))
	case "requeued":
		setFlash(c, "Requeued "+ops.Plural(n, "event")+" to READY. Rows that were not DEAD or FAILED were left alone.")
	case "resolved":
		setFlash(c, "Changed the resolution of "+ops.Plural(n, "DEAD event")+"; the service's outbox table was not touched.")
	}
}
