package replay_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/replay"
)

// A plan from filter.cel freezes exactly the records the expression matches, over both
// partitions, and the job publishes exactly those.
func TestKafkaPlanFromCELFilterPublishesExactlyTheMatches(t *testing.T) {
	w := newWorld(t)
	want := []string{}
	for i, id := range []string{"m-1", "m-2", "m-3", "m-4", "m-5", "m-6"} {
		exception := "com.acme.PriceException"
		if i%2 == 0 {
			exception = "java.util.concurrent.TimeoutException"
		}
		w.deadLetter(t, int32(i%2), id, "k-"+id[2:], exception)
		if i%2 == 0 && id != "m-5" {
			want = append(want, id)
		}
	}
	e := w.engine(t, "a")
	ctx := ctxT(t)
	f := replay.Filter{CEL: `dead_letter.exception_type.endsWith("TimeoutException") && value.messageId != "m-5" && headers["traceId"].startsWith("t-")`}
	plan, err := e.Plan(ctx, "alice", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, f)
	if err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, it := range plan.Items {
		planned = append(planned, it.MessageID)
	}
	slices.Sort(planned)
	if !slices.Equal(planned, want) || plan.Counts[replay.Publish] != len(want) {
		t.Fatalf("planned %v (%v), want %v", planned, plan.Counts, want)
	}
	if got, _ := e.LoadPlan(ctx, plan.ID); got.Filter.CEL != f.CEL {
		t.Fatalf("stored filter %+v", got.Filter)
	}
	work(t, e)
	if job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "timeouts fixed", RatePerSecond: 1000}); job.Status != replay.JobDone || job.Published != len(want) {
		t.Fatalf("job %+v", job)
	}
	var published []string
	for _, r := range w.originals(t) {
		id, _ := header(r, "messageId")
		published = append(published, id)
	}
	slices.Sort(published)
	if !slices.Equal(published, want) {
		t.Fatalf("published %v, want exactly %v", published, want)
	}

	t.Run("BadExpression", func(t *testing.T) {
		_, err := e.Plan(ctx, "alice", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{CEL: `value.x ==`})
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "filter.cel") || !strings.Contains(err.Error(), "column") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("NoMatch", func(t *testing.T) {
		_, err := e.Plan(ctx, "alice", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{CEL: `key == "none"`})
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "matching the filter") {
			t.Fatalf("err = %v", err)
		}
	})
}

// A RabbitMQ plan from filter.cel (body, properties and dead-letter fields) moves exactly the
// matches; the others stay in the DLQ in order.
func TestRabbitPlanFromCELFilterPublishesExactlyTheMatches(t *testing.T) {
	w := newRabbitWorld(t)
	w.deadLetter(t, 10)
	e := w.engine(t)
	f := replay.Filter{CEL: `body.seq % 3 == 0 && properties.message_id.startsWith("m-") && dead_letter.reason == "rejected" && ` +
		`dead_letter.original_queue == "orders.work" && headers["x-first-death-reason"] == "rejected"`}
	plan := w.planQueue(t, e, 100, f)
	if plan.Total != 4 || plan.Counts[replay.Publish] != 4 {
		t.Fatalf("plan %d %v", plan.Total, plan.Counts)
	}
	work(t, e)
	if job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1000}); job.Status != replay.JobDone || job.Published != 4 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.work", 4)
	got := ids(w.drain(t, "orders.work"))
	slices.Sort(got)
	if !slices.Equal(got, []string{"m-0", "m-3", "m-6", "m-9"}) {
		t.Fatalf("published %v", got)
	}
	if got := ids(w.drain(t, "orders.dlq")); !slices.Equal(got, []string{"m-1", "m-2", "m-4", "m-5", "m-7", "m-8"}) {
		t.Fatalf("kept %v", got)
	}
}
