package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/offsets"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/layout"
	kafkapages "github.com/redrive/redrive/views/pages/kafka"
)

// OffsetMover plans and applies a consumer group's offset moves; *offsets.Mover implements it.
// Errors: ErrInvalid (bad target, partition, reason), ErrNotFound (cluster, topic, plan),
// ErrConflict (the group has members — named —, the offsets moved since the plan, applied
// already, awaiting approval), ErrForbidden (self-approval), ErrUnavailable.
type OffsetMover interface {
	Plan(ctx context.Context, r offsets.PlanRequest) (offsets.Plan, error)
	Apply(ctx context.Context, r offsets.ApplyRequest) (offsets.Result, error)
	Approve(ctx context.Context, id string, by access.Actor) (offsets.Plan, error)
	Get(ctx context.Context, id string) (offsets.Plan, error)
	// Members lists the group's members now: ErrNotFound (cluster), ErrUnavailable.
	Members(ctx context.Context, cluster, group string) ([]string, error)
}

// Offsets serves offset moves: the API (plan, apply, approve) and the group page's skip flow.
type Offsets struct {
	mover OffsetMover
	meta  MetaFunc
}

// NewOffsets wires the mover; nil answers every request 404 (no Kafka configured).
func NewOffsets(mover OffsetMover, meta MetaFunc) *Offsets { return &Offsets{mover: mover, meta: meta} }

func (h *Offsets) ready() error {
	if h.mover == nil {
		return ops.NotFound("no Kafka cluster is configured")
	}
	return nil
}

type offsetPlanRequest struct {
	Topic         string          `json:"topic"`
	Partitions    json.RawMessage `json:"partitions"` // [0, 2] or "all"; absent means all
	To            targetIn        `json:"to"`
	CopySkippedTo *string         `json:"copy_skipped_to"`
}

// targetIn is offsets.Target as a body gives it: the time as text, so that a bad one is a 400
// naming to.at and the forms it takes, not "body: could not be read as JSON".
type targetIn struct {
	Kind   string  `json:"kind"`
	By     int64   `json:"by"`
	Offset *int64  `json:"offset"`
	At     *string `json:"at"`
}

func (t targetIn) target(now time.Time) (offsets.Target, error) {
	out := offsets.Target{Kind: t.Kind, By: t.By, Offset: t.Offset}
	if t.At != nil && *t.At != "" { // "" or null: none, which to.at's check calls required
		at, err := bodyTime("to.at", *t.At, now)
		if err != nil {
			return out, err
		}
		out.At = &at
	}
	return out, nil
}

func (r offsetPlanRequest) partitions() ([]int32, error) {
	raw := strings.TrimSpace(string(r.Partitions))
	if raw == "" || raw == "null" || raw == `"all"` {
		return nil, nil
	}
	var ps []int32
	if err := json.Unmarshal(r.Partitions, &ps); err != nil || len(ps) == 0 {
		return nil, ops.Invalid("partitions", `must be "all" or a non-empty list of partition numbers`)
	}
	return ps, nil
}

type offsetMoveJSON struct {
	Partition int32 `json:"partition"`
	Current   int64 `json:"current"`
	New       int64 `json:"new"`
	Skipped   int64 `json:"skipped"`
}

type offsetPlanJSON struct {
	PlanID        string           `json:"plan_id"`
	Cluster       string           `json:"cluster"`
	Group         string           `json:"group"`
	Topic         string           `json:"topic"`
	To            offsets.Target   `json:"to"`
	Partitions    []offsetMoveJSON `json:"partitions"`
	Skipped       int64            `json:"skipped"`
	CopySkippedTo *string          `json:"copy_skipped_to"` // null: not copied
	Members       []string         `json:"members"`
	FourEyes      bool             `json:"four_eyes"`
	ApprovedBy    string           `json:"approved_by,omitempty"`
	Warnings      []string         `json:"warnings"`
	Applied       bool             `json:"applied"`
	AppliedBy     string           `json:"applied_by,omitempty"`
}

func toOffsetPlanJSON(p offsets.Plan) offsetPlanJSON {
	j := offsetPlanJSON{PlanID: p.ID, Cluster: p.Cluster, Group: p.Group, Topic: p.Topic, To: p.To, Partitions: []offsetMoveJSON{},
		Skipped: p.Skipped, Members: p.Members, FourEyes: p.FourEyes, ApprovedBy: p.ApprovedBy, Warnings: p.Warnings,
		Applied: p.AppliedAt != nil, AppliedBy: p.AppliedBy}
	if p.CopyTo != "" {
		to := p.CopyTo
		j.CopySkippedTo = &to
	}
	if j.Members == nil {
		j.Members = []string{}
	}
	if j.Warnings == nil {
		j.Warnings = []string{}
	}
	for _, m := range p.Partitions {
		j.Partitions = append(j.Partitions, offsetMoveJSON{Partition: m.Partition, Current: m.Current, New: m.New, Skipped: m.Skipped})
	}
	return j
}

// APIPlan: POST /api/v1/kafka/:cluster/groups/:group/offsets/plan.
func (h *Offsets) APIPlan(c echo.Context) error {
	if err := h.ready(); err != nil {
		return err
	}
	var req offsetPlanRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	parts, err := req.partitions()
	if err != nil {
		return err
	}
	to, err := req.To.target(time.Now())
	if err != nil {
		return err
	}
	p, err := h.mover.Plan(c.Request().Context(), offsets.PlanRequest{Cluster: pathParam(c, "cluster"), Group: pathParam(c, "group"),
		Topic: req.Topic, Partitions: parts, To: to, CopySkippedTo: req.CopySkippedTo, Actor: ActorOf(c).Name, Person: ActorOf(c).Person()})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toOffsetPlanJSON(p))
}

type offsetApplyRequest struct {
	PlanID string `json:"plan_id"`
	Reason string `json:"reason"`
}

type offsetApplyJSON struct {
	offsetPlanJSON
	Copied        int  `json:"copied"`
	AlreadyCopied int  `json:"already_copied"`
	Moved         bool `json:"moved"`
}

func (h *Offsets) apply(c echo.Context, req offsetApplyRequest) (offsets.Result, error) {
	reason, err := requiredReason(req.Reason, "why the offsets move (kept in the audit log and on the copies)")
	if err != nil {
		return offsets.Result{}, err
	}
	a := ActorOf(c)
	return h.mover.Apply(c.Request().Context(), offsets.ApplyRequest{PlanID: req.PlanID, Reason: reason, Actor: a,
		Cluster: pathParam(c, "cluster"), Group: pathParam(c, "group")})
}

// APIApply: POST /api/v1/kafka/:cluster/groups/:group/offsets/apply.
func (h *Offsets) APIApply(c echo.Context) error {
	if err := h.ready(); err != nil {
		return err
	}
	return answerJSON(c, h.apply, func(res offsets.Result) offsetApplyJSON {
		return offsetApplyJSON{offsetPlanJSON: toOffsetPlanJSON(res.Plan), Copied: res.Copied, AlreadyCopied: res.AlreadyCopied, Moved: res.Moved}
	})
}

// APIApprove: POST /api/v1/kafka/:cluster/groups/:group/offsets/approve {"plan_id"}.
func (h *Offsets) APIApprove(c echo.Context) error {
	if err := h.ready(); err != nil {
		return err
	}
	var req struct {
		PlanID string `json:"plan_id"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	p, err := h.approve(c, req.PlanID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toOffsetPlanJSON(p))
}

// approve approves plan id of the group the path names: a plan of another group is not one of its
// plans (404), as apply says — the approve route took any plan whatever group its URL named.
func (h *Offsets) approve(c echo.Context, id string) (offsets.Plan, error) {
	ctx := c.Request().Context()
	if id != "" {
		p, err := h.mover.Get(ctx, id)
		if err != nil {
			return p, err
		}
		if cluster, group := pathParam(c, "cluster"), pathParam(c, "group"); p.Cluster != cluster || p.Group != group {
			return offsets.Plan{}, ops.NotFound("offset plan %q is for group %s of cluster %s, not %s of %s", ops.Echo(id), p.Group, p.Cluster,
				ops.Echo(group), ops.Echo(cluster))
		}
	}
	return h.mover.Approve(ctx, id, ActorOf(c))
}

// FormPlan: POST /kafka/:cluster/groups/:group/offsets/plan (topic, partition, offset) — the
// group page's "skip the record at offset N": plans a move to that offset and shows the plan.
func (h *Offsets) FormPlan(c echo.Context) error {
	if err := h.ready(); err != nil {
		return err
	}
	part, err := strconv.ParseInt(c.FormValue("partition"), 10, 32)
	if err != nil {
		return ops.Invalid("partition", "must be a partition number")
	}
	off, err := strconv.ParseInt(c.FormValue("offset"), 10, 64)
	if err != nil {
		return ops.Invalid("offset", "must be an offset")
	}
	p, err := h.mover.Plan(c.Request().Context(), offsets.PlanRequest{Cluster: pathParam(c, "cluster"), Group: pathParam(c, "group"),
		Topic: c.FormValue("topic"), Partitions: []int32{int32(part)}, To: offsets.Target{Kind: offsets.KindOffset, Offset: &off},
		Actor: ActorOf(c).Name, Person: ActorOf(c).Person()})
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, paths.OffsetMove(p.Cluster, p.Group, p.ID))
}

// FormApply: POST /kafka/:cluster/groups/:group/offsets/apply (plan_id, reason). A refusal
// (members, moved offsets) is shown on the plan page, not as an error page.
func (h *Offsets) FormApply(c echo.Context) error {
	if err := h.ready(); err != nil {
		return err
	}
	req := offsetApplyRequest{PlanID: c.FormValue("plan_id"), Reason: c.FormValue("reason")}
	res, err := h.apply(c, req)
	if err != nil && !errors.Is(err, ops.ErrConflict) && !errors.Is(err, ops.ErrInvalid) {
		return err
	}
	p := res.Plan
	if p.ID == "" {
		if p, err = h.mover.Get(c.Request().Context(), req.PlanID); err != nil {
			return err
		}
	}
	page := h.planPage(c, p)
	if err != nil {
		page.Error = shown(c, err)
		return render(c, http.StatusConflict, kafkapages.OffsetPlan(page))
	}
	page.Applied, page.AppliedBy = true, res.AppliedBy
	page.Outcome = "Offsets moved."
	if res.Copied+res.AlreadyCopied > 0 {
		page.Outcome = fmt.Sprintf("%d skipped records copied to %s (%d by an earlier attempt), then the offsets moved.",
			res.Copied+res.AlreadyCopied, p.CopyTo, res.AlreadyCopied)
	}
	return render(c, http.StatusOK, kafkapages.OffsetPlan(page))
}

// FormApprove: POST /kafka/:cluster/groups/:group/offsets/approve (plan_id).
func (h *Offsets) FormApprove(c echo.Context) error {
	if err := h.ready(); err != nil {
		return err
	}
	p, err := h.approve(c, c.FormValue("plan_id"))
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, paths.OffsetMove(p.Cluster, p.Group, p.ID))
}

// PlanPage: GET /kafka/:cluster/groups/:group/offsets/:id.
func (h *Offsets) PlanPage(c echo.Context) error {
	if err := h.ready(); err != nil {
		return err
	}
	p, err := h.mover.Get(c.Request().Context(), pathParam(c, "id"))
	if err != nil {
		return err
	}
	if p.Cluster != pathParam(c, "cluster") || p.Group != pathParam(c, "group") {
		return ops.NotFound("offset plan %q is not one of this group", p.ID)
	}
	return render(c, http.StatusOK, kafkapages.OffsetPlan(h.planPage(c, p)))
}

func (h *Offsets) planPage(c echo.Context, p offsets.Plan) kafkapages.OffsetPlanPage {
	m := h.meta(c, "Offset move "+p.ID, "kafka")
	// Apply is offered only to a group without members, as Kafka commits only for those: the
	// members now, not the plan's; when they cannot be read, the plan's stand (the page then
	// says to stop them, and checks again).
	members := p.Members
	if p.AppliedAt == nil {
		if now, err := h.mover.Members(c.Request().Context(), p.Cluster, p.Group); err == nil {
			members = now
		}
	}
	m.Breadcrumbs = kafkaCrumbs(p.Cluster, layout.Crumb{Label: p.Group, Href: paths.KafkaGroup(p.Cluster, p.Group)}, layout.Crumb{Label: "offset move"})
	page := kafkapages.OffsetPlanPage{Meta: m, URL: paths.OffsetMove(p.Cluster, p.Group, p.ID), Cluster: p.Cluster, Group: p.Group,
		PlanID: p.ID, Topic: p.Topic, Target: targetText(p.To), Skipped: p.Skipped, CopyTo: p.CopyTo, Warnings: p.Warnings, Members: members, FourEyes: p.FourEyes, ApprovedBy: p.ApprovedBy,
		Applied: p.AppliedAt != nil, AppliedBy: p.AppliedBy}
	for _, mv := range p.Partitions {
		page.Partitions = append(page.Partitions, kafkapages.OffsetMoveRow{Partition: mv.Partition, Current: mv.Current, New: mv.New, Skipped: mv.Skipped})
	}
	actor := ActorOf(c)
	page.Approve = offer(m, p.ApproveRefused(actor), "Operators other than "+p.CreatedBy+" can approve this move.")
	page.Apply = offer(m, p.ApplyRefused(), "Operators can apply this move.")
	return page
}

func targetText(t offsets.Target) string {
	switch t.Kind {
	case offsets.KindShift:
		return fmt.Sprintf("shift by %d", t.By)
	case offsets.KindOffset:
		if t.Offset != nil {
			return fmt.Sprintf("offset %d", *t.Offset)
		}
	case offsets.KindTimestamp:
		if t.At != nil {
			return "first record at or after " + t.At.UTC().Format(time.RFC3339)
		}
	}
	return t.Kind
}

// skipOffer is the group page's "skip the record at offset N" for a STALL or STOP group: the
// most lagging partition of that status that has a committed offset (rows sorted by lag).
func skipOffer(code lag.StatusCode, rows []kafkapages.PartitionRow) *kafkapages.SkipOffer {
	if code != lag.StatusStall && code != lag.StatusStop {
		return nil
	}
	for _, r := range rows {
		if r.Status == string(code) && r.Committed >= 0 && r.Lag > 0 {
			// A STALL group has members by definition: its consumers must be stopped before the
			// move can be applied, and the offer says so.
			// The record it is stuck on is the next one a read_committed consumer gets: past
			// the markers and aborted records the commit may point at.
			return &kafkapages.SkipOffer{Topic: r.Topic, Partition: r.Partition, Offset: r.Committed + r.NoRecords,
				Running: code == lag.StatusStall || r.Member != ""}
		}
	}
	return nil
}
