package replay_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

func TestFourEyesAndOperatorLimit(t *testing.T) {
	w := newWorldWith(t, "X", 0, 0)
	e := w.engineWith(t, replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 100, OperatorMaxMessages: 1,
		FourEyes: foureyes.Settings{Enabled: true, Threshold: 1}})
	work(t, e)
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "alice", kafkaSource(0, 0, 9), replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != 2 {
		t.Fatalf("plan %v %v", plan.Counts, err)
	}

	t.Run("OperatorLimit", func(t *testing.T) {
		_, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}})
		if !errors.Is(err, ops.ErrForbidden) {
			t.Fatalf("an operator started a job above operator_max_messages: %v", err)
		}
	})

	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "carol", Role: access.Admin}, Reason: "big one"})
	if err != nil {
		t.Fatal(err)
	}
	if job.Status != replay.JobAwaiting {
		t.Fatalf("a job above the threshold must wait for approval, got %s", job.Status)
	}
	// The workers poll meanwhile: an awaiting job must not be claimed.
	waittest.Holds(t, 300*time.Millisecond, "the awaiting job stays unclaimed", func() bool {
		j, _ := e.Job(ctx, job.ID)
		return j.Status == replay.JobAwaiting && j.Published == 0
	})
	if _, err := e.Approve(ctx, job.ID, access.Actor{Name: "carol", Role: access.Admin}); !errors.Is(err, ops.ErrForbidden) {
		t.Fatalf("self-approval: %v, want ErrForbidden", err)
	}
	if _, err := e.Cancel(ctx, job.ID, access.Actor{Name: "bob", Role: access.Operator}); !errors.Is(err, ops.ErrForbidden) {
		t.Fatalf("an operator cancelled someone else's job: %v", err)
	}
	// The job moves 2 messages, past the 1 an operator may start: an operator may not approve it
	// either — the second person needs the rights the first did (before, bob's approval ran it).
	bob := access.Actor{Name: "bob", Role: access.Operator}
	if err := e.ApproveRefused(ctx, job, bob); !errors.Is(err, ops.ErrForbidden) {
		t.Fatalf("an operator may approve an admin's job past operator_max_messages: %v", err)
	}
	if _, err := e.Approve(ctx, job.ID, bob); !errors.Is(err, ops.ErrForbidden) {
		t.Fatalf("an operator approved an admin's job past operator_max_messages: %v", err)
	}
	approved, err := e.Approve(ctx, job.ID, access.Actor{Name: "erin", Role: access.Admin})
	if err != nil || approved.ApprovedBy != "erin" {
		t.Fatalf("approve: %+v %v", approved, err)
	}
	if done := waitJob(t, e, job.ID); done.Status != replay.JobDone || done.Published != 2 {
		t.Fatalf("approved job %+v", done)
	}
	if _, err := e.Approve(ctx, job.ID, access.Actor{Name: "dave", Role: access.Admin}); !errors.Is(err, ops.ErrConflict) {
		t.Fatalf("approving a finished job: %v", err)
	}
	acts := w.audit.actions()
	if !contains(acts, "replay.approve") {
		t.Fatalf("audit %v", acts)
	}
}
