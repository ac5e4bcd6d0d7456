package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"errors"

	"github.com/redrive/redrive/cmd/internal/devstack"
	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/waittest"
)

// Environment knobs of the chaos test.
const (
	envChaosMessages = "REDRIVE_CHAOS_MESSAGES" // how many messages (default 20,000)
	envChaosSeed     = "REDRIVE_CHAOS_SEED"     // the seed of the random points (default: the clock; logged)
)

// The chaos test of issue 11: a 20,000-message RabbitMQ DLQ replay, run by the console as a real
// process, while the test kills -9 the console, restarts the store's PostgreSQL (which also holds
// the consumer's inbox) and kills -9 RabbitMQ, at random (seeded, logged) points while messages
// move. Each dependency is a private instance of the test's own (devstack), never the shared
// services. At the end, read with the management API and a plain AMQP client: every message is
// in the DLQ or back in the original queue (none lost), a message the inbox marks processed never
// left the DLQ, and every duplicate the consumer receives is one its inbox absorbs, a message the
// ledger marks resumed after an interruption (published, but not proven settled, when something
// died).
func TestChaosRabbitReplayUnderKillsAndRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: kills and restarts the console, PostgreSQL and RabbitMQ")
	}
	n := 20_000
	if v := os.Getenv(envChaosMessages); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 100 {
			t.Fatalf("%s=%q: want a count ≥ 100", envChaosMessages, v)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(envChaosSeed); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", envChaosSeed, v, err)
		}
	}
	t.Logf("chaos: %d messages, seed %d (rerun the same points with %s=%d)", n, seed, envChaosSeed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	began := time.Now()

	ctx := waittest.Context(t, 5*time.Minute)
	dir := t.TempDir()
	pg, err := devstack.StartPostgres(ctx, devstack.PostgresOptions{Dir: filepath.Join(dir, "pg")})
	mustDo(t, err)
	t.Cleanup(func() { _ = pg.Kill(context.Background()) })
	rmq, err := devstack.StartRabbitMQ(ctx, devstack.RabbitOptions{Dir: filepath.Join(dir, "rabbitmq")})
	mustDo(t, err)
	t.Cleanup(func() { _ = rmq.Kill(context.Background()) })
	t.Logf("private PostgreSQL on %d, RabbitMQ on %d (management %d), up in %s", pg.Port(), rmq.AMQPPort(), rmq.ManagementPort(),
		time.Since(began).Round(100*time.Millisecond))

	storeDSN := pg.DSN("postgres")
	admin, err := pgx.Connect(ctx, storeDSN)
	mustDo(t, err)
	_, err = admin.Exec(ctx, `CREATE DATABASE inbox`)
	mustDo(t, err)
	admin.Close(ctx)
	inboxDSN := pg.DSN("inbox")
	inboxDB, err := pgx.Connect(ctx, inboxDSN)
	mustDo(t, err)
	_, err = inboxDB.Exec(ctx, pginbox.SeedDDL)
	mustDo(t, err)
	_, err = inboxDB.Exec(ctx, `INSERT INTO inbox_message SELECT 'm-' || g, 'inventory-service', now(), now()
		FROM generate_series(0, $1::int - 1, 10) g`, n)
	mustDo(t, err)
	inboxDB.Close(ctx)
	processed := (n + 9) / 10

	conn, err := amqp.Dial(rmq.URL())
	mustDo(t, err)
	ch, err := conn.Channel()
	mustDo(t, err)
	declareOrders(t, ch)
	deadLetterRabbit(t, ch, n)
	conn.Close() // RabbitMQ will be killed: the checks at the end dial again
	t.Logf("%d messages dead-lettered in %s", n, time.Since(began).Round(100*time.Millisecond))
	// RabbitMQ dead-letters at most once and persists what it dead-lettered lazily: a kill -9 soon
	// after can lose the DLQ's newest messages before Redrive touched them (seen: the last ~3,600).
	// That is the broker's own guarantee, not what this test is about: a clean restart writes the
	// seeded DLQ to disk first; everything after it is fair game.
	mustDo(t, rmq.Stop(ctx))
	mustDo(t, rmq.Start(ctx))

	p := startProcess(t, inventoryConsumer(storeDSN, rmq.URL(), rmq.ManagementURL(), "/", inboxDSN))

	r := doRaw("POST", p.base+"/api/v1/replays/plan", "application/json",
		fmt.Sprintf(`{"source":{"kind":"rabbitmq","broker":"main","vhost":"/","queue":"orders.dlq","limit":%d}}`, n))
	type plannedJSON struct {
		PlanID  string         `json:"plan_id"`
		Total   int            `json:"total"`
		Actions map[string]int `json:"actions"`
	}
	var plan plannedJSON
	if r.status, r.body = planned(t, p.base, r.status, r.body); r.status != 200 || json.Unmarshal([]byte(r.body), &plan) != nil ||
		plan.Total != n || plan.Actions["publish"] != n-processed {
		t.Fatalf("plan: %d %s", r.status, tail(r.body, 500))
	}
	r = doRaw("POST", p.base+"/api/v1/replays", "application/json", fmt.Sprintf(`{"plan_id":%q,"rate_per_second":2000,"reason":"chaos test"}`, plan.PlanID))
	var job struct {
		ID string `json:"id"`
	}
	if r.status != 200 || json.Unmarshal([]byte(r.body), &job) != nil {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	t.Logf("plan of %d and job %s started at %s", n, job.ID, time.Since(began).Round(100*time.Millisecond))

	// Progress as the store has it, read by the test itself (the console may be dead).
	type progress struct {
		status                     string
		published, skipped, failed int
	}
	read := func() (progress, error) {
		c, err := pgx.Connect(ctx, storeDSN+"&connect_timeout=2")
		if err != nil {
			return progress{}, err
		}
		defer c.Close(ctx)
		var pr progress
		err = c.QueryRow(ctx, `SELECT status, published, skipped, failed FROM `+store.Schema+`.replay_job WHERE id = $1`, job.ID).
			Scan(&pr.status, &pr.published, &pr.skipped, &pr.failed)
		return pr, err
	}
	moved := func(pr progress) int { return pr.published + pr.skipped + pr.failed }

	// The events, in a seeded order: each kind at least twice, one more at random.
	kinds := []string{"kill -9 console", "restart PostgreSQL", "kill -9 RabbitMQ", "kill -9 console", "restart PostgreSQL", "kill -9 RabbitMQ"}
	kinds = append(kinds, kinds[rng.IntN(len(kinds))])
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	last := -1
	done := 0
	for i, kind := range kinds {
		// At a random point while messages move: once the job has moved some since the last event.
		pr := waittest.For(t, 90*time.Second, fmt.Sprintf("progress before event %d (%s)", i+1, kind), func() (progress, bool) {
			pr, err := read()
			over := pr.status != replay.JobRunning && pr.status != replay.JobPending || moved(pr) >= n
			return pr, err == nil && (over || moved(pr) > last && moved(pr) > 0)
		})
		if pr.status != replay.JobRunning && pr.status != replay.JobPending || moved(pr) >= n {
			t.Logf("the job finished (%s) before event %d; %d of %d events done", pr.status, i+1, done, len(kinds))
			break
		}
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond) // the random point is the point
		at := time.Now()
		switch kind {
		case "kill -9 console":
			p.kill()
			p.start()
		case "restart PostgreSQL":
			mustDo(t, pg.Kill(ctx)) // pg_ctl -m immediate: as a crash, recovered at start
			mustDo(t, pg.Start(ctx))
		case "kill -9 RabbitMQ":
			mustDo(t, rmq.Kill(ctx))
			mustDo(t, rmq.Start(ctx))
		}
		done++
		last = moved(pr)
		t.Logf("event %d at %s: %s at %d/%d moved (%d published); back after %s", i+1, time.Since(began).Round(100*time.Millisecond),
			kind, moved(pr), n, pr.published, time.Since(at).Round(100*time.Millisecond))
	}

	final := waitReplay(t, p.base, job.ID, 3*time.Minute)
	t.Logf("job %s after %d events at %s: %d published, %d skipped, %d failed", final.Status, done,
		time.Since(began).Round(100*time.Millisecond), final.Published, final.Skipped, final.Failed)
	if final.Status != replay.JobDone || final.Published != n-processed || final.Skipped != processed || final.Failed != 0 {
		t.Errorf("final job %+v; want done with %d published and %d skipped (processed)", final, n-processed, processed)
	}
	// A RabbitMQ killed soon after the job's last acks, before it wrote them to disk, returns
	// messages already replayed (AMQP acks are not confirmed). The console notices the node's
	// restart and removes those copies in a job of its own (actor redrive); a plan of the DLQ made
	// afterwards finds none left to drop and nothing to publish.
	conn, err = amqp.Dial(rmq.URL())
	mustDo(t, err)
	defer conn.Close()
	ch, err = conn.Channel()
	mustDo(t, err)
	waittest.For(t, 90*time.Second, "the DLQ holding only what the inbox processed", func() (int, bool) {
		d := rabbittest.Depth(t, ch, "orders.dlq")
		return d, d == processed
	})
	// Planned until the inbox answers and no tidy job holds the queue: a plan made while the
	// inbox's database was just restarted says "unknown" (and publish, re-checked by the job).
	tidy := waittest.For(t, 60*time.Second, "a plan of the DLQ with the inbox's verdicts", func() (plannedJSON, bool) {
		r := doRaw("POST", p.base+"/api/v1/replays/plan", "application/json",
			fmt.Sprintf(`{"source":{"kind":"rabbitmq","broker":"main","vhost":"/","queue":"orders.dlq","limit":%d}}`, n))
		var pl plannedJSON
		r.status, r.body = planned(t, p.base, r.status, r.body)
		return pl, r.status == 200 && json.Unmarshal([]byte(r.body), &pl) == nil && pl.Actions["skip_processed"] == processed
	})
	if tidy.Actions["publish"] != 0 || tidy.Actions["drop_replayed_copy"] != 0 || tidy.Total != processed {
		t.Errorf("plan of the DLQ after the job: %+v; want only the %d processed, no copy left", tidy, processed)
	}
	if c, err := pgx.Connect(ctx, storeDSN); err == nil {
		var jobs, dropped int
		_ = c.QueryRow(ctx, `SELECT count(*), coalesce(sum(skipped), 0) FROM `+store.Schema+`.replay_job WHERE actor = $1`, replay.Tidier.Name).
			Scan(&jobs, &dropped)
		c.Close(ctx)
		t.Logf("copies returned by RabbitMQ restarts after the job: %d, removed by %d job(s) of the console's own", dropped, jobs)
	}
	p.kill()

	// The management API's counts, once they settle.
	mgmt, err := rabbithole.NewClient(rmq.ManagementURL(), "guest", "guest")
	mustDo(t, err)
	var dlqN, workN int
	waittest.For(t, 30*time.Second, "the management API's counts agree with the broker's", func() (error, bool) {
		d, err1 := mgmt.GetQueue("/", "orders.dlq")
		w, err2 := mgmt.GetQueue("/", "orders.work")
		if err := errors.Join(err1, err2); err != nil {
			return err, false
		}
		dlqN, workN = d.Messages, w.Messages
		return nil, dlqN == rabbittest.Depth(t, ch, "orders.dlq") && workN == rabbittest.Depth(t, ch, "orders.work") && d.MessagesUnacknowledged == 0
	})
	t.Logf("management API: orders.dlq %d + orders.work %d = %d (of %d)", dlqN, workN, dlqN+workN, n)
	if dlqN+workN < n {
		t.Errorf("DLQ %d + destination %d < %d: messages were lost", dlqN, workN, n)
	}

	// Every id, read to the end of both queues.
	inDLQ, inWork := map[string]int{}, map[string]int{}
	for _, id := range drainIDs(t, ch, "orders.dlq") {
		inDLQ[id]++
	}
	work := drainIDs(t, ch, "orders.work")
	for _, id := range work {
		inWork[id]++
	}
	// The ledger: which messages were resumed after an interruption.
	sc, err := pgx.Connect(ctx, storeDSN)
	mustDo(t, err)
	defer sc.Close(ctx)
	rows, err := sc.Query(ctx, `SELECT message_id FROM `+store.Schema+`.replay_ledger WHERE job_id = $1 AND detail LIKE 'resumed after an interruption%'`, job.ID)
	mustDo(t, err)
	resumedIDs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	mustDo(t, err)
	resumed := map[string]bool{}
	for _, id := range resumedIDs {
		resumed[id] = true
	}
	// The consumer applies what is back in the original queue through its inbox.
	applied, copies := consumeThroughInbox(t, ctx, inboxDSN, work)
	absorbed := len(copies)
	for _, id := range copies {
		if !resumed[id] && id != "" {
			t.Errorf("%s reached the consumer again but the ledger does not mark it resumed after an interruption", id)
		}
	}
	missing, both := 0, 0
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("m-%d", i)
		switch {
		case i%10 == 0 && (inDLQ[id] != 1 || inWork[id] > 0):
			t.Errorf("%s is marked processed by the inbox: it must stay in the DLQ once and never be sent (DLQ %d, sent %d)", id, inDLQ[id], inWork[id])
		case i%10 != 0 && !applied[id]:
			if missing++; missing <= 10 {
				t.Errorf("%s was lost: not applied by the consumer (in the DLQ: %d)", id, inDLQ[id])
			}
		case i%10 != 0 && inDLQ[id] > 0:
			if both++; both <= 10 {
				t.Errorf("%s is both back in the original queue and still in the DLQ", id)
			}
		}
	}
	// Every duplicate's id is one the ledger marks resumed (checked above, per copy). A message can
	// be resumed more than once — its batch interrupted again after its second publish — so the
	// copies may outnumber the resumed ids; what must hold is that none is unexplained.
	t.Logf("after %d events in %s: %d messages back in the original queue (%d duplicate copies, all absorbed by the inbox; "+
		"the ledger marks %d resumed), %d left in the DLQ (the processed ones), %d lost",
		done, time.Since(began).Round(100*time.Millisecond), len(work), absorbed, len(resumed), dlqN, missing)
}
