package sampler

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
)

// A DLQ's "Inflow — dead letters arriving" read 155/s while a replay only drained it: the inflow
// added the broker's ack rate, a figure over its last seconds, to the window's average rise of the
// depth, so a drain that had just begun counted as arrivals at nearly its own rate (measured here
// before the fix, sampled every second: a consumer draining a DLQ at about 150/s with nothing
// arriving read 72/s, and 91/s with 20/s arriving). Sampled every 2 s on the real clock, two DLQs
// are drained at once: alone.dlq by a consumer of its own at about 150/s, nothing arriving, which
// reads about 0 throughout (and, consumed elsewhere, all its messages lost); busy.dlq by a replay
// job at 150/s while 20 dead letters a second arrive, which read as about 20/s, and nothing lost.
func TestRabbitInflowWhileDrained(t *testing.T) {
	ctx := ctxT(t)
	e := newRmqEnv(t)
	const (
		backlog = 2000
		step    = 3 * time.Second
		rate    = 150 // the replay's, a second
	)
	// alone.dlq is fed by alone, whose messages expire at once (TTL 0): dead-lettered by the
	// broker, which counts no publish in the DLQ. busy.dlq's backlog is work's messages rejected,
	// which the replay puts back into work; feed expires 20 a second into it during the drain.
	e.Queue("alone", amqp.Table{"x-message-ttl": int32(0), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "alone.dlq"})
	e.Queue("alone.dlq", nil)
	e.Queue("work", amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "busy.dlq"})
	e.Queue("feed", amqp.Table{"x-message-ttl": int32(0), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "busy.dlq"})
	e.Queue("busy.dlq", nil)
	e.publish("", "alone", backlog)
	e.waitReady("alone.dlq", backlog)
	for i := range backlog {
		if err := e.ch.PublishWithContext(ctx, "", "work", false, false, amqp.Publishing{MessageId: fmt.Sprintf("w-%d", i), Body: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	rabbittest.WaitDepth(t, e.ch, "work", backlog, 30*time.Second)
	rejecter, ds := rabbittest.Consume(t, e.amqpURL, "work", "reject", 500)
	for range backlog {
		if err := (<-ds).Reject(false); err != nil {
			t.Fatal(err)
		}
	}
	if err := rejecter.Cancel("reject", false); err != nil {
		t.Fatal(err)
	}
	e.waitReady("busy.dlq", backlog)

	st := openStore(t, testDSN(t))
	s := newSampler(t, st, newClock(), func(o *Options) {
		o.Now, o.Interval, o.Rabbit = time.Now, step, []RabbitSource{{Broker: e.b}}
	})
	eng, err := replay.New(replay.Options{Store: st, Rabbit: []replay.RabbitBroker{e.b}, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWork := context.WithCancel(context.Background())
	worked := make(chan struct{})
	go func() { defer close(worked); _ = eng.Work(wctx) }()
	t.Cleanup(func() { stopWork(); <-worked })

	var alone, busy queues.Queue
	sample := func() {
		t.Helper()
		if err := s.SampleOnce(ctx); err != nil {
			t.Fatalf("SampleOnce: %v", err)
		}
		snap, err := s.LatestRabbit(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		alone, busy = rq(t, snap, e.vhost, "alone.dlq"), rq(t, snap, e.vhost, "busy.dlq")
		t.Logf("alone.dlq %d+%d ack %.0f/s inflow %.1f/s lost %d · busy.dlq %d+%d ack %.0f/s inflow %.1f/s lost %d",
			alone.Ready, alone.Unacked, alone.AckRate, alone.Inflow, alone.Lost, busy.Ready, busy.Unacked, busy.AckRate, busy.Inflow, busy.Lost)
	}
	sample()

	plan, err := eng.Plan(ctx, "ops", replay.Source{Kind: "rabbitmq", Broker: "main", Vhost: e.vhost, Queue: "busy.dlq", Limit: backlog}, replay.Filter{})
	if err != nil || plan.Total != backlog {
		t.Fatalf("plan: %d messages, %v", plan.Total, err)
	}
	var acked atomic.Int64
	consumer, deliveries := rabbittest.Consume(t, e.amqpURL, "alone.dlq", "drain", 50)
	go func() {
		for d := range deliveries {
			time.Sleep(5 * time.Millisecond) // about 150 a second
			if d.Ack(false) == nil {
				acked.Add(1)
			}
		}
	}()
	t.Cleanup(func() { _ = consumer.Cancel("drain", false) })
	job, err := eng.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: rate})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stop, arrived := make(chan struct{}), make(chan int)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond) // 50 a second
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				arrived <- n
				return
			case <-tick.C:
				if err := e.ch.PublishWithContext(context.Background(), "", "feed", false, false, amqp.Publishing{Body: fmt.Appendf(nil, "%d", n)}); err != nil {
					arrived <- n
					return
				}
			}
		}
	}()
	var inAlone, inBusy []float64
	var emptied, replayed time.Duration
	after := 0 // samples since both drains ended: a window more, which holds neither
	for ; emptied == 0 || replayed == 0 || after < GrowthSamples; after++ {
		if emptied == 0 || replayed == 0 {
			after = -1
		}
		time.Sleep(step)
		sample()
		inAlone, inBusy = append(inAlone, alone.Inflow), append(inBusy, busy.Inflow)
		if emptied == 0 && acked.Load() >= backlog {
			emptied = time.Since(start)
		}
		if j, err := eng.Job(ctx, job.ID); err == nil && j.FinishedAt != nil && replayed == 0 {
			if j.Status != replay.JobDone || j.Published != backlog {
				t.Fatalf("the replay: %s, %d published", j.Status, j.Published)
			}
			replayed = time.Since(start)
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("in 2 min, %d of %d consumed from alone.dlq and the replay not done", acked.Load(), backlog)
		}
	}
	close(stop)
	arrivals := float64(<-arrived) / time.Since(start).Seconds()
	drain := backlog / emptied.Seconds()
	during := inBusy[:len(inBusy)-GrowthSamples]

	t.Logf("alone.dlq drained at %.0f/s: inflow %v", drain, rounded(inAlone))
	t.Logf("busy.dlq replayed at %.0f/s, %.1f/s arriving: inflow %v", backlog/replayed.Seconds(), arrivals, rounded(inBusy))
	if worst := slicesMax(inAlone); worst > drain/8 || median(inAlone) > drain/50 {
		t.Errorf("alone.dlq, drained at %.0f/s with nothing arriving, read an inflow of up to %.1f/s (median %.1f), want about 0",
			drain, worst, median(inAlone))
	}
	if alone.Lost != backlog {
		t.Errorf("alone.dlq, consumed elsewhere: lost %d, want %d", alone.Lost, backlog)
	}
	// The replay's count runs ahead of the depth the broker shows by a second or two of its
	// moves, which a window of 3 samples 3 s apart sees as ±30/s: the arrivals read at their
	// order of magnitude while it runs (never as the replay's 150/s), and exactly once a window
	// holds only them.
	if mid := median(during[GrowthSamples-1:]); mid < arrivals/2 || mid > arrivals*2 {
		t.Errorf("busy.dlq, %.1f dead letters a second arriving during a replay at %d/s: median inflow %.1f/s", arrivals, rate, mid)
	}
	if worst := slicesMax(during); worst > 2.5*arrivals {
		t.Errorf("busy.dlq, %.1f/s arriving during a replay at %d/s, read an inflow of up to %.1f/s", arrivals, rate, worst)
	}
	if last := inBusy[len(inBusy)-1]; last < arrivals*0.8 || last > arrivals*1.2 {
		t.Errorf("busy.dlq, %.1f/s arriving after the replay: inflow %.1f/s", arrivals, last)
	}
	if busy.Lost != 0 {
		t.Errorf("busy.dlq lost %d while a replay drained it", busy.Lost)
	}
}

func slicesMax(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func rounded(v []float64) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = fmt.Sprintf("%.1f", x)
	}
	return out
}
