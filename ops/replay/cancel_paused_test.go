package replay_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/replay"
)

// A job paused because its broker stopped answering, then cancelled, ends holding
// nothing: its claims are released (failed: it may have published them), so the next plan of the
// same records publishes them again instead of calling them replayed — and, once the broker
// answers again, that job does publish them, once.
func TestCancelWhilePausedReleasesItsClaims(t *testing.T) {
	w, broker := newWorldAndBroker(t)
	for _, id := range []string{"m-1", "m-2", "m-3"} {
		w.deadLetter(t, 0, id, "k"+id, "com.acme.StockException")
	}
	var down atomic.Bool
	// While down, the broker cuts every fetch: the job cannot read the dead letters it claimed
	// (a read bounded by the cluster's request timeout) and pauses.
	broker.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		broker.KeepControl()
		if down.Load() {
			return nil, errors.New("the broker cuts fetches"), true
		}
		return nil, nil, false
	})
	e := w.engine(t, "a")
	ctx := ctxT(t)
	job := startPaused(t, e, &down)
	if _, err := e.Cancel(ctx, job.ID, access.Actor{Name: "alice", Role: access.Operator}); err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, e, job.ID)
	if job.Status != replay.JobCancelled || job.Published != 0 || job.Failed != 3 {
		t.Fatalf("job %s published %d failed %d; want cancelled with its 3 claims released as failed", job.Status, job.Published, job.Failed)
	}
	down.Store(false)
	again, err := e.Plan(ctx, "alice", kafkaSource(0, 0, 99), replay.Filter{})
	if err != nil || again.Counts[replay.Publish] != 3 {
		t.Fatalf("second plan %v, %v; want the 3 to publish (before the fix: skip_already_replayed)", again.Counts, err)
	}
	job2, err := e.Start(ctx, replay.StartRequest{PlanID: again.ID, Actor: access.Actor{Name: "alice"}, Reason: "r", RatePerSecond: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if job2 = waitJob(t, e, job2.ID); job2.Status != replay.JobDone || job2.Published != 3 {
		t.Fatalf("second job %s published %d; want done, 3", job2.Status, job2.Published)
	}
	if got := w.originals(t); len(got) != 3 {
		t.Fatalf("%d records on the original topic, want 3", len(got))
	}
}
