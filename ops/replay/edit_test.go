package replay_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/triage"
	"github.com/redrive/redrive/ops/waittest"
)

// Edit and retry: a plan of one record with a new value and headers says what changes (its
// warning and the replay.plan audit carry the diff), always waits for a second person with
// four-eyes on, and its job publishes exactly one copy — the edited one, with the same message id —
// and marks the original replayed once. An edit that breaks a JSON value is refused.
func TestEditAndRetryPublishesOneEditedCopy(t *testing.T) {
	w := newWorldWith(t, "com.acme.BadCustomerId", 0, 0)
	e := w.engineWith(t, replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 100, FourEyes: foureyes.Settings{Enabled: true, Threshold: 1000}})
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
	if !w.audit.has("replay.plan", `"value_after":"{\"messageId\":\"m-1\",\"customerId\":\"c-42\"}"`, `"fixed-by":["","alice"]`) {
		t.Fatal("the replay.plan audit does not carry the diff")
	}
	work(t, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, Reason: "customer id fixed"})
	if err != nil || job.Status != replay.JobAwaiting {
		t.Fatalf("an edit must wait for a second person: %+v %v", job, err)
	}
	if _, err := e.Approve(ctx, job.ID, access.Actor{Name: "bob", Role: access.Operator}); err != nil {
		t.Fatal(err)
	}
	if done := waitJob(t, e, job.ID); done.Status != replay.JobDone || done.Published != 1 {
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
	res, err := w.store.Resolutions(ctx, "main", "orders.DLT", "", []triage.RecordKey{{Partition: 0, Offset: 0}, {Partition: 0, Offset: 1}})
	if err != nil || res[triage.RecordKey{Partition: 0, Offset: 0}].State != triage.StateReplayed || len(res) != 1 {
		t.Fatalf("the original's resolution: %+v %v", res, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// Edit and retry of one message of a RabbitMQ DLQ: the plan names it by message id (exactly one),
// refuses an edit that breaks its JSON body or drops a header it lacks, warns and audits the
// diff, and with four-eyes on always waits for a second person. Counted by a client of the
// test's own: the original queue receives exactly one message, the edited one under the fresh id
// that was asked for (with a header naming the old one); the DLQ loses exactly that message; a
// second plan of the same edit finds nothing to edit.
func TestRabbitEditAndRetryPublishesOneEditedCopy(t *testing.T) {
	w := newRabbitWorld(t)
	w.deadLetter(t, 3)
	audit := &auditLog{st: w.store}
	e, err := replay.New(replay.Options{Store: w.store, Rabbit: []replay.RabbitBroker{w.broker}, Inboxes: []replay.Inbox{w.inbox},
		Consumers:  []ops.Consumer{{Name: "inventory-service", RabbitMQ: &ops.ConsumerRabbit{Broker: "test", Vhost: w.vhost, Queue: "orders.work"}}},
		MessageIDs: ops.MessageIDRules{Headers: []string{"messageId"}}, Audit: audit, Poll: 50 * time.Millisecond,
		Replay: replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 100, FourEyes: foureyes.Settings{Enabled: true, Threshold: 1000}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	src := func(ed replay.Edit) replay.Source {
		return replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 100, Edit: &ed}
	}
	one := replay.Filter{MessageIDs: []string{"m-1"}}
	body := `{"messageId":"m-1","seq":1,"customerId":"c-42"}`
	for _, tc := range []struct {
		src  replay.Source
		f    replay.Filter
		want string
	}{
		{src(replay.Edit{Value: ptrTo("{not json")}), one, "must be valid JSON too"},
		{src(replay.Edit{DropHeaders: []string{"nope"}}), one, "no header"},
		{src(replay.Edit{Value: &body}), replay.Filter{}, "exactly one message id"},
		{src(replay.Edit{Value: &body}), replay.Filter{MessageIDs: []string{"m-1", "m-2"}}, "exactly one message id"},
		{src(replay.Edit{}), one, "empty"},
		{src(replay.Edit{SetHeaders: map[string]string{"X-Redrive-Replay-Id": "x"}}), one, "not x-redrive-"},
	} {
		if _, err := e.Plan(ctx, "alice", tc.src, tc.f); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("edit %+v %v: %v, want it refused saying %q", tc.src.Edit, tc.f.MessageIDs, err, tc.want)
		}
	}
	plan, err := e.Plan(ctx, "alice", src(replay.Edit{Value: &body, SetHeaders: map[string]string{"fixed-by": "alice"}, NewMessageID: true}), one)
	if err != nil || plan.Total != 1 || plan.Counts[replay.Publish] != 1 {
		t.Fatalf("plan: %v %+v", err, plan.Counts)
	}
	fresh := plan.Source.Edit.FreshID
	warn := strings.Join(plan.Warnings, "\n")
	if len(fresh) != 36 || !strings.Contains(warn, "NEW message id "+fresh+" replaces m-1") || !strings.Contains(warn, "will not recognise it") {
		t.Fatalf("fresh id %q, warnings %v", fresh, plan.Warnings)
	}
	if !audit.has("replay.plan", `"value_after":"{\"messageId\":\"m-1\",\"seq\":1,\"customerId\":\"c-42\"}"`,
		`"fixed-by":["","alice"]`, `"message_id":["m-1","`+fresh+`"]`) {
		t.Fatal("the replay.plan audit does not carry the diff")
	}
	work(t, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, Reason: "customer id fixed"})
	if err != nil || job.Status != replay.JobAwaiting {
		t.Fatalf("an edit must wait for a second person, however small: %+v %v", job, err)
	}
	// The workers poll meanwhile: an edit awaiting approval must not be claimed.
	waittest.Holds(t, 200*time.Millisecond, "an edit awaiting approval moves nothing", func() bool {
		return w.depth(t, "orders.work") == 0 && w.depth(t, "orders.dlq") == 3
	})
	if _, err := e.Approve(ctx, job.ID, access.Actor{Name: "bob", Role: access.Operator}); err != nil {
		t.Fatal(err)
	}
	if done := waitJob(t, e, job.ID); done.Status != replay.JobDone || done.Published != 1 {
		t.Fatalf("job %+v", done)
	}
	w.waitDepth(t, "orders.dlq", 2)
	w.waitDepth(t, "orders.work", 1)
	got := w.drain(t, "orders.work")
	if len(got) != 1 || string(got[0].Body) != body || got[0].MessageId != fresh {
		t.Fatalf("%d message(s) on the original queue, want the one edited copy under %s: %+v", len(got), fresh, got)
	}
	if got[0].Headers["fixed-by"] != "alice" || got[0].Headers[replay.HeaderOriginalMessageID] != "m-1" || got[0].Headers["x-death"] != nil {
		t.Fatalf("the edited copy's headers: %v", got[0].Headers)
	}
	left := w.drain(t, "orders.dlq")
	if len(left) != 2 || left[0].MessageId != "m-0" || left[1].MessageId != "m-2" {
		t.Fatalf("the DLQ keeps %v, want m-0 and m-2", ids(left))
	}
	// Run twice: the message is settled; the same edit finds nothing left to change.
	if _, err := e.Plan(ctx, "alice", src(replay.Edit{Value: &body}), one); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "no messages") {
		t.Fatalf("the same edit again: %v", err)
	}
}

// A Kafka edit that asks for a new message id publishes it in the header the message id rules
// read first, with the old id beside it; without a header rule to carry it, it is refused.
func TestKafkaEditWithNewMessageID(t *testing.T) {
	w := newWorldWith(t, "com.acme.BadCustomerId", 0)
	engine := func(ids ops.MessageIDRules) *replay.Engine {
		e, err := replay.New(replay.Options{Store: w.store, Kafka: []replay.KafkaCluster{w.cluster}, Consumers: w.consumers,
			MessageIDs: ids, Poll: 50 * time.Millisecond, Replay: replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 100}})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	ctx := ctxT(t)
	src := replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT", Records: []replay.RecordRef{{Partition: 0, Offset: 0}},
		Edit: &replay.Edit{NewMessageID: true}}
	if _, err := engine(ops.MessageIDRules{JSONPaths: []string{"$.messageId"}}).Plan(ctx, "alice", src, replay.Filter{}); !errors.Is(err, ops.ErrInvalid) ||
		!strings.Contains(err.Error(), "message_id.headers is empty") {
		t.Fatalf("a new id without a header rule: %v", err)
	}
	e := engine(w.ids)
	plan, err := e.Plan(ctx, "alice", src, replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != 1 {
		t.Fatalf("plan %v %+v", err, plan.Counts)
	}
	fresh := plan.Source.Edit.FreshID
	if !contains(plan.Warnings, "NEW message id "+fresh+" replaces m-1") {
		t.Fatalf("warnings %v", plan.Warnings)
	}
	work(t, e)
	if done := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, Reason: "new id"}); done.Status != replay.JobDone || done.Published != 1 {
		t.Fatalf("job %+v", done)
	}
	got := w.originals(t)
	if len(got) != 1 {
		t.Fatalf("%d records on the original topic", len(got))
	}
	id, _ := header(got[0], "messageId")
	orig, _ := header(got[0], replay.HeaderOriginalMessageID)
	if id != fresh || orig != "m-1" || strings.Count(fmt.Sprint(got[0].Headers), "{messageId ") != 1 {
		t.Fatalf("messageId %q (want %s), original %q, headers %v", id, fresh, orig, got[0].Headers)
	}
	for _, name := range w.ids.Headers { // the rules: the first configured header present
		if v, ok := header(got[0], name); ok {
			if v != fresh {
				t.Fatalf("the message id rules read %s=%q from the published copy, want %s", name, v, fresh)
			}
			break
		}
	}
}
