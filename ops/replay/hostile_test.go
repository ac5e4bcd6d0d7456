package replay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

// One message with a NUL or a 0xFF byte in each field must not make the whole DLQ unplannable:
// it is planned and skipped with a note, and the rest is replayed.
func TestRabbitHostileBytesArePlannedAndSkipped(t *testing.T) {
	w := newRabbitWorld(t)
	w.fillDLQ(t, 3)
	ctx := ctxT(t)
	death := func(rk string) []any {
		return []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "orders.work", "exchange": "orders",
			"routing-keys": []any{rk}, "time": time.Now().UTC().Truncate(time.Second)}}
	}
	for _, p := range []amqp.Publishing{
		{MessageId: "bad\x00id", Headers: amqp.Table{"x-death": death("order.created"), "x-exception-message": "boom\x00\xff"}, Body: []byte("\xff\x00")},
		{MessageId: "bad-rk", Headers: amqp.Table{"x-death": death("order.\x00created")}, Body: []byte(`{}`)},
		{MessageId: "bad-\xff", Headers: amqp.Table{"x-death": death("order.created")}, Body: []byte(`{}`)},
	} {
		if err := w.ch.PublishWithContext(ctx, "", "orders.dlq", false, false, p); err != nil {
			t.Fatal(err)
		}
	}
	w.waitDepth(t, "orders.dlq", 6)
	e := w.engine(t)
	plan := w.planQueue(t, e, 100, replay.Filter{})
	if plan.Total != 6 || plan.Counts[replay.Publish] != 3 || plan.Counts[replay.SkipUnresolvable] != 3 {
		t.Fatalf("plan %v of %d", plan.Counts, plan.Total)
	}
	for _, it := range plan.Items[3:] {
		if it.Note == "" || strings.ContainsRune(it.MessageID+it.Locator+it.ErrorGroup+it.Note, 0) {
			t.Errorf("item %+v: want a note and no raw NUL", it)
		}
	}
	work(t, e)
	job := w.run(t, e, plan.ID)
	if job.Status != replay.JobDone || job.Published != 3 || job.Skipped != 3 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.work", 3)
	w.waitDepth(t, "orders.dlq", 3)
}

func TestKafkaHostileBytesArePlannedAndSkipped(t *testing.T) {
	w := newWorld(t)
	w.deadLetter(t, 0, "good-1", "k1", "com.acme.StockException")
	ctx := ctxT(t)
	bad := []*kgo.Record{
		{Topic: "orders.DLT", Partition: 0, Value: []byte("\xff\x00"), Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte("orders")}, {Key: "messageId", Value: []byte("m\x00x")},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("Boom\x00\xff")}}},
		{Topic: "orders.DLT", Partition: 0, Value: []byte(`{}`), Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte("ord\x00ers")}, {Key: "messageId", Value: []byte("m-topic")}}},
	}
	if err := w.client.ProduceSync(ctx, bad...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e := w.engine(t, "a")
	plan, err := e.Plan(ctx, "a", kafkaSource(0, 0, 10), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Total != 3 || plan.Counts[replay.Publish] != 1 || plan.Counts[replay.SkipUnresolvable] != 2 {
		t.Fatalf("plan %v of %d", plan.Counts, plan.Total)
	}
	work(t, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if job = waitJob(t, e, job.ID); job.Published != 1 || job.Skipped != 2 {
		t.Fatalf("job %+v", job)
	}
	// Bad bytes in what the caller typed are a 400 naming the field, not a 503 from the store.
	_, err = e.Plan(ctx, "a", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders\x00.DLT"}, replay.Filter{})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "source.topic") {
		t.Fatalf("a NUL in source.topic: %v", err)
	}
}

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

// The broker closes the replay's connection mid-job (an operator deletes it in the management UI,
// or the broker restarts): the job pauses with the reason, resumes on a new connection and ends
// with every message moved exactly where the ledger says — none lost, none reported missing.
func TestRabbitConnectionClosedMidJob(t *testing.T) {
	const n = 3000
	w := newRabbitWorld(t)
	w.fillDLQ(t, n)
	e := w.engine(t)
	plan := w.planQueue(t, e, n, replay.Filter{})
	work(t, e)
	ctx := ctxT(t)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1500})
	if err != nil {
		t.Fatal(err)
	}
	mgmt := rabbittest.Admin(t)
	closed := 0
	// Close the job's connection after a third and after two thirds of the messages (or stop
	// trying once the job is over).
	waittest.Until(t, 30*time.Second, "two connections closed mid-job", func() bool {
		j, err := e.Job(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != replay.JobPending && j.Status != replay.JobRunning {
			return true
		}
		if j.Published < (closed+1)*n/3 {
			return false
		}
		conns, err := mgmt.ListConnections()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range conns {
			if c.Vhost == w.vhost && strings.HasPrefix(fmt.Sprint(c.ClientProperties["connection_name"]), "redrive console") {
				if _, err := mgmt.CloseConnection(c.Name); err == nil {
					closed++
				}
			}
		}
		return closed >= 2
	})
	j := waitJob(t, e, job.ID)
	if j.Status != replay.JobDone || j.Published != n || j.Failed != 0 {
		t.Fatalf("job %+v after %d closed connections", j, closed)
	}
	w.waitDepth(t, "orders.dlq", 0)
	seen := map[string]int{}
	for _, d := range w.drain(t, "orders.work") {
		seen[d.MessageId]++
	}
	if len(seen) != n {
		t.Fatalf("%d distinct messages reached orders.work, want %d", len(seen), n)
	}
	t.Logf("%d connections closed; %d duplicates (resumed in-flight batches)", closed, func() int {
		d := 0
		for _, c := range seen {
			d += c - 1
		}
		return d
	}())
}

type brokenAudit struct{}

func (brokenAudit) RecordAudit(context.Context, audit.Entry) error { return ops.ErrUnavailable }
func (brokenAudit) RecordIntent(context.Context, audit.Entry) (int64, error) {
	return 0, fmt.Errorf("audit log: %w", ops.ErrUnavailable)
}

// No replay starts, is approved or is cancelled unaudited: when the intent cannot be written, the
// change is not made and the caller is told so.
func TestNoReplayChangeWithoutAudit(t *testing.T) {
	w := newWorld(t)
	w.deadLetter(t, 0, "m-1", "k-1", "X")
	ctx := ctxT(t)
	e, err := replay.New(replay.Options{Store: w.store, Kafka: []replay.KafkaCluster{w.cluster}, Consumers: w.cfg.Consumers,
		Audit: brokenAudit{}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := e.Plan(ctx, "a", kafkaSource(0, 0, 10), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "a"}})
	if !errors.Is(err, ops.ErrUnavailable) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("start with the audit log down: %v", err)
	}
	if jobs, err := e.Jobs(ctx, 10); err != nil || len(jobs) != 0 {
		t.Fatalf("jobs %v, %v: a job was created unaudited", jobs, err)
	}
}
