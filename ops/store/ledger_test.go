package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/ops/benchtest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
)

// The ledger's guarantee, raced directly rather than through the engine: 20 jobs claim the same
// 2,000 messages at once, in batches in different orders; each message is claimed by exactly one
// job, every other job is told ReplayedByOther, and a job that claims again what it holds (a
// resumed run) is told MineInFlight, or AlreadyMine once it is settled.
func TestLedgerClaimsRace(t *testing.T) {
	ctx := context.Background()
	const jobs, messages, batch = 20, 2000, 250
	st, ids, claims := racingJobs(t, jobs, messages)
	won := make([]map[int]bool, jobs) // per job, the seqs it claimed
	var g errgroup.Group
	for j := range jobs {
		won[j] = map[int]bool{}
		g.Go(func() error {
			// Job j starts at its own batch and wraps around, so the races differ batch by batch.
			for b := range messages / batch {
				from := ((b + j) % (messages / batch)) * batch
				got, err := st.Claim(ctx, ids[j], claims[from:from+batch], nil)
				if err != nil {
					return err
				}
				for seq, s := range got {
					switch s {
					case replay.Claimed:
						won[j][seq] = true
					case replay.ReplayedByOther:
					default:
						return fmt.Errorf("job %d, seq %d: state %d on a first claim", j, seq, s)
					}
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
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
	id := ids[j]
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
	other := ids[(j+1)%jobs]
	if got, err := st.Claim(ctx, other, mine[:1], nil); err != nil || got[mine[0].Seq] != replay.ReplayedByOther {
		t.Fatalf("another job claiming a published message: %v, %v; want ReplayedByOther", got, err)
	}
}

// Jobs whose batches name the same messages in different orders (plans of their own, one
// sorted one way, one the other) claim them at once without a deadlock: the claim inserts in the
// locators' order whatever the batch's. Each message is still claimed once.
func TestLedgerClaimsInAnyOrder(t *testing.T) {
	ctx := context.Background()
	const jobs, messages = 20, 5000
	st, ids, claims := racingJobs(t, jobs, messages)
	owners := make([]map[int]replay.LedgerState, jobs)
	err := atOnce(jobs, func(j int) error {
		batch := slices.Clone(claims)
		if j%2 == 1 {
			slices.Reverse(batch)
		}
		var err error
		owners[j], err = st.Claim(ctx, ids[j], batch, nil)
		return err
	})
	if err != nil {
		t.Fatalf("concurrent claims: %v", err)
	}
	for seq := range messages {
		n := 0
		for j := range jobs {
			if owners[j][seq] == replay.Claimed {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("message %d claimed by %d jobs", seq, n)
		}
	}
}

// racingJobs is a store holding jobs pending jobs (j00, j01, …) of one plan of messages, and
// claims of those messages in seq order.
func racingJobs(tb testing.TB, jobs, messages int) (*store.Store, []string, []replay.LedgerClaim) {
	tb.Helper()
	ids := make([]string, jobs)
	for j := range ids {
		ids[j] = fmt.Sprintf("j%02d", j)
	}
	st := openStoreWithPlan(tb, messages, ids...)
	claims := make([]replay.LedgerClaim, messages)
	for i := range claims {
		claims[i] = replay.LedgerClaim{Seq: i, Locator: fmt.Sprintf("kafka:main/orders.DLT/0/%d", i), MessageID: fmt.Sprintf("m-%d", i)}
	}
	return st, ids, claims
}

// A job that ends with claims still in flight — cancelled while paused on a broker that stopped
// answering — releases them as it finishes: they are failed with a reason, counted, no longer
// held, and another job can claim those messages. Its settled messages stay its own.
func TestFinishReleasesClaimsInFlight(t *testing.T) {
	ctx := context.Background()
	st := openStoreWithPlan(t, 3, "j1", "j2")
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

// A batch's settle keeps every row on its page (a HOT update, no index entry), with short Kafka
// locators and with RabbitMQ ones whose rows are twice as long: all of a page's rows are updated
// in one statement, so the page needs room for all of their new versions at once. At the old
// fillfactor (60) a third of the long rows' new versions went to another page.
func TestSettleStaysOnThePage(t *testing.T) {
	ctx := context.Background()
	for _, shape := range []struct {
		name    string
		locator func(i int) (locator, id string)
	}{
		{"kafka", func(i int) (string, string) { return fmt.Sprintf("kafka:main/orders.DLT/3/%d", 1_000_000+i), "" }},
		{"rabbitmq", func(i int) (string, string) {
			id := fmt.Sprintf("order-created-2026-12-05T09:30:00Z-%08d-eu-west-1", i)
			return fmt.Sprintf("rabbitmq:main/payments-prod/orders.created.dlq/%s~0123456789abcdef#2", id), id
		}},
	} {
		t.Run(shape.name, func(t *testing.T) {
			const n = 2000
			st := openStoreWithPlan(t, n, "j")
			claims := make([]replay.LedgerClaim, n)
			outs := make([]replay.LedgerOutcome, n)
			for i := range claims {
				l, id := shape.locator(i)
				claims[i] = replay.LedgerClaim{Seq: i, Locator: l, MessageID: id}
				outs[i] = replay.LedgerOutcome{Seq: i, Locator: l, MessageID: id, Outcome: replay.LedgerPublished}
			}
			if _, err := st.Claim(ctx, "j", claims, nil); err != nil {
				t.Fatal(err)
			}
			blocks := func() map[int32]string {
				rows, err := st.Pool().Query(ctx, `SELECT seq, (ctid::text::point)[0]::text FROM replay_ledger WHERE job_id = 'j'`)
				if err != nil {
					t.Fatal(err)
				}
				out := map[int32]string{}
				var seq int32
				var block string
				if _, err := pgx.ForEachRow(rows, []any{&seq, &block}, func() error { out[seq] = block; return nil }); err != nil {
					t.Fatal(err)
				}
				return out
			}
			before := blocks()
			if err := st.Settle(ctx, "j", outs); err != nil {
				t.Fatal(err)
			}
			after := blocks()
			moved := 0
			for seq, b := range before {
				if after[seq] != b {
					moved++
				}
			}
			if len(after) != n || moved > 0 {
				t.Fatalf("%d rows after the settle, %d of them on another page than their claim; want %d, none moved (every update HOT)", len(after), moved, n)
			}
			if job, err := st.Job(ctx, "j"); err != nil || job.Published != n {
				t.Fatalf("job %+v, %v; want %d published", job, err, n)
			}
		})
	}
}

// BenchmarkLedger measures the ledger's two writes per message for a batch of 5,000 with RabbitMQ
// locators: the claim (insert under the once-only index) and the settle (active → published), on
// the ledger as migrated and, for scale, at the fillfactor before 066 (60: a third of the settle's
// updates not HOT). Besides the time per batch it reports pg-cpu-ms/op, the CPU the store's
// PostgreSQL backends spent on it (from /proc: the database must run on this machine), which moves
// far less than the time on a shared machine.
//
//	go test ./ops/store -run '^$' -bench Ledger -benchtime 20x
func BenchmarkLedger(b *testing.B) {
	ctx := context.Background()
	for _, ff := range []int{0, 60} {
		name := "migrated"
		if ff > 0 {
			name = fmt.Sprintf("fillfactor%d", ff)
		}
		b.Run(name, func(b *testing.B) {
			st := openStoreWithPlan(b, 1, "j")
			if ff > 0 {
				if _, err := st.Pool().Exec(ctx, fmt.Sprintf(`ALTER TABLE replay_ledger SET (fillfactor = %d)`, ff)); err != nil {
					b.Fatal(err)
				}
			}
			const n = 5000
			batch := 0
			next := func() ([]replay.LedgerClaim, []replay.LedgerOutcome) {
				claims := make([]replay.LedgerClaim, n)
				outs := make([]replay.LedgerOutcome, n)
				for i := range claims {
					seq := batch*n + i
					id := fmt.Sprintf("order-%012d", seq)
					claims[i] = replay.LedgerClaim{Seq: seq, Locator: "rabbitmq:main/%2F/orders.dlq/" + id + "~0123456789abcdef#0", MessageID: id}
					outs[i] = replay.LedgerOutcome{Seq: seq, Outcome: replay.LedgerPublished}
				}
				batch++
				return claims, outs
			}
			b.Run("Claim", func(b *testing.B) {
				cpu := backendCPU(b, st)
				for b.Loop() {
					claims, _ := next()
					if _, err := st.Claim(ctx, "j", claims, nil); err != nil {
						b.Fatal(err)
					}
				}
				cpu.report(b)
			})
			b.Run("Settle", func(b *testing.B) {
				cpu := backendCPU(b, st)
				for b.Loop() {
					b.StopTimer()
					cpu.pause()
					claims, outs := next()
					if _, err := st.Claim(ctx, "j", claims, nil); err != nil {
						b.Fatal(err)
					}
					cpu.resume()
					b.StartTimer()
					if err := st.Settle(ctx, "j", outs); err != nil {
						b.Fatal(err)
					}
				}
				cpu.report(b)
			})
		})
	}
}

// pgCPU counts the CPU seconds the store's PostgreSQL backends spend while it runs.
type pgCPU struct {
	pids  func() []int
	at    map[int]float64 // each backend's CPU when the count last resumed
	spent float64
}

// backendCPU starts counting the CPU of st's backends (every connection of its database).
func backendCPU(b *testing.B, st *store.Store) *pgCPU {
	b.Helper()
	c := &pgCPU{pids: func() []int {
		rows, err := st.Pool().Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
		if err != nil {
			b.Fatal(err)
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			b.Fatal(err)
		}
		return pids
	}}
	c.resume()
	return c
}

func (c *pgCPU) resume() {
	c.at = map[int]float64{}
	for _, pid := range c.pids() {
		c.at[pid] = benchtest.ProcCPU(pid)
	}
}

func (c *pgCPU) pause() {
	for _, pid := range c.pids() {
		c.spent += benchtest.ProcCPU(pid) - c.at[pid] // a backend that came since started at 0
	}
}

func (c *pgCPU) report(b *testing.B) {
	c.pause()
	b.ReportMetric(1000*c.spent/float64(b.N), "pg-cpu-ms/op")
}

// A replica whose lease ran out may still be claiming while another finishes the job (cancelled,
// say). A claim that arrives after the finish writes nothing and says the job ended; one under way
// as the finish comes is waited for and released by it. Either way no message is left held by an
// ended job — held, it would be "already replayed" to every later replay, for good. A trigger
// that sleeps keeps the claim in flight so that the overlap is certain: before the claim's
// statement reads the job (a statement trigger: the finish lands first) or after (a row trigger:
// the finish waits for the claim).
func TestNoClaimOutlivesItsJob(t *testing.T) {
	ctx := context.Background()
	t.Run("AfterTheFinish", func(t *testing.T) {
		st := openStoreWithPlan(t, 2000, "j1")
		if _, err := st.ClaimJob(ctx, "replica-b", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := st.FinishJob(ctx, "j1", "replica-b", replay.JobCancelled, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Claim(ctx, "j1", ledgerClaims(0, 1000), nil); !errors.Is(err, replay.ErrJobEnded) {
			t.Fatalf("claim after the finish: %v; want ErrJobEnded", err)
		}
		if err := st.Record(ctx, "j1", []replay.LedgerOutcome{{Seq: 5, Locator: "kafka:main/orders.DLT/0@5", MessageID: "m-5",
			Outcome: replay.LedgerSkipped}}); !errors.Is(err, replay.ErrJobEnded) {
			t.Fatalf("record after the finish: %v; want ErrJobEnded", err)
		}
		var rows int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM replay_ledger WHERE job_id = 'j1'`).Scan(&rows); err != nil || rows != 0 {
			t.Fatalf("%d ledger rows of the ended job (%v); want none", rows, err)
		}
	})
	for _, where := range []struct{ name, trigger string }{
		{"FinishFirst", `BEFORE INSERT ON replay_ledger FOR EACH STATEMENT`},
		{"ClaimFirst", `BEFORE INSERT ON replay_ledger FOR EACH ROW WHEN (NEW.seq = 0)`},
	} {
		t.Run(where.name, func(t *testing.T) { claimAsItFinishes(t, where.trigger) })
	}
}

// claimAsItFinishes claims 1,000 messages for a running job, slowed by a sleeping trigger, and
// finishes the job meanwhile; then no message is held by it and the next job claims them all.
func claimAsItFinishes(t *testing.T, trigger string) {
	ctx := context.Background()
	st := openStoreWithPlan(t, 2000, "j1")
	if _, err := st.Pool().Exec(ctx, `CREATE FUNCTION slow_claim() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN PERFORM pg_sleep(0.5); RETURN NEW; END $$;
		CREATE TRIGGER slow_claim `+trigger+` EXECUTE FUNCTION slow_claim()`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ClaimJob(ctx, "replica-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	type result struct {
		states map[int]replay.LedgerState
		err    error
	}
	claimed := make(chan result, 1)
	go func() {
		states, err := st.Claim(ctx, "j1", ledgerClaims(0, 1000), nil)
		claimed <- result{states, err}
	}()
	pgtest.WaitRunning(t, st.Pool().Config().ConnString(), `%INSERT INTO replay_ledger%`)
	if err := st.FinishJob(ctx, "j1", "replica-a", replay.JobCancelled, ""); err != nil {
		t.Fatal(err)
	}
	r := <-claimed
	switch {
	case r.err == nil && len(r.states) == 1000: // first: released by the finish
		var failed int
		if err := st.Pool().QueryRow(ctx, `SELECT failed FROM replay_job WHERE id = 'j1'`).Scan(&failed); err != nil || failed != 1000 {
			t.Fatalf("the finish counted %d released claims (%v); want 1000", failed, err)
		}
	case errors.Is(r.err, replay.ErrJobEnded): // second: nothing written
	default:
		t.Fatalf("claim as the job finished: %d claimed, %v", len(r.states), r.err)
	}
	var held int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM replay_ledger WHERE job_id = 'j1' AND holds`).Scan(&held); err != nil || held != 0 {
		t.Fatalf("%d messages still held by the finished job (%v); want none", held, err)
	}
	if err := st.CreateJob(ctx, replay.Job{ID: "j2", PlanID: "p", Actor: "t", RatePerSecond: 1, Total: 2000}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Claim(ctx, "j2", ledgerClaims(0, 1000), nil)
	if err != nil {
		t.Fatal(err)
	}
	for seq, s := range got {
		if s != replay.Claimed {
			t.Fatalf("seq %d: state %d for the next job; want claimed", seq, s)
		}
	}
}

// ledgerClaims are claims of n Kafka dead letters from seq from.
func ledgerClaims(from, n int) []replay.LedgerClaim {
	out := make([]replay.LedgerClaim, n)
	for i := range out {
		out[i] = replay.LedgerClaim{Seq: from + i, Locator: fmt.Sprintf("kafka:main/orders.DLT/0@%d", from+i), MessageID: fmt.Sprintf("m-%d", from+i)}
	}
	return out
}
