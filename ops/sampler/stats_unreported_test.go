package sampler

import (
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/health"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
)

// statsBroker is a console's client of e's vhost through p.
func statsBroker(p *rabbittest.StatsProxy, e *rmqEnv) *rabbit.Broker {
	cfg := rabbittest.Config(e.tb, e.vhost)
	cfg.Name, cfg.ManagementURL = "main", p.URL
	b, err := rabbit.New(cfg, configs.MessageIDRules{})
	if err != nil {
		e.tb.Fatal(err)
	}
	e.tb.Cleanup(b.Close)
	return b
}

func problemsOf(t *testing.T, snap queues.Snapshot, at time.Time) map[string]health.Problem {
	t.Helper()
	out := map[string]health.Problem{}
	for _, p := range health.RabbitProblems("main", snap, nil, at) {
		out[p.Kind] = p
		t.Logf("problem %s: %s", p.Key, p.Title)
	}
	return out
}

// A broker whose management API stops reporting queue statistics (management.disable_stats, or
// management_agent.disable_metrics_collector as RabbitMQ 4.x advises for Prometheus-only
// monitoring) read as every DLQ emptied at once: 0 ready, and the 40 it still held "lost" for a
// day. Unreported counts are not zeros: the DLQ says they are not reported and why, keeps its
// "held 40 when last counted" problem under the same key, counts no loss and writes no history
// row; when the statistics come back, loss counting starts afresh and works again.
func TestStatsDisabledIsNoLoss(t *testing.T) {
	ctx := ctxT(t)
	e := newRmqEnv(t)
	p := rabbittest.NewStatsProxy(t)
	clk := newClock()
	e.Queue("work", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "work.dlq"})
	e.Queue("work.dlq", nil)
	a := rabbitSampler(t, openStore(t, testDSN(t)), clk, nil, statsBroker(p, e))
	v := e.vhost
	e.deadLetter("work", "work.dlq", 40, 40)
	lostIn(t, ctx, a, clk, 15*time.Second, v, "work.dlq")
	q := lostIn(t, ctx, a, clk, 15*time.Second, v, "work.dlq")
	countedAt := clk.Now()
	if q.Ready != 40 || q.CountsUnreported {
		t.Fatalf("before: ready %d, unreported %v", q.Ready, q.CountsUnreported)
	}
	held := problemsOf(t, mustLatest(t, ctx, a), clk.Now())[health.KindDeadLetters]

	p.Disabled.Store(true)
	for range 2 {
		q = lostIn(t, ctx, a, clk, 15*time.Second, v, "work.dlq")
		if !q.CountsUnreported || !q.ConsumersUnreported || !q.StatsDisabled || q.Lost != 0 {
			t.Fatalf("stats disabled: unreported counts %v, consumers %v, disabled %v, lost %d; want unknown, said why, nothing lost",
				q.CountsUnreported, q.ConsumersUnreported, q.StatsDisabled, q.Lost)
		}
		if q.LastCounted.Ready != 40 || !q.LastCounted.At.Equal(countedAt) {
			t.Fatalf("last counted %+v; want 40 at %v", q.LastCounted, countedAt)
		}
		if !strings.Contains(q.StatsNote(), "statistics are disabled") {
			t.Errorf("the queue's note: %q", q.StatsNote())
		}
		snap := mustLatest(t, ctx, a)
		if !snap.StatsDisabled() {
			t.Errorf("the snapshot does not say the broker's statistics are disabled")
		}
		ps := problemsOf(t, snap, clk.Now())
		if _, lost := ps[health.KindDeadLettersLost]; lost {
			t.Errorf("a loss is raised while the counts are not reported")
		}
		p, ok := ps[health.KindDeadLetters]
		if !ok || p.Key != held.Key || !strings.Contains(p.Title, "held 40 dead letters when last counted") {
			t.Errorf("the DLQ's problem while not counted: %+v; want %s kept, as of the last counts", p, held.Key)
		}
	}
	points, err := a.RabbitQueueHistory(ctx, "main", v, "work.dlq", countedAt.Add(-time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range points {
		if pt.Ready != 40 {
			t.Errorf("history has ready %d at %v: an unreported count written as a fact", pt.Ready, pt.At)
		}
	}

	p.Disabled.Store(false)
	if q = lostIn(t, ctx, a, clk, 15*time.Second, v, "work.dlq"); q.CountsUnreported || q.Ready != 40 || q.Lost != 0 || !q.LastCounted.At.IsZero() {
		t.Fatalf("stats back: unreported %v, ready %d, lost %d, last counted %+v", q.CountsUnreported, q.Ready, q.Lost, q.LastCounted)
	}
	if _, err := e.mgmt.PurgeQueue(v, "work.dlq"); err != nil {
		t.Fatal(err)
	}
	e.waitReady("work.dlq", 0)
	if q = lostIn(t, ctx, a, clk, 15*time.Second, v, "work.dlq"); q.Lost != 40 {
		t.Fatalf("a purge once counted again: lost %d, want 40", q.Lost)
	}
}

// The counts missing for a moment (a quorum queue for about 6 s after its node restarts, a queue
// just declared) are "not reported yet", not zeros and not "disabled": no loss, no growth from them.
func TestStatsNotReportedYetIsNoLoss(t *testing.T) {
	ctx := ctxT(t)
	e := newRmqEnv(t)
	p := rabbittest.NewStatsProxy(t)
	clk := newClock()
	e.Queue("work", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "work.dlq"})
	e.Queue("work.dlq", amqp.Table{"x-queue-type": "quorum"})
	a := rabbitSampler(t, openStore(t, testDSN(t)), clk, nil, statsBroker(p, e))
	v := e.vhost
	e.deadLetter("work", "work.dlq", 12, 12)
	lostIn(t, ctx, a, clk, 15*time.Second, v, "work.dlq")
	p.Unreported.Store(true)
	q := lostIn(t, ctx, a, clk, 15*time.Second, v, "work.dlq")
	if !q.CountsUnreported || q.StatsDisabled || q.Lost != 0 || q.LastCounted.Ready != 12 {
		t.Fatalf("not reported: unreported %v, disabled %v, lost %d, last counted %+v", q.CountsUnreported, q.StatsDisabled, q.Lost, q.LastCounted)
	}
	if !strings.Contains(q.StatsNote(), "not reported yet") {
		t.Errorf("the queue's note: %q", q.StatsNote())
	}
	if mustLatest(t, ctx, a).StatsDisabled() {
		t.Errorf("statistics not reported yet read as disabled")
	}
	p.Unreported.Store(false)
	for range 2 {
		if q = lostIn(t, ctx, a, clk, 15*time.Second, v, "work.dlq"); q.Ready != 12 || q.Lost != 0 || q.CountsUnreported {
			t.Fatalf("reported again: ready %d, lost %d, unreported %v", q.Ready, q.Lost, q.CountsUnreported)
		}
	}
}
