package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/cmd/internal/devstack"
	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/waittest"
)

// The store restarted in the middle of a job (issue 11, "Proven by"): the console's own
// PostgreSQL — ledger, plans, jobs, leases — is stopped under a running Kafka, RabbitMQ and outbox
// job and started again on the same data directory. Each job ends done, not failed, and an
// independent client finds every planned message where it belongs: nothing lost, and a message
// sent twice only where the ledger itself says it was resumed after the interruption.
//
// The store is a private PostgreSQL started by the test (devstack), never the shared one; the
// brokers, the inbox and the outbox are the shared test services, which are not touched.

// restartN is each job's size; restartRate its rate: a job of a few seconds.
const (
	restartN    = 3000
	restartRate = 500
)

// privateStore starts a PostgreSQL of the test's own for the console's store.
func privateStore(t *testing.T) (*devstack.Postgres, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := devstack.StartPostgres(ctx, devstack.PostgresOptions{Dir: filepath.Join(t.TempDir(), "store-pg")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Kill(context.Background()) })
	return pg, pg.DSN("postgres")
}

// syncBuffer collects the engine's log, shown when a test fails.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// engineApp builds the console's adapters from cfgText exactly as `serve` does and runs the replay
// worker (only the worker: no sampler, no web) until the test ends.
func engineApp(t *testing.T, cfgText string) (*app, *syncBuffer) {
	t.Helper()
	cfg, err := configs.Parse([]byte(cfgText), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := buildApp(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.engine.Work(wctx) }()
	t.Cleanup(func() {
		stop()
		<-done
		a.Close()
		if t.Failed() {
			t.Logf("engine log:\n%s", tail(logs.String(), 6000))
		}
	})
	return a, logs
}

// restartObservation is what the test saw of the job around the store's restart.
type restartObservation struct {
	before        int   // published when the store stopped
	held          int   // ledger rows claimed and not settled when it stopped
	heldSeqs      []int // their seqs
	downFor       time.Duration
	paused        string // the job's pause reason, if it was seen
	pausedSeen    int    // published when it was seen
	resumedAfter  time.Duration
	final         replay.Job
	resumedLedger map[string]int // message id → ledger rows saying "resumed after an interruption"
}

// restartStoreMidJob stops the store's PostgreSQL in the window where a batch's outcome is unknown:
// its messages are claimed in the ledger and being moved, and the ledger has not recorded how the
// move ended. A transaction of the test's own locks the claimed ledger rows (FOR UPDATE SKIP
// LOCKED, on the rows as they are, so that it either locks them before the job settles them or
// passes over them: waiting, it could hold some rows of a batch the job was settling and wait for
// the others, which the settle held while it waited for the test's — a deadlock CI met once), the
// batch moves, its settle waits on the lock, and the store then stops (pg_ctl -m fast: every
// session is cut, the test's and the job's alike), stays down for a second and starts again on
// the same data directory. The test then follows the job to its end.
// restartDuringJob plans src (every one of its restartN messages to publish), starts the job at
// restartRate and restarts the store while it runs (restartStoreMidJob).
func restartDuringJob(t *testing.T, a *app, pg *devstack.Postgres, storeDSN string, src replay.Source) restartObservation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plan, err := a.engine.Plan(ctx, "ops", src, replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != restartN {
		t.Fatalf("plan: %v %v", plan.Counts, err)
	}
	job, err := a.engine.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops", Role: access.Admin},
		Reason: "store restart test", RatePerSecond: restartRate})
	if err != nil {
		t.Fatal(err)
	}
	return restartStoreMidJob(t, a, pg, storeDSN, job.ID)
}

func restartStoreMidJob(t *testing.T, a *app, pg *devstack.Postgres, storeDSN, jobID string) restartObservation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var ob restartObservation
	lock, err := pgx.Connect(ctx, storeDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(context.Background())
	deadline := time.Now().Add(time.Minute)
	for {
		j, err := a.engine.Job(ctx, jobID)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != replay.JobPending && j.Status != replay.JobRunning || j.Published+j.Skipped+j.Failed >= j.Total {
			t.Fatalf("the job ended before the test caught a batch between its claim and its settle: %+v", j)
		}
		if j.Published > 0 {
			tx, err := lock.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := tx.Query(ctx, `SELECT seq FROM `+store.Schema+`.replay_ledger
					WHERE job_id = $1 AND outcome = 'active' FOR UPDATE SKIP LOCKED`, jobID)
			if err != nil {
				t.Fatal(err)
			}
			if ob.heldSeqs, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil {
				t.Fatal(err)
			}
			ob.held = len(ob.heldSeqs)
			if ob.held > 0 {
				ob.before = j.Published
				break // the locks are held until the store stops
			}
			_ = tx.Rollback(ctx)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no batch caught between claim and settle in a minute: %+v", j)
		}
		time.Sleep(time.Millisecond)
	}
	pgtest.WaitLockWaiters(t, storeDSN, 1) // the held batch is moved; its settle waits on the lock
	stopped := time.Now()
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.engine.Job(ctx, jobID); err == nil {
		t.Fatal("the store answers while stopped")
	}
	time.Sleep(time.Second)
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ob.downFor = time.Since(stopped)
	// Follow the job: a pause reason, the first progress past the restart, the end.
	var progressed bool
	ob.final = waittest.For(t, 2*time.Minute, "the job ends after the store's restart", func() (replay.Job, bool) {
		j, err := a.engine.Job(ctx, jobID)
		if err != nil {
			return j, false
		}
		if j.Paused != "" && ob.paused == "" {
			ob.paused, ob.pausedSeen = j.Paused, j.Published
		}
		if !progressed && j.Published > ob.before {
			progressed, ob.resumedAfter = true, time.Since(stopped)
		}
		return j, j.Status != replay.JobPending && j.Status != replay.JobRunning
	})
	if ob.final.Status != replay.JobDone || ob.final.Published+ob.final.Failed != restartN {
		t.Fatalf("after the store's restart the job ended %s with %d published, %d skipped, %d failed (error %q); want done with %d published",
			ob.final.Status, ob.final.Published, ob.final.Skipped, ob.final.Failed, ob.final.Error, restartN)
	}
	// The ledger, read with psql-level SQL: which messages the job resumed after the interruption.
	conn, err := pgx.Connect(ctx, storeDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT message_id FROM `+store.Schema+`.replay_ledger WHERE job_id = $1 AND detail LIKE 'resumed after an interruption%'`, jobID)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	ob.resumedLedger = map[string]int{}
	for _, id := range ids {
		ob.resumedLedger[id]++
	}
	// A fast shutdown ends the test's transaction, which releases the held rows, and the job's
	// settle waiting on them: when the settle is woken and commits before its own end, those
	// messages were settled before the stop, and there is nothing of them to resume.
	var settledBeforeStop int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+store.Schema+`.replay_ledger
			WHERE job_id = $1 AND seq = ANY($2) AND outcome <> 'active' AND at < $3`, jobID, ob.heldSeqs, stopped).Scan(&settledBeforeStop); err != nil {
		t.Fatal(err)
	}
	if settledBeforeStop > 0 {
		t.Logf("%d of the %d held rows were settled as the store stopped (the shutdown released them first)", settledBeforeStop, ob.held)
		ob.held -= settledBeforeStop
	}
	var active int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+store.Schema+`.replay_ledger WHERE job_id = $1 AND outcome = 'active'`, jobID).Scan(&active); err != nil {
		t.Fatal(err)
	}
	if active != 0 {
		t.Errorf("%d ledger rows of the finished job are still active (claimed, never settled)", active)
	}
	pause := "not seen (the store, which holds the reason, was the dependency that was down)"
	if ob.paused != "" {
		pause = fmt.Sprintf("%q at %d published", ob.paused, ob.pausedSeen)
	}
	t.Logf("store stopped at %d/%d published with %d claimed and not settled, down %s, progress again %s after the stop; paused: %s; ended %s: %d published, %d resumed after the interruption",
		ob.before, ob.final.Total, ob.held, ob.downFor.Round(time.Millisecond), ob.resumedAfter.Round(time.Millisecond), pause,
		ob.final.Status, ob.final.Published, len(ids))
	return ob
}

// checkCopies asserts that every planned id arrived at least once and that every id that arrived
// more than once is one the ledger marks resumed after the interruption.
func checkCopies(t *testing.T, got map[string]int, n int, ob restartObservation) {
	t.Helper()
	dups := 0
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("m-%d", i)
		switch c := got[id]; {
		case c == 0:
			t.Errorf("%s was lost: not at its destination", id)
		case c > 1:
			dups += c - 1
			if ob.resumedLedger[id] == 0 {
				t.Errorf("%s arrived %d times but the ledger does not mark it resumed after an interruption", id, c)
			}
		}
	}
	if len(got) != n {
		t.Errorf("%d distinct ids at the destination, want %d", len(got), n)
	}
	if len(ob.resumedLedger) < ob.held {
		t.Errorf("%d claimed messages were cut off before their settle, but the ledger marks only %d resumed", ob.held, len(ob.resumedLedger))
	}
	if dups > len(ob.resumedLedger) {
		t.Errorf("%d duplicates, more than the %d messages the ledger marks resumed", dups, len(ob.resumedLedger))
	}
	t.Logf("%d distinct messages at the destination, %d duplicate copies (the ledger marks %d resumed)", len(got), dups, len(ob.resumedLedger))
}

func TestStoreRestartMidKafkaJob(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a private PostgreSQL")
	}
	pg, storeDSN := privateStore(t)
	k := startKafka(t, map[string]int32{"orders": 3, "orders.DLT": 2})
	inboxDSN := pgtest.NewDatabase(t)
	pgtest.Exec(t, inboxDSN, pginbox.SeedDDL)
	a, _ := engineApp(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
kafka: [{name: main, brokers: [%q]}]
consumers:
  - name: inventory-service
    inbox: {dsn: %q}
    kafka: {cluster: main, group: inventory-service, topics: [orders]}
replay: {lease: 2s}
`, storeDSN, k.Addrs()[0], inboxDSN))

	ctx := waittest.Context(t, 3*time.Minute)
	cl := kfaketest.Client(t, k.Cluster(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	recs := make([]*kgo.Record, restartN)
	for i := range recs {
		id := fmt.Sprintf("m-%d", i)
		recs[i] = &kgo.Record{Topic: "orders.DLT", Partition: int32(i % 2), Key: []byte(fmt.Sprintf("order-%d", i%97)),
			Value: []byte(fmt.Sprintf(`{"messageId":%q,"n":%d}`, id, i)),
			Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("java.lang.IllegalStateException")},
				{Key: "kafka_dlt-exception-message", Value: []byte("no stock")},
				{Key: "messageId", Value: []byte(id)}}}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ob := restartDuringJob(t, a, pg, storeDSN, replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"})
	if ob.final.Published != restartN || ob.final.Failed != 0 {
		t.Errorf("job ended with %d published, %d failed; want %d published", ob.final.Published, ob.final.Failed, restartN)
	}

	// A fresh client reads the original topic from the start.
	rd := kfaketest.Client(t, k.Cluster(), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	got := map[string]int{}
	total, quiet := 0, 0
	for quiet < 3 && ctx.Err() == nil { // until three empty polls in a row after the end
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := rd.PollFetches(pctx)
		pcancel()
		if n := fs.NumRecords(); n == 0 {
			if total >= ob.final.Published {
				quiet++
			}
			continue
		}
		quiet = 0
		fs.EachRecord(func(r *kgo.Record) {
			total++
			for _, h := range r.Headers {
				if h.Key == "messageId" {
					got[string(h.Value)]++
				}
			}
		})
	}
	if total < restartN {
		t.Errorf("%d records on the original topic, want at least %d", total, restartN)
	}
	checkCopies(t, got, restartN, ob)
}

func TestStoreRestartMidRabbitJob(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a private PostgreSQL")
	}
	pg, storeDSN := privateStore(t)
	vhost, amqpURL, mgmt := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	declareOrders(t, ch)
	deadLetterRabbit(t, ch, restartN)

	inboxDSN := pgtest.NewDatabase(t)
	pgtest.Exec(t, inboxDSN, pginbox.SeedDDL)
	a, _ := engineApp(t, inventoryConfig(t, storeDSN, vhost, inboxDSN))

	ob := restartDuringJob(t, a, pg, storeDSN, replay.Source{Kind: "rabbitmq", Broker: "main", Vhost: vhost, Queue: "orders.dlq", Limit: restartN})
	if ob.final.Published != restartN || ob.final.Failed != 0 {
		t.Errorf("job ended with %d published, %d failed; want %d published", ob.final.Published, ob.final.Failed, restartN)
	}

	// The management API's counts: what is in the DLQ and what is back in the original queue.
	var dlqN, workN int
	rabbittest.WaitFor(t, 20*time.Second, "the management API's counts to settle", func(context.Context) bool {
		d, err1 := mgmt.GetQueue(vhost, "orders.dlq")
		w, err2 := mgmt.GetQueue(vhost, "orders.work")
		if err1 != nil || err2 != nil {
			return false
		}
		dlqN, workN = d.Messages, w.Messages
		return dlqN == rabbittest.Depth(t, ch, "orders.dlq") && workN == rabbittest.Depth(t, ch, "orders.work") && d.MessagesUnacknowledged == 0
	})
	t.Logf("management API: orders.dlq %d, orders.work %d", dlqN, workN)
	if dlqN != 0 {
		t.Errorf("%d messages left in the DLQ of a done job that published all %d", dlqN, restartN)
	}
	if dlqN+workN < restartN {
		t.Errorf("DLQ %d + destination %d < %d: messages were lost", dlqN, workN, restartN)
	}
	got := map[string]int{}
	for _, id := range drainIDs(t, ch, "orders.work") {
		got[id]++
	}
	if left := drainIDs(t, ch, "orders.dlq"); len(left) > 0 {
		t.Errorf("still in the DLQ: %v", left[:min(5, len(left))])
	}
	if len(got) > 0 && dlqN+workN != restartN+dupsOf(got) {
		t.Errorf("DLQ %d + destination %d ≠ %d + %d duplicates", dlqN, workN, restartN, dupsOf(got))
	}
	checkCopies(t, got, restartN, ob)
}

func dupsOf(got map[string]int) int {
	d := 0
	for _, c := range got {
		d += c - 1
	}
	return d
}

// deadLetterRabbit publishes n orders (confirmed) and has the broker dead-letter them all.
func deadLetterRabbit(t *testing.T, ch *amqp.Channel, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mustDo(t, ch.Confirm(false))
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, n))
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("m-%d", i)
		mustDo(t, ch.PublishWithContext(ctx, "orders", "order.created", false, false, amqp.Publishing{
			MessageId: id, ContentType: "application/json", DeliveryMode: amqp.Persistent,
			Body: []byte(fmt.Sprintf(`{"messageId":%q,"n":%d}`, id, i))}))
	}
	for i := 0; i < n; i++ {
		select {
		case c := <-confirms:
			if !c.Ack {
				t.Fatalf("publish %d nacked", c.DeliveryTag)
			}
		case <-ctx.Done():
			t.Fatal("publishes not confirmed")
		}
	}
	mustDo(t, ch.Qos(1000, 0, false))
	deliveries, err := ch.Consume("orders.work", "failing", false, false, false, false, nil)
	mustDo(t, err)
	for i := 0; i < n; i++ {
		select {
		case d := <-deliveries:
			mustDo(t, d.Reject(false))
		case <-ctx.Done():
			t.Fatalf("only %d of %d delivered to the failing consumer", i, n)
		}
	}
	mustDo(t, ch.Cancel("failing", false))
	rabbittest.WaitDepth(t, ch, "orders.dlq", n, time.Minute)
}

func TestStoreRestartMidOutboxJob(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a private PostgreSQL")
	}
	pg, storeDSN := privateStore(t)
	orders := pgtest.NewDatabase(t)
	pgtest.Exec(t, orders, pgoutbox.SeedDDL)
	pgtest.Exec(t, orders, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, last_error, created_at)
		SELECT 'm-' || (g - 1), 'Order', 'o' || (g % 97), 'OrderCreated', 1, '{}', 'DEAD', 10, now(),
			'IllegalStateException: no stock', now() - (g || ' seconds')::interval
		FROM generate_series(1, $1::int) g`, restartN)
	a, _ := engineApp(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q}]
replay: {lease: 2s}
`, storeDSN, orders))

	ctx := waittest.Context(t, 3*time.Minute)
	ob := restartDuringJob(t, a, pg, storeDSN, replay.Source{Kind: "outbox", Outbox: "orders", Limit: restartN, ResetAttempts: true})

	// psql-level: every planned row READY, once, with its attempts reset.
	conn, err := pgx.Connect(ctx, orders)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows, ready, distinct, reset int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'READY'), count(DISTINCT event_id),
			count(*) FILTER (WHERE attempts = 0) FROM outbox_event`).Scan(&rows, &ready, &distinct, &reset); err != nil {
		t.Fatal(err)
	}
	if rows != restartN || ready != restartN || distinct != restartN || reset != restartN {
		t.Errorf("outbox after the job: %d rows, %d READY, %d distinct event ids, %d with attempts reset; want %d of each",
			rows, ready, distinct, reset, restartN)
	}
	t.Logf("outbox: %d rows, %d READY; ledger marks %d resumed", rows, ready, len(ob.resumedLedger))
	if ob.final.Failed > 0 {
		// A batch whose requeue committed before the interruption is settled, on resume, as
		// requeued by this job — not failed because the conditional update now matches nothing.
		var detail string
		conn, err := pgx.Connect(ctx, storeDSN)
		if err == nil {
			_ = conn.QueryRow(ctx, `SELECT detail FROM `+store.Schema+`.replay_ledger WHERE job_id = $1 AND outcome = 'failed' LIMIT 1`, ob.final.ID).Scan(&detail)
			conn.Close(ctx)
		}
		t.Errorf("every event is READY once, but the job reports %d of them failed (%q); %d were cut off between "+
			"their requeue and its settle", ob.final.Failed, detail, ob.held)
	}
}
