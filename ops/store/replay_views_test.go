package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
)

// seedPlan stores a plan of n items whose destinations alternate between two Kafka partitions of
// orders and, for every third item, an unresolved destination.
func seedPlan(t *testing.T, ctx context.Context, st *store.Store, id string, n int) {
	t.Helper()
	w, err := st.BeginPlan(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Rollback(ctx)
	var items []replay.StoredItem
	for i := range n {
		dest := fmt.Sprintf(`{"kind":"kafka","cluster":"main","topic":"orders","partition":%d,"partition_source":"header"}`, i%2)
		if i%3 == 2 {
			dest = `{"kind":""}`
		}
		items = append(items, replay.StoredItem{Seq: i, Locator: fmt.Sprintf("%s/%d", id, i), MessageID: fmt.Sprint("m", i),
			Destination: json.RawMessage(dest), Inbox: "not_processed", Action: "publish"})
	}
	if err := w.Add(ctx, items); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(ctx, replay.StoredPlan{Actor: "ops", Source: json.RawMessage(`{"kind":"kafka","cluster":"main","topic":"orders.DLT"}`),
		Total: n, Actions: map[string]int{"publish": n}}); err != nil {
		t.Fatal(err)
	}
}

func TestReplayViews(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := openStore(t)
	seedPlan(t, ctx, st, "plan_a", 6)
	seedPlan(t, ctx, st, "plan_b", 3)
	for _, id := range []string{"job_1", "job_2"} {
		if err := st.CreateJob(ctx, replay.Job{ID: id, PlanID: "plan_a", Actor: "ops", RatePerSecond: 10, Total: 6}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // created_at orders them
	}
	if err := st.CreateJob(ctx, replay.Job{ID: "job_other", PlanID: "plan_b", Actor: "ops", RatePerSecond: 10, Total: 3}); err != nil {
		t.Fatal(err)
	}
	// job_2 failed three messages for one reason and one for another, and skipped one.
	failed := func(seq int, detail string) replay.LedgerOutcome {
		return replay.LedgerOutcome{Seq: seq, Locator: fmt.Sprintf("plan_a/%d", seq), Outcome: replay.LedgerFailed, Detail: detail}
	}
	if err := st.Record(ctx, "job_2", []replay.LedgerOutcome{failed(0, "not found in the queue"), failed(1, "broker refused: NOT_LEADER"),
		failed(2, "not found in the queue"), failed(3, "not found in the queue"),
		{Seq: 4, Locator: "plan_a/4", Outcome: replay.LedgerSkipped, Detail: "skip_already_replayed (job job_1 replayed it)"}}); err != nil {
		t.Fatal(err)
	}

	t.Run("JobsOfPlan", func(t *testing.T) {
		jobs, err := st.JobsOfPlan(ctx, "plan_a")
		if err != nil || len(jobs) != 2 || jobs[0].ID != "job_2" || jobs[1].ID != "job_1" {
			t.Fatalf("jobs %+v, %v; want job_2 then job_1", jobs, err)
		}
		if jobs[0].Failed != 4 || jobs[0].Skipped != 1 {
			t.Errorf("job_2 counts: failed %d skipped %d", jobs[0].Failed, jobs[0].Skipped)
		}
		if none, err := st.JobsOfPlan(ctx, "plan_nope"); err != nil || len(none) != 0 {
			t.Errorf("unknown plan: %v, %v", none, err)
		}
	})
	t.Run("FailureGroups", func(t *testing.T) {
		groups, err := st.FailureGroups(ctx, "job_2", 10)
		want := []replay.FailureGroup{{Detail: "not found in the queue", Count: 3}, {Detail: "broker refused: NOT_LEADER", Count: 1}}
		if err != nil || fmt.Sprint(groups) != fmt.Sprint(want) {
			t.Fatalf("groups %v, %v; want %v", groups, err, want)
		}
		if top, _ := st.FailureGroups(ctx, "job_2", 1); len(top) != 1 || top[0].Count != 3 {
			t.Errorf("limit 1: %v", top)
		}
		if none, err := st.FailureGroups(ctx, "job_1", 10); err != nil || len(none) != 0 {
			t.Errorf("a job without failures: %v, %v", none, err)
		}
	})
	t.Run("PlanRoutes", func(t *testing.T) {
		routes, err := st.PlanRoutes(ctx, []string{"plan_a", "plan_b", "plan_nope"}, 100)
		if err != nil || len(routes) != 2 {
			t.Fatalf("routes %v, %v", routes, err)
		}
		a := routes["plan_a"]
		var src struct{ Topic string }
		if err := json.Unmarshal(a.Source, &src); err != nil || src.Topic != "orders.DLT" {
			t.Errorf("source %s", a.Source)
		}
		// Two partitions and an unresolved item make one destination.
		if len(a.Destinations) != 1 {
			t.Fatalf("destinations %q", a.Destinations)
		}
		var d map[string]any
		if err := json.Unmarshal(a.Destinations[0], &d); err != nil || d["topic"] != "orders" || d["partition"] != nil {
			t.Errorf("destination %s", a.Destinations[0])
		}
		if empty, err := st.PlanRoutes(ctx, nil, 100); err != nil || len(empty) != 0 {
			t.Errorf("no plans: %v, %v", empty, err)
		}
	})
}
