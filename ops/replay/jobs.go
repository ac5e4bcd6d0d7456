package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/source"
)

// StartRequest turns a plan into a job.
type StartRequest struct {
	PlanID        string
	Actor         access.Actor // who starts it: a forced replay needs an admin, a large one too (operator_max_messages)
	Reason        string
	RatePerSecond int  // 0 → the configured default
	Force         bool // publish messages the inbox marks processed or in progress; needs a reason
}

// maxRate bounds a job's rate; the brokers' own limits apply below it.
const maxRate = 1_000_000

// Start creates a pending job for a plan; a worker (on any replica) picks it up within a poll.
func (e *Engine) Start(ctx context.Context, r StartRequest) (Job, error) {
	if r.PlanID == "" {
		return Job{}, invalid("plan_id", "required: the plan_id a plan answer gave")
	}
	if r.RatePerSecond == 0 {
		r.RatePerSecond = e.o.Replay.DefaultRatePerSecond
	}
	if r.RatePerSecond < 1 || r.RatePerSecond > maxRate {
		return Job{}, invalid("rate_per_second", fmt.Sprintf("must be between 1 and %d", maxRate))
	}
	if r.Force {
		if err := forceRefused(r.Actor); err != nil {
			return Job{}, err
		}
	}
	if r.Force && len(r.Reason) < 3 {
		return Job{}, invalid("reason", "a forced replay needs a written reason")
	}
	if utf8.RuneCountInString(r.Reason) > 1000 {
		return Job{}, invalid("reason", "at most 1000 characters")
	}
	plan, err := e.o.Store.Plan(ctx, r.PlanID)
	if err != nil {
		return Job{}, err
	}
	if err := notReady(e.staleFailed(ctx, plan)); err != nil {
		return Job{}, err
	}
	toPublish := moves(plan.Actions, r.Force)
	if err := e.sizeRefused(toPublish, r.Actor); err != nil {
		return Job{}, err
	}
	var src Source
	_ = json.Unmarshal(plan.Source, &src)
	job := Job{ID: "job_" + randomID(8), PlanID: plan.ID, Actor: r.Actor.Name, Person: r.Actor.Person(), Reason: r.Reason, Force: r.Force,
		RatePerSecond: r.RatePerSecond, Total: plan.Total, SourceKey: sourceKey(src)}
	// The two-person rule counts what this person moved from this source within its window, this
	// job included. A forced job and an edited message always wait: what is published is not
	// what the consumer's inbox or the original would allow.
	always := ""
	switch {
	case r.Force:
		always = "forced past the consumer's inbox"
	case src.Edit != nil:
		always = "publishes an edited message"
	}
	d, err := e.rule.Check(ctx, job.Person, job.SourceKey, int64(toPublish), always)
	if err != nil {
		return Job{}, err
	}
	if d.Needed {
		job.Status = JobAwaiting
	}
	detail := map[string]any{"plan_id": plan.ID, "source": json.RawMessage(plan.Source), "filter": json.RawMessage(plan.Filter),
		"actions": plan.Actions, "force": r.Force, "rate_per_second": r.RatePerSecond, "awaiting_approval": d.Needed}
	if d.Why != "" {
		detail["four_eyes"] = d.Why
	}
	done, err := e.intend(ctx, audit.Entry{Actor: r.Actor.Name, Role: r.Actor.Role.String(), Action: "replay.start", Target: "replay/" + job.ID,
		Count: new(int64(plan.Total)), Reason: r.Reason, Detail: detail})
	if err != nil {
		return Job{}, err
	}
	if !d.Needed {
		// Counted before the job can move anything: a ledger that cannot be written stops it.
		if err := e.rule.Record(ctx, foureyes.Move{Person: job.Person, Source: job.SourceKey, Action: "replay.start", Ref: job.ID,
			N: int64(toPublish)}); err != nil {
			done(err)
			return Job{}, err
		}
	}
	err = e.o.Store.CreateJob(ctx, job)
	done(err)
	if err != nil {
		return Job{}, err
	}
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return e.o.Store.Job(ctx, job.ID)
}

// Approve releases a job held by the four-eyes rule. The approver must be a different person
// from the one who started it (ops.ErrForbidden otherwise); a job not awaiting approval is an
// ops.ErrConflict.
func (e *Engine) Approve(ctx context.Context, id string, approver access.Actor) (Job, error) {
	job, err := e.o.Store.Job(ctx, id)
	if err != nil {
		return job, err
	}
	plan, err := e.o.Store.Plan(ctx, job.PlanID)
	if err != nil {
		return job, err
	}
	if err := e.approveRefused(job, plan, approver); err != nil {
		return job, err // a self-approval is a refusal (ops.ErrRefused), audited where it is answered
	}
	// What the approved job moves counts as its starter's, from now.
	moved := int64(moves(plan.Actions, job.Force))
	done, err := e.intend(ctx, audit.Entry{Actor: approver.Name, Role: approver.Role.String(), Action: "replay.approve", Target: "replay/" + id,
		Count: new(int64(job.Total)), Detail: map[string]any{"started_by": job.Actor, "force": job.Force}})
	if err != nil {
		return job, err
	}
	ok, err := e.o.Store.ApproveJob(ctx, id, approver.Name)
	if err == nil && !ok {
		err = ops.Conflict("replay job %s is no longer awaiting approval", id)
	}
	if err == nil {
		// Approved: the job moves whatever the ledger says; a ledger that cannot be written is logged.
		if rerr := e.rule.Record(ctx, foureyes.Move{Person: job.StartedBy(), Source: job.SourceKey, Action: "replay.approve", Ref: id, N: moved}); rerr != nil {
			e.o.Logger.Error("four-eyes: the approved job's moves were not recorded", "job", id, "err", rerr)
		}
	}
	done(err)
	if err != nil {
		return job, err
	}
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return e.o.Store.Job(ctx, id)
}

// ApproveRefused says why approver may not approve job, as Approve refuses it: ops.ErrConflict
// for a job not awaiting approval, ops.ErrForbidden for the person who started it (four-eyes) and
// for an approver who could not have started the job (a forced job, or one past
// replay.operator_max_messages, needs an admin to approve it as to start it: the second pair of
// eyes has the rights the first needed — an operator's approval completed an admin-only job that
// operator could neither start nor cancel). nil when Approve would go ahead; the job page offers
// Approve only then.
func (e *Engine) ApproveRefused(ctx context.Context, job Job, approver access.Actor) error {
	if job.Status != JobAwaiting {
		return approveRefused(job, approver) // says it is not awaiting approval: no plan to read
	}
	plan, err := e.o.Store.Plan(ctx, job.PlanID)
	if err != nil {
		return err
	}
	return e.approveRefused(job, plan, approver)
}

func (e *Engine) approveRefused(job Job, plan StoredPlan, approver access.Actor) error {
	if err := approveRefused(job, approver); err != nil {
		return err
	}
	if approver.Can(access.Admin) {
		return nil
	}
	if job.Force {
		return ops.Forbidden("this job forces a replay past the consumer's inbox, which only an admin may start, " +
			"so only an admin may approve it")
	}
	if limit, n := e.o.Replay.OperatorMaxMessages, moves(plan.Actions, job.Force); limit > 0 && n > limit {
		return ops.Forbidden("this job moves %d messages, more than the %d an operator may start (replay.operator_max_messages), "+
			"so only an admin may approve it", n, limit)
	}
	return nil
}

// approveRefused is ApproveRefused's part that needs no plan: the job awaits approval, and the
// approver is not the person who started it.
func approveRefused(job Job, approver access.Actor) error {
	if job.Status != JobAwaiting {
		return ops.Conflict("replay job %s is %s, not awaiting approval", job.ID, job.Status)
	}
	return foureyes.ApproveRefused(job.StartedBy(), approver, "started this replay")
}

// StartedBy is the person who started the job, as the two-person rule counts people.
func (j Job) StartedBy() string {
	if j.Person != "" {
		return j.Person
	}
	return j.Actor
}

// CancelRefused says why by may not cancel job (or reject it while it awaits approval), as Cancel
// refuses it: ops.ErrConflict for a job that has ended, ops.ErrForbidden for another person's job
// unless by is an admin. nil when Cancel would go ahead; the job page offers Cancel only then.
func CancelRefused(job Job, by access.Actor) error {
	if job.Status != JobPending && job.Status != JobRunning && job.Status != JobAwaiting {
		return ops.Conflict("replay job %s is already %s", job.ID, job.Status)
	}
	if by.Name != job.Actor && !by.Can(access.Admin) {
		return ops.Forbidden("%s started this replay; operators cancel their own jobs, admins anyone's", job.Actor)
	}
	return nil
}

// StartRefused says why actor may not start a job of plan (force as it would ask), as Start
// refuses it before writing anything: the plan must be ready, forcing needs an admin, and an
// operator may start a job that moves at most replay.operator_max_messages. nil when those allow
// it; the plan page offers Run (and force) only then. What the request itself carries (rate,
// reason) is Start's to check.
func (e *Engine) StartRefused(plan Plan, actor access.Actor, force bool) error {
	if err := notReady(StoredPlan{ID: plan.ID, State: plan.State, Planned: plan.Planned, Estimate: plan.Estimate, Error: plan.Error}); err != nil {
		return err
	}
	if force {
		if err := forceRefused(actor); err != nil {
			return err
		}
	}
	counts := make(map[string]int, len(plan.Counts))
	for a, n := range plan.Counts {
		counts[string(a)] = n
	}
	return e.sizeRefused(moves(counts, force), actor)
}

// notReady refuses a job of a plan that is not ready (ops.ErrConflict, saying what to do): one
// still planning holds only the messages read so far, and a cancelled or failed one none.
func notReady(p StoredPlan) error {
	switch p.State {
	case "", PlanReady:
		return nil
	case PlanPlanning:
		of := ""
		if p.Estimate > 0 {
			of = fmt.Sprintf(" of at most %d", p.Estimate)
		}
		return ops.Conflict("replay plan %s is still planning (%d message(s)%s planned so far): start it once it is ready, "+
			"or cancel it", p.ID, p.Planned, of)
	case PlanCancelled:
		return ops.Conflict("replay plan %s was cancelled while planning (%s); plan again", p.ID, p.Error)
	default:
		return ops.Conflict("replay plan %s failed while planning (%s); plan again", p.ID, p.Error)
	}
}

// forceRefused: forcing a replay past the consumer's inbox needs an admin.
func forceRefused(actor access.Actor) error {
	return ops.Require(actor, access.Admin, "forcing a replay past the consumer's inbox")
}

// moves is how many messages a job of a plan with these action counts publishes (or archives):
// with force, also those the consumer's inbox marks processed or in progress.
func moves(actions map[string]int, force bool) int {
	n := actions[string(Publish)] + actions[string(Discard)]
	if force {
		n += actions[string(SkipProcessed)] + actions[string(SkipInProgress)]
	}
	return n
}

// sizeRefused is replay.operator_max_messages: an operator's job may move at most that many.
func (e *Engine) sizeRefused(toPublish int, actor access.Actor) error {
	if limit := e.o.Replay.OperatorMaxMessages; !actor.Can(access.Admin) && limit > 0 && toPublish > limit {
		return ops.Forbidden("this job would publish %d messages; an operator may start at most %d "+
			"(replay.operator_max_messages) — narrow the plan or ask an admin", toPublish, limit)
	}
	return nil
}

// Job reads one job with its progress.
func (e *Engine) Job(ctx context.Context, id string) (Job, error) {
	return e.o.Store.Job(ctx, id)
}

// Jobs lists recent jobs.
func (e *Engine) Jobs(ctx context.Context, limit int) ([]Job, error) {
	return e.o.Store.Jobs(ctx, limit)
}

// Ledger lists a job's outcomes, problems first.
func (e *Engine) Ledger(ctx context.Context, id string, limit int) ([]LedgerEntry, error) {
	return e.o.Store.Ledger(ctx, id, limit)
}

// Cancel asks a job to stop; the runner stops within one batch. A finished job → ops.ErrConflict.
func (e *Engine) Cancel(ctx context.Context, id string, by access.Actor) (Job, error) {
	job, err := e.o.Store.Job(ctx, id)
	if err != nil {
		return job, err
	}
	if err := CancelRefused(job, by); err != nil {
		return job, err
	}
	done, err := e.intend(ctx, audit.Entry{Actor: by.Name, Role: by.Role.String(), Action: "replay.cancel", Target: "replay/" + id})
	if err != nil {
		return job, err
	}
	_, err = e.o.Store.RequestCancel(ctx, id)
	done(err)
	if err != nil {
		return job, err
	}
	return e.o.Store.Job(ctx, id)
}

// Work runs jobs until ctx ends: it claims the oldest runnable job (pending, or running with an
// expired lease), runs it, and looks again; idle, it polls every Options.Poll.
//
// It also keeps the plans honest: the plans this replica makes end failed when ctx ends (the
// console stops), and a plan left planning by a console that stopped is marked failed as Work
// starts and every planStaleSweep after.
func (e *Engine) Work(ctx context.Context) error {
	defer e.stopPlanning()
	e.FailStalePlans(ctx)
	swept := time.Now()
	for {
		if time.Since(swept) >= planStaleSweep {
			e.FailStalePlans(ctx)
			swept = time.Now()
		}
		job, err := e.o.Store.ClaimJob(ctx, e.o.Owner, e.o.Lease)
		switch {
		case err == nil:
			e.run(ctx, job)
			continue
		case errors.Is(err, ops.ErrNotFound):
		case ctx.Err() != nil:
			return nil
		default:
			e.o.Logger.Warn("replay: claim failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-e.wake:
		case <-time.After(e.o.Poll):
		}
	}
}

// batchSize is how many plan items a runner moves per round trip to the ledger (a job with a
// lower rate uses its rate: one batch a second).
const batchSize = 5000

// run executes one claimed job to its end, a cancellation, a lost lease or ctx's end (then the
// lease expires and a replica resumes it from next_seq; settled items are not redone). A store,
// broker or inbox that goes away pauses the job: its status says why, and it resumes when they
// return, on this replica while it holds the lease.
func (e *Engine) run(ctx context.Context, job Job) {
	log := e.o.Logger.With("job", job.ID)
	log.Info("replay: running", "next_seq", job.NextSeq, "total", job.Total)
	plan, err := e.o.Store.Plan(ctx, job.PlanID)
	if err != nil {
		e.finish(ctx, job, JobFailed, err.Error())
		return
	}
	var src Source
	_ = json.Unmarshal(plan.Source, &src)
	k, err := e.kindOf(src.Kind)
	if err != nil {
		e.finish(ctx, job, JobFailed, err.Error())
		return
	}
	batch := min(k.batch(), max(1, job.RatePerSecond))
	limiter := rate.NewLimiter(rate.Limit(job.RatePerSecond), batch)
	next := job.NextSeq
	backoff := time.Second
	for {
		var end stop
		var why error
		next, end, why = e.runBatches(ctx, job, k, src, limiter, batch, next)
		switch end {
		case stopDone:
			e.finish(ctx, job, JobDone, "")
			return
		case stopCancelled:
			e.finish(ctx, job, JobCancelled, "")
			return
		case stopFailed:
			e.finish(ctx, job, JobFailed, why.Error())
			return
		case stopLost:
			return // another replica (or this one, restarted) resumes it when the lease expires
		}
		// stopRetry: a dependency went away; the batch's claims are resumed. Say why on the job
		// (when the store answers), in words for a person (the log has the dependency's own
		// error), and keep the lease while waiting.
		log.Warn("replay: paused", "err", why)
		if held, cancelled, err := e.o.Store.PauseJob(ctx, job.ID, e.o.Owner, e.o.Lease, ops.Message(why)); err == nil {
			if !held {
				return
			}
			if cancelled {
				e.finish(ctx, job, JobCancelled, "")
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// drainFor is how long the batches already sent are seen through after the pipeline stopped.
const drainFor = 5 * time.Second

// maxBackoff bounds the wait between two tries of a paused job.
const maxBackoff = 10 * time.Second

// stop is why runBatches returned.
type stop int

const (
	stopDone      stop = iota // every item is settled
	stopCancelled             // an operator cancelled the job; claimed batches were settled first
	stopLost                  // the lease is gone (another replica) or ctx ended
	stopRetry                 // a dependency failed; run again from the returned seq
	stopFailed                // the job cannot go on (its source changed beyond recognition)
)

// batchWork is one batch on its way through the pipeline.
type batchWork struct {
	items []Item
	end   int // next_seq once this batch is settled
	gated gated
	moved moved
}

// handOn passes w to the next stage of runBatches, or reports false when ctx ends first.
func handOn(ctx context.Context, next chan<- *batchWork, w *batchWork) bool {
	select {
	case next <- w:
		return true
	case <-ctx.Done():
		return false
	}
}

// runBatches moves a job's items from seq next in a pipeline of five stages, each its own
// goroutine, so that the plan is read, the inbox checked and the ledger claimed for one batch
// while the broker takes the one before, acknowledges the one before that, and the ledger settles
// the one before that:
//
//	load plan items → gate (lease, rate, inbox, claim) → move (read, send) → await acks → settle
//
// The order per message is the package's: claim → publish → broker ack → ledger. Settling runs in
// seq order, so next_seq only ever passes settled batches. Cancellation and a lost lease are seen
// by the gate before it claims a batch; of the batches already claimed, the ones being published
// finish and the others are released (settled skipped), never abandoned: an abandoned claim would
// hold its message against every later replay. A failure stops the gate and the move at once, and
// the batches already sent are seen through (drain).
func (e *Engine) runBatches(ctx context.Context, job Job, k kind, src Source, limiter *rate.Limiter, batch, next int) (int, stop, error) {
	log := e.o.Logger.With("job", job.ID)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m, err := k.open(ctx, job, src)
	switch {
	case errors.Is(err, ops.ErrConflict):
		return next, stopFailed, err
	case err != nil:
		return next, retryOrFail(err), err
	}
	defer m.close()
	// A batch already sent when the pipeline stops (a later batch's gate failed, the lease was
	// lost, the console is stopping) is seen through under drain — its acks awaited, its outcomes
	// settled, its source's copies acked — which outlives ctx by drainFor: abandoned, its claims
	// would be resumed on the retry and its messages sent twice, though the broker had them. No
	// batch starts moving once ctx has ended.
	drain, stopDrain := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDrain()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(drainFor, stopDrain) })()
	// The loader reads ahead; it stops when the gate stops taking batches.
	loadCtx, stopLoading := context.WithCancel(ctx)
	defer stopLoading()
	var settledTo atomic.Int64
	settledTo.Store(int64(next))
	var stopping atomic.Bool // cancelled: claimed batches not yet moving are released, not published
	var (
		loaded  = make(chan *batchWork, 1)
		gatedCh = make(chan *batchWork)
		movedCh = make(chan *batchWork)
		ackedCh = make(chan *batchWork)
		result  = stopDone
		reason  error
		resMu   sync.Mutex
	)
	// fail records why the pipeline stopped (the first reason wins) and stops the stages.
	fail := func(why stop, err error) {
		resMu.Lock()
		defer resMu.Unlock()
		if why == stopRetry {
			why = retryOrFail(err)
		}
		if result == stopDone {
			result, reason = why, err
			if err != nil && ctx.Err() == nil && why == stopRetry {
				log.Warn("replay: batch failed; will retry", "err", err)
			}
		}
		if why != stopCancelled {
			cancel()
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { // load
		defer close(loaded)
		dec := newItemDecoder()
		for from := next; ; {
			rows, err := e.o.Store.PlanItems(loadCtx, job.PlanID, from, batch)
			if loadCtx.Err() != nil {
				return
			}
			if err != nil {
				fail(stopRetry, err)
				return
			}
			if len(rows) == 0 {
				return
			}
			w := &batchWork{items: make([]Item, len(rows)), end: rows[len(rows)-1].Seq + 1}
			for i, r := range rows {
				w.items[i] = dec.item(r)
			}
			if !handOn(loadCtx, loaded, w) {
				return
			}
			from = w.end
		}
	})
	wg.Go(func() { // gate
		defer close(gatedCh)
		defer func() {
			stopLoading()
			for range loaded { // let the loader end
			}
		}()
		for w := range loaded {
			// The rate first, then the lease and cancellation, then the claim: a cancel that
			// arrives while the gate waits for its rate is seen before anything more is claimed.
			if err := limiter.WaitN(ctx, max(1, publishable(job, w.items))); err != nil {
				fail(stopLost, nil) // ctx ended
				return
			}
			held, cancelled, err := e.o.Store.RenewLease(ctx, job.ID, e.o.Owner, e.o.Lease, int(settledTo.Load()))
			switch {
			case err != nil:
				fail(stopLost, err)
			case !held:
				log.Warn("replay: lease lost to another replica")
				fail(stopLost, nil)
			case cancelled:
				stopping.Store(true)
				fail(stopCancelled, nil)
			}
			if err != nil || !held || cancelled {
				return
			}
			if w.gated, err = e.gate(ctx, job, src, w.items); errors.Is(err, ErrJobEnded) {
				log.Warn("replay: the job ended elsewhere while this replica's lease had run out")
				fail(stopLost, nil)
				return
			} else if err != nil {
				fail(stopRetry, err)
				return
			}
			if !handOn(ctx, gatedCh, w) {
				return
			}
		}
	})
	wg.Go(func() { // move
		defer close(movedCh)
		for w := range gatedCh {
			var err error
			switch {
			case stopping.Load(): // cancelled: release this batch's claims instead of publishing it
				w.moved = moved{outcomes: released(w.gated)}
			case ctx.Err() != nil: // stopped: this batch's claims are resumed by the next run
				return
			case len(w.gated.move) > 0:
				w.moved, err = m.move(drain, job, w.gated.move, w.gated.resumed)
			}
			if err != nil {
				fail(stopRetry, err)
				return
			}
			if !handOn(drain, movedCh, w) {
				return
			}
		}
	})
	wg.Go(func() { // await the broker's acknowledgements of what was sent
		defer close(ackedCh)
		failed := false
		for w := range movedCh {
			if failed {
				continue // taken from the move stage so that it is not left waiting; resumed next run
			}
			if w.moved.await != nil {
				rest, err := w.moved.await(drain)
				if err != nil {
					fail(stopRetry, err)
					failed = true
					continue
				}
				w.moved.outcomes = append(w.moved.outcomes, rest...)
			}
			if !handOn(drain, ackedCh, w) {
				return
			}
		}
	})
	wg.Go(func() { // settle
		failed := false
		for w := range ackedCh {
			if failed {
				continue // as above
			}
			if err := e.o.Store.Settle(drain, job.ID, w.moved.outcomes); err != nil {
				fail(stopRetry, err)
				failed = true
				continue
			}
			settledTo.Store(int64(w.end))
			if w.moved.afterSettle != nil {
				if err := w.moved.afterSettle(drain); err != nil {
					fail(stopRetry, err)
					failed = true
				}
			}
		}
	})
	wg.Wait()
	next = int(settledTo.Load())
	if result == stopDone && ctx.Err() != nil {
		result = stopLost
	}
	if result == stopDone {
		if err := m.finish(ctx, job); err != nil {
			return next, stopRetry, err
		}
	}
	if result == stopDone || result == stopCancelled {
		// Record the last batches' progress (the gate renewed the lease before they settled).
		if _, _, err := e.o.Store.RenewLease(ctx, job.ID, e.o.Owner, e.o.Lease, next); err != nil {
			return next, stopLost, nil
		}
	}
	return next, result, reason
}

// retryOrFail is how a run stops on err from a dependency: stopRetry (the job pauses and tries again)
// but for a refusal of the console's own account (ops.ErrForbidden: a broker refused its user a
// publish or a read), which no retry gets past until a person grants the permission. A refused
// publish also closes the broker's channel with the batch's outcome unknown, so each retry would
// send the batch's earlier messages again (resumed claims) before meeting the same refusal: the
// job was retried for ever, publishing them each time. It ends failed instead, saying who lacks
// what; its claims in flight are released failed (FinishJob: "it may have been published") and
// their messages stay in the source, for a new plan — through the gate again, the consumer's inbox
// asked — once the permission is granted. A message whose destination is known to be refused
// before publishing fails alone instead (RabbitMQ: rabbit.Cursor.checkRights), and the job goes on.
func retryOrFail(err error) stop {
	if errors.Is(err, ops.ErrForbidden) {
		return stopFailed
	}
	return stopRetry
}

// released settles a cancelled batch's claims without publishing: a fresh claim was never
// published (skipped); a resumed one may have been before the interruption (failed, so that a
// later replay may send it again and the inbox absorbs a duplicate).
func released(g gated) []LedgerOutcome {
	out := make([]LedgerOutcome, 0, len(g.move))
	for _, it := range g.move {
		o := LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID,
			Outcome: LedgerSkipped, Detail: "cancelled before it was published"}
		if g.resumed[it.Seq] {
			o.Outcome, o.Detail = LedgerFailed, "cancelled after an interruption: it may have been published before it"
		}
		out = append(out, o)
	}
	return out
}

// publishable counts the items of a batch the job would publish, for the rate limiter.
func publishable(job Job, items []Item) int {
	n := 0
	for _, it := range items {
		if it.Action.moves(job.Force) {
			n++
		}
	}
	return n
}

// finish ends a job. The audit entry is written first, with the counts as they end, so that a job
// seen finished always has its replay.finish.
func (e *Engine) finish(ctx context.Context, job Job, status, errText string) {
	ctx = context.WithoutCancel(ctx)
	final, err := e.o.Store.Job(ctx, job.ID)
	var inFlight int
	if err == nil {
		inFlight, err = e.o.Store.InFlight(ctx, job.ID)
	}
	if err != nil {
		e.o.Logger.Warn("replay: finishing job failed", "job", job.ID, "err", err)
		return
	}
	// FinishJob releases the claims still in flight as failed (an interrupted job cancelled): the
	// entry counts them as the job will. This replica's runner has stopped, and no other holds
	// the lease, so no claim is added between the count and the finish.
	final.Failed += inFlight
	e.audit(ctx, audit.Entry{Actor: final.Actor, Role: "system", SourceIP: e.o.Owner, UserAgent: workerAgent,
		Action: "replay.finish", Target: "replay/" + job.ID, Count: new(int64(final.Published)), Reason: final.Reason,
		Outcome: outcomeOf(status, final), Detail: map[string]any{"status": status, "published": final.Published,
			"skipped": final.Skipped, "failed": final.Failed, "total": final.Total, "error": errText, "force": final.Force,
			"started_by": final.Actor, "replica": e.o.Owner}})
	if err := e.o.Store.FinishJob(ctx, job.ID, e.o.Owner, status, errText); err != nil {
		e.o.Logger.Warn("replay: finishing job failed", "job", job.ID, "err", err)
		return
	}
	e.o.Logger.Info("replay: finished", "job", job.ID, "status", status, "published", final.Published,
		"skipped", final.Skipped, "failed", final.Failed)
}

// workerAgent is the user agent of the entries the replay worker writes itself.
const workerAgent = "redrive-replay-worker"

// outcomeOf is how a job's end reads in the audit log: a job that finished with failed messages
// is not "ok".
func outcomeOf(status string, j Job) string {
	switch {
	case status == JobFailed:
		return audit.OutcomeFailed
	case status == JobCancelled:
		return audit.OutcomeCancelled
	case j.Failed > 0:
		return audit.OutcomePartial
	}
	return audit.OutcomeOK
}

// intend writes the intent of a change to the audit log before the change is made: when it
// cannot be written, nothing is changed and the caller is told why. done records how the change
// ended (ok, or failed with its error), naming the intent in detail.intent_id; a change that was
// made stays reported as made when that row cannot be written (ops/audit's policy).
func (e *Engine) intend(ctx context.Context, entry audit.Entry) (done func(error), err error) {
	outcome, err := e.aud.Intend(ctx, entry)
	if err != nil {
		return nil, err
	}
	return func(changeErr error) { outcome(changeErr, nil) }, nil
}

// audit writes an entry that is not a change's intent; a failure is logged and counted.
func (e *Engine) audit(ctx context.Context, entry audit.Entry) { e.aud.Record(ctx, entry) }

// gate is the common first step of every runner: it re-checks the inbox (the plan may be old),
// claims in the ledger what is still to move and records the rest as skipped, in one statement.
func (e *Engine) gate(ctx context.Context, job Job, src Source, items []Item) (gated, error) {
	var g gated
	var skips []LedgerOutcome
	skip := func(it Item, a Action, detail string) {
		if detail == "" {
			detail = string(a)
		}
		skips = append(skips, LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID,
			Outcome: LedgerSkipped, Detail: detail})
	}
	candidates := make([]Item, 0, len(items))
	var copies []Item
	for _, it := range items {
		switch {
		case it.Action.moves(job.Force):
			candidates = append(candidates, it)
		case it.Action == DropReplayedCopy:
			copies = append(copies, it)
		default:
			skip(it, it.Action, "")
		}
	}
	// Who holds the copies (under either locator), and — for RabbitMQ, whose dead letters a
	// replay and a discard know by twin locators — whether the other action took a candidate
	// since the plan was made: a discard's archived message that the broker returned after it
	// lost the ack is not replayed, nor a replayed one archived.
	var ask []string
	for _, it := range copies {
		ask = append(ask, it.Locator, twinLocator(it.Locator))
	}
	twins := src.Kind == source.RabbitMQ
	if twins {
		for _, it := range candidates {
			ask = append(ask, twinLocator(it.Locator))
		}
	}
	var taken map[string]string
	if len(ask) > 0 {
		var err error
		if taken, err = e.o.Store.Holders(ctx, ask); err != nil {
			return g, err
		}
	}
	for _, it := range copies {
		// Recorded before the mover acks them (ledger → ack): the job's ledger says which copies
		// it removed and whose replay they were copies of.
		by, l := "another job", it.Locator
		if j := taken[l]; j != "" {
			by = "job " + j
		} else if j := taken[twinLocator(l)]; j != "" {
			by, l = "job "+j, twinLocator(l)
		}
		did, nothing := "published it and its broker confirmed it", "nothing is published"
		if isDiscardLocator(l) {
			did, nothing = "archived it", "nothing is archived again"
		}
		skip(it, DropReplayedCopy, fmt.Sprintf("%s (%s %s): this copy is acked from the queue, %s",
			DropReplayedCopy, by, did, nothing))
	}
	if twins && len(taken) > 0 {
		kept := candidates[:0]
		for _, it := range candidates {
			j := taken[twinLocator(it.Locator)]
			if j == "" {
				kept = append(kept, it)
				continue
			}
			did := "published"
			if !isDiscardLocator(it.Locator) {
				did = "archived"
			}
			skip(it, SkipAlreadyReplayed, fmt.Sprintf("%s (job %s %s it since the plan was made; this copy stays in the queue, "+
				"and a new plan removes it)", SkipAlreadyReplayed, j, did))
		}
		candidates = kept
	}
	// The inbox now, not when the plan was made.
	verdicts, err := e.inboxVerdicts(ctx, candidates, true)
	if err != nil {
		return g, err
	}
	claims := make([]LedgerClaim, 0, len(candidates))
	checked := candidates[:0]
	for _, it := range candidates {
		if v, ok := verdicts[it.Consumer][it.MessageID]; ok && !job.Force && it.Action != Discard {
			it.Inbox = v
			if a := decide(&it, false, e.o.Replay.MaxReplaysPerMessage); a != Publish {
				skip(it, a, string(a)+" (at run time)")
				continue
			}
		}
		checked = append(checked, it)
		claims = append(claims, LedgerClaim{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID})
	}
	states, err := e.o.Store.Claim(ctx, job.ID, claims, skips)
	if err != nil {
		return g, err
	}
	var others []LedgerOutcome
	var holders map[string]string // locator → the job that replayed it, asked only when needed
	g.move = make([]Item, 0, len(checked))
	for _, it := range checked {
		switch states[it.Seq] {
		case Claimed:
			g.move = append(g.move, it)
		case MineInFlight:
			// This job claimed it and died before settling: publish again (at-least-once).
			if g.resumed == nil {
				g.resumed = map[int]bool{}
			}
			g.resumed[it.Seq] = true
			g.move = append(g.move, it)
		case ReplayedByOther:
			if holders == nil {
				if holders, err = e.o.Store.Holders(ctx, locatorsOf(checked)); err != nil {
					return g, err
				}
			}
			by := "another job"
			if j := holders[it.Locator]; j != "" {
				by = "job " + j
			}
			others = append(others, LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID,
				Outcome: LedgerSkipped, Detail: fmt.Sprintf("%s (%s replayed it)", SkipAlreadyReplayed, by)})
		case AlreadyMine:
			g.mine = append(g.mine, it) // settled by an earlier run of this job
		}
	}
	return g, e.o.Store.Record(ctx, job.ID, others)
}

func locatorsOf(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Locator
	}
	return out
}

// gated is gate's answer; the skips are already recorded.
type gated struct {
	move    []Item       // claimed now (or resumed): move them
	resumed map[int]bool // seqs this job claimed before and never settled
	mine    []Item       // settled by an earlier run of this job
}
