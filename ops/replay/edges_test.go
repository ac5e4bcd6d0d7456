package replay_test

// Replays at the edges: past the 16-bit prefetch, past a page and a pool, a finished plan run
// again, a partition that differs from the key's, a topic recreated under the same name.

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

// fillDLQ puts n dead letters (ids m-0 … m-{n-1}, in order) straight into orders.dlq, with the
// x-death table RabbitMQ writes when orders.work rejects them: much faster than a real rejection
// round trip for the large counts these tests need.
func (w *rabbitWorld) fillDLQ(t testing.TB, n int) {
	t.Helper()
	ctx := ctxT(t)
	death := []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "orders.work", "exchange": "orders",
		"routing-keys": []any{"order.created"}, "time": time.Now().UTC().Truncate(time.Second)}}
	for i := range n {
		id := fmt.Sprintf("m-%d", i)
		if err := w.ch.PublishWithContext(ctx, "", "orders.dlq", false, false, amqp.Publishing{MessageId: id,
			ContentType: "application/json", DeliveryMode: amqp.Persistent, Headers: amqp.Table{"x-death": death},
			Body: []byte(fmt.Sprintf(`{"messageId":%q}`, id))}); err != nil { // putDead's body: its copies are byte-identical
			t.Fatal(err)
		}
	}
	w.waitDepth(t, "orders.dlq", n)
}

// putDead puts dead letters with these ids into orders.dlq as fillDLQ does: what a broker returns
// after a crash, or a new one.
func (w *rabbitWorld) putDead(t testing.TB, ids ...string) {
	t.Helper()
	death := []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "orders.work", "exchange": "orders",
		"routing-keys": []any{"order.created"}, "time": time.Now().UTC().Truncate(time.Second)}}
	for _, id := range ids {
		if err := w.ch.PublishWithContext(ctxT(t), "", "orders.dlq", false, false, amqp.Publishing{MessageId: id,
			ContentType: "application/json", DeliveryMode: amqp.Persistent, Headers: amqp.Table{"x-death": death},
			Body: []byte(fmt.Sprintf(`{"messageId":%q}`, id))}); err != nil {
			t.Fatal(err)
		}
	}
}

// replayed fills the DLQ with n dead letters and has e replay them all: the job, done, and the n
// in orders.work.
func (w *rabbitWorld) replayed(t testing.TB, e *replay.Engine, n int) replay.Job {
	t.Helper()
	w.fillDLQ(t, n)
	work(t, e)
	job := w.run(t, e, w.planQueue(t, e, n, replay.Filter{}).ID)
	if job.Status != replay.JobDone || job.Published != n {
		t.Fatalf("job %+v; want done with %d published", job, n)
	}
	w.waitDepth(t, "orders.work", n)
	return job
}

func (w *rabbitWorld) planQueue(t testing.TB, e *replay.Engine, limit int, f replay.Filter) replay.Plan {
	t.Helper()
	plan, err := e.Plan(ctxT(t), "ops", replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: limit}, f)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func (w *rabbitWorld) run(t testing.TB, e *replay.Engine, planID string) replay.Job {
	t.Helper()
	job, err := e.Start(ctxT(t), replay.StartRequest{PlanID: planID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	return waitJob(t, e, job.ID)
}

// 70,000 selected messages: more than basic.qos's 16-bit prefetch can hold unacked (it once
// wrapped to 4,464). The plan sees them all and the job moves them all.
func TestRabbitReplayPastThePrefetchLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("70,000 messages")
	}
	const n = 70_000
	w := newRabbitWorld(t)
	w.fillDLQ(t, n)
	e := w.engine(t)
	plan := w.planQueue(t, e, n, replay.Filter{})
	if plan.Total != n || plan.Source.Span != n {
		t.Fatalf("plan holds %d messages over a span of %d, want %d", plan.Total, plan.Source.Span, n)
	}
	w.waitDepth(t, "orders.dlq", n) // planning moved nothing
	work(t, e)
	job := w.run(t, e, plan.ID)
	if job.Status != replay.JobDone || job.Published != n || job.Failed != 0 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.work", n)
	w.waitDepth(t, "orders.dlq", 0)
}

// A filter that selects the last 5 of 100,000: the plan reads the whole head, the job reads the
// same span and moves exactly those 5; the other 99,995 stay, in order.
func TestRabbitReplayOfTheLastFiveOfAHundredThousand(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 messages")
	}
	const n = 100_000
	w := newRabbitWorld(t)
	w.fillDLQ(t, n)
	e := w.engine(t)
	var last []string
	for i := n - 5; i < n; i++ {
		last = append(last, fmt.Sprintf("m-%d", i))
	}
	plan := w.planQueue(t, e, n, replay.Filter{MessageIDs: last})
	if plan.Total != 5 || plan.Source.Span != n {
		t.Fatalf("plan of %d over a span of %d", plan.Total, plan.Source.Span)
	}
	work(t, e)
	job := w.run(t, e, plan.ID)
	if job.Status != replay.JobDone || job.Published != 5 || job.Failed != 0 {
		ledger, _ := e.Ledger(ctxT(t), job.ID, 5)
		t.Fatalf("job %+v; ledger %+v", job, ledger)
	}
	w.waitDepth(t, "orders.dlq", n-5)
	var got []string
	for _, d := range w.drain(t, "orders.work") {
		got = append(got, d.MessageId)
	}
	slices.Sort(got) // two confirm channels publish a batch side by side: order across them is not kept
	if fmt.Sprint(got) != fmt.Sprint(last) {
		t.Fatalf("published %v, want %v", got, last)
	}
	head, err := w.broker.Browse(ctxT(t), w.vhost, "orders.dlq", 3)
	if err != nil || len(head.Messages) != 3 || head.Messages[0].MessageID != "m-0" || head.Messages[2].MessageID != "m-2" {
		t.Fatalf("the queue's head after the job: %+v, %v", head.Messages, err)
	}
}

// A plan run a second time: what the first job published is skip_already_replayed, naming the
// job, never "failed: not found in the queue"; nothing is published twice.
func TestRabbitPlanRunTwice(t *testing.T) {
	w := newRabbitWorld(t)
	w.fillDLQ(t, 180)
	e := w.engine(t)
	plan := w.planQueue(t, e, 500, replay.Filter{})
	work(t, e)
	first := w.run(t, e, plan.ID)
	if first.Published != 180 {
		t.Fatalf("first run %+v", first)
	}
	second := w.run(t, e, plan.ID)
	if second.Status != replay.JobDone || second.Published != 0 || second.Failed != 0 || second.Skipped != 180 {
		t.Fatalf("second run %+v", second)
	}
	ledger, err := e.Ledger(ctxT(t), second.ID, 5)
	if err != nil || len(ledger) == 0 || !strings.Contains(ledger[0].Detail, "skip_already_replayed") ||
		!strings.Contains(ledger[0].Detail, first.ID) {
		t.Fatalf("second run's ledger %+v, %v: want skip_already_replayed naming %s", ledger, err, first.ID)
	}
	w.waitDepth(t, "orders.work", 180)
}

// Twenty operators plan the same queue at once: every plan sees every message.
func TestRabbitTwentyConcurrentPlans(t *testing.T) {
	w := newRabbitWorld(t)
	w.fillDLQ(t, 40)
	e := w.engine(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			plan, err := e.Plan(ctxT(t), "ops", replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 100}, replay.Filter{})
			if err == nil && plan.Total != 40 {
				err = fmt.Errorf("a plan holds %d of 40 messages", plan.Total)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	w.waitDepth(t, "orders.dlq", 40)
}

// Twenty concurrent Kafka and outbox plans: none waits for a pooled connection while holding one.
func TestTwentyConcurrentPlans(t *testing.T) {
	w := newWorld(t)
	w.deadLetters(t, 300, nil)
	ke := w.engine(t, "a")
	oe, _ := outboxEngine(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, last_error, created_at)
		SELECT 'e'||i, 'Order', 'o'||i, 'OrderCreated', 1, '{}', 'DEAD', 10, now(), 'boom', now() FROM generate_series(1, 300) i`)
	cases := map[string]func() (replay.Plan, error){
		"kafka": func() (replay.Plan, error) { return ke.Plan(ctxT(t), "a", kafkaSource(0, 0, 10_000), replay.Filter{}) },
		"outbox": func() (replay.Plan, error) {
			return oe.Plan(ctxT(t), "a", replay.Source{Kind: "outbox", Outbox: "orders", Limit: 1000}, replay.Filter{})
		},
	}
	for name, plan := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			var wg sync.WaitGroup
			totals := make(chan int, 20)
			for range 20 {
				wg.Go(func() {
					p, err := plan()
					if err != nil {
						t.Error(err)
					}
					totals <- p.Total
				})
			}
			wg.Wait()
			close(totals)
			first := -1
			for n := range totals {
				if first < 0 {
					first = n
				}
				if n != first || n == 0 {
					t.Errorf("plans of %d and %d messages", first, n)
				}
			}
			t.Logf("20 concurrent %s plans in %v", name, time.Since(start))
		})
	}
}

// The dead-letter headers name the original partition; the key hashes elsewhere. The replay lands
// where the header says, and the plan says why.
func TestKafkaReplayKeepsTheOriginalPartition(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	if _, err := w.adm.CreateTopic(ctx, 4, 1, nil, "payments"); err != nil {
		t.Fatal(err)
	}
	key := ""
	for i := 0; key == ""; i++ { // a key whose hash is not partition 2
		if k := fmt.Sprintf("k-%d", i); kafka.KeyPartition("payments", []byte(k), 4) != 2 {
			key = k
		}
	}
	keyPart := kafka.KeyPartition("payments", []byte(key), 4)
	part := make([]byte, 4)
	binary.BigEndian.PutUint32(part, 2)
	dlt := func(id string, header []byte) *kgo.Record {
		h := []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("payments")}, {Key: "messageId", Value: []byte(id)}}
		if header != nil {
			h = append(h, kgo.RecordHeader{Key: "kafka_dlt-original-partition", Value: header})
		}
		return &kgo.Record{Topic: "orders.DLT", Partition: 0, Key: []byte(key), Value: []byte(`{}`), Headers: h}
	}
	gone := make([]byte, 4)
	binary.BigEndian.PutUint32(gone, 9) // payments has no partition 9
	if err := w.client.ProduceSync(ctx, dlt("by-header", part), dlt("no-header", nil), dlt("gone", gone)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e := w.engine(t, "a")
	plan, err := e.Plan(ctx, "a", kafkaSource(0, 0, 10), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]replay.Destination{
		"by-header": {Partition: 2, PartitionSource: replay.PartitionFromHeader},
		"no-header": {Partition: keyPart, PartitionSource: replay.PartitionFromKey},
		"gone":      {Partition: keyPart, PartitionSource: replay.PartitionFromKey},
	}
	for _, it := range plan.Items {
		d, w := it.Destination, want[it.MessageID]
		if d.Partition != w.Partition || d.PartitionSource != w.PartitionSource {
			t.Errorf("%s: planned partition %d from %q, want %d from %q", it.MessageID, d.Partition, d.PartitionSource, w.Partition, w.PartitionSource)
		}
	}
	work(t, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if job = waitJob(t, e, job.ID); job.Published != 3 {
		t.Fatalf("job %+v", job)
	}
	// An independent read of every partition of payments.
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.cfg.Kafka[0].Brokers...), kgo.ConsumeTopics("payments"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]int32{}
	for len(got) < 3 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			id, _ := header(r, "messageId")
			got[id] = r.Partition
		})
	}
	for id, d := range want {
		if got[id] != d.Partition {
			t.Errorf("%s landed in partition %d, want %d", id, got[id], d.Partition)
		}
	}
}

// A topic deleted and created again under the same name holds other records at the same offsets:
// they are new dead letters (not skip_already_replayed), and a plan of the old topic refuses to run.
func TestKafkaRecreatedTopicIsANewTopic(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	w.deadLetter(t, 0, "old-1", "k1", "TimeoutException")
	e := w.engine(t, "a")
	work(t, e)
	plan, err := e.Plan(ctx, "a", kafkaSource(0, 0, 10), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if job = waitJob(t, e, job.ID); job.Published != 1 {
		t.Fatalf("first job %+v", job)
	}
	stale, err := e.Plan(ctx, "a", kafkaSource(0, 0, 10), replay.Filter{})
	if err != nil || stale.Counts[replay.SkipAlreadyReplayed] != 1 {
		t.Fatalf("the same record planned again: %v, %v", stale.Counts, err)
	}
	if _, err := w.adm.DeleteTopic(ctx, "orders.DLT"); err != nil {
		t.Fatal(err)
	}
	// The broker refuses the name while the deletion completes.
	waittest.For(t, 10*time.Second, "orders.DLT created again", func() (error, bool) {
		_, err := w.adm.CreateTopic(ctx, 2, 1, nil, "orders.DLT")
		return err, err == nil
	})
	// franz-go serves metadata from a cache for up to MetadataMinAge (5 s): wait until the console's
	// client sees the new topic, as it will by the time anyone plans it.
	waittest.For(t, 15*time.Second, "the console's client sees the new topic id", func() (string, bool) {
		id, err := w.cluster.TopicID(ctx, "orders.DLT")
		return fmt.Sprintf("topic id %s (%v)", id, err), err == nil && id != stale.Source.TopicID
	})
	// A fresh producer: the test's own client still knows the old topic's ID.
	fresher := newWorldOn(t, w.cfg.Kafka[0].Brokers[0])
	fresher.deadLetter(t, 0, "new-1", "k1", "TimeoutException")
	fresh, err := e.Plan(ctx, "a", kafkaSource(0, 0, 10), replay.Filter{})
	if err != nil || fresh.Total != 1 || fresh.Counts[replay.Publish] != 1 || fresh.Items[0].MessageID != "new-1" {
		t.Fatalf("the recreated topic's record at offset 0: %v %+v, %v", fresh.Counts, fresh.Items, err)
	}
	old, err := e.Start(ctx, replay.StartRequest{PlanID: stale.ID, Actor: access.Actor{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if old = waitJob(t, e, old.ID); old.Status != replay.JobFailed || !strings.Contains(old.Error, "created again") {
		t.Fatalf("a plan of the old topic ran: %+v", old)
	}
}

// A broker killed before it wrote a job's acks to disk returns messages the job already replayed
// (AMQP acks are not confirmed). Planning the queue again names them drop_replayed_copy: the job
// acks them and publishes nothing, while the fresh dead letters among them are replayed. Counted
// with the test's own AMQP client; across batches (1,000), and a second time with only copies.
func TestRabbitCopiesOfConfirmedReplaysAreDropped(t *testing.T) {
	const n, every = 2_500, 100
	w := newRabbitWorld(t)
	e := w.engine(t)
	first := w.replayed(t, e, n)

	// The copies come back as the broker had them (same id, x-death, no replay count yet), with a
	// fresh dead letter after every 100th.
	ctx := ctxT(t)
	put := func(id string) { t.Helper(); w.putDead(t, id) }
	for i := range n {
		put(fmt.Sprintf("m-%d", i))
		if i%every == every-1 {
			put(fmt.Sprintf("fresh-%d", i))
		}
	}
	fresh := n / every
	w.waitDepth(t, "orders.dlq", n+fresh)

	plan := w.planQueue(t, e, n+fresh, replay.Filter{})
	if plan.Counts[replay.DropReplayedCopy] != n || plan.Counts[replay.Publish] != fresh || plan.Total != n+fresh {
		t.Fatalf("plan of the returned copies: %v; want %d drop_replayed_copy and %d publish", plan.Counts, n, fresh)
	}
	second := w.run(t, e, plan.ID)
	if second.Status != replay.JobDone || second.Published != fresh || second.Skipped != n || second.Failed != 0 {
		t.Fatalf("second job %+v; want %d published, %d skipped (the copies)", second, fresh, n)
	}
	w.waitDepth(t, "orders.dlq", 0)
	w.waitDepth(t, "orders.work", n+fresh) // nothing was sent twice
	ledger, err := e.Ledger(ctx, second.ID, 3)
	if err != nil || len(ledger) == 0 || !strings.Contains(ledger[0].Detail, "drop_replayed_copy (job "+first.ID) {
		t.Fatalf("second job's ledger %+v, %v: want drop_replayed_copy naming job %s", ledger, err, first.ID)
	}

	// An edit means to send a new version: its message, a copy or not, is never dropped in its place.
	put("m-7")
	w.waitDepth(t, "orders.dlq", 1)
	// Planned right after the job: the browse waits out the statistics that still count what it held.
	edit, err := e.Plan(ctx, "ops", replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 10,
		Edit: &replay.Edit{SetHeaders: map[string]string{"x-fixed": "yes"}}}, replay.Filter{MessageIDs: []string{"m-7"}})
	if err != nil || edit.Counts[replay.DropReplayedCopy] != 0 || edit.Counts[replay.SkipAlreadyReplayed] != 1 {
		t.Fatalf("edit plan of a copy: %v, %v; want skip_already_replayed", edit.Counts, err)
	}
	w.purge(t, "orders.dlq")

	// Again, with copies only: no batch moves anything, the job's last sweep drops them.
	for i := range every {
		put(fmt.Sprintf("m-%d", i))
	}
	w.waitDepth(t, "orders.dlq", every)
	plan = w.planQueue(t, e, every, replay.Filter{})
	if plan.Counts[replay.DropReplayedCopy] != every || plan.Counts[replay.Publish] != 0 {
		t.Fatalf("plan of copies only: %v", plan.Counts)
	}
	if third := w.run(t, e, plan.ID); third.Status != replay.JobDone || third.Published != 0 || third.Skipped != every {
		t.Fatalf("third job %+v", third)
	}
	w.waitDepth(t, "orders.dlq", 0)
	w.waitDepth(t, "orders.work", n+fresh)
}

// A discard's copies come back too when the broker loses its acks: the archive has them, so a
// discard plan of the queue drops them (drop_replayed_copy) and archives only the fresh one; the
// archive keeps each message once.
func TestDiscardCopiesOfArchivedMessagesAreDropped(t *testing.T) {
	const n = 50
	w := newRabbitWorld(t)
	ctx := ctxT(t)
	bare := func(id string) { // no x-death: a replay could not route it, a discard takes it all the same
		t.Helper()
		if err := w.ch.PublishWithContext(ctx, "", "orders.dlq", false, false, amqp.Publishing{MessageId: id,
			DeliveryMode: amqp.Persistent, Body: []byte(`{"messageId":"` + id + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	w.fillDLQ(t, n)
	bare("bare-1")
	w.waitDepth(t, "orders.dlq", n+1)
	e := w.engine(t)
	work(t, e)
	src := replay.Source{Kind: "rabbitmq", Action: replay.ActionDiscard, Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: 100}
	plan, err := e.Plan(ctx, "ops", src, replay.Filter{})
	if err != nil || plan.Counts[replay.Discard] != n+1 {
		t.Fatalf("discard plan %v %v", plan.Counts, err)
	}
	first := w.run(t, e, plan.ID)
	if first.Status != replay.JobDone || first.Published != n+1 {
		t.Fatalf("first discard %+v", first)
	}
	w.waitDepth(t, "orders.dlq", 0)
	w.fillDLQ(t, n) // the copies, as the broker had them
	bare("bare-1")
	bare("fresh")
	w.waitDepth(t, "orders.dlq", n+2)
	plan, err = e.Plan(ctx, "ops", src, replay.Filter{})
	if err != nil || plan.Counts[replay.DropReplayedCopy] != n+1 || plan.Counts[replay.Discard] != 1 {
		t.Fatalf("discard plan of the copies: %v %v; want %d drop_replayed_copy and 1 discard", plan.Counts, err, n+1)
	}
	second := w.run(t, e, plan.ID)
	if second.Status != replay.JobDone || second.Published != 1 || second.Skipped != n+1 {
		t.Fatalf("second discard %+v", second)
	}
	w.waitDepth(t, "orders.dlq", 0)
	archived, err := w.store.ArchivedMessages(ctx, replay.ArchiveFilter{Queue: "orders.dlq"})
	if err != nil || len(archived) != n+2 {
		t.Fatalf("archive: %d rows, %v; want %d, each message once", len(archived), err, n+2)
	}
	ledger, err := e.Ledger(ctx, second.ID, 3)
	if err != nil || len(ledger) == 0 || !strings.Contains(ledger[0].Detail, "drop_replayed_copy (job "+first.ID+" archived it)") {
		t.Fatalf("second discard's ledger %+v, %v", ledger, err)
	}
}

// restartingBroker is the world's broker with a node whose start the test sets: restarting the
// RabbitMQ the other tests share is not this test's to do (the chaos test kills a private one).
type restartingBroker struct {
	*rabbit.Broker
	mu      sync.Mutex
	started time.Time
}

func (b *restartingBroker) NodeUptimes(context.Context) (map[string]time.Duration, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return map[string]time.Duration{"rabbit@test": time.Since(b.started)}, nil
}

func (b *restartingBroker) startedAt(at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.started = at
}

// A node that starts again after a job finished may have returned what the job acked. The
// engine notices (the node's start moved later) and removes exactly the copies that job's ledger
// names, in a job of its own (actor redrive, audited), once; a fresh dead letter beside them
// stays, and nothing is sent twice. Before the restart it touches nothing.
func TestRabbitRestartAfterAJobIsTidied(t *testing.T) {
	const n, back = 300, 200
	w := newRabbitWorld(t)
	rb := &restartingBroker{Broker: w.broker, started: time.Now().Add(-time.Hour)}
	e, err := replay.New(replay.Options{Store: w.store, Rabbit: []replay.RabbitBroker{rb}, Inboxes: []replay.Inbox{w.inbox},
		Consumers: []configs.Consumer{{Name: "inventory-service", RabbitMQ: &configs.ConsumerRabbit{Broker: "test", Vhost: w.vhost, Queue: "orders.work"}}},
		Replay:    configs.Replay{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 1000}, Lease: 2 * time.Second,
		Poll: 50 * time.Millisecond, RestartPoll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	first := w.replayed(t, e, n)
	// What the broker returns after the crash, and a new dead letter.
	ctx := ctxT(t)
	for i := range back {
		w.putDead(t, fmt.Sprintf("m-%d", i))
	}
	w.putDead(t, "fresh-1")
	w.waitDepth(t, "orders.dlq", back+1)

	watch, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.WatchRestarts(watch) }()
	t.Cleanup(func() { stop(); <-done })
	waittest.Holds(t, 300*time.Millisecond, "no restart, nothing tidied", func() bool { return w.depth(t, "orders.dlq") == back+1 })

	rb.startedAt(time.Now()) // started again, after the job finished
	tidyJobs := func() []replay.Job {
		jobs, err := e.Jobs(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []replay.Job
		for _, j := range jobs {
			if j.Actor == replay.Tidier.Name {
				out = append(out, j)
			}
		}
		return out
	}
	tidy := waittest.For(t, 30*time.Second, "the tidy job done", func() (replay.Job, bool) {
		js := tidyJobs()
		return func() replay.Job {
			if len(js) == 1 {
				return js[0]
			}
			return replay.Job{}
		}(), len(js) == 1 && js[0].Status == replay.JobDone
	})
	if tidy.Published != 0 || tidy.Skipped != back || !strings.Contains(tidy.Reason, first.ID) {
		t.Fatalf("tidy job %+v; want %d skipped (dropped), none published, its reason naming %s", tidy, back, first.ID)
	}
	// What stays once the tidy job is done (the browses before it return the messages they read).
	w.waitDepth(t, "orders.dlq", 1)
	if d, ok, err := w.ch.Get("orders.dlq", false); err != nil || !ok || d.MessageId != "fresh-1" {
		t.Fatalf("what stays in the DLQ: %q %v %v; want the fresh dead letter", d.MessageId, ok, err)
	} else if err := d.Nack(false, true); err != nil {
		t.Fatal(err)
	}
	if got := w.depth(t, "orders.work"); got != n {
		t.Fatalf("%d messages in orders.work, want %d: nothing is sent twice", got, n)
	}
	waittest.Holds(t, 300*time.Millisecond, "one tidy per restart", func() bool { return len(tidyJobs()) == 1 })
}
