package replay_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/replay"
)

// A redirect goes only where replay.allowed_destinations allows: elsewhere (another topic, a
// cluster, a kind) it is refused before anything is planned; allowed, every message goes to the
// named topic, by its key, and none to its original one.
func TestRedirectOnlyToAllowedDestinations(t *testing.T) {
	w := newWorldWith(t, "X", 0, 1)
	ctx := ctxT(t)
	if _, err := w.adm.CreateTopic(ctx, 1, 1, nil, "orders.fixed"); err != nil {
		t.Fatal(err)
	}
	e := w.engineWith(t, replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 100,
		AllowedDestinations: []replay.AllowedDestination{{Kind: "kafka", Cluster: "main", Topic: "*.fixed"}}})
	src := func(d replay.Destination) replay.Source {
		s := kafkaSource(0, 0, 9)
		s.Partition = nil
		s.Destination = &d
		return s
	}
	for _, tc := range []struct {
		d    replay.Destination
		want error
	}{
		{replay.Destination{Kind: "kafka", Topic: "payments"}, ops.ErrForbidden},
		{replay.Destination{Kind: "kafka", Cluster: "other", Topic: "orders.fixed"}, ops.ErrInvalid},
		{replay.Destination{Kind: "rabbitmq", Exchange: "orders"}, ops.ErrInvalid},
		{replay.Destination{Kind: "kafka", Topic: "bad topic!"}, ops.ErrInvalid},
	} {
		_, err := e.Plan(ctx, "alice", src(tc.d), replay.Filter{})
		if !errors.Is(err, tc.want) {
			t.Errorf("redirect to %+v: %v, want %v", tc.d, err, tc.want)
		}
		// What a person reads names the destination and the rule, not an error kind.
		if m := ops.Message(err); strings.HasPrefix(m, "forbidden") || strings.HasPrefix(m, "invalid input") {
			t.Errorf("redirect to %+v: a person reads %q", tc.d, m)
		}
	}
	plan, err := e.Plan(ctx, "alice", src(replay.Destination{Kind: "kafka", Topic: "orders.fixed"}), replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != 2 || plan.Items[0].Destination.Topic != "orders.fixed" {
		t.Fatalf("allowed redirect: %v %+v", err, plan.Items)
	}
	work(t, e)
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, Reason: "to the fixed consumer"})
	if job.Status != replay.JobDone || job.Published != 2 {
		t.Fatalf("job %+v", job)
	}
	if got := w.originals(t); len(got) != 0 {
		t.Fatalf("%d records went to the original topic", len(got))
	}
	got := w.consume(t, "orders.fixed", 2)
	if v, _ := header(got[0], replay.HeaderReplayID); v != job.ID {
		t.Fatalf("the redirected record: %+v", got[0])
	}
}
