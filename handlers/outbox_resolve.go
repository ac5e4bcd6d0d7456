package handlers

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/triage"
)

// OutboxTriage is what the outbox pages and API need of ops/triage: the resolution state of DEAD
// events, kept in the console's store; *triage.Triage implements it.
type OutboxTriage interface {
	ResolveOutbox(ctx context.Context, r triage.OutboxRequest) (triage.Result, error)
	OutboxResolutions(ctx context.Context, outbox string, ids []int64) (map[int64]triage.Resolution, error)
	// OutboxRequeued opens the resolved or ignored marks of the events a requeue moved.
	OutboxRequeued(ctx context.Context, actor access.Actor, outbox string, ids []int64) error
}

// SetTriage wires the resolution of DEAD events into the outbox pages and API; without it every
// event reads as open and resolving answers 503.
func (h *Outboxes) SetTriage(t OutboxTriage) { h.triage = t }

// outboxResolutionRequest is the body of POST /api/v1/outboxes/:name/resolutions.
type outboxResolutionRequest struct {
	Events []int64          `json:"events"`
	Filter *outboxFilterRef `json:"filter"`
	State  string           `json:"state"`
	Reason string           `json:"reason"`
}

// outboxFilterRef selects DEAD events as the outbox page filters them. Since and until read as a
// Kafka resolution's and a replay plan's do: RFC 3339, a date, or an age like 6h (bodyTime).
type outboxFilterRef struct {
	EventType   string `json:"event_type"`
	AggregateID string `json:"aggregate_id"`
	Since       string `json:"since"`
	Until       string `json:"until"`
}

// filterFields name the filter's fields in what the person filled in: the API's body fields, or
// the page's form fields.
type filterFields struct{ eventType, aggregateID, since, until string }

var (
	apiFilterFields  = filterFields{"filter.event_type", "filter.aggregate_id", "filter.since", "filter.until"}
	formFilterFields = filterFields{"event_type", "aggregate_id", "created_from", "created_to"}
)

// maxFilterText bounds, in characters, the texts an outbox's events are filtered by.
const maxFilterText = 256

// filterTexts refuses an event type or aggregate id longer than maxFilterText characters.
func filterTexts(fields filterFields, eventType, aggregateID string) error {
	if err := textWithin(fields.eventType, eventType, maxFilterText); err != nil {
		return err
	}
	return textWithin(fields.aggregateID, aggregateID, maxFilterText)
}

// toFilter reads the filter as the event list's query does (parseFilter): the texts at most
// maxFilterText characters, the times as bodyTime reads them.
func (f outboxFilterRef) toFilter(fields filterFields, now time.Time) (*triage.OutboxFilter, error) {
	if err := filterTexts(fields, f.EventType, f.AggregateID); err != nil {
		return nil, err
	}
	since, err := bodyTime(fields.since, f.Since, now)
	if err != nil {
		return nil, err
	}
	until, err := bodyTime(fields.until, f.Until, now)
	if err != nil {
		return nil, err
	}
	return &triage.OutboxFilter{EventType: f.EventType, AggregateID: f.AggregateID, Since: since, Until: until}, nil
}

// APIResolve: POST /api/v1/outboxes/:name/resolutions — {"events":[ids] | "filter":{"event_type",
// "aggregate_id","since","until"}, "state", "reason"} → {"updated","matched"}: DEAD events marked
// resolved, ignored or open in the console's store (the service's table is only read).
func (h *Outboxes) APIResolve(c echo.Context) error {
	resolve := func(c echo.Context, req outboxResolutionRequest) (triage.Result, error) {
		if req.Events != nil && len(req.Events) == 0 {
			return triage.Result{}, ops.Invalid("events", "empty: name at least one event")
		}
		return h.resolve(c, req, apiFilterFields)
	}
	return answerJSON(c, resolve, func(res triage.Result) resolvedJSON {
		return resolvedJSON{Updated: res.Updated, Matched: res.Matched}
	})
}

// FormResolve: POST /outboxes/:name/resolutions — the page's forms: the ticked events (id), or
// every DEAD event matching the page's filter (filter=1 with event_type, aggregate_id,
// created_from, created_to), back to the page.
func (h *Outboxes) FormResolve(c echo.Context) error {
	req := outboxResolutionRequest{State: c.FormValue("state"), Reason: c.FormValue("reason")}
	if c.FormValue("filter") != "" {
		req.Filter = &outboxFilterRef{EventType: c.FormValue("event_type"), AggregateID: c.FormValue("aggregate_id"),
			Since: strings.TrimSpace(c.FormValue("created_from")), Until: strings.TrimSpace(c.FormValue("created_to"))}
	} else {
		ids, err := formIDs(c)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return ops.Invalid("id", "tick at least one event")
		}
		req.Events = ids
	}
	res, err := h.resolve(c, req, formFilterFields)
	if err != nil {
		return err
	}
	doneFlash(c, "resolved", res.Updated)
	return c.Redirect(http.StatusSeeOther, backTo(c, pathParam(c, "name")))
}

func (h *Outboxes) resolve(c echo.Context, req outboxResolutionRequest, fields filterFields) (triage.Result, error) {
	o, err := h.find(pathParam(c, "name"))
	if err != nil {
		return triage.Result{}, err
	}
	if h.triage == nil {
		return triage.Result{}, &ops.Error{Kind: ops.ErrUnavailable, Message: "resolutions need the console's store"}
	}
	reason, err := resolutionInput(req.State, req.Reason, "events")
	if err != nil {
		return triage.Result{}, err
	}
	r := triage.OutboxRequest{Outbox: o.Name(), Events: req.Events, State: req.State, Reason: reason, Actor: ActorOf(c)}
	if f := req.Filter; f != nil {
		if r.Filter, err = f.toFilter(fields, time.Now()); err != nil {
			return triage.Result{}, err
		}
	}
	return h.triage.ResolveOutbox(clientContext(c), r)
}

// eventResolutions reads the resolution of the DEAD events among events, for the page; none
// (and no error) when the store cannot say, so that the page still lists the events.
func (h *Outboxes) eventResolutions(ctx context.Context, name string, ids []int64) map[int64]triage.Resolution {
	if h.triage == nil || len(ids) == 0 {
		return nil
	}
	res, _ := h.triage.OutboxResolutions(ctx, name, ids)
	return res
}
