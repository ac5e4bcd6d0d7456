package replay

import (
	"context"
	"log/slog"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/outbox"
)

// RepairableOutbox is an outbox whose events the console repairs in place (the seed's table):
// each change commits only after the audit's commit wrote its outcome in the same transaction.
type RepairableOutbox interface {
	Name() string
	ReleaseStuckAudited(ctx context.Context, ids []int64, audit outbox.AuditFunc) (int64, error)
	RequeueAudited(ctx context.Context, ids []int64, resetAttempts bool, audit outbox.AuditFunc) ([]int64, error)
}

// OutboxReopener opens the resolved or ignored marks of events a requeue moved (ops/triage).
type OutboxReopener interface {
	OutboxRequeued(ctx context.Context, actor access.Actor, outbox string, ids []int64) error
}

// OutboxRepairs are the direct repairs of an outbox's events beside a replay of them: releasing
// expired leases and requeueing DEAD or FAILED events. Each is an audited change (audit.ChangeInTx:
// the intent row first, the outcome in the outbox's own transaction); a requeue is under the
// same two-person rule as a replay of the outbox, counts in its ledger, and opens again the
// resolutions of what it moved.
type OutboxRepairs struct {
	Audit  audit.TxLog    // nil refuses every repair (503): no change without its audit row
	Rule   foureyes.Rule  // replay.four_eyes; the zero value needs nobody
	Triage OutboxReopener // nil: no resolutions to open
	Log    *slog.Logger
	// PlanAt is the route that makes a replay plan (the edge's paths.APIPlanReplay), which a
	// refusal by the two-person rule points the caller at.
	PlanAt string
}

// Release releases the expired leases of ids, or of every stuck event when ids is nil. base is
// the request's audit entry (actor, client, reason, detail); its action and target are set here.
func (r OutboxRepairs) Release(ctx context.Context, o RepairableOutbox, base audit.Entry, ids []int64) (int64, error) {
	return r.change(ctx, o, base, "outbox.release_leases", func(ctx context.Context, commit outbox.AuditFunc) (int64, error) {
		return o.ReleaseStuckAudited(ctx, ids, commit)
	})
}

// Requeue puts the DEAD or FAILED events ids back to be sent (attempts reset when reset), for
// actor; base as Release's. One that would take what actor moved from the outbox within the
// two-person rule's window past its threshold is refused, pointing at a plan, whose job waits for
// a second person. It returns how many it moved; a requeue committed stays a success when its
// ledger entry or the reopening of resolutions fails after it (logged).
func (r OutboxRepairs) Requeue(ctx context.Context, o RepairableOutbox, base audit.Entry, actor access.Actor, ids []int64, reset bool) (int64, error) {
	person, source := actor.Person(), OutboxSourceKey(o.Name())
	unlock, err := r.Rule.Turn(ctx, person, source) // until the move is recorded
	if err != nil {
		return 0, err
	}
	defer unlock()
	d, err := r.Rule.Check(ctx, person, source, int64(len(ids)), "")
	if err != nil {
		return 0, err
	}
	if d.Needed {
		return 0, ops.Forbidden("requeueing these events %s: a second, different person must approve it. Plan it instead "+
			"(POST %s with {\"source\":{\"kind\":\"outbox\",\"outbox\":%q,\"ids\":[…]}}) and start its job, which waits "+
			"for that approval", d.Why, r.PlanAt, o.Name())
	}
	var moved []int64
	n, err := r.change(ctx, o, base, "outbox.requeue", func(ctx context.Context, commit outbox.AuditFunc) (int64, error) {
		var err error
		moved, err = o.RequeueAudited(ctx, ids, reset, commit)
		return int64(len(moved)), err
	})
	if err != nil || len(moved) == 0 {
		return n, err
	}
	after := context.WithoutCancel(ctx) // the requeue is committed: what follows it is done whoever left
	if err := r.Rule.Record(after, foureyes.Move{Person: person, Source: source, Action: "outbox.requeue",
		Ref: audit.OutboxTarget(o.Name()), N: int64(len(moved))}); err != nil {
		r.logger().Error("four-eyes: the requeue was not recorded", "outbox", o.Name(), "events", moved, "err", err)
	}
	// A resolved or ignored mark was about the death the event left: one that dies again after
	// this requeue is open, as one a replay job requeued is (marked replayed).
	if r.Triage != nil {
		if err := r.Triage.OutboxRequeued(after, actor, o.Name(), moved); err != nil {
			r.logger().Error("outbox requeue: the resolutions of the requeued events were not opened",
				"outbox", o.Name(), "events", moved, "err", err)
		}
	}
	return n, nil
}

func (r OutboxRepairs) change(ctx context.Context, o RepairableOutbox, base audit.Entry, action string,
	run func(ctx context.Context, commit outbox.AuditFunc) (int64, error)) (int64, error) {
	base.Action, base.Target = action, audit.OutboxTarget(o.Name())
	// A nil TxLog: ChangeInTx refuses (503).
	return audit.ChangeInTx(ctx, r.Audit, r.logger(), base, func(ctx context.Context, commit audit.Commit) (int64, error) {
		return run(ctx, outbox.AuditFunc(commit))
	})
}

func (r OutboxRepairs) logger() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}
