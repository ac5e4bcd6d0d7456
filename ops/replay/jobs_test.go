package replay_test

// A job's life: one job per source at a time however many operators and replicas press Run,
// cancelled within a batch, resumed by another replica, paused while its broker fails and
// cancelled or resumed from there.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/replay"
)

// One job moves a source at a time: a second job on the same DLT is refused with a conflict that
// names the running one; once the first ends, it starts.
func TestOneJobPerSource(t *testing.T) {
	w := newWorld(t)
	w.deadLetters(t, 200, nil)
	e := w.engine(t, "a")
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "a", kafkaSource(0, 0, 1000), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	// 20 operators press Run at once: exactly one job is created.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var started []replay.Job
	var conflicts int
	for range 20 {
		wg.Go(func() {
			job, err := e.Start(context.Background(), replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "a"}, RatePerSecond: 50})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				started = append(started, job)
			case errors.Is(err, ops.ErrConflict) && strings.Contains(err.Error(), "is moving kafka main topic orders.DLT"):
				conflicts++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(started) != 1 || conflicts != 19 {
		t.Fatalf("%d jobs started, %d conflicts; want 1 and 19", len(started), conflicts)
	}
	_, err = e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "b"}})
	if err == nil || !strings.Contains(err.Error(), started[0].ID) {
		t.Fatalf("a second job while %s is pending: %v (want a conflict naming it)", started[0].ID, err)
	}
	work(t, e)
	if j := waitJob(t, e, started[0].ID); j.Status != replay.JobDone {
		t.Fatalf("first job %+v", j)
	}
	again, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "b"}})
	if err != nil {
		t.Fatalf("after the first job ended: %v", err)
	}
	if j := waitJob(t, e, again.ID); j.Status != replay.JobDone || j.Published != 0 {
		t.Fatalf("second job %+v", j)
	}
}

// Twenty operators replay the same dead letter at once, each with their own plan and job, on
// twenty engines (replicas): one job moves the topic at a time (the others are refused, naming
// it), and the ledger lets exactly one publish it.
func TestConcurrentReplaysPublishOnce(t *testing.T) {
	w := newWorldWith(t, "X", 0)
	ctx := ctxT(t)
	const n = 20
	engines := make([]*replay.Engine, n)
	plans := make([]replay.Plan, n)
	for i := range engines {
		engines[i] = w.engine(t, fmt.Sprintf("replica-%d", i))
		p, err := engines[i].Plan(ctx, "op", kafkaSource(0, 0, 0), replay.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		plans[i] = p
	}
	var jobs []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range engines {
		wg.Go(func() {
			j, err := engines[i].Start(ctx, replay.StartRequest{PlanID: plans[i].ID, Actor: access.Actor{Name: fmt.Sprintf("op%d", i)}, RatePerSecond: 1000})
			if errors.Is(err, ops.ErrConflict) && strings.Contains(err.Error(), "is moving kafka main topic orders.DLT") {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			jobs = append(jobs, j.ID)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(jobs) != 1 {
		t.Fatalf("%d jobs started on one topic at once, want 1", len(jobs))
	}
	for _, e := range engines {
		work(t, e)
	}
	published := 0
	for _, id := range jobs {
		j := waitJob(t, engines[0], id)
		published += j.Published
		if j.Published+j.Skipped != 1 || j.Failed != 0 {
			t.Errorf("job %+v", j)
		}
	}
	if published != 1 {
		t.Fatalf("%d jobs published the message, want exactly 1", published)
	}
	if got := len(w.originals(t)); got != 1 {
		t.Fatalf("%d copies on the original topic, want 1", got)
	}
}

// Cancelling a running Kafka job stops it within a batch: claims not yet publishing are released
// (skipped, so a later replay may send them), and the original topic holds exactly the published.
func TestKafkaCancelStopsWithinABatch(t *testing.T) {
	w := newWorld(t)
	const n = 400
	w.deadLetters(t, n, nil)
	e := w.engine(t, "replica")
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "ops", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 20}) // batches of 20
	if err != nil {
		t.Fatal(err)
	}
	work(t, e)
	waitPublished(t, e, job.ID, 20, time.Minute)
	before, err := e.Cancel(ctx, job.ID, access.Actor{Name: "ops", Role: access.Admin})
	if err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, e, job.ID)
	if job.Status != replay.JobCancelled || job.Published > before.Published+2*20 {
		t.Fatalf("cancelled at %d published, ended %+v", before.Published, job)
	}
	if got := len(w.originals(t)); got != job.Published {
		t.Fatalf("%d records on the original topic, the ledger says %d published", got, job.Published)
	}
	// Released claims hold nothing: a new plan of the same records publishes the rest.
	again, err := e.Plan(ctx, "ops", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Counts[replay.Publish] != n-job.Published || again.Counts[replay.SkipAlreadyReplayed] != job.Published {
		t.Fatalf("second plan %v after %d published", again.Counts, job.Published)
	}
}

// A replica dies mid-job (its worker stops without releasing the lease); another resumes after the
// lease expires and finishes: every message arrives, settled batches are not redone.
func TestKafkaJobResumesOnAnotherReplica(t *testing.T) {
	w := newWorld(t)
	const n = 300
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: "orders.DLT", Partition: 0, Key: []byte(fmt.Sprint(i)),
			Value: []byte(fmt.Sprintf(`{"messageId":"m-%d"}`, i)),
			Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("X")}, {Key: "messageId", Value: []byte(fmt.Sprintf("m-%d", i))}}})
	}
	if err := w.client.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	a, b := w.engine(t, "replica-a"), w.engine(t, "replica-b")
	ctx := ctxT(t)
	plan, err := a.Plan(ctx, "ops", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != n {
		t.Fatalf("plan %v %v", plan.Counts, err)
	}
	job, err := a.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 100})
	if err != nil {
		t.Fatal(err)
	}
	stopA := work(t, a)
	waitPublished(t, a, job.ID, 100, 20*time.Second)
	stopA() // replica a dies holding the lease
	mid, _ := a.Job(ctx, job.ID)
	if mid.Status != replay.JobRunning || mid.Published >= n {
		t.Fatalf("after a's death: %+v", mid)
	}
	work(t, b)
	final := waitJob(t, b, job.ID)
	if final.Status != replay.JobDone || final.Published != n || final.Failed != 0 {
		t.Fatalf("resumed job %+v", final)
	}
	got := w.originalIDs(t)
	dups := 0
	for i := 0; i < n; i++ {
		c := got[fmt.Sprintf("m-%d", i)]
		if c == 0 {
			t.Fatalf("m-%d was lost", i)
		}
		dups += c - 1
	}
	// At most the batch in flight when a died is published twice (at-least-once in that window).
	if dups > 100 {
		t.Fatalf("%d duplicates: settled batches were redone", dups)
	}
}

// A job whose broker answers every produce with NOT_ENOUGH_REPLICAS (acks=all with the ISR below
// min.insync.replicas) stayed running for ever with no progress and no reason: the idempotent
// producer retries that answer without end. The wait is bounded, the batch's outcome is unknown,
// so the job pauses saying why and sends it again once the broker recovers. The broker wrote
// nothing while refusing, so each message ends on the original topic exactly once (in general at
// least once: a resumed message may be a duplicate the consumer's inbox absorbs).
func TestKafkaJobPausesWhileTheBrokerRefusesProduces(t *testing.T) {
	w, broker := newWorldAndBroker(t)
	ids := []string{"m-1", "m-2", "m-3"}
	for _, id := range ids {
		w.deadLetter(t, 0, id, "k"+id, "com.acme.StockException")
	}
	cfg := w.cfg.Kafka[0]
	cfg.RequestTimeout = configs.Duration(time.Second) // the wait is 3 request timeouts
	fast, err := kafka.New(cfg, w.cfg.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fast.Close)
	w.cluster = fast
	var down atomic.Bool
	var refused atomic.Int64
	broker.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		broker.KeepControl()
		if !down.Load() {
			return nil, nil, false
		}
		refused.Add(1)
		req := r.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewProduceResponseTopic()
			t.Topic, t.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				p := kmsg.NewProduceResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, kerr.NotEnoughReplicas.Code
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil, true
	})
	e := w.engine(t, "a")
	job := startPaused(t, e, &down)
	if job.Status != replay.JobRunning || job.Published != 0 || job.Failed != 0 ||
		!strings.Contains(job.Paused, `kafka cluster "main" did not acknowledge the records within 3s`) {
		t.Fatalf("job %s published %d failed %d paused %q; want running, nothing settled, paused on the unacknowledged produce",
			job.Status, job.Published, job.Failed, job.Paused)
	}
	if refused.Load() == 0 {
		t.Fatal("the broker refused no produce")
	}
	if got := w.originals(t); len(got) != 0 {
		t.Fatalf("%d records on the original topic while the broker refused them", len(got))
	}
	down.Store(false)
	job = waitJob(t, e, job.ID)
	if job.Status != replay.JobDone || job.Published != 3 || job.Failed != 0 || job.Paused != "" {
		t.Fatalf("job %s published %d failed %d paused %q; want done, 3 published", job.Status, job.Published, job.Failed, job.Paused)
	}
	seen := w.originalIDs(t)
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("%s is on the original topic %d times, want once (all: %v)", id, seen[id], seen)
		}
	}
}

// A job paused because its broker stopped answering, then cancelled, ends holding
// nothing: its claims are released (failed: it may have published them), so the next plan of the
// same records publishes them again instead of calling them replayed — and, once the broker
// answers again, that job does publish them, once.
func TestCancelWhilePausedReleasesItsClaims(t *testing.T) {
	w, broker := newWorldAndBroker(t)
	for _, id := range []string{"m-1", "m-2", "m-3"} {
		w.deadLetter(t, 0, id, "k"+id, "com.acme.StockException")
	}
	var down atomic.Bool
	// While down, the broker cuts every fetch: the job cannot read the dead letters it claimed
	// (a read bounded by the cluster's request timeout) and pauses.
	broker.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		broker.KeepControl()
		if down.Load() {
			return nil, errors.New("the broker cuts fetches"), true
		}
		return nil, nil, false
	})
	e := w.engine(t, "a")
	ctx := ctxT(t)
	job := startPaused(t, e, &down)
	if _, err := e.Cancel(ctx, job.ID, access.Actor{Name: "alice", Role: access.Operator}); err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, e, job.ID)
	if job.Status != replay.JobCancelled || job.Published != 0 || job.Failed != 3 {
		t.Fatalf("job %s published %d failed %d; want cancelled with its 3 claims released as failed", job.Status, job.Published, job.Failed)
	}
	if !w.audit.has("replay.finish", `"failed":3`, `"status":"cancelled"`) {
		t.Errorf("the audit's replay.finish does not count the 3 released claims failed")
	}
	down.Store(false)
	again, err := e.Plan(ctx, "alice", kafkaSource(0, 0, 99), replay.Filter{})
	if err != nil || again.Counts[replay.Publish] != 3 {
		t.Fatalf("second plan %v, %v; want the 3 to publish (before the fix: skip_already_replayed)", again.Counts, err)
	}
	if job2 := runJob(t, e, replay.StartRequest{PlanID: again.ID, Actor: access.Actor{Name: "alice"}, Reason: "r", RatePerSecond: 1000}); job2.Status != replay.JobDone || job2.Published != 3 {
		t.Fatalf("second job %s published %d; want done, 3", job2.Status, job2.Published)
	}
	if got := w.originals(t); len(got) != 3 {
		t.Fatalf("%d records on the original topic, want 3", len(got))
	}
}

// A later batch's gate failing (here its ledger claim, once) stops the pipeline, but not the
// batch already sent: it is seen through — its acks awaited, its outcomes settled — before the
// job pauses, so the retry starts after it. Abandoned, its claims were resumed on the retry and
// every one of its records produced twice, though the broker had taken them. The first batch's
// produce is held at the broker for a second and the second claim fails half a second in, so the
// failure lands while the first batch is at the broker.
func TestAGateFailureSeesTheBatchInFlightThrough(t *testing.T) {
	w, broker := newWorldAndBroker(t)
	const n = 2 * 5000 // two batches
	w.deadLetters(t, n, nil)
	var produces atomic.Int32
	broker.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		broker.KeepControl()
		if produces.Add(1) == 1 {
			time.Sleep(time.Second)
		}
		return nil, nil, false
	})
	e := w.engineOn(t, "a", &claimFailsOnce{Store: w.store, at: 2, after: 500 * time.Millisecond})
	work(t, e)
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "alice", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != n {
		t.Fatalf("plan: %v, %v", err, plan.Counts)
	}
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, RatePerSecond: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, e, job.ID)
	if job.Status != replay.JobDone || job.Published != n {
		t.Fatalf("job %s published %d failed %d; want done with %d", job.Status, job.Published, job.Failed, n)
	}
	seen := w.originalIDs(t)
	twice := 0
	for _, c := range seen {
		if c > 1 {
			twice++
		}
	}
	if len(seen) != n || twice > 0 {
		t.Fatalf("%d ids on the original topic, %d of them more than once; want %d, each once", len(seen), twice, n)
	}
}

// claimFailsOnce is the store, but its at-th ledger claim fails, after a wait, as a store that did
// not answer.
type claimFailsOnce struct {
	replay.Store
	at    int32
	after time.Duration
	calls atomic.Int32
}

func (s *claimFailsOnce) Claim(ctx context.Context, jobID string, claims []replay.LedgerClaim, finals []replay.LedgerOutcome) (map[int]replay.LedgerState, error) {
	if s.calls.Add(1) == s.at {
		time.Sleep(s.after) // the batch before it is at the broker by then
		return nil, ops.Unavailable(errors.New("connection reset"), "Redrive's database did not answer (ledger claim)")
	}
	return s.Store.Claim(ctx, jobID, claims, finals)
}

// A run publishes a batch and the consumer processes it, but the settle does not reach the store
// (a connection reset); the retry resumes the batch's claims and the inbox now says processed.
// Those messages are settled skipped, not left in flight: the skip used to collide with the
// claim's own row and be dropped, and the job ended calling them failed ("may have been
// published") though the consumer had them. Each message is on the original topic once.
func TestAResumedClaimTheInboxNowKnowsIsSkipped(t *testing.T) {
	w := newWorld(t)
	ids := []string{"m-1", "m-2", "m-3"}
	for _, id := range ids {
		w.deadLetter(t, 0, id, "k"+id, "com.acme.StockException")
	}
	st := &settleFailsOnce{Store: w.store, before: func() { w.processed(t, ids...) }}
	e := w.engineOn(t, "a", st)
	work(t, e)
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "alice", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != len(ids) {
		t.Fatalf("plan: %v, %v", err, plan.Counts)
	}
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}})
	if err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, e, job.ID)
	if st.calls.Load() < 2 {
		t.Fatalf("%d settles; the first should have failed and the retry settled", st.calls.Load())
	}
	if job.Status != replay.JobDone || job.Skipped != len(ids) || job.Failed != 0 || job.Published != 0 {
		t.Fatalf("job %s: %d published, %d skipped, %d failed; want done with %d skipped (processed)", job.Status,
			job.Published, job.Skipped, job.Failed, len(ids))
	}
	entries, err := e.Ledger(ctx, job.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if en.Outcome != replay.LedgerSkipped || !strings.Contains(en.Detail, string(replay.SkipProcessed)) {
			t.Errorf("%s: %s %q; want skipped as processed", en.MessageID, en.Outcome, en.Detail)
		}
	}
	seen := w.originalIDs(t)
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("%s on the original topic %d times; want once (the first run's publish)", id, seen[id])
		}
	}
}

// settleFailsOnce is the store, but its first settle runs before (when set) and then fails as a
// store that did not answer.
type settleFailsOnce struct {
	replay.Store
	before func()
	calls  atomic.Int32
}

func (s *settleFailsOnce) Settle(ctx context.Context, jobID string, outcomes []replay.LedgerOutcome) error {
	if s.calls.Add(1) == 1 {
		if s.before != nil {
			s.before()
		}
		return ops.Unavailable(errors.New("connection reset"), "Redrive's database did not answer (ledger settle)")
	}
	return s.Store.Settle(ctx, jobID, outcomes)
}
