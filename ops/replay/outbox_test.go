package replay_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/replay"
)

func TestOutboxReplayRequeuesDeadEvents(t *testing.T) {
	e, o := outboxEngine(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, last_error, created_at)
		VALUES ('e1','Order','o1','OrderCreated',1,'{}','DEAD',10,now(),'boom',now()),
		       ('e2','Order','o2','OrderCreated',1,'{}','SENT',1,now(),NULL,now())`)
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "ops", replay.Source{Kind: "outbox", Outbox: "orders", IDs: []int64{1, 2}, ResetAttempts: true}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Counts[replay.Publish] != 1 || plan.Counts[replay.SkipUnresolvable] != 1 {
		t.Fatalf("plan %v", plan.Counts)
	}
	work(t, e)
	if job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}}); job.Published != 1 || job.Skipped != 1 {
		t.Fatalf("job %+v", job)
	}
	ev, err := o.Event(ctx, 1)
	if err != nil || ev.Status != outbox.Ready || ev.Attempts != 0 {
		t.Fatalf("event 1 (requeued with its attempts reset): %+v %v", ev, err)
	}
}

// An outbox plan without ids takes the DEAD/FAILED events matching a filter, highest id first, up to
// its limit; ids are read in batches, deduplicated, and a missing one is named.
func TestOutboxPlanByFilterAndByIDs(t *testing.T) {
	// 1..1500: DEAD OrderCreated (every third has a timeout), 1501..1600 FAILED OrderPaid, 1601..1700 SENT.
	e, _ := outboxEngine(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, last_error, created_at)
		SELECT 'e' || g, 'Order', 'o' || (g % 7), CASE WHEN g <= 1500 THEN 'OrderCreated' ELSE 'OrderPaid' END, 1, '{}',
			CASE WHEN g <= 1500 THEN 'DEAD' WHEN g <= 1600 THEN 'FAILED' ELSE 'SENT' END, 5, now(),
			CASE WHEN g % 3 = 0 THEN 'java.net.SocketTimeoutException: read timed out' ELSE 'IllegalStateException: no stock' END,
			now() - (g || ' seconds')::interval
		FROM generate_series(1, 1700) g`)
	ctx := ctxT(t)
	plan := func(src replay.Source, f replay.Filter) (replay.Plan, error) {
		src.Kind, src.Outbox = "outbox", "orders"
		return e.Plan(ctx, "ops", src, f)
	}
	all, err := plan(replay.Source{Limit: 10_000}, replay.Filter{})
	if err != nil || all.Total != 1600 || all.Counts[replay.Publish] != 1600 {
		t.Fatalf("all DEAD and FAILED: %d %v %v", all.Total, all.Counts, err)
	}
	paid, err := plan(replay.Source{Limit: 10_000, Status: "FAILED", EventType: "OrderPaid"}, replay.Filter{})
	if err != nil || paid.Total != 100 {
		t.Fatalf("FAILED OrderPaid: %d %v", paid.Total, err)
	}
	timeouts, err := plan(replay.Source{Limit: 50, Status: "DEAD"}, replay.Filter{ExceptionType: "SocketTimeoutException"})
	if err != nil || timeouts.Total != 50 || timeouts.Items[0].MessageID != "e1500" || timeouts.Items[49].MessageID != "e1353" {
		t.Fatalf("50 DEAD timeouts, newest (highest id) first: %d %v %v", timeouts.Total, timeouts.Items[0].MessageID, err)
	}
	ids := []int64{1700, 3, 3, 1}
	for i := int64(1000); i < 2500 && len(ids) < 1500; i++ { // more than one batch of 1,000
		ids = append(ids, i%1600+1)
	}
	byID, err := plan(replay.Source{IDs: ids}, replay.Filter{})
	if err != nil || byID.Counts[replay.SkipUnresolvable] != 1 || byID.Items[0].MessageID != "e1" {
		t.Fatalf("by id: %v %v", byID.Counts, err)
	}
	for _, tc := range []struct {
		src  replay.Source
		want string
	}{
		{replay.Source{IDs: []int64{1, 999999}}, "event 999999 does not exist"},
		{replay.Source{}, "limit"},
		{replay.Source{Limit: 10, Status: "SENT"}, "DEAD or FAILED"},
	} {
		if _, err := plan(tc.src, replay.Filter{}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want invalid mentioning %q", tc.src, err, tc.want)
		}
	}
}
