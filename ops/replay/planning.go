package replay

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/source"
)

// Making a plan is a background job, like running one: StartPlan checks the selection, writes the
// plan's header in state planning and reads the selection on its own goroutine, which beats the
// plan's heartbeat and writes its progress to the store every planBeat, so that any replica
// answers for it; the plan is ready once every item is stored (one update), or ends cancelled
// (CancelPlan, from any replica) or failed (with why, in words for people) with its items dropped.
// A job runs only a ready plan. A plan whose replica stopped (its heartbeat older than PlanStale)
// is failed by whoever sees it first, never left half ready.

const (
	// planBeat is how often a planning plan's progress and heartbeat are written, and a cancel
	// made on another replica is seen.
	planBeat = 500 * time.Millisecond
	// planStaleSweep is how often Work looks for plans left planning by a console that stopped.
	planStaleSweep = 5 * time.Second
	// PlanStale is how old a planning plan's heartbeat gets before the plan counts as left by a
	// console that stopped.
	PlanStale = 10 * time.Second
	// PlanInBackgroundAbove is the selection size (its estimate) above which a plan request is
	// answered at once with the plan planning, without waiting for Options.Replay.PlanWait.
	PlanInBackgroundAbove = 50_000
	// RestartedWhilePlanning is why a plan left by a console that stopped ended failed.
	RestartedWhilePlanning = "the console restarted while planning; plan again"
)

var (
	errPlanCancelled = errors.New("plan cancelled")
	errPlanStopped   = errors.New("console stopping")
)

// Planning is a plan this replica is making in the background.
type Planning struct {
	// ID is the plan's id; Estimate how many messages its selection reads at most (0: unknown).
	ID       string
	Estimate int
	done     chan struct{}
	plan     Plan
	err      error
	cancel   context.CancelCauseFunc
	progress atomic.Pointer[planProgress]
}

type planProgress struct {
	planned int
	counts  map[Action]int
}

// Done is closed when planning has ended; Result then says how.
func (p *Planning) Done() <-chan struct{} { return p.done }

// Result is the plan made, or why it was not (ops.ErrConflict when it was cancelled). Only after
// Done.
func (p *Planning) Result() (Plan, error) { return p.plan, p.err }

// Ready reports whether the plan is made: ready, or read without a state (as a plan made whole is).
func (p Plan) Ready() bool { return p.State == "" || p.State == PlanReady }

// plannings are the plans this replica is making, by id.
type plannings struct {
	mu sync.Mutex
	m  map[string]*Planning
	wg sync.WaitGroup
}

func (ps *plannings) add(p *Planning) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil {
		ps.m = map[string]*Planning{}
	}
	ps.m[p.ID] = p
	ps.wg.Add(1)
}

func (ps *plannings) remove(id string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	delete(ps.m, id)
	ps.wg.Done()
}

// stop ends the planning of id on this replica (false: not planned here), or, with id "", all.
func (ps *plannings) stop(id string, why error) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	found := false
	for pid, p := range ps.m {
		if id == "" || pid == id {
			p.cancel(why)
			found = true
		}
	}
	return found
}

// PlanWait is how long a plan request waits for a plan of estimate messages before it answers
// with the plan still planning: replay.plan_wait, or nothing above PlanInBackgroundAbove.
func (e *Engine) PlanWait(estimate int) time.Duration {
	if estimate > PlanInBackgroundAbove {
		return 0
	}
	if w := e.o.Replay.PlanWait; w > 0 {
		return w
	}
	return DefaultPlanWait
}

// DefaultPlanWait is replay.plan_wait's default: a third of the default request_timeout.
const DefaultPlanWait = 5 * time.Second

// StartPlan checks a selection and starts making its plan in the background; the plan is in the
// store, planning, when it returns. Errors (nothing stored): ops.ErrInvalid (bad selection),
// ops.ErrNotFound (unknown cluster, broker, outbox), ops.ErrForbidden (a redirect the config does
// not allow), ops.ErrUnavailable. Errors found while reading (an empty selection, a topic that
// does not exist, a queue that cannot be read whole) end the plan failed; AwaitPlan hands them
// to a caller still waiting.
func (e *Engine) StartPlan(ctx context.Context, actor string, src Source, f Filter) (*Planning, error) {
	return e.StartPlanFor(ctx, PlanRequest{Actor: actor, Source: src, Filter: f})
}

// PlanRequest is a selection to plan for a person.
type PlanRequest struct {
	Actor  string
	Source Source
	Filter Filter
	// View is what Actor may see of each message (content masked, ops/redact; the zero Views for
	// one who may see it all: an admin who revealed it, or no redaction): the plan's filters —
	// CEL, exception type, original topic, message ids — match it, as a search's and a
	// resolution's do, so that neither what a plan selects nor an edit's "holds N messages with
	// that id" confirms a masked value.
	View Views
	// Shown is what everyone may see of each message: an edit's diff marks the headers and the id
	// it hides (EditDiff.Masked), for the pages that show the plan to anyone. A RabbitMQ plan
	// without one uses Options.ShownRabbit.
	Shown Views
}

// StartPlanFor is StartPlan for r, whose filters match what its actor may see (r.View).
func (e *Engine) StartPlanFor(ctx context.Context, r PlanRequest) (*Planning, error) {
	actor, src, f := r.Actor, r.Source, r.Filter
	f.view, f.shown = r.View, r.Shown
	if f.shown.Rabbit == nil {
		f.shown.Rabbit = e.o.ShownRabbit
	}
	if err := e.checkSelection(&src, f); err != nil {
		return nil, err
	}
	pl := &Planning{ID: "plan_" + randomID(8), Estimate: e.estimate(ctx, src), done: make(chan struct{})}
	if err := e.o.Store.StartPlanning(ctx, StoredPlan{ID: pl.ID, Actor: actor, Source: mustJSON(src), Filter: mustJSON(f),
		State: PlanPlanning, Estimate: pl.Estimate, Owner: e.o.Owner}); err != nil {
		return nil, err
	}
	// The plan outlives the request that asked for it; it ends with its own cancel or the console.
	bctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	pl.cancel = cancel
	e.plans.add(pl)
	plan := Plan{ID: pl.ID, CreatedAt: time.Now().UTC(), Actor: actor, Source: src, Filter: f, State: PlanPlanning, Estimate: pl.Estimate}
	go e.makePlan(bctx, pl, plan)
	return pl, nil
}

// makePlan reads the selection into the plan, beating its heartbeat meanwhile, and ends it.
func (e *Engine) makePlan(ctx context.Context, pl *Planning, plan Plan) {
	defer e.plans.remove(pl.ID)
	defer close(pl.done)
	beatCtx, stopBeat := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { e.beat(beatCtx, pl) })
	err := e.build(ctx, &plan, func(n int, counts map[Action]int) { pl.progress.Store(&planProgress{planned: n, counts: counts}) })
	stopBeat()
	wg.Wait()
	store := context.WithoutCancel(ctx)
	if err != nil {
		why := context.Cause(ctx)
		switch {
		case errors.Is(why, errPlanCancelled):
			// CancelPlan ended it in the store first (here, or on another replica).
			_, _ = e.o.Store.EndPlanning(store, pl.ID, PlanCancelled, "cancelled while planning; nothing was moved")
			err = ops.Conflict("replay plan %s was cancelled while planning", pl.ID)
		case errors.Is(why, errPlanStopped):
			_, _ = e.o.Store.EndPlanning(store, pl.ID, PlanFailed, RestartedWhilePlanning)
			err = ops.Unavailable(err, "%s", RestartedWhilePlanning)
		default:
			// Ends it failed unless it was cancelled meanwhile (a Commit that found it so).
			if _, eerr := e.o.Store.EndPlanning(store, pl.ID, PlanFailed, planFailure(err)); eerr != nil {
				e.o.Logger.Warn("replay: a failed plan could not be marked so", "plan", pl.ID, "err", eerr)
			}
			if ops.Message(err) == ops.Message(errors.New("")) { // an error without words for people: the log has it
				e.o.Logger.Error("replay: planning failed", "plan", pl.ID, "err", err)
			}
		}
	}
	pl.plan, pl.err = plan, err
}

// planFailure says why planning failed, in words for people.
func planFailure(err error) string {
	msg := ops.Message(err)
	if msg == ops.Message(errors.New("")) {
		return "planning failed on an internal error (the console's log has it); plan again"
	}
	return msg
}

// beat writes the planning's progress and heartbeat every planBeat until ctx ends; a plan the
// store says is no longer planning (cancelled from another replica) is stopped.
func (e *Engine) beat(ctx context.Context, pl *Planning) {
	t := time.NewTicker(planBeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, counts := 0, map[Action]int{}
		if p := pl.progress.Load(); p != nil {
			n, counts = p.planned, p.counts
		}
		state, err := e.o.Store.PlanProgress(ctx, pl.ID, n, actionNames(counts))
		switch {
		case err != nil, state == PlanPlanning:
		case state == PlanReady:
			// This plan's own Commit, which the store applied before the console heard back
			// (only build commits a plan): nothing to stop. Cancelling here failed a committed
			// plan's Commit call with the context's error, and its audit with it.
			return
		default: // cancelled or failed elsewhere, or gone
			pl.cancel(errPlanCancelled)
			return
		}
	}
}

// AwaitPlan waits at most within (forever when negative) for pl to end. done reports whether it
// ended: then plan is the plan made, or err why not (the refused plan is deleted: nobody was told
// its id). Not done, plan is the plan as the store has it now (planning, or ready when it ended
// just then). When ctx ends first, planning is stopped and ctx's error returned.
func (e *Engine) AwaitPlan(ctx context.Context, pl *Planning, within time.Duration) (plan Plan, done bool, err error) {
	var timeout <-chan time.Time
	if within >= 0 {
		t := time.NewTimer(within)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-pl.done:
	case <-timeout:
		plan, err := e.LoadPlan(ctx, pl.ID)
		return plan, err == nil && plan.Ready(), err
	case <-ctx.Done():
		if within >= 0 { // the caller answers with the plan planning: it goes on
			plan, err := e.LoadPlan(context.WithoutCancel(ctx), pl.ID)
			return plan, false, err
		}
		pl.cancel(ctx.Err())
		<-pl.done
		_ = e.o.Store.DeletePlan(context.WithoutCancel(ctx), pl.ID)
		return Plan{}, true, ctx.Err()
	}
	plan, err = pl.Result()
	if err != nil {
		_ = e.o.Store.DeletePlan(context.WithoutCancel(ctx), pl.ID)
		return Plan{}, true, err
	}
	return plan, true, nil
}

// Plan freezes a selection: it reads the messages, resolves each one's destination, id and inbox
// verdict, checks the ledger, and stores the plan, waiting for it (StartPlan and AwaitPlan). The
// messages stream through in chunks (see planBuilder): a plan of a million costs the memory of a
// chunk. Errors: ops.ErrInvalid (bad selection), ops.ErrNotFound (unknown cluster, topic, queue,
// outbox), ops.ErrUnavailable; nothing is stored then.
func (e *Engine) Plan(ctx context.Context, actor string, src Source, f Filter) (Plan, error) {
	pl, err := e.StartPlan(ctx, actor, src, f)
	if err != nil {
		return Plan{}, err
	}
	plan, _, err := e.AwaitPlan(ctx, pl, -1)
	return plan, err
}

// PlanCancelRefused says why by may not cancel plan, as CancelPlan refuses it: ops.ErrConflict
// for a plan no longer planning, ops.ErrForbidden for another person's plan unless by is an admin.
// nil when CancelPlan would go ahead; the plan page offers Cancel only then.
func PlanCancelRefused(plan Plan, by access.Actor) error {
	if plan.State != PlanPlanning {
		return ops.Conflict("replay plan %s is %s, not planning: there is nothing to cancel", plan.ID, plan.State)
	}
	if by.Name != plan.Actor && !by.Can(access.Admin) {
		return ops.Forbidden("%s is making this plan; operators cancel their own plans, admins anyone's", plan.Actor)
	}
	return nil
}

// CancelPlan stops a plan being made, on whichever replica makes it: it ends cancelled at once
// (its items dropped; nothing was moved, a plan moves nothing). A plan that became ready first is
// an ops.ErrConflict: the two race on one row, and exactly one wins. Audited.
func (e *Engine) CancelPlan(ctx context.Context, id string, by access.Actor) (Plan, error) {
	plan, err := e.LoadPlan(ctx, id)
	if err != nil {
		return plan, err
	}
	if err := PlanCancelRefused(plan, by); err != nil {
		return plan, err
	}
	done, err := e.intend(ctx, audit.Entry{Actor: by.Name, Role: by.Role.String(), Action: "replay.plan.cancel", Target: "replay-plan/" + id,
		Detail: map[string]any{"planned": plan.Planned, "estimate": plan.Estimate, "planned_by": plan.Actor}})
	if err != nil {
		return plan, err
	}
	ok, err := e.o.Store.EndPlanning(ctx, id, PlanCancelled, "cancelled by "+by.Name+" while planning; nothing was moved")
	if err == nil && !ok {
		now, rerr := e.LoadPlan(ctx, id)
		err = rerr
		if rerr == nil {
			err = ops.Conflict("replay plan %s is %s: it ended before the cancel", id, now.State)
		}
	}
	done(err)
	if err != nil {
		return plan, err
	}
	e.plans.stop(id, errPlanCancelled) // here: at once; elsewhere: at its replica's next beat
	return e.LoadPlan(ctx, id)
}

// FailStalePlans marks failed the plans whose replica stopped while making them (a heartbeat
// older than PlanStale); Work calls it as it starts and then every few polls.
func (e *Engine) FailStalePlans(ctx context.Context) {
	ids, err := e.o.Store.FailStalePlans(ctx, PlanStale, RestartedWhilePlanning)
	if err != nil {
		e.o.Logger.Warn("replay: stale plans could not be ended", "err", err)
		return
	}
	for _, id := range ids {
		e.o.Logger.Warn("replay: a plan was left planning by a console that stopped; marked failed", "plan", id)
	}
}

// stopPlanning ends every plan this replica makes as failed (the console is stopping) and waits
// for them.
func (e *Engine) stopPlanning() {
	e.plans.stop("", errPlanStopped)
	e.plans.wg.Wait()
}

// staleFailed is sp, failed when it was left planning by a console that stopped.
func (e *Engine) staleFailed(ctx context.Context, sp StoredPlan) StoredPlan {
	if sp.State != PlanPlanning || sp.Heartbeat == nil || time.Since(*sp.Heartbeat) < PlanStale/2 {
		return sp
	}
	// The store's clock decides (a replica's may differ): only a plan stale by it is ended.
	ids, err := e.o.Store.FailStalePlans(ctx, PlanStale, RestartedWhilePlanning)
	if err != nil {
		return sp
	}
	for _, id := range ids {
		if id == sp.ID {
			if now, err := e.o.Store.Plan(ctx, sp.ID); err == nil {
				return now
			}
		}
	}
	return sp
}

// estimate is how many messages a selection reads at most, read cheaply before planning: a Kafka
// range's offsets, a queue's or outbox filter's limit, the ids named. 0 when unknown.
func (e *Engine) estimate(ctx context.Context, src Source) int {
	switch src.Kind {
	case source.Kafka:
		if len(src.Records) > 0 {
			return len(src.Records)
		}
		c, ok := e.kafka[src.Cluster]
		if !ok {
			return 0
		}
		parts, err := c.Partitions(ctx, src.Topic)
		if err != nil {
			return 0
		}
		n := int64(0)
		for _, pr := range parts {
			if from, to, ok := src.span(pr); ok {
				n += max(0, to-from)
			}
		}
		return int(min(n, MaxPlanItems+1))
	case source.RabbitMQ:
		return src.Limit
	case source.Outbox:
		if len(src.IDs) > 0 {
			return len(src.IDs)
		}
		return src.Limit
	case source.Archive:
		return 1
	}
	return 0
}
