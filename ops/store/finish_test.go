package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/replay"
)

// A job that ends with claims still in flight — cancelled while paused on a broker that stopped
// answering — releases them as it finishes: they are failed with a reason, counted, no longer
// held, and another job can claim those messages. Its settled messages stay its own.
func TestFinishReleasesClaimsInFlight(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	w, err := st.BeginPlan(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(ctx, replay.StoredPlan{ID: "p", Actor: "t", Source: []byte(`{}`), Total: 3}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"j1", "j2"} {
		if err := st.CreateJob(ctx, replay.Job{ID: id, PlanID: "p", Actor: "t", RatePerSecond: 1, Total: 3}); err != nil {
			t.Fatal(err)
		}
	}
	job, err := st.ClaimJob(ctx, "replica-a", time.Minute)
	if err != nil || job.ID != "j1" {
		t.Fatalf("ClaimJob = %v, %v; want j1", job.ID, err)
	}
	claims := make([]replay.LedgerClaim, 3)
	for i := range claims {
		claims[i] = replay.LedgerClaim{Seq: i, Locator: fmt.Sprintf("rabbitmq:main/%%2F/orders.dlq/m-%d#0", i), MessageID: fmt.Sprintf("m-%d", i)}
	}
	if _, err := st.Claim(ctx, "j1", claims, nil); err != nil {
		t.Fatal(err)
	}
	// One is confirmed and settled; two stay in flight when the broker stops answering.
	if err := st.Settle(ctx, "j1", []replay.LedgerOutcome{{Seq: 0, Locator: claims[0].Locator, MessageID: "m-0", Outcome: replay.LedgerPublished}}); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishJob(ctx, "j1", "replica-b", replay.JobCancelled, ""); err != nil {
		t.Fatal(err)
	}
	if h, err := st.Holders(ctx, []string{claims[1].Locator}); err != nil || h[claims[1].Locator] != "j1" {
		t.Fatalf("after a finish by a replica that does not hold the job: holders %v, %v; want j1 still", h, err)
	}
	if err := st.FinishJob(ctx, "j1", "replica-a", replay.JobCancelled, ""); err != nil {
		t.Fatal(err)
	}
	final, err := st.Job(ctx, "j1")
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != replay.JobCancelled || final.Published != 1 || final.Failed != 2 {
		t.Fatalf("job %s published %d failed %d; want cancelled, 1 published, 2 failed", final.Status, final.Published, final.Failed)
	}
	entries, err := st.Ledger(ctx, "j1", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		want := replay.LedgerFailed
		if e.Seq == 0 {
			want = replay.LedgerPublished
		}
		if e.Outcome != want || (want == replay.LedgerFailed && e.Detail == "") {
			t.Errorf("seq %d: %s %q; want %s with a reason", e.Seq, e.Outcome, e.Detail, want)
		}
	}
	got, err := st.Claim(ctx, "j2", claims, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != replay.ReplayedByOther || got[1] != replay.Claimed || got[2] != replay.Claimed {
		t.Fatalf("another job's claims %v; want the published one refused, the released two claimed", got)
	}
}
