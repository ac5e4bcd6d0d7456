package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
)

// A cancel can land while a chunk of the plan's items is being copied in. Read committed, the
// cancel's delete did not see the copy's rows, which committed a moment later: a cancelled plan
// with every item left (CI saw it once in TestPlanCancelRacesCompletion). The copy now holds the
// plan's header while it writes: the cancel waits for the chunk and then drops it, and a chunk
// sent after the cancel stores nothing. A statement trigger that sleeps keeps the copy in flight
// for as long as the test needs, so the overlap is certain, not hoped for.
func TestCancelWhileAChunkIsCopiedLeavesNoItems(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	if _, err := st.Pool().Exec(ctx, `CREATE FUNCTION slow_copy() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN PERFORM pg_sleep(0.5); RETURN NULL; END $$;
		CREATE TRIGGER slow_copy BEFORE INSERT ON replay_plan_item FOR EACH STATEMENT EXECUTE FUNCTION slow_copy()`); err != nil {
		t.Fatal(err)
	}
	const id, n = "plan_cancelled", 2000
	if err := st.StartPlanning(ctx, replay.StoredPlan{ID: id, Actor: "alice", Source: []byte(`{}`), Owner: "a"}); err != nil {
		t.Fatal(err)
	}
	w, err := st.BeginPlan(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]replay.StoredItem, n)
	for i := range items {
		items[i] = replay.StoredItem{Seq: i, Locator: fmt.Sprintf("kafka:main/orders.DLT/0@%d", i), MessageID: fmt.Sprint(i),
			Destination: []byte(`{}`), Inbox: "not_processed", Action: string(replay.Publish)}
	}
	added := make(chan error, 1)
	go func() { added <- w.Add(ctx, items) }()
	pgtest.WaitRunning(t, st.Pool().Config().ConnString(), `copy%replay_plan_item%`)

	ended, err := st.EndPlanning(ctx, id, replay.PlanCancelled, "cancelled by alice while planning; nothing was moved")
	if err != nil || !ended {
		t.Fatalf("cancel: %v, ended %v; want it to end the plan", err, ended)
	}
	if err := <-added; err != nil {
		t.Fatalf("the chunk under way when the cancel came: %v; want it stored, then dropped by the cancel", err)
	}
	if got := itemRows(t, st, id); got != 0 {
		t.Fatalf("%d items of the cancelled plan left; want none", got)
	}

	// A chunk that arrives after the cancel stores nothing and says why.
	if err := w.Add(ctx, items); !errors.Is(err, ops.ErrConflict) {
		t.Fatalf("a chunk after the cancel: %v; want a conflict", err)
	}
	if got := itemRows(t, st, id); got != 0 {
		t.Fatalf("%d items of the cancelled plan left after a late chunk; want none", got)
	}
	if err := w.Commit(ctx, replay.StoredPlan{ID: id, Actor: "alice", Source: []byte(`{}`), Total: n}); !errors.Is(err, ops.ErrConflict) {
		t.Fatalf("commit after the cancel: %v; want a conflict", err)
	}
	if p, err := st.Plan(ctx, id); err != nil || p.State != replay.PlanCancelled {
		t.Fatalf("the plan reads %q (%v); want cancelled", p.State, err)
	}
}

// A Commit whose answer is lost (its context cancelled as the store applied it) leaves the plan
// ready in the store though the writer saw an error: its Rollback keeps the items a ready plan
// runs. A plan still planning loses them.
func TestRollbackKeepsTheItemsOfAReadyPlan(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	for _, ready := range []bool{true, false} {
		id := fmt.Sprintf("plan_%v", ready)
		if err := st.StartPlanning(ctx, replay.StoredPlan{ID: id, Actor: "alice", Source: []byte(`{}`), Owner: "a"}); err != nil {
			t.Fatal(err)
		}
		w, err := st.BeginPlan(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Add(ctx, []replay.StoredItem{{Seq: 0, Locator: "kafka:main/orders.DLT/0@0", MessageID: "m-0",
			Destination: []byte(`{}`), Inbox: "not_processed", Action: string(replay.Publish)}}); err != nil {
			t.Fatal(err)
		}
		if ready { // what the lost Commit did
			if _, err := st.Pool().Exec(ctx, `UPDATE replay_plan SET state = 'ready', total = 1 WHERE id = $1`, id); err != nil {
				t.Fatal(err)
			}
		}
		w.Rollback(ctx)
		want := 0
		if ready {
			want = 1
		}
		if got := itemRows(t, st, id); got != want {
			t.Errorf("ready %v: %d items after the rollback, want %d", ready, got, want)
		}
	}
}

func itemRows(t *testing.T, st *store.Store, id string) int {
	t.Helper()
	var n int
	if err := st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM replay_plan_item WHERE plan_id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
