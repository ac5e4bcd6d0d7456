package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/source"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
	replaypages "github.com/redrive/redrive/views/pages/replays"
)

// ReplayEngine plans and runs guarded replays (ops/replay).
type ReplayEngine interface {
	RabbitReplays // which browsed dead letters a job already holds
	Plan(ctx context.Context, actor string, src replay.Source, f replay.Filter) (replay.Plan, error)
	// StartPlanFor starts making a plan in the background, its filters matching what its actor
	// may see; AwaitPlan waits for it at most within, and PlanWait is how long a request waits for
	// a selection of estimate messages.
	StartPlanFor(ctx context.Context, r replay.PlanRequest) (*replay.Planning, error)
	AwaitPlan(ctx context.Context, pl *replay.Planning, within time.Duration) (replay.Plan, bool, error)
	PlanWait(estimate int) time.Duration
	// CancelPlan stops a plan being made (ops.ErrConflict when it is no longer planning).
	CancelPlan(ctx context.Context, id string, by access.Actor) (replay.Plan, error)
	LoadPlan(ctx context.Context, id string) (replay.Plan, error)
	Start(ctx context.Context, r replay.StartRequest) (replay.Job, error)
	Job(ctx context.Context, id string) (replay.Job, error)
	Jobs(ctx context.Context, limit int) ([]replay.Job, error)
	Ledger(ctx context.Context, id string, limit int) ([]replay.LedgerEntry, error)
	Cancel(ctx context.Context, id string, by access.Actor) (replay.Job, error)
	Approve(ctx context.Context, id string, approver access.Actor) (replay.Job, error)
	// StartRefused is why actor may not start a job of plan (force: forced), as Start would
	// refuse it (ops.ErrForbidden); nil when it may.
	StartRefused(plan replay.Plan, actor access.Actor, force bool) error
	// ApproveRefused is why approver may not approve job, as Approve would refuse it; nil when
	// they may.
	ApproveRefused(ctx context.Context, job replay.Job, approver access.Actor) error
}

// ReplayViews reads what the replay pages show beside the engine's answers (ops/store): the jobs
// of a plan, a job's failures grouped by reason, and where each plan's messages come from and go.
// Every method returns ops.ErrUnavailable when the store cannot be read.
type ReplayViews interface {
	JobsOfPlan(ctx context.Context, planID string) ([]replay.Job, error)
	FailureGroups(ctx context.Context, jobID string, limit int) ([]replay.FailureGroup, error)
	PlanRoutes(ctx context.Context, planIDs []string, sample int) (map[string]replay.PlanRoute, error)
}

// Replays serves the replay pages and API.
type Replays struct {
	engine ReplayEngine
	views  ReplayViews
	meta   MetaFunc
	redact *redact.Rules // masks plans (see Redacting); nil masks nothing
}

// NewReplays wires the engine and the store's replay views (both required).
func NewReplays(engine ReplayEngine, views ReplayViews, meta MetaFunc) *Replays {
	return &Replays{engine: engine, views: views, meta: meta}
}

// How many failure groups a job shows, and how many items of a plan are sampled for its
// destinations.
const (
	maxFailureGroups  = 20
	destinationSample = 200
)

type planRequest struct {
	// Action is what the job does with the messages: replay (the default) or discard (RabbitMQ:
	// archive each one, then ack it from the dead-letter queue).
	Action string `json:"action"`
	// Destination redirects every message there (replay.allowed_destinations permitting).
	Destination *replay.Destination `json:"destination"`
	// Edit changes the plan's one message before it is published (edit and retry).
	Edit   *replay.Edit  `json:"edit"`
	Source replay.Source `json:"source"`
	Filter planFilter    `json:"filter"`
}

type planFilter struct {
	ExceptionType string   `json:"exception_type"`
	Reason        string   `json:"reason"`
	OriginalTopic string   `json:"original_topic"`
	MessageIDs    []string `json:"message_ids"`
	Since         string   `json:"since"`
	Until         string   `json:"until"`
	CEL           string   `json:"cel"` // a filter expression (ops/search), Kafka and RabbitMQ sources
}

func (f planFilter) toFilter(now time.Time) (replay.Filter, error) {
	out := replay.Filter{ExceptionType: f.ExceptionType, Reason: f.Reason, OriginalTopic: f.OriginalTopic, MessageIDs: f.MessageIDs,
		CEL: f.CEL}
	var err error
	if out.Since, err = bodyTime("filter.since", f.Since, now); err != nil {
		return out, err
	}
	if out.Until, err = bodyTime("filter.until", f.Until, now); err != nil {
		return out, err
	}
	if len(out.MessageIDs) > 10_000 {
		return out, ops.Invalid("filter.message_ids", "at most 10000")
	}
	return out, nil
}

type planItemJSON struct {
	Seq         int             `json:"seq"`
	Locator     string          `json:"locator"`
	MessageID   string          `json:"message_id"`
	Consumer    string          `json:"consumer"`
	Destination string          `json:"destination"`
	Target      destinationJSON `json:"destination_detail"`
	Inbox       string          `json:"inbox"`
	Action      string          `json:"action"`
	ErrorGroup  string          `json:"error_group"`
	ReplayCount int             `json:"replay_count"`
	Note        string          `json:"note,omitempty"` // why it is skipped, when its action alone does not say
}

// destinationJSON is replay.Destination on the wire: a Kafka destination always carries its
// partition (-1: any) and where it comes from, so partition 0 is never mistaken for "absent".
type destinationJSON struct {
	Kind            string `json:"kind"`
	Cluster         string `json:"cluster,omitempty"`
	Topic           string `json:"topic,omitempty"`
	Partition       *int32 `json:"partition,omitempty"`
	PartitionSource string `json:"partition_source,omitempty"`
	Broker          string `json:"broker,omitempty"`
	Vhost           string `json:"vhost,omitempty"`
	Exchange        string `json:"exchange,omitempty"`
	RoutingKey      string `json:"routing_key,omitempty"`
	Outbox          string `json:"outbox,omitempty"`
}

func toDestinationJSON(d replay.Destination) destinationJSON {
	j := destinationJSON{Kind: string(d.Kind), Cluster: d.Cluster, Topic: d.Topic, Broker: d.Broker, Vhost: d.Vhost,
		Exchange: d.Exchange, RoutingKey: d.RoutingKey, Outbox: d.Outbox}
	if d.Kind == "kafka" {
		p := d.Partition
		j.Partition, j.PartitionSource = &p, partitionSource(d)
	}
	return j
}

// partitionSource is where a Kafka destination's partition comes from; a plan made before the
// engine recorded it chose by key.
func partitionSource(d replay.Destination) string {
	if d.PartitionSource == "" {
		return replay.PartitionFromKey
	}
	return d.PartitionSource
}

// planJobJSON is one job that ran a plan.
type planJobJSON struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	Outcome   string    `json:"outcome"`
	Published int       `json:"published"`
	Skipped   int       `json:"skipped"`
	Failed    int       `json:"failed"`
	CreatedAt time.Time `json:"created_at"`
}

type planJSON struct {
	PlanID      string                    `json:"plan_id"`
	Action      string                    `json:"action"` // replay or discard
	CreatedAt   time.Time                 `json:"created_at"`
	Total       int                       `json:"total"`
	Actions     map[string]int            `json:"actions"`
	ErrorGroups map[string]map[string]int `json:"error_groups,omitempty"`
	Warnings    []string                  `json:"warnings"`
	Items       []planItemJSON            `json:"items"`
	// Jobs that ran the plan, newest first; [] for a plan that never ran.
	Jobs []planJobJSON `json:"jobs"`
	// Edit is an edit and retry's change of its one message, before and after, masked as any
	// content (redact.Rules.Edit); absent for a plan that publishes messages as they died.
	Edit *replay.EditDiff `json:"edit,omitempty"`
}

func toPlanJSON(p replay.Plan) planJSON {
	j := planJSON{PlanID: p.ID, Action: replay.ActionReplay, CreatedAt: p.CreatedAt.UTC(), Total: p.Total, Actions: map[string]int{},
		Warnings: p.Warnings, Items: []planItemJSON{}, Jobs: []planJobJSON{}}
	if p.Source.Action != "" {
		j.Action = p.Source.Action
	}
	if ed := p.Source.Edit; ed != nil {
		j.Edit = ed.Diff
	}
	if j.Warnings == nil {
		j.Warnings = []string{}
	}
	for _, a := range replay.Actions {
		j.Actions[string(a)] = p.Counts[a]
	}
	if len(p.ErrorGroups) > 0 {
		j.ErrorGroups = map[string]map[string]int{}
		for g, counts := range p.ErrorGroups {
			j.ErrorGroups[g] = map[string]int{}
			for a, n := range counts {
				j.ErrorGroups[g][string(a)] = n
			}
		}
	}
	for _, it := range p.Items {
		j.Items = append(j.Items, planItemJSON{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID, Consumer: it.Consumer,
			Destination: destinationText(it.Destination), Target: toDestinationJSON(it.Destination), Inbox: string(it.Inbox),
			Action: string(it.Action), ErrorGroup: it.ErrorGroup, ReplayCount: it.ReplayCount, Note: it.Note})
	}
	return j
}

func destinationText(d replay.Destination) string {
	if d.Kind == "" {
		return ""
	}
	return d.String()
}

// planningJSON is a plan that is not ready: being made (its progress so far), cancelled or
// failed (why). A ready plan is planJSON, as it always was.
type planningJSON struct {
	PlanID    string     `json:"plan_id"`
	Action    string     `json:"action"`
	State     string     `json:"state"` // planning | cancelled | failed
	CreatedAt time.Time  `json:"created_at"`
	Actor     string     `json:"actor"`
	Progress  progress   `json:"progress"`
	Error     string     `json:"error,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Poll is where the plan is read (GET), Cancel where it is cancelled while planning.
	Poll   string `json:"poll"`
	Cancel string `json:"cancel,omitempty"`
}

type progress struct {
	// Planned messages so far; Estimate is how many the selection reads at most (0: unknown).
	Planned  int            `json:"planned"`
	Estimate int            `json:"estimate"`
	Actions  map[string]int `json:"actions"`
}

func toPlanningJSON(p replay.Plan) planningJSON {
	j := planningJSON{PlanID: p.ID, Action: replay.ActionReplay, State: p.State, CreatedAt: p.CreatedAt.UTC(), Actor: p.Actor,
		Progress: progress{Planned: p.Planned, Estimate: p.Estimate, Actions: map[string]int{}}, Error: p.Error,
		EndedAt: inUTC(p.FinishedAt), Poll: paths.APIReplayPlan(p.ID)}
	if p.Source.Action != "" {
		j.Action = p.Source.Action
	}
	for _, a := range replay.Actions {
		j.Progress.Actions[string(a)] = p.Counts[a]
	}
	if p.State == replay.PlanPlanning {
		j.Cancel = paths.APIReplayPlanCancel(p.ID)
	}
	return j
}

// APIPlanGet: GET /api/v1/replays/plans/:id — a stored plan with the jobs that ran it; a plan
// not ready yet, its state and progress.
func (h *Replays) APIPlanGet(c echo.Context) error {
	ctx := c.Request().Context()
	plan, err := h.engine.LoadPlan(ctx, pathParam(c, "id"))
	if err != nil {
		return err
	}
	if !plan.Ready() {
		return c.JSON(http.StatusOK, toPlanningJSON(plan))
	}
	red, err := redactionFor(c, h.redact, "replay-plan/"+plan.ID)
	if err != nil {
		return err
	}
	plan = red.Plan(plan)
	jobs, err := h.views.JobsOfPlan(ctx, plan.ID)
	if err != nil {
		return err
	}
	j := toPlanJSON(plan)
	for _, job := range jobs {
		j.Jobs = append(j.Jobs, planJobJSON{ID: job.ID, Status: job.Status, Outcome: job.Outcome(), Published: job.Published,
			Skipped: job.Skipped, Failed: job.Failed, CreatedAt: job.CreatedAt.UTC()})
	}
	return c.JSON(http.StatusOK, j)
}

// APIPlan: POST /api/v1/replays/plan.
func (h *Replays) APIPlan(c echo.Context) error {
	var req planRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	f, err := req.Filter.toFilter(time.Now())
	if err != nil {
		return err
	}
	if req.Action != "" {
		req.Source.Action = req.Action
	}
	if req.Destination != nil {
		req.Source.Destination = req.Destination
	}
	if req.Edit != nil {
		req.Source.Edit = req.Edit
	}
	plan, red, err := h.plan(c, req.Source, f)
	if err != nil {
		return err
	}
	if !plan.Ready() {
		c.Response().Header().Set(echo.HeaderLocation, paths.APIReplayPlan(plan.ID))
		return c.JSON(http.StatusAccepted, toPlanningJSON(plan))
	}
	return c.JSON(http.StatusOK, toPlanJSON(red.Plan(plan)))
}

// plan starts a plan and waits for it as long as its size allows (replay.plan_wait; nothing for a
// selection above replay.PlanInBackgroundAbove): the plan made, or the plan still planning. A
// plan refused within the wait is the refusal, as it always was. The plan's filters match what
// the actor may see of the messages, as a search's do (masked unless an admin reveals it, audited:
// ?reveal=true); red is those rules, for the answer.
func (h *Replays) plan(c echo.Context, src replay.Source, f replay.Filter) (plan replay.Plan, red *redact.Rules, err error) {
	ctx := c.Request().Context()
	actor := ActorOf(c)
	if red, err = redactionFor(c, h.redact, "replay-plan"); err != nil {
		return replay.Plan{}, nil, err
	}
	everyone, err := h.redact.For(ctx, actor, false, audit.Entry{}) // what anyone shown the plan may see
	if err != nil {
		return replay.Plan{}, nil, err
	}
	pl, err := h.engine.StartPlanFor(ctx, replay.PlanRequest{Actor: actor.Name, Source: src, Filter: f,
		View: planViews(red), Shown: planViews(everyone)})
	if err != nil {
		return replay.Plan{}, nil, err
	}
	plan, _, err = h.engine.AwaitPlan(ctx, pl, h.engine.PlanWait(pl.Estimate))
	return plan, red, err
}

// planViews is what a reader whose content red masks sees of dead letters, for a plan's filters
// and an edit's diff (replay.PlanRequest); nil rules: the messages as they are.
func planViews(red *redact.Rules) replay.Views {
	if red == nil {
		return replay.Views{}
	}
	return replay.Views{Kafka: func(r kafkamodel.Record) kafkamodel.Record { v, _ := red.Record(r); return v }, Rabbit: red.Shown}
}

// APIPlanCancel: POST /api/v1/replays/plans/:id/cancel — stop a plan being made.
func (h *Replays) APIPlanCancel(c echo.Context) error {
	plan, err := h.engine.CancelPlan(c.Request().Context(), pathParam(c, "id"), ActorOf(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toPlanningJSON(plan))
}

// FormPlanCancel: POST /replays/plans/:id/cancel.
func (h *Replays) FormPlanCancel(c echo.Context) error {
	plan, err := h.engine.CancelPlan(c.Request().Context(), pathParam(c, "id"), ActorOf(c))
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, paths.ReplayPlan(plan.ID))
}

type startRequest struct {
	PlanID        string `json:"plan_id"`
	RatePerSecond int    `json:"rate_per_second"`
	Reason        string `json:"reason"`
	Force         bool   `json:"force"`
}

func (h *Replays) start(c echo.Context, r startRequest) (replay.Job, error) {
	// A job moves messages: the audit log and the job keep why, as for a requeue, a mark or a
	// resolution (a replay needed none). Past the consumer's inbox (force) says so.
	why := "say why these messages move (the job and the audit log keep it), as requeue, mark and resolve ask"
	if r.Force {
		why = "a forced replay needs a written reason"
	}
	reason, err := requiredReason(r.Reason, why)
	if err != nil {
		return replay.Job{}, err
	}
	r.Reason = reason
	return h.engine.Start(c.Request().Context(), replay.StartRequest{PlanID: r.PlanID, Actor: ActorOf(c),
		Reason: r.Reason, RatePerSecond: r.RatePerSecond, Force: r.Force})
}

type jobJSON struct {
	ID      string `json:"id"`
	PlanID  string `json:"plan_id"`
	Status  string `json:"status"`
	Outcome string `json:"outcome"`
	Paused  string `json:"paused,omitempty"`
	// CancelRequested: a cancel was asked; a running job then shows status "cancelling" until it
	// stops at its next batch.
	CancelRequested bool       `json:"cancel_requested"`
	Total           int        `json:"total"`
	Published       int        `json:"published"`
	Skipped         int        `json:"skipped"`
	Failed          int        `json:"failed"`
	Remaining       int        `json:"remaining"`
	Actor           string     `json:"actor"`
	Reason          string     `json:"reason"`
	Force           bool       `json:"force"`
	RatePerSecond   int        `json:"rate_per_second"`
	Error           string     `json:"error,omitempty"`
	ApprovedBy      string     `json:"approved_by,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	StartedAt       *time.Time `json:"started_at"`
	FinishedAt      *time.Time `json:"finished_at"`
	// FailureGroups counts the failed messages per reason (GET /api/v1/replays/:id only).
	FailureGroups []failureGroupJSON `json:"failure_groups,omitempty"`
}

type failureGroupJSON struct {
	Detail string `json:"detail"`
	Count  int    `json:"count"`
}

func toJobJSON(j replay.Job) jobJSON {
	status := j.Status
	if j.CancelRequested && status == "running" {
		status = "cancelling"
	}
	return jobJSON{ID: j.ID, PlanID: j.PlanID, Status: status, CancelRequested: j.CancelRequested, Outcome: j.Outcome(), Paused: j.Paused, Total: j.Total, Published: j.Published, Skipped: j.Skipped,
		Failed: j.Failed, Remaining: j.Remaining(), Actor: j.Actor, Reason: j.Reason,
		Force: j.Force, RatePerSecond: j.RatePerSecond, Error: j.Error, ApprovedBy: j.ApprovedBy, CreatedAt: j.CreatedAt.UTC(),
		StartedAt: inUTC(j.StartedAt), FinishedAt: inUTC(j.FinishedAt)}
}

// APIStart: POST /api/v1/replays {"plan_id","rate_per_second","reason","force"}.
func (h *Replays) APIStart(c echo.Context) error {
	return answerJSON(c, h.start, toJobJSON)
}

// APIJob: GET /api/v1/replays/:id, with the failures grouped by reason.
func (h *Replays) APIJob(c echo.Context) error {
	ctx := c.Request().Context()
	job, err := h.engine.Job(ctx, pathParam(c, "id"))
	if err != nil {
		return err
	}
	out := toJobJSON(job)
	if job.Failed > 0 { // the common job has none: no ledger read
		red, err := redactionFor(c, h.redact, "replay/"+job.ID)
		if err != nil {
			return err
		}
		groups, err := h.views.FailureGroups(ctx, job.ID, maxFailureGroups)
		if err != nil {
			return err
		}
		for _, g := range groups {
			out.FailureGroups = append(out.FailureGroups, failureGroupJSON{Detail: red.FailureDetail(g.Detail), Count: g.Count})
		}
	}
	return c.JSON(http.StatusOK, out)
}

// APIJobs: GET /api/v1/replays?limit=.
func (h *Replays) APIJobs(c echo.Context) error {
	limit, err := queryInt(c, "limit", 50, 1, 500)
	if err != nil {
		return err
	}
	jobs, err := h.engine.Jobs(c.Request().Context(), int(limit))
	if err != nil {
		return err
	}
	out := make([]jobJSON, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, toJobJSON(j))
	}
	return c.JSON(http.StatusOK, jobsJSON{Replays: out})
}

// jobsJSON is the newest replay jobs.
type jobsJSON struct {
	Replays []jobJSON `json:"replays"`
}

// APICancel: POST /api/v1/replays/:id/cancel.
func (h *Replays) APICancel(c echo.Context) error {
	job, err := h.engine.Cancel(c.Request().Context(), pathParam(c, "id"), ActorOf(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toJobJSON(job))
}

// APIApprove: POST /api/v1/replays/:id/approve — the second person of the four-eyes rule.
func (h *Replays) APIApprove(c echo.Context) error {
	job, err := h.engine.Approve(c.Request().Context(), pathParam(c, "id"), ActorOf(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toJobJSON(job))
}

// FormApprove: POST /replays/:id/approve.
func (h *Replays) FormApprove(c echo.Context) error {
	job, err := h.engine.Approve(c.Request().Context(), pathParam(c, "id"), ActorOf(c))
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, paths.Replay(job.ID))
}

// ---- pages ----

// offer is whether a page shows the button of an action, as the API would answer it: the route
// wants an operator (meta.CanOperate: the role, and the console not read-only) and refused is the
// use case's own rule for this user (replay.CancelRefused, offsets.Plan.ApproveRefused, …). A
// refusal is worded in place of the button: forWho for a viewer ("Operators can …"), the use
// case's words when it is about who the user is; nothing when nobody could do it now (a conflict:
// the job ended, the plan was applied).
func offer(meta layout.Meta, refused error, forWho string) components.Offer {
	switch {
	case refused != nil && !errors.Is(refused, ops.ErrForbidden):
		return components.Offer{}
	case meta.ReadOnly:
		return components.Offer{Note: "Read-only mode: nothing can be changed from this console."}
	case !meta.CanOperate:
		return components.Offer{Note: forWho}
	case refused != nil:
		return components.Offer{Note: ops.Message(refused)}
	}
	return components.Offer{OK: true}
}

// Index: GET /replays.
func (h *Replays) Index(c echo.Context) error {
	ctx := c.Request().Context()
	jobs, err := h.engine.Jobs(ctx, 100)
	page := replaypages.IndexPage{Meta: h.meta(c, "Replays", "replays")}
	if err != nil {
		page.Error = shown(c, err)
	}
	routes := map[string]replay.PlanRoute{}
	if len(jobs) > 0 {
		var ids []string
		for _, j := range jobs {
			if !slices.Contains(ids, j.PlanID) {
				ids = append(ids, j.PlanID)
			}
		}
		if routes, err = h.views.PlanRoutes(ctx, ids, destinationSample); err != nil {
			page.RoutesError = shown(c, err) // the jobs still show, without where they go
		}
	}
	for _, j := range jobs {
		v := toJobView(j)
		v.Source, v.Destination, v.Discard = routeText(routes[j.PlanID])
		v.Requeue = routeRequeues(routes[j.PlanID])
		page.Jobs = append(page.Jobs, v)
	}
	return render(c, http.StatusOK, replaypages.Index(page))
}

func toJobView(j replay.Job) replaypages.JobView {
	return replaypages.JobView{ID: j.ID, PlanID: j.PlanID, Status: j.Status, Outcome: j.Outcome(), Paused: j.Paused,
		Total: int64(j.Total), Published: int64(j.Published), Skipped: int64(j.Skipped), Failed: int64(j.Failed),
		Remaining: int64(j.Remaining()),
		Actor:     j.Actor, Reason: j.Reason, Force: j.Force, Rate: j.RatePerSecond, Error: j.Error, CreatedAt: j.CreatedAt,
		StartedAt: j.StartedAt, FinishedAt: j.FinishedAt, ApprovedBy: j.ApprovedBy,
		Running:  j.Status == replay.JobPending || j.Status == replay.JobRunning,
		Awaiting: j.Status == replay.JobAwaiting}
}

// routeText words where a plan's messages come from and go back to; "" for what is unknown. A
// discard plan's messages go to the archive, whatever their original destination.
func routeText(r replay.PlanRoute) (source, destination string, discard bool) {
	if len(r.Source) > 0 {
		var src replay.Source
		if json.Unmarshal(r.Source, &src) == nil {
			source = describeSource(src)
			if src.Action == replay.ActionDiscard {
				return source, archiveDestination, true
			}
		}
	}
	var dests []string
	for _, raw := range r.Destinations {
		var d replay.Destination
		if json.Unmarshal(raw, &d) == nil && d.Kind != "" {
			dests = append(dests, destinationShort(d))
		}
	}
	const shown = 3
	if len(dests) > shown {
		return source, fmt.Sprintf("%s and %d more", strings.Join(dests[:shown], "; "), len(dests)-shown), false
	}
	return source, strings.Join(dests, "; "), false
}

// editView is an edit and retry's change as the plan and job pages show it; nil without an edit
// (or one stored before edits kept their diff). The diff keeps each header's values whole (a
// dropped x-exception-stacktrace can be hundreds of kilobytes): each is cut at maxRenderedField
// for display, as a message's headers are (toMessageView), the page saying so with its whole
// length and linking plan planID in the API, which gives the diff whole.
func editView(ed *replay.Edit, planID string) *replaypages.EditView {
	if ed == nil || ed.Diff == nil {
		return nil
	}
	d := ed.Diff
	v := &replaypages.EditView{ValueBefore: d.ValueBefore, ValueAfter: d.ValueAfter, ValueChanged: ed.Value != nil,
		Encoding: d.Encoding, RawURL: paths.APIReplayPlan(planID)}
	if id := d.MessageID; id != nil {
		v.MessageID = &[2]string{payload.Clip(id[0], maxRenderedField), payload.Clip(id[1], maxRenderedField)}
	}
	for _, name := range slices.Sorted(maps.Keys(d.Headers)) {
		before, after := d.Headers[name][0], d.Headers[name][1]
		h := replaypages.HeaderChange{Name: payload.Clip(name, maxRenderedField), BeforeSize: len(before), AfterSize: len(after)}
		h.Before, h.BeforeCut = payload.Cut(before, maxRenderedField)
		h.After, h.AfterCut = payload.Cut(after, maxRenderedField)
		v.Headers = append(v.Headers, h)
	}
	return v
}

// routeRequeues reports an outbox plan: its job sets rows back to READY for the service's relay,
// publishing nothing itself.
func routeRequeues(r replay.PlanRoute) bool {
	var src replay.Source
	return len(r.Source) > 0 && json.Unmarshal(r.Source, &src) == nil && src.Kind == source.Outbox
}

// archiveDestination is where a discard job's messages go.
const archiveDestination = "the archive, then acked from the queue"

// destinationShort is a destination without its Kafka partition (the plan's items say it).
func destinationShort(d replay.Destination) string {
	if d.Kind == "kafka" {
		return fmt.Sprintf("kafka %s → %s", d.Cluster, d.Topic)
	}
	return destinationText(d)
}

// partitionText says which partition a Kafka item goes to and why; "" for other kinds.
func partitionText(d replay.Destination) string {
	if d.Kind != "kafka" {
		return ""
	}
	if d.Partition < 0 {
		return "any partition (no key)"
	}
	if partitionSource(d) == replay.PartitionFromHeader {
		return fmt.Sprintf("partition %d (from the dead-letter header)", d.Partition)
	}
	return fmt.Sprintf("partition %d (by key)", d.Partition)
}

// FormPlan: POST /replays/plan — from the Kafka, RabbitMQ and outbox pages' replay buttons.
func (h *Replays) FormPlan(c echo.Context) error {
	// action: the queue page's "Plan discard into the archive" (discard), as the API's action.
	src := replay.Source{Action: c.FormValue("action"), Kind: source.Kind(c.FormValue("kind")), Cluster: c.FormValue("cluster"), Topic: c.FormValue("topic"),
		Broker: c.FormValue("broker"), Vhost: c.FormValue("vhost"), Queue: c.FormValue("queue"), Outbox: c.FormValue("outbox"),
		Status: c.FormValue("status"), EventType: c.FormValue("event_type"), AggregateID: c.FormValue("aggregate_id"),
		ResetAttempts: c.FormValue("reset_attempts") != ""}
	if err := requireTicked(c); err != nil {
		return err
	}
	var err error
	if src.Partition, err = formInt32(c, "partition"); err != nil {
		return err
	}
	if src.FromOffset, err = formInt64(c, "from_offset"); err != nil {
		return err
	}
	if src.ToOffset, err = formInt64(c, "to_offset"); err != nil {
		return err
	}
	src.TopicID = c.FormValue("topic_id")            // the topic page's, when it was read
	for _, raw := range c.Request().Form["record"] { // "partition:offset", from the topic page's checkboxes
		ref, err := parseRecordRef(raw)
		if err != nil {
			return err
		}
		src.Records = append(src.Records, ref)
	}
	if limit, err := formInt64(c, "limit"); err != nil {
		return err
	} else if limit != nil {
		src.Limit = int(*limit)
	}
	// Edit and retry (the record card's form): the new value, and "name: value" lines of headers
	// to set; drop_headers names headers to drop.
	if c.FormValue("edit") != "" {
		ed := &replay.Edit{DropHeaders: strings.Fields(strings.ReplaceAll(c.FormValue("drop_headers"), ",", " ")),
			NewMessageID: c.FormValue("new_message_id") != ""}
		if c.Request().Form.Has("edit_value") {
			v := c.FormValue("edit_value")
			ed.Value = &v
		}
		for _, line := range strings.Split(c.FormValue("set_headers"), "\n") {
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				return ops.Invalid("set_headers", fmt.Sprintf("%q: write each header as name: value", line))
			}
			if ed.SetHeaders == nil {
				ed.SetHeaders = map[string]string{}
			}
			ed.SetHeaders[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		src.Edit = ed
	}
	// ids: a list typed in one field, or the outbox page's ticked "id" checkboxes.
	if raw := strings.TrimSpace(c.FormValue("ids") + " " + strings.Join(c.Request().Form["id"], " ")); raw != "" {
		for _, f := range strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
			id, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return ops.Invalid("ids", fmt.Sprintf("%q is not an event id", f))
			}
			src.IDs = append(src.IDs, id)
		}
	}
	filter := planFilter{ExceptionType: c.FormValue("exception_type"), Reason: c.FormValue("reason"),
		OriginalTopic: c.FormValue("original_topic"), Since: c.FormValue("since"), Until: c.FormValue("until"), CEL: c.FormValue("cel")}
	// message_ids: a list typed in one field, or the queue page's ticked checkboxes.
	if ids := strings.TrimSpace(strings.Join(c.Request().Form["message_ids"], " ")); ids != "" {
		filter.MessageIDs = strings.Fields(strings.ReplaceAll(ids, ",", " "))
	}
	f, err := filter.toFilter(time.Now())
	if err != nil {
		return err
	}
	plan, _, err := h.plan(c, src, f)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, paths.ReplayPlan(plan.ID))
}

// tickedRows names, for each field a page's "…of selected" form ticks rows into, what one row is.
var tickedRows = map[string]string{"record": "record", "message_ids": "message", "id": "event"}

// requireTicked refuses a "…of selected" post (paths.PlanSelected) with no row ticked. The same
// form names its topic, queue or outbox, and without ticks it would plan all of it: a page whose
// script did not run, or whose rows went away, must not turn "these three" into "everything".
func requireTicked(c echo.Context) error {
	field := c.QueryParam("selected")
	if field == "" {
		return nil
	}
	row, ok := tickedRows[field]
	if !ok {
		return ops.Invalid("selected", "is not a field of a selection form")
	}
	for _, v := range c.Request().Form[field] {
		if strings.TrimSpace(v) != "" {
			return nil
		}
	}
	return ops.Invalid(field, fmt.Sprintf("tick at least one %s to plan a replay of the selected ones", row))
}

func parseRecordRef(raw string) (replay.RecordRef, error) {
	p, o, ok := strings.Cut(strings.TrimSpace(raw), ":")
	partition, perr := strconv.ParseInt(p, 10, 32)
	offset, oerr := strconv.ParseInt(o, 10, 64)
	if !ok || perr != nil || oerr != nil || partition < 0 || offset < 0 {
		return replay.RecordRef{}, ops.Invalid("record", fmt.Sprintf("%q is not partition:offset", raw))
	}
	return replay.RecordRef{Partition: int32(partition), Offset: offset}, nil
}

func formInt64(c echo.Context, name string) (*int64, error) {
	return optionalCount(name, strings.TrimSpace(c.FormValue(name)))
}

func formInt32(c echo.Context, name string) (*int32, error) {
	v, err := formInt64(c, name)
	if err != nil || v == nil {
		return nil, err
	}
	if *v > 1<<31-1 {
		return nil, ops.Invalid(name, "is too large")
	}
	p := int32(*v)
	return &p, nil
}

// PlanPage: GET /replays/plans/:id.
func (h *Replays) PlanPage(c echo.Context) error {
	plan, err := h.engine.LoadPlan(c.Request().Context(), pathParam(c, "id"))
	if err != nil {
		return err
	}
	if plan.Ready() && c.Request().Header.Get("HX-Target") == "plan-live" {
		// The page followed the plan while it was made: now that it is ready, the whole page.
		c.Response().Header().Set("HX-Refresh", "true")
		return c.NoContent(http.StatusOK)
	}
	red, err := redactionFor(c, h.redact, "replay-plan/"+plan.ID)
	if err != nil {
		return err
	}
	plan = red.Plan(plan)
	actor := ActorOf(c)
	page := replaypages.PlanPage{ID: plan.ID, CreatedAt: plan.CreatedAt, Discard: plan.Source.Action == replay.ActionDiscard,
		Actor: plan.Actor, Source: describePlanSource(plan.Source, plan.Filter), Total: plan.Total, Warnings: plan.Warnings,
		State: plan.State, Planned: plan.Planned, Estimate: plan.Estimate, Error: plan.Error}
	page.Edit = editView(plan.Source.Edit, plan.ID)
	page.Meta = h.meta(c, page.Noun()+" plan", "replays")
	if !page.Ready() {
		return h.planningPage(c, plan, page)
	}
	page.Run = offer(page.Meta, h.engine.StartRefused(plan, actor, false), "Operators can run this plan.")
	if !page.Discard { // a discard publishes nothing: there is nothing to force
		page.Force = offer(page.Meta, h.engine.StartRefused(plan, actor, true), "")
	}
	page.Meta.Breadcrumbs = []layout.Crumb{{Label: "Replays", Href: paths.Replays}, {Label: "plan " + plan.ID}}
	for _, a := range replay.Actions {
		if a == replay.DropReplayedCopy && plan.Counts[a] == 0 {
			continue // the tidying of a crashed broker's returned copies: a card only when there are some
		}
		page.Counts = append(page.Counts, replaypages.ActionCount{Action: string(a), Count: plan.Counts[a]})
	}
	for _, it := range plan.Items {
		dest := ""
		if it.Destination.Kind != "" {
			dest = destinationShort(it.Destination)
		}
		page.Items = append(page.Items, replaypages.ItemView{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID,
			Consumer: it.Consumer, Destination: dest, Partition: partitionText(it.Destination),
			PartitionSource: it.Destination.PartitionSource, Inbox: string(it.Inbox),
			Action: string(it.Action), ErrorGroup: it.ErrorGroup, Note: it.Note})
	}
	jobs, err := h.views.JobsOfPlan(c.Request().Context(), plan.ID)
	if err != nil {
		page.JobsError = shown(c, err) // the plan still shows; whether it ran is unknown
	}
	for _, j := range jobs {
		v := toJobView(j)
		v.Discard = plan.Source.Action == replay.ActionDiscard
		page.Jobs = append(page.Jobs, v)
	}
	for g, counts := range plan.ErrorGroups { // the whole plan's, counted when it was made
		row := replaypages.GroupCount{Group: g}
		for _, a := range replay.Actions {
			if n := counts[a]; n > 0 {
				row.Counts = append(row.Counts, replaypages.ActionCount{Action: string(a), Count: n})
			}
		}
		page.Groups = append(page.Groups, row)
	}
	sort.Slice(page.Groups, func(i, j int) bool { return page.Groups[i].Group < page.Groups[j].Group })
	return render(c, http.StatusOK, replaypages.Plan(page))
}

// describePlanSource is describeSource narrowed by the plan's message ids: a Replay of one DLQ
// message is "…, message evt-7 (looked for in the first 20)", not "first 20 messages".
func describePlanSource(s replay.Source, f replay.Filter) string {
	if s.Kind != "rabbitmq" || len(f.MessageIDs) == 0 {
		return describeSource(s)
	}
	which := "message " + f.MessageIDs[0]
	if n := len(f.MessageIDs); n > 1 {
		which = fmt.Sprintf("%d messages by id", n)
	}
	return fmt.Sprintf("RabbitMQ %s, queue %s (vhost %s), %s (looked for in the first %d)", s.Broker, s.Queue, s.Vhost, which, s.Limit)
}

// planningPage is the page of a plan not ready: being made (the page follows it; for htmx, its
// live part, or a reload once it is ready), cancelled or failed.
func (h *Replays) planningPage(c echo.Context, plan replay.Plan, page replaypages.PlanPage) error {
	page.Cancel = offer(page.Meta, replay.PlanCancelRefused(plan, ActorOf(c)), "Operators can cancel their own plans, admins anyone's.")
	page.Meta.Breadcrumbs = []layout.Crumb{{Label: "Replays", Href: paths.Replays}, {Label: "plan " + plan.ID}}
	for _, a := range replay.Actions {
		if n := plan.Counts[a]; n > 0 || a == replay.Publish {
			page.Counts = append(page.Counts, replaypages.ActionCount{Action: string(a), Count: n})
		}
	}
	if c.Request().Header.Get("HX-Request") == "true" {
		return render(c, http.StatusOK, replaypages.PlanLive(page))
	}
	return render(c, http.StatusOK, replaypages.Plan(page))
}

func describeSource(s replay.Source) string {
	switch s.Kind {
	case "kafka":
		d := fmt.Sprintf("Kafka %s, topic %s", s.Cluster, s.Topic)
		if s.Partition != nil {
			d += fmt.Sprintf(", partition %d", *s.Partition)
		}
		if s.FromOffset != nil || s.ToOffset != nil {
			d += fmt.Sprintf(", offsets %s to %s", optInt(s.FromOffset, "start"), optInt(s.ToOffset, "end"))
		}
		if len(s.Records) > 0 {
			d += fmt.Sprintf(", %d selected record(s)", len(s.Records))
		}
		return d
	case "rabbitmq":
		return fmt.Sprintf("RabbitMQ %s, queue %s (vhost %s), first %d messages", s.Broker, s.Queue, s.Vhost, s.Limit)
	case "outbox":
		reset := ""
		if s.ResetAttempts {
			reset = ", attempts reset"
		}
		if len(s.IDs) > 0 {
			return fmt.Sprintf("Outbox %s, %d event(s)%s", s.Outbox, len(s.IDs), reset)
		}
		d := fmt.Sprintf("Outbox %s, first %d", s.Outbox, s.Limit)
		if s.Status != "" {
			d += " " + s.Status
		} else {
			d += " DEAD or FAILED"
		}
		d += " events"
		if s.EventType != "" {
			d += " of type " + s.EventType
		}
		if s.AggregateID != "" {
			d += ", aggregate " + s.AggregateID
		}
		return d + reset
	}
	return string(s.Kind)
}

func optInt(v *int64, def string) string {
	if v == nil {
		return def
	}
	return strconv.FormatInt(*v, 10)
}

// FormStart: POST /replays (form: plan_id, rate_per_second, reason, force).
func (h *Replays) FormStart(c echo.Context) error {
	rate, err := formInt64(c, "rate_per_second")
	if err != nil {
		return err
	}
	req := startRequest{PlanID: c.FormValue("plan_id"), Reason: c.FormValue("reason"), Force: c.FormValue("force") != ""}
	if rate != nil {
		req.RatePerSecond = int(*rate)
	}
	job, err := h.start(c, req)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, paths.Replay(job.ID))
}

// JobPage: GET /replays/:id — and, for htmx, its live part (progress and ledger).
func (h *Replays) JobPage(c echo.Context) error {
	ctx := c.Request().Context()
	job, err := h.engine.Job(ctx, pathParam(c, "id"))
	if err != nil {
		return err
	}
	// The ledger and the edit show message ids and content: masked unless an admin reveals them.
	red, err := redactionFor(c, h.redact, "replay/"+job.ID)
	if err != nil {
		return err
	}
	page := replaypages.JobPage{Job: toJobView(job)}
	if routes, err := h.views.PlanRoutes(ctx, []string{job.PlanID}, destinationSample); err == nil {
		page.Job.Source, page.Job.Destination, page.Job.Discard = routeText(routes[job.PlanID])
		page.Job.Requeue = routeRequeues(routes[job.PlanID])
		var src replay.Source
		if r := routes[job.PlanID]; len(r.Source) > 0 && json.Unmarshal(r.Source, &src) == nil && src.Edit != nil {
			// What the approver approves: the edit as its plan shows it, masked as any content.
			page.Edit = editView(red.Plan(replay.Plan{Source: src}).Source.Edit, job.PlanID)
		}
	}
	page.Meta = h.meta(c, page.Job.Noun()+" "+job.ID, "replays")
	actor := ActorOf(c)
	page.Job.Approve = offer(page.Meta, h.engine.ApproveRefused(ctx, job, actor), "People other than "+job.Actor+" with the rights to start it can approve it.")
	page.Job.Cancel = offer(page.Meta, replay.CancelRefused(job, actor), "Operators can cancel their own jobs, admins anyone's.")
	page.Meta.Breadcrumbs = []layout.Crumb{{Label: "Replays", Href: paths.Replays}, {Label: job.ID}}
	if job.Failed > 0 {
		groups, err := h.views.FailureGroups(ctx, job.ID, maxFailureGroups)
		if err != nil {
			page.FailuresError = shown(c, err)
		}
		for _, g := range groups {
			page.FailureGroups = append(page.FailureGroups, replaypages.FailureGroup{Detail: red.FailureDetail(g.Detail), Count: int64(g.Count)})
		}
	}
	ledger, err := h.engine.Ledger(ctx, job.ID, 500)
	if err != nil {
		page.LedgerError = shown(c, err)
	}
	for _, l := range ledger {
		l = red.LedgerEntry(l)
		detail, outcome := l.Detail, l.Outcome
		if detail == "" && outcome == replay.LedgerPublished { // the ledger keeps no text for the common case
			detail = "acknowledged by the broker"
		}
		if page.Job.Discard && outcome == replay.LedgerPublished { // a discard's move is its archiving
			outcome = "archived"
		}
		if page.Job.Requeue && outcome == replay.LedgerPublished { // an outbox's, setting the row back to READY
			outcome = replaypages.RequeuedWords
		}
		page.Ledger = append(page.Ledger, replaypages.LedgerRow{Seq: l.Seq, Locator: l.Locator, MessageID: l.MessageID,
			Outcome: outcome, Detail: detail, At: l.At})
	}
	if c.Request().Header.Get("HX-Request") == "true" {
		return render(c, http.StatusOK, replaypages.Live(page))
	}
	return render(c, http.StatusOK, replaypages.Job(page))
}

// FormCancel: POST /replays/:id/cancel.
func (h *Replays) FormCancel(c echo.Context) error {
	job, err := h.engine.Cancel(c.Request().Context(), pathParam(c, "id"), ActorOf(c))
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, paths.Replay(job.ID))
}
