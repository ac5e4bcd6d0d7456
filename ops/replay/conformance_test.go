package replay_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/storetest"
)

// The conformance suite (issue 33; river's riverdrivertest is the model): what every kind of
// source the engine replays from keeps, whatever its adapter. Each kind is one fixture in
// sourceKinds; every behaviour below runs on each. A new kind of source is one adapter and one
// line there. What the fixtures count, they count with a client of the system's own (kgo,
// amqp091, SQL), never through the adapter under test.

// suiteWorld is one kind's dead letters, set up for a behaviour: the ids conformanceIDs names,
// the last of them with hostile bytes.
type suiteWorld struct {
	e   *replay.Engine
	src replay.Source // every dead letter of the world
	// left is how many dead letters the source still holds.
	left func(t *testing.T) int
	// delivered is what reached the destination: each id's copies, and the bytes of its last.
	delivered func(t *testing.T) map[string][][]byte
	// processed records ids as processed in the consumer's inbox; nil for a kind without one
	// (an outbox's events go back to its relay).
	processed func(t *testing.T, ids ...string)
	// removes: a replay takes its messages out of the source (a queue, an outbox's DEAD state);
	// a Kafka dead-letter topic keeps its records, and the ledger says which were replayed.
	removes bool
	// replica is another console replica: an engine over the same store and systems, with the
	// same short job lease as e.
	replica func(t *testing.T) *replay.Engine
}

type sourceKind struct {
	name string
	make func(t *testing.T, ids []string, hostile []byte) suiteWorld
}

// conformanceIDs are the suite's message ids: n-1 plain ones and c-hostile, whose bytes are
// hostileBytes (or, for an outbox, whose payload holds hostileText).
func conformanceIDs(n int) []string {
	ids := make([]string, 0, n)
	for i := range n - 1 {
		ids = append(ids, fmt.Sprintf("c-%d", i))
	}
	return append(ids, "c-hostile")
}

// hostileBytes: a NUL, invalid UTF-8, a terminal escape and a right-to-left override.
var hostileBytes = []byte("{\"messageId\":\"c-hostile\"}\x00\xff\xfe\x1b[31m\u202etxt.exe")

// hostileText is hostileBytes' text that a JSON column can hold: PostgreSQL's JSONB refuses NUL.
const hostileText = "\x1b[31m\u202etxt.exe \xe2\x80\x8b"

var sourceKinds = []sourceKind{
	{"Kafka", kafkaSuiteWorld},
	{"RabbitMQClassic", func(t *testing.T, ids []string, hostile []byte) suiteWorld {
		return rabbitSuiteWorld(t, nil, ids, hostile)
	}},
	{"RabbitMQQuorum", func(t *testing.T, ids []string, hostile []byte) suiteWorld {
		return rabbitSuiteWorld(t, amqp.Table{"x-queue-type": "quorum"}, ids, hostile)
	}},
	{"OutboxPostgreSQL", func(t *testing.T, ids []string, _ []byte) suiteWorld { return outboxSuiteWorld(t, "postgres", ids) }},
	{"OutboxMariaDB", func(t *testing.T, ids []string, _ []byte) suiteWorld { return outboxSuiteWorld(t, "mysql", ids) }},
}

func TestSourceConformance(t *testing.T) {
	for _, k := range sourceKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			t.Run("PlanReadsWithoutDisturbing", func(t *testing.T) { conformPlanReadsWithoutDisturbing(t, k) })
			t.Run("ReplayDeliversEachOnce", func(t *testing.T) { conformReplayDeliversEachOnce(t, k) })
			t.Run("TwoOperatorsStartOnePlan", func(t *testing.T) { conformTwoOperators(t, k) })
			t.Run("ReplicaDiesMidJob", func(t *testing.T) { conformReplicaDiesMidJob(t, k) })
		})
	}
}

const conformN = 12

// Planning reads the source and changes nothing in it: twice the same plan, every message still
// there, nothing delivered.
func conformPlanReadsWithoutDisturbing(t *testing.T, k sourceKind) {
	ids := conformanceIDs(conformN)
	w := k.make(t, ids, hostileBytes)
	ctx := ctxT(t)
	var totals []int
	for range 2 {
		p, err := w.e.Plan(ctx, "alice", w.src, replay.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		totals = append(totals, p.Total)
	}
	if totals[0] != conformN || totals[1] != conformN {
		t.Fatalf("plans of %v messages; want %d twice", totals, conformN)
	}
	if n := w.left(t); n != conformN {
		t.Fatalf("the source holds %d after two plans; want %d", n, conformN)
	}
	if d := w.delivered(t); len(d) != 0 {
		t.Fatalf("planning delivered %d ids", len(d))
	}
}

// A replay delivers each message its plan publishes exactly once, byte for byte, skips what the
// consumer's inbox processed, and leaves the source holding only what it skipped.
func conformReplayDeliversEachOnce(t *testing.T, k sourceKind) {
	ids := conformanceIDs(conformN)
	w := k.make(t, ids, hostileBytes)
	ctx := ctxT(t)
	skipped := 0
	if w.processed != nil {
		w.processed(t, ids[0])
		skipped = 1
	}
	plan, err := w.e.Plan(ctx, "alice", w.src, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Counts[replay.Publish] != conformN-skipped || plan.Counts[replay.SkipProcessed] != skipped {
		t.Fatalf("plan %v; want %d to publish, %d processed", plan.Counts, conformN-skipped, skipped)
	}
	work(t, w.e)
	job := runJob(t, w.e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "conformance"})
	if job.Status != replay.JobDone || job.Published != conformN-skipped {
		t.Fatalf("job %s: %d published, %s", job.Status, job.Published, job.Error)
	}
	checkDeliveredOnce(t, w, ids[skipped:])
	if skipped == 1 {
		if d := w.delivered(t); d[ids[0]] != nil {
			t.Errorf("%s, processed by the consumer, was delivered", ids[0])
		}
	}
	wantLeft := conformN
	if w.removes {
		wantLeft = skipped
	}
	if n := w.left(t); n != wantLeft {
		t.Fatalf("the source holds %d after the replay; want %d", n, wantLeft)
	}
	// Run twice: a second plan of the same source publishes nothing again.
	again, err := w.e.Plan(ctx, "alice", w.src, replay.Filter{})
	if err == nil && again.Counts[replay.Publish] != 0 {
		t.Fatalf("a second plan would publish %d again: %v", again.Counts[replay.Publish], again.Counts)
	}
	if err != nil && !errors.Is(err, ops.ErrInvalid) { // "the selection holds no messages"
		t.Fatal(err)
	}
}

// Two operators start the same plan at once: one job moves the source at a time, and every
// message arrives once.
func conformTwoOperators(t *testing.T, k sourceKind) {
	ids := conformanceIDs(conformN)
	w := k.make(t, ids, hostileBytes)
	ctx := ctxT(t)
	plan, err := w.e.Plan(ctx, "alice", w.src, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	work(t, w.e)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		started []replay.Job
		refused []error
	)
	for _, who := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, err := w.e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: who}, Reason: "race"})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused = append(refused, err)
				return
			}
			started = append(started, j)
		}()
	}
	wg.Wait()
	// One job moves a source at a time: the other start is refused while it runs, or — when the
	// first has finished already — runs and finds nothing left to publish (the ledger).
	for _, err := range refused {
		if !errors.Is(err, ops.ErrConflict) {
			t.Fatalf("a start refused with %v; want a conflict", err)
		}
	}
	published := 0
	for _, j := range started {
		j = waitJob(t, w.e, j.ID)
		if j.Status != replay.JobDone {
			t.Fatalf("job %s: %s", j.Status, j.Error)
		}
		published += j.Published
	}
	if len(started) == 0 || published != conformN {
		t.Fatalf("%d jobs started (%d refused), %d published between them; want %d", len(started), len(refused), published, conformN)
	}
	checkDeliveredOnce(t, w, ids)
}

// A replica dies in the middle of a job: its worker stops holding the job's lease, between a
// publish, its confirm and the settling of the source as it may (a queue's unsettled deliveries go
// back to it when the channel goes; an outbox's batch commits or not). Another replica resumes the
// job once the lease expires and finishes it: every message arrives, none twice beyond the batch
// in flight at the death (at least once in that window: the consumer's inbox absorbs it), c-hostile
// byte for byte, and the source ends as after a replay that never stopped.
func conformReplicaDiesMidJob(t *testing.T, k sourceKind) {
	const n, rate = 60, 20 // three seconds of work: the death lands mid-job
	ids := conformanceIDs(n)
	w := k.make(t, ids, hostileBytes)
	ctx := ctxT(t)
	plan, err := w.e.Plan(ctx, "alice", w.src, replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != n {
		t.Fatalf("plan %v, %v; want %d to publish", plan.Counts, err, n)
	}
	job, err := w.e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "dies", RatePerSecond: rate})
	if err != nil {
		t.Fatal(err)
	}
	die := work(t, w.e)
	waitPublished(t, w.e, job.ID, 5, 30*time.Second)
	die()
	mid, err := w.e.Job(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if mid.Status != replay.JobRunning || mid.Published >= n {
		t.Fatalf("after the death: %s with %d of %d published; want it running, mid-way", mid.Status, mid.Published, n)
	}
	b := w.replica(t)
	work(t, b)
	final := waitJob(t, b, job.ID)
	if final.Status != replay.JobDone || final.Published != n || final.Failed != 0 {
		t.Fatalf("resumed job: %s, %d published, %d failed (%s); want done, %d published", final.Status, final.Published,
			final.Failed, final.Error, n)
	}
	got := waitDelivered(t, w, n)
	again := 0
	for _, id := range ids {
		copies := got[id]
		if len(copies) == 0 {
			t.Errorf("%s was lost", id)
			continue
		}
		again += len(copies) - 1
		if id == "c-hostile" && copies[0] != nil && !bytes.Equal(copies[len(copies)-1], hostileBytes) {
			t.Errorf("c-hostile arrived as %q; want %q", copies[len(copies)-1], hostileBytes)
		}
	}
	if again > rate {
		t.Errorf("%d copies beyond the first: settled messages were sent again (at most the batch in flight may be)", again)
	}
	t.Logf("died at %d published; %d sent again after the resume", mid.Published, again)
	wantLeft := n
	if w.removes {
		wantLeft = 0
	}
	if left := w.left(t); left != wantLeft {
		t.Errorf("the source holds %d after the resumed job; want %d", left, wantLeft)
	}
}

// checkDeliveredOnce checks that each id in want reached the destination exactly once, and
// c-hostile with its bytes intact (an outbox's events are not copied: its row is requeued).
func checkDeliveredOnce(t *testing.T, w suiteWorld, want []string) {
	t.Helper()
	got := waitDelivered(t, w, len(want))
	for _, id := range want {
		copies := got[id]
		if len(copies) != 1 {
			t.Errorf("%s delivered %d times", id, len(copies))
			continue
		}
		if id == "c-hostile" && copies[0] != nil && !bytes.Equal(copies[0], hostileBytes) {
			t.Errorf("c-hostile arrived as %q; want %q", copies[0], hostileBytes)
		}
	}
}

// waitDelivered reads the destination until it holds at least n ids (a broker's confirm can come
// before a consumer of the destination sees the message), then once more to see any extra copy.
func waitDelivered(t *testing.T, w suiteWorld, n int) map[string][][]byte {
	t.Helper()
	got := map[string][][]byte{}
	deadline := time.Now().Add(30 * time.Second)
	for {
		for id, cs := range w.delivered(t) {
			got[id] = append(got[id], cs...)
		}
		if len(got) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	for id, cs := range w.delivered(t) {
		got[id] = append(got[id], cs...)
	}
	return got
}

// kafkaSuiteWorld: Spring-style dead letters on orders.DLT[0], replayed to orders.
func kafkaSuiteWorld(t *testing.T, ids []string, hostile []byte) suiteWorld {
	w := newWorld(t)
	for _, id := range ids {
		r := deadLetterRecord(0, id, "k-"+id, "java.lang.IllegalStateException")
		if id == "c-hostile" {
			r.Value = hostile
		}
		if err := w.client.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	seen := 0 // records of orders read so far: delivered returns what is new since
	return suiteWorld{
		e:       w.engine(t, "conformance"),
		replica: func(t *testing.T) *replay.Engine { return w.engine(t, "conformance-b") },
		src:     kafkaSource(0, 0, int64(len(ids))),
		left: func(t *testing.T) int {
			ends, err := w.adm.ListEndOffsets(ctxT(t), "orders.DLT")
			if err != nil {
				t.Fatal(err)
			}
			o, _ := ends.Lookup("orders.DLT", 0)
			return int(o.Offset)
		},
		delivered: func(t *testing.T) map[string][][]byte {
			all := w.originals(t)
			out := map[string][][]byte{}
			for _, r := range all[min(seen, len(all)):] {
				id, _ := header(r, "messageId")
				out[id] = append(out[id], r.Value)
			}
			seen = len(all)
			return out
		},
		processed: func(t *testing.T, ids ...string) { w.processed(t, ids...) },
	}
}

// rabbitSuiteWorld: dead letters in orders.dlq (declared with dlqArgs), replayed to orders.work
// through the orders exchange.
func rabbitSuiteWorld(t *testing.T, dlqArgs amqp.Table, ids []string, hostile []byte) suiteWorld {
	w := newRabbitWorldWith(t, dlqArgs)
	death := deathOf("order.created")
	for _, id := range ids {
		body := []byte(fmt.Sprintf(`{"messageId":%q}`, id))
		if id == "c-hostile" {
			body = hostile
		}
		w.putDLQ(t, amqp.Publishing{MessageId: id, DeliveryMode: amqp.Persistent, Headers: amqp.Table{"x-death": death}, Body: body})
	}
	w.waitDepth(t, "orders.dlq", len(ids))
	return suiteWorld{
		e:    w.engine(t),
		src:  replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 1000},
		left: func(t *testing.T) int { return w.depth(t, "orders.dlq") },
		delivered: func(t *testing.T) map[string][][]byte {
			out := map[string][][]byte{}
			for _, d := range w.drain(t, "orders.work") {
				out[d.MessageId] = append(out[d.MessageId], d.Body)
			}
			return out
		},
		processed: func(t *testing.T, ids ...string) {
			for _, id := range ids {
				pgtest.Exec(t, w.inboxDSN, `INSERT INTO inbox_message VALUES ($1, 'inventory-service', now(), now())`, id)
			}
		},
		removes: true,
		replica: func(t *testing.T) *replay.Engine { return w.engine(t) },
	}
}

// seedOutbox is a fresh database of dialect ("postgres" or "mysql") holding the seed's outbox
// table, opened as outbox "orders" the way the console opens it: exec runs a statement ($1 is
// MariaDB's ? too), text and count read one value, now is the database's clock in SQL, and dead
// inserts one DEAD event per id with the payload given.
type seedOutbox struct {
	o     *outbox.Outbox
	exec  func(t *testing.T, q string, args ...any)
	text  func(t *testing.T, q string, args ...any) string
	count func(t *testing.T, q string) int
	now   string
	// truncate empties the table and restarts its ids (a MariaDB TRUNCATE restarts them too).
	truncate string
}

func openSeedOutbox(t *testing.T, dialect string) seedOutbox {
	var dsn string
	var open func(cfg configs.Outbox) (*outbox.Outbox, error)
	var so seedOutbox
	if dialect == "postgres" {
		dsn = pgtest.NewDatabase(t)
		pgtest.Exec(t, dsn, pgoutbox.SeedDDL)
		so.exec = func(t *testing.T, q string, args ...any) { pgtest.Exec(t, dsn, q, args...) }
		so.text = func(t *testing.T, q string, args ...any) string { return pgtest.Value[string](t, dsn, q, args...) }
		so.count = func(t *testing.T, q string) int { return int(pgtest.Value[int64](t, dsn, q)) }
		open = func(cfg configs.Outbox) (*outbox.Outbox, error) { return pgoutbox.Open(ctxT(t), cfg) }
		so.now, so.truncate = "now()", "TRUNCATE outbox_event RESTART IDENTITY"
	} else {
		dsn = mysqltest.NewDatabase(t)
		mysqltest.Exec(t, dsn, mysqloutbox.SeedDDL)
		so.exec = func(t *testing.T, q string, args ...any) {
			mysqltest.Exec(t, dsn, strings.ReplaceAll(q, "$1", "?"), args...)
		}
		so.text = func(t *testing.T, q string, args ...any) string {
			return mysqltest.Value[string](t, dsn, strings.ReplaceAll(q, "$1", "?"), args...)
		}
		so.count = func(t *testing.T, q string) int { return int(mysqltest.Value[int64](t, dsn, q)) }
		open = func(cfg configs.Outbox) (*outbox.Outbox, error) { return mysqloutbox.Open(ctxT(t), cfg) }
		so.now, so.truncate = "UTC_TIMESTAMP(6)", "TRUNCATE TABLE outbox_event"
	}
	cfg, err := configs.Parse([]byte(fmt.Sprintf("auth: {mode: none}\nstore: {dsn: \"postgres://x@127.0.0.1/y\"}\noutboxes: [{name: orders, dsn: %q}]\n", dsn)),
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if so.o, err = open(cfg.Outboxes[0]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(so.o.Close)
	return so
}

// dead inserts a DEAD event with this event id and payload.
func (so seedOutbox) dead(t *testing.T, id, payload string) {
	so.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, last_error, created_at)
		VALUES ('`+id+`', 'Order', 'o-1', 'OrderCreated', 1, $1, 'DEAD', 10, `+so.now+`, 'boom', `+so.now+`)`, payload)
}

// outboxSuiteWorld: the seed's outbox table in PostgreSQL or MariaDB (dialect), one DEAD event per
// id (c-hostile's payload holds hostileText), replayed by requeueing them (READY again).
func outboxSuiteWorld(t *testing.T, dialect string, ids []string) suiteWorld {
	so := openSeedOutbox(t, dialect)
	o, count := so.o, so.count
	for _, id := range ids {
		payload := `{"orderId":"o-1"}`
		if id == "c-hostile" {
			payload = fmt.Sprintf(`{"note":%q}`, hostileText)
		}
		so.dead(t, id, payload)
	}
	st := storetest.Open(t)
	engine := func(t *testing.T) *replay.Engine {
		e, err := replay.New(replay.Options{Store: st, Outboxes: []replay.OutboxTable{o}, Lease: 2 * time.Second, Poll: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	var readyBefore []string // an outbox "delivers" by requeueing: READY rows, each counted once
	return suiteWorld{
		e:       engine(t),
		replica: engine,
		src:     replay.Source{Kind: "outbox", Outbox: "orders", Limit: 1000, ResetAttempts: true},
		left:    func(t *testing.T) int { return count(t, "SELECT count(*) FROM outbox_event WHERE status = 'DEAD'") },
		delivered: func(t *testing.T) map[string][][]byte {
			out := map[string][][]byte{}
			for _, id := range ids {
				if count(t, "SELECT count(*) FROM outbox_event WHERE status = 'READY' AND attempts = 0 AND event_id = '"+id+"'") == 1 &&
					!slices.Contains(readyBefore, id) {
					readyBefore = append(readyBefore, id)
					out[id] = [][]byte{nil}
				}
			}
			if n := count(t, "SELECT count(*) FROM outbox_event WHERE payload LIKE '%txt.exe%'"); n != 1 {
				t.Errorf("%d rows hold c-hostile's payload; want 1, unchanged", n)
			}
			return out
		},
		removes: true,
	}
}
