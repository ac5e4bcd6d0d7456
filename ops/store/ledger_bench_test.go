package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redrive/redrive/ops/replay"
)

// BenchmarkLedger measures the ledger's two writes per message for a batch of 5,000: the claim
// (insert under the once-only index) and the settle (active → published).
func BenchmarkLedger(b *testing.B) {
	ctx := context.Background()
	st := openStore(b)
	const n = 5000
	w, err := st.BeginPlan(ctx, "p")
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Commit(ctx, replay.StoredPlan{ID: "p", Actor: "b", Source: []byte(`{}`), Total: 1}); err != nil {
		b.Fatal(err)
	}
	batch := 0
	next := func() ([]replay.LedgerClaim, []replay.LedgerOutcome) {
		claims := make([]replay.LedgerClaim, n)
		outs := make([]replay.LedgerOutcome, n)
		for i := range claims {
			seq := batch*n + i
			claims[i] = replay.LedgerClaim{Seq: seq, Locator: fmt.Sprintf("kafka:main/orders.DLT/0/%d", seq), MessageID: fmt.Sprintf("m-%d", seq)}
			outs[i] = replay.LedgerOutcome{Seq: seq, Outcome: replay.LedgerPublished}
		}
		batch++
		return claims, outs
	}
	if err := st.CreateJob(ctx, replay.Job{ID: "j", PlanID: "p", Actor: "b", RatePerSecond: 1, Total: 1}); err != nil {
		b.Fatal(err)
	}
	b.Run("Claim", func(b *testing.B) {
		for b.Loop() {
			claims, _ := next()
			if _, err := st.Claim(ctx, "j", claims, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ClaimSettle", func(b *testing.B) {
		for b.Loop() {
			claims, outs := next()
			if _, err := st.Claim(ctx, "j", claims, nil); err != nil {
				b.Fatal(err)
			}
			if err := st.Settle(ctx, "j", outs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
