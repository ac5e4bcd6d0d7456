package replay_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
)

// Edit and retry: a plan of one record with a new value and headers says what changes (its
// warning and the replay.plan audit carry the diff), always waits for a second person with
// four-eyes on, and its job publishes exactly one copy — the edited one, with the same message id —
// and marks the original replayed once. An edit that breaks a JSON value is refused.
func TestEditAndRetryPublishesOneEditedCopy(t *testing.T) {
	w := newWorld(t)
	w.deadLetter(t, 0, "m-1", "k-1", "com.acme.BadCustomerId")
	w.deadLetter(t, 0, "m-2", "k-2", "com.acme.BadCustomerId")
	e, err := replay.New(replay.Options{Store: w.store, Kafka: []replay.KafkaCluster{w.cluster}, Audit: w.audit,
		Consumers: w.cfg.Consumers, Poll: 50 * time.Millisecond,
		Replay: configs.Replay{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 100, FourEyes: configs.FourEyes{Enabled: true, Threshold: 1000}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	value := `{"messageId":"m-1","customerId":"c-42"}`
	src := func(ed replay.Edit) replay.Source {
		return replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT", Records: []replay.RecordRef{{Partition: 0, Offset: 0}}, Edit: &ed}
	}
	for _, tc := range []struct {
		src  replay.Source
		want string
	}{
		{src(replay.Edit{Value: ptrTo("{not json")}), "must be valid JSON too"},
		{src(replay.Edit{}), "empty"},
		{src(replay.Edit{DropHeaders: []string{"nope"}}), "no header"},
		{src(replay.Edit{SetHeaders: map[string]string{"x-redrive-replay-id": "x"}}), "not x-redrive-"},
		{replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT", Records: []replay.RecordRef{{0, 0}, {0, 1}}, Edit: &replay.Edit{Value: &value}}, "exactly one record"},
	} {
		if _, err := e.Plan(ctx, "alice", tc.src, replay.Filter{}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("edit %+v: %v, want it refused saying %q", tc.src.Edit, err, tc.want)
		}
	}
	plan, err := e.Plan(ctx, "alice", src(replay.Edit{Value: &value, SetHeaders: map[string]string{"fixed-by": "alice"},
		DropHeaders: []string{"kafka_dlt-exception-message"}}), replay.Filter{})
	if err != nil || plan.Total != 1 || plan.Counts[replay.Publish] != 1 {
		t.Fatalf("plan: %v %+v", err, plan.Counts)
	}
	if !strings.Contains(strings.Join(plan.Warnings, "\n"), "edit and retry: the value and 2 header(s) change") {
		t.Fatalf("warnings %v", plan.Warnings)
	}
	w.audit.mu.Lock()
	var diffAudited bool
	for _, a := range w.audit.entries {
		b, _ := json.Marshal(a.Detail)
		if a.Action == "replay.plan" && strings.Contains(string(b), `"value_after":"{\"messageId\":\"m-1\",\"customerId\":\"c-42\"}"`) &&
			strings.Contains(string(b), `"fixed-by":["","alice"]`) {
			diffAudited = true
		}
	}
	w.audit.mu.Unlock()
	if !diffAudited {
		t.Fatal("the replay.plan audit does not carry the diff")
	}
	work(t, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, Reason: "customer id fixed"})
	if err != nil || job.Status != store.JobAwaiting {
		t.Fatalf("an edit must wait for a second person: %+v %v", job, err)
	}
	if _, err := e.Approve(ctx, job.ID, access.Actor{Name: "bob", Role: access.Operator}); err != nil {
		t.Fatal(err)
	}
	if done := waitJob(t, e, job.ID); done.Status != store.JobDone || done.Published != 1 {
		t.Fatalf("job %+v", done)
	}
	got := w.originals(t)
	if len(got) != 1 || string(got[0].Value) != value {
		t.Fatalf("%d records on the original topic, want the edited one: %+v", len(got), got)
	}
	if v, _ := header(got[0], "fixed-by"); v != "alice" {
		t.Fatalf("the set header: %q", v)
	}
	if _, ok := header(got[0], "kafka_dlt-exception-message"); ok {
		t.Fatal("the dropped header was published")
	}
	res, err := w.store.Resolutions(ctx, "main", "orders.DLT", []store.RecordKey{{Partition: 0, Offset: 0}, {Partition: 0, Offset: 1}})
	if err != nil || res[store.RecordKey{Partition: 0, Offset: 0}].State != store.StateReplayed || len(res) != 1 {
		t.Fatalf("the original's resolution: %+v %v", res, err)
	}
}

func ptrTo[T any](v T) *T { return &v }
