package sampler

import (
	"context"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/health"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbittest"
)

// A DLQ deleted while it holds dead letters loses them all — deleted by a person, by an expires
// policy, or with the connection of its exclusive owner — and the console's "holds 10" problem
// simply went away, as if resolved. The loss is a dead_letters_lost problem that says the queue
// was deleted and how many went with it, kept in the stored snapshot (a new leader keeps it) for
// queues.LostWindow; a DLQ deleted empty leaves nothing.
func TestDeletedDLQLosesItsDeadLetters(t *testing.T) {
	ctx := ctxT(t)
	e := newRmqEnv(t)
	dsn := testDSN(t)
	clk := newClock()
	e.Queue("work", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "work.dlq"})
	e.Queue("work.dlq", nil)
	e.Queue("empty.dlq", nil)
	// An exclusive DLQ: its owner's connection, not the test's channel, declares it.
	owner, och := rabbittest.Channel(t, e.amqpURL)
	if _, err := och.QueueDeclare("mine.dlq", false, false, true, false, nil); err != nil {
		t.Fatal(err)
	}
	e.Queue("mine", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "mine.dlq"})
	a := rabbitSampler(t, openStore(t, dsn), clk, nil, e.b)
	v := e.vhost
	e.deadLetter("work", "work.dlq", 10, 10)
	e.deadLetter("mine", "mine.dlq", 3, 3)
	lostIn(t, ctx, a, clk, 15*time.Second, v, "work.dlq")
	if q := lostIn(t, ctx, a, clk, 15*time.Second, v, "mine.dlq"); !q.Exclusive || q.Ready != 3 {
		t.Fatalf("mine.dlq: exclusive %v, ready %d", q.Exclusive, q.Ready)
	}

	for _, name := range []string{"work.dlq", "empty.dlq"} {
		if _, err := e.mgmt.DeleteQueue(v, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := owner.Close(); err != nil {
		t.Fatal(err)
	}
	rabbittest.WaitFor(t, 15*time.Second, "the exclusive DLQ goes with its connection", func(ctx context.Context) bool {
		qs, err := e.b.Queues(ctx)
		if err != nil {
			return false
		}
		for _, q := range qs {
			if q.Name == "mine.dlq" {
				return false
			}
		}
		return true
	})
	sampleAfter(t, ctx, a, clk, 15*time.Second)
	deletedAt := clk.Now()
	check := func(who string, snap queues.Snapshot) {
		t.Helper()
		gone := map[string]queues.GoneQueue{}
		for _, g := range snap.Gone {
			gone[g.Name] = g
		}
		if g := gone["work.dlq"]; g.Held != 10 || g.Lost != 10 || !g.DeletedAt.Equal(deletedAt) {
			t.Errorf("%s: work.dlq gone %+v; want 10 held and lost, deleted at %v", who, g, deletedAt)
		}
		if g := gone["mine.dlq"]; g.Held != 3 || g.Lost != 3 {
			t.Errorf("%s: the exclusive mine.dlq gone %+v; want 3 lost with its owner's connection", who, g)
		}
		if g, ok := gone["empty.dlq"]; ok {
			t.Errorf("%s: empty.dlq was deleted empty and lost nothing: %+v", who, g)
		}
		lost := map[string]health.Problem{}
		for _, p := range health.RabbitProblems("main", snap, nil, clk.Now()) {
			t.Logf("%s: %s %s", who, p.Key, p.Title)
			if p.Kind == health.KindDeadLettersLost {
				lost[p.Labels["queue"]] = p
			}
		}
		if p := lost["work.dlq"]; !strings.Contains(p.Title, "work.dlq was deleted") || !strings.Contains(p.Title, "10 dead letters") {
			t.Errorf("%s: work.dlq's loss: %q", who, p.Title)
		}
		if p := lost["mine.dlq"]; !strings.Contains(p.Title, "3 dead letters") {
			t.Errorf("%s: mine.dlq's loss: %q", who, p.Title)
		}
	}
	check("the leader", mustLatest(t, ctx, a))
	sampleAfter(t, ctx, a, clk, 15*time.Second)
	check("the next sample", mustLatest(t, ctx, a))

	// Another replica takes over: the loss is in the stored snapshot.
	a.Close()
	c := rabbitSampler(t, openStore(t, dsn), clk, nil, e.broker("main"))
	sampleAfter(t, ctx, c, clk, 15*time.Second)
	check("the new leader", mustLatest(t, ctx, c))

	// Declared again, the queue takes the loss over; a day after it the loss is over.
	e.Queue("work.dlq", nil)
	if q := lostIn(t, ctx, c, clk, 15*time.Second, v, "work.dlq"); q.Lost != 10 || q.Ready != 0 {
		t.Fatalf("work.dlq declared again: lost %d, ready %d; want the 10 carried, nothing counted afresh", q.Lost, q.Ready)
	}
	sampleAfter(t, ctx, c, clk, queues.LostWindow)
	if snap := mustLatest(t, ctx, c); len(snap.Gone) != 0 || rq(t, snap, v, "work.dlq").Lost != 0 {
		t.Fatalf("a day later: gone %+v, work.dlq lost %d", snap.Gone, rq(t, snap, v, "work.dlq").Lost)
	}
}
