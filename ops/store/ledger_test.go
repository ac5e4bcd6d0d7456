package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redrive/redrive/ops/replay"
)

// The ledger's guarantee, raced directly rather than through the engine: 20 jobs claim the same
// 2,000 messages at once, in batches in different orders; each message is claimed by exactly one
// job, every other job is told ReplayedByOther, and a job that claims again what it holds (a
// resumed run) is told MineInFlight, or AlreadyMine once it is settled.
func TestLedgerClaimsRace(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	const jobs, messages, batch = 20, 2000, 250
	w, err := st.BeginPlan(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(ctx, replay.StoredPlan{ID: "p", Actor: "t", Source: []byte(`{}`), Total: messages}); err != nil {
		t.Fatal(err)
	}
	claims := make([]replay.LedgerClaim, messages)
	for i := range claims {
		claims[i] = replay.LedgerClaim{Seq: i, Locator: fmt.Sprintf("kafka:main/orders.DLT/0/%d", i), MessageID: fmt.Sprintf("m-%d", i)}
	}
	for j := range jobs {
		if err := st.CreateJob(ctx, replay.Job{ID: fmt.Sprintf("j%02d", j), PlanID: "p", Actor: "t", RatePerSecond: 1, Total: messages}); err != nil {
			t.Fatal(err)
		}
	}
	won := make([]map[int]bool, jobs) // per job, the seqs it claimed
	var wg sync.WaitGroup
	errs := make(chan error, jobs)
	for j := range jobs {
		won[j] = map[int]bool{}
		wg.Go(func() {
			// Job j starts at its own batch and wraps around, so the races differ batch by batch.
			for b := range messages / batch {
				from := ((b + j) % (messages / batch)) * batch
				got, err := st.Claim(ctx, fmt.Sprintf("j%02d", j), claims[from:from+batch], nil)
				if err != nil {
					errs <- err
					return
				}
				for seq, s := range got {
					switch s {
					case replay.Claimed:
						won[j][seq] = true
					case replay.ReplayedByOther:
					default:
						errs <- fmt.Errorf("job %d, seq %d: state %d on a first claim", j, seq, s)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	owner := map[int]int{}
	for j, seqs := range won {
		for seq := range seqs {
			if other, dup := owner[seq]; dup {
				t.Fatalf("message %d claimed by jobs %d and %d", seq, other, j)
			}
			owner[seq] = j
		}
	}
	if len(owner) != messages {
		t.Fatalf("%d of %d messages claimed by some job", len(owner), messages)
	}

	// A resumed run claims its batch again: its own unsettled claims are in flight, settled ones
	// are its own, and nothing changes hands.
	j := owner[0]
	id := fmt.Sprintf("j%02d", j)
	var mine []replay.LedgerClaim
	for seq := range won[j] {
		mine = append(mine, claims[seq])
	}
	again, err := st.Claim(ctx, id, mine, nil)
	if err != nil {
		t.Fatal(err)
	}
	for seq, s := range again {
		if s != replay.MineInFlight {
			t.Fatalf("re-claim of its own unsettled seq %d: state %d, want MineInFlight", seq, s)
		}
	}
	outs := make([]replay.LedgerOutcome, len(mine))
	for i, c := range mine {
		outs[i] = replay.LedgerOutcome{Seq: c.Seq, Locator: c.Locator, MessageID: c.MessageID, Outcome: replay.LedgerPublished}
	}
	if err := st.Settle(ctx, id, outs); err != nil {
		t.Fatal(err)
	}
	again, err = st.Claim(ctx, id, mine, nil)
	if err != nil {
		t.Fatal(err)
	}
	for seq, s := range again {
		if s != replay.AlreadyMine {
			t.Fatalf("re-claim of its own settled seq %d: state %d, want AlreadyMine", seq, s)
		}
	}
	other := fmt.Sprintf("j%02d", (j+1)%jobs)
	if got, err := st.Claim(ctx, other, mine[:1], nil); err != nil || got[mine[0].Seq] != replay.ReplayedByOther {
		t.Fatalf("another job claiming a published message: %v, %v; want ReplayedByOther", got, err)
	}
}
