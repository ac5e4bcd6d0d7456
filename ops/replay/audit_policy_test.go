package replay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/replay"
)

// outcomeLost is an audit log that writes intents and loses every other row.
type outcomeLost struct{ *auditLog }

func (o outcomeLost) RecordAudit(context.Context, audit.Entry) error {
	return errors.New("the store went away")
}

// The audit policy (ops/audit), as the engine applies it: without its intent row a job is not
// started (503, nothing created); a job that was started, whose outcome row cannot be written,
// is reported started — not a 503 for a change that was made.
func TestReplayAuditPolicy(t *testing.T) {
	w := newWorldWith(t, "X", 0)
	ctx := ctxT(t)
	opts := replay.Options{Store: w.store, Kafka: []replay.KafkaCluster{w.cluster}, Consumers: w.consumers,
		Replay: w.settings, Poll: 50 * time.Millisecond}
	opts.Audit = outcomeLost{w.audit}
	e, err := replay.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := e.Plan(ctx, "alice", kafkaSource(0, 0, 9), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}})
	if err != nil || job.ID == "" {
		t.Fatalf("start with the outcome row lost: %+v, %v; want the job, started", job, err)
	}
	if got, err := e.Job(ctx, job.ID); err != nil || got.ID != job.ID {
		t.Fatalf("the job: %+v, %v", got, err)
	}
	if acts := w.audit.actions(); len(acts) == 0 || acts[len(acts)-1] != "replay.start" {
		t.Fatalf("audit rows %v: want the intent of replay.start", acts)
	}

	// No intent row: nothing is started.
	opts.Audit = intentLost{}
	e2, err := replay.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	before, err := e2.Jobs(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e2.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}})
	if !errors.Is(err, ops.ErrUnavailable) || got.ID != "" ||
		ops.Message(err) != "the audit log cannot be written, so nothing was changed (replay.start)" {
		t.Fatalf("start without its intent row: %+v, %v; want ops.ErrUnavailable saying nothing was changed", got, err)
	}
	if after, err := e2.Jobs(ctx, 100); err != nil || len(after) != len(before) {
		t.Fatalf("jobs %d before, %d after (%v): a job was created without its intent row", len(before), len(after), err)
	}
}

// intentLost is an audit log that cannot be written at all.
type intentLost struct{}

func (intentLost) RecordAudit(context.Context, audit.Entry) error { return errors.New("down") }
func (intentLost) RecordIntent(context.Context, audit.Entry) (int64, error) {
	return 0, errors.New("down")
}

type brokenAudit struct{}

func (brokenAudit) RecordAudit(context.Context, audit.Entry) error { return ops.ErrUnavailable }
func (brokenAudit) RecordIntent(context.Context, audit.Entry) (int64, error) {
	return 0, fmt.Errorf("audit log: %w", ops.ErrUnavailable)
}

// No replay starts, is approved or is cancelled unaudited: when the intent cannot be written, the
// change is not made and the caller is told so.
func TestNoReplayChangeWithoutAudit(t *testing.T) {
	w := newWorldWith(t, "X", 0)
	ctx := ctxT(t)
	e, err := replay.New(replay.Options{Store: w.store, Kafka: []replay.KafkaCluster{w.cluster}, Consumers: w.consumers,
		Audit: brokenAudit{}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := e.Plan(ctx, "a", kafkaSource(0, 0, 10), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "a"}})
	if !errors.Is(err, ops.ErrUnavailable) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("start with the audit log down: %v", err)
	}
	if jobs, err := e.Jobs(ctx, 10); err != nil || len(jobs) != 0 {
		t.Fatalf("jobs %v, %v: a job was created unaudited", jobs, err)
	}
}
