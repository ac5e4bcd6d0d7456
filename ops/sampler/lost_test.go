package sampler

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

// deadLetter has the broker dead-letter n messages of queue (published with ids, then each
// rejected without requeue) and waits until the management API shows total ready in dlq.
func (e *rmqEnv) deadLetter(queue, dlq string, n int, total int64) {
	e.tb.Helper()
	ctx := ctxT(e.tb)
	for range n {
		e.sent++
		if err := e.ch.PublishWithContext(ctx, "", queue, false, false, amqp.Publishing{
			MessageId: fmt.Sprintf("m-%d", e.sent), Body: fmt.Appendf(nil, `{"n":%d}`, e.sent)}); err != nil {
			e.tb.Fatal(err)
		}
	}
	rabbittest.WaitDepth(e.tb, e.ch, queue, n, 15*time.Second)
	for range n {
		d, ok, err := e.ch.Get(queue, false)
		if err != nil || !ok {
			e.tb.Fatalf("get: %v %v", ok, err)
		}
		if err := d.Nack(false, false); err != nil {
			e.tb.Fatal(err)
		}
	}
	e.waitReady(dlq, total)
}

// lostIn samples with s after d and returns the DLQ as the store has it.
func lostIn(t *testing.T, ctx context.Context, s *Sampler, clk *clock, d time.Duration, vhost, dlq string) queues.Queue {
	t.Helper()
	sampleAfter(t, ctx, s, clk, d)
	snap, err := s.LatestRabbit(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	return rq(t, snap, vhost, dlq)
}

// When RabbitMQ's DLQ lost its messages (here a purge through the management API; a delivery
// limit, a TTL or another consumer alike), the overview's "holds N" problem simply went away, as
// if resolved. The sampler now counts what left a DLQ beyond what Redrive's jobs took out: 40
// purged are 40 lost, kept from sample to sample, by the next leader too, and added to by a
// second loss, until queues.LostWindow after the last; a replay job that drains the queue loses
// nothing.
func TestRabbitLostDeadLetters(t *testing.T) {
	ctx := ctxT(t)
	e := newRmqEnv(t)
	dsn := testDSN(t)
	clk := newClock()
	e.Queue("work", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "work.dlq"})
	e.Queue("work.dlq", nil)
	st := openStore(t, dsn)
	a := rabbitSampler(t, st, clk, nil, e.b)
	v := e.vhost

	e.deadLetter("work", "work.dlq", 40, 40)
	if q := lostIn(t, ctx, a, clk, 15*time.Second, v, "work.dlq"); !q.IsDeadLetterQueue || q.Ready != 40 || q.Lost != 0 || !q.HeldSince.IsZero() {
		t.Fatalf("work.dlq before the purge: DLQ %v, ready %d, lost %d, holding since %v (its first sample: unknown)", q.IsDeadLetterQueue, q.Ready, q.Lost, q.HeldSince)
	}
	before := clk.Now()
	if _, err := e.mgmt.PurgeQueue(v, "work.dlq"); err != nil {
		t.Fatal(err)
	}
	e.waitReady("work.dlq", 0)
	q := lostIn(t, ctx, a, clk, 15*time.Second, v, "work.dlq")
	if q.Lost != 40 || !q.LostSince.Equal(before) || !q.LostAt.Equal(clk.Now()) {
		t.Fatalf("after the purge: lost %d since %v at %v; want 40 since %v at %v", q.Lost, q.LostSince, q.LostAt, before, clk.Now())
	}
	lostAt := q.LostAt
	if q := lostIn(t, ctx, a, clk, 15*time.Second, v, "work.dlq"); q.Lost != 40 || !q.LostAt.Equal(lostAt) {
		t.Fatalf("the next sample: lost %d at %v; want the 40 kept", q.Lost, q.LostAt)
	}
	if w := rq(t, mustLatest(t, ctx, a), v, "work"); w.Lost != 0 {
		t.Errorf("work is not a DLQ: lost %d", w.Lost)
	}

	// Another replica takes the broker over: it reads the loss, and the depth and moves it is
	// compared with, from the last snapshot.
	a.Close()
	c := rabbitSampler(t, openStore(t, dsn), clk, nil, e.broker("main"))
	e.deadLetter("work", "work.dlq", 5, 5)
	// It also knows the queue was empty at the last leader's last sample: the 5 are held since its
	// first.
	if q := lostIn(t, ctx, c, clk, 15*time.Second, v, "work.dlq"); q.Lost != 40 || q.Ready != 5 || !q.HeldSince.Equal(clk.Now()) {
		t.Fatalf("the new leader: lost %d, ready %d, holding since %v; want the 40 carried over, 5 arrivals not counted, held since %v",
			q.Lost, q.Ready, q.HeldSince, clk.Now())
	}
	heldSince := clk.Now()
	if q := lostIn(t, ctx, c, clk, 15*time.Second, v, "work.dlq"); !q.HeldSince.Equal(heldSince) {
		t.Fatalf("the next sample: holding since %v, want %v", q.HeldSince, heldSince)
	}
	if _, err := e.mgmt.PurgeQueue(v, "work.dlq"); err != nil {
		t.Fatal(err)
	}
	e.waitReady("work.dlq", 0)
	if q := lostIn(t, ctx, c, clk, 15*time.Second, v, "work.dlq"); q.Lost != 45 || !q.LostSince.Equal(before) || !q.LostAt.Equal(clk.Now()) || !q.HeldSince.IsZero() {
		t.Fatalf("a second purge: lost %d since %v, holding since %v; want 45 since %v and empty", q.Lost, q.LostSince, q.HeldSince, before)
	}
	if q := lostIn(t, ctx, c, clk, queues.LostWindow-15*time.Second, v, "work.dlq"); q.Lost != 45 {
		t.Fatalf("just inside the window: lost %d", q.Lost)
	}
	if q := lostIn(t, ctx, c, clk, 15*time.Second, v, "work.dlq"); q.Lost != 0 || !q.LostSince.IsZero() {
		t.Fatalf("%s after the last loss: lost %d since %v; want it gone", queues.LostWindow, q.Lost, q.LostSince)
	}

	t.Run("ReplayDrainsIt", func(t *testing.T) {
		eng, err := replay.New(replay.Options{Store: st, Rabbit: []replay.RabbitBroker{e.b}, Poll: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = eng.Work(wctx) }()
		t.Cleanup(func() { stop(); <-done })
		e.deadLetter("work", "work.dlq", 30, 30)
		if q := lostIn(t, ctx, c, clk, 15*time.Second, v, "work.dlq"); q.Lost != 0 || q.Ready != 30 {
			t.Fatalf("before the replay: lost %d, ready %d", q.Lost, q.Ready)
		}
		plan, err := eng.Plan(ctx, "ops", replay.Source{Kind: "rabbitmq", Broker: "main", Vhost: v, Queue: "work.dlq", Limit: 100}, replay.Filter{})
		if err != nil || plan.Total != 30 {
			t.Fatalf("plan: %d messages, %v", plan.Total, err)
		}
		job, err := eng.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1000})
		if err != nil {
			t.Fatal(err)
		}
		job = waittest.For(t, 30*time.Second, "the replay job ends", func() (replay.Job, bool) {
			j, err := eng.Job(ctx, job.ID)
			return j, err == nil && j.FinishedAt != nil
		})
		if job.Status != replay.JobDone || job.Published != 30 {
			t.Fatalf("job: %s, %d published, %d skipped, %d failed; plan %v %v", job.Status, job.Published, job.Skipped, job.Failed, plan.Counts, plan.Warnings)
		}
		e.waitReady("work.dlq", 0)
		e.waitReady("work", 30)
		for range 2 {
			if q := lostIn(t, ctx, c, clk, 15*time.Second, v, "work.dlq"); q.Lost != 0 {
				t.Fatalf("after a replay drained it: lost %d since %v", q.Lost, q.LostSince)
			}
		}
	})
}

func mustLatest(t *testing.T, ctx context.Context, s *Sampler) queues.Snapshot {
	t.Helper()
	snap, err := s.LatestRabbit(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// A track follows the depth and Redrive's moves: a job counts a message before it acks it, so
// what it counted beyond the fall of one interval explains the next interval's fall, and no more.
func TestDLQTrack(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 18, 0, 0, 0, time.UTC)
	ref := rabbit.QueueRef{Vhost: "/", Name: "q"}
	var tr dlqTrack
	at := t0
	next := func(depth, moved int64) dlqTrack {
		at = at.Add(15 * time.Second)
		tr = tr.next(at, at.Add(-time.Minute), depth, map[rabbit.QueueRef]int64{ref: moved}, ref)
		return tr
	}
	next(100, 0)
	if tr := next(60, 50); tr.lost != 0 || tr.credit != 10 {
		t.Fatalf("50 counted, 40 acked yet: lost %d credit %d", tr.lost, tr.credit)
	}
	if tr := next(50, 50); tr.lost != 0 || tr.credit != 0 {
		t.Fatalf("the other 10 acked: lost %d credit %d", tr.lost, tr.credit)
	}
	if tr := next(80, 70); tr.lost != 0 || tr.credit != 20 {
		t.Fatalf("20 moved while 50 arrived: lost %d credit %d", tr.lost, tr.credit)
	}
	if tr := next(70, 70); tr.lost != 0 {
		t.Fatalf("10 left, the credit of 20 explains them: lost %d", tr.lost)
	}
	if tr := next(40, 70); tr.lost != 30 || !tr.lostSince.Equal(t0.Add(75*time.Second)) {
		t.Fatalf("30 left with no credit left: lost %d since %v", tr.lost, tr.lostSince)
	}
	if tr := next(40, 0); tr.lost != 30 {
		t.Fatalf("jobs deleted (the sum fell): lost %d", tr.lost)
	}
	at = at.Add(15 * time.Second)
	tr = tr.next(at, at.Add(-time.Minute), 0, nil, ref)
	if tr.lost != 30 || tr.based {
		t.Fatalf("moves unknown: lost %d based %v; want nothing counted and a fresh start", tr.lost, tr.based)
	}
	if tr := next(0, 0); tr.lost != 30 {
		t.Fatalf("after a fresh start: lost %d", tr.lost)
	}

	// Since when it holds messages: unknown for the run the first sample found, from the first
	// sample after an empty one otherwise, whether or not the moves are known.
	var held dlqTrack
	at = t0
	step := func(depth int64, moved map[rabbit.QueueRef]int64) time.Time {
		at = at.Add(15 * time.Second)
		held = held.next(at, at.Add(-time.Minute), depth, moved, ref)
		return held.heldSince
	}
	known := map[rabbit.QueueRef]int64{ref: 0}
	for i, c := range []struct {
		depth int64
		moved map[rabbit.QueueRef]int64
		want  time.Duration // after t0; -1: none
	}{{7, known, -1}, {9, known, -1}, {0, known, -1}, {3, nil, 60 * time.Second}, {5, known, 60 * time.Second}, {0, nil, -1}, {1, known, 105 * time.Second}} {
		got := step(c.depth, c.moved)
		if (c.want < 0 && !got.IsZero()) || (c.want >= 0 && !got.Equal(t0.Add(c.want))) {
			t.Errorf("sample %d (depth %d): holding since %v, want %v after %v (-1: none)", i+1, c.depth, got, c.want, t0)
		}
	}
	// An empty sample from before the cutoff (the sampler was down for an hour) bounds nothing.
	step(0, known)
	at = at.Add(time.Hour)
	if held = held.next(at, at.Add(-time.Minute), 4, known, ref); !held.heldSince.IsZero() {
		t.Errorf("after an hour without samples: holding since %v, want unknown", held.heldSince)
	}
}
