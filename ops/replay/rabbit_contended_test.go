package replay_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
)

// contendedBroker is the world's broker whose first cursor, once open, meets another reader of
// the queue: start runs before ReplayCursor returns, so the reader comes after the job's cursor
// opened and before it reads anything.
type contendedBroker struct {
	*rabbit.Broker
	once  sync.Once
	start func()
}

func (b *contendedBroker) ReplayCursor(ctx context.Context, vhost, queue string, span int) (rabbitmodel.Cursor, error) {
	c, err := b.Broker.ReplayCursor(ctx, vhost, queue, span)
	if err == nil {
		b.once.Do(b.start)
	}
	return c, err
}

// A RabbitMQ job that meets another reader of its DLQ — a browse, search or trace of the console
// (which reads with a prefetch of the whole queue), or any other consumer — after its cursor
// opened publishes every planned message once, in the DLQ's order, and fails none. The other
// reader holds the head of the queue unacknowledged for two seconds: the job once read the rest,
// took the head for "not found in the queue when the job ran … consumed, purged or expired since
// the plan" and settled half the plan as failed while those messages were still in the DLQ.
// Counted with the test's own client.
func TestRabbitJobWaitsForAnotherReader(t *testing.T) {
	const n, held, hold = 4000, 2000, 2 * time.Second
	for _, tc := range []struct {
		name string
		// reader starts a reader of orders.dlq that takes the first held messages and keeps them
		// for hold; it returns once the reader holds them, or after a while if it cannot.
		reader func(t *testing.T, w *rabbitWorld, wg *sync.WaitGroup)
	}{
		{"ConsoleBrowse", func(t *testing.T, w *rabbitWorld, wg *sync.WaitGroup) {
			var got atomic.Int64
			holding := make(chan struct{})
			wg.Go(func() {
				// A browse whose reader is slow (a trace matching, a plan writing): it holds what
				// it read until the callback returns.
				_, err := w.broker.Peek(context.Background(), w.vhost, "orders.dlq", held, func(rabbit.Message) {
					if got.Add(1) == held {
						close(holding)
						time.Sleep(hold)
					}
				})
				t.Logf("the browse read %d messages: %v", got.Load(), err)
			})
			select {
			case <-holding:
			case <-time.After(time.Second): // it waits for its turn on the queue
			}
		}},
		// A reader that cancels its consumer, then returns what it held (a browse does: one nack
		// after the cancel): meanwhile the queue counts no consumer and those messages are not
		// ready. The job looked once and settled them as not found.
		{"CancelledBeforeReturning", func(t *testing.T, w *rabbitWorld, wg *sync.WaitGroup) {
			holding := make(chan struct{})
			wg.Go(func() { holdHead(t, vhostURL(t, w.vhost), "orders.dlq", held, time.Second, holding, true) })
			select {
			case <-holding:
			case <-time.After(10 * time.Second):
				t.Error("the other consumer did not get its messages")
			}
		}},
		{"OtherConsumer", func(t *testing.T, w *rabbitWorld, wg *sync.WaitGroup) {
			holding := make(chan struct{})
			wg.Go(func() { holdHead(t, vhostURL(t, w.vhost), "orders.dlq", held, hold, holding, false) })
			select {
			case <-holding:
			case <-time.After(10 * time.Second):
				t.Error("the other consumer did not get its messages")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRabbitWorld(t)
			w.fillDLQ(t, n)
			var readers sync.WaitGroup
			defer readers.Wait()
			b := &contendedBroker{Broker: w.broker}
			b.start = func() { tc.reader(t, w, &readers) }
			e := w.engineOver(t, b, nil)
			plan := w.planQueue(t, e, n, replay.Filter{})
			if plan.Total != n || plan.Counts[replay.Publish] != n {
				t.Fatalf("plan %v", plan.Counts)
			}
			work(t, e)
			job, err := e.Start(ctxT(t), replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1_000_000})
			if err != nil {
				t.Fatal(err)
			}
			var paused []string
			job = waitJobState(t, e, job.ID, 2*time.Minute, "job "+job.ID+" finishes", func(j replay.Job) bool {
				if j.Paused != "" && !contains(paused, j.Paused) {
					paused = append(paused, j.Paused)
				}
				return j.Status != replay.JobPending && j.Status != replay.JobRunning
			})
			t.Logf("paused: %q", paused)
			if job.Status != replay.JobDone || job.Published != n || job.Failed != 0 || job.Skipped != 0 {
				t.Fatalf("job %s: %d published, %d failed, %d skipped (error %q); want done with all %d published",
					job.Status, job.Published, job.Failed, job.Skipped, job.Error, n)
			}
			for _, p := range paused {
				if strings.Contains(p, "not found") && !strings.Contains(p, "wait") {
					t.Errorf("the job paused with %q: a pause says what it waits for", p)
				}
			}
			readers.Wait()
			w.waitDepth(t, "orders.work", n)
			w.waitDepth(t, "orders.dlq", 0)
			got := w.drain(t, "orders.work")
			if len(got) != n {
				t.Fatalf("orders.work holds %d; want %d", len(got), n)
			}
			for i, d := range got {
				if d.MessageId != fmt.Sprintf("m-%d", i) {
					t.Fatalf("orders.work position %d holds %s; want m-%d (every message once, in the DLQ's order)", i, d.MessageId, i)
				}
			}
		})
	}
}

// holdHead consumes the first n messages of queue on a connection of its own (manual acks, a
// prefetch of n), closes holding once it has them, keeps them unacknowledged for hold, then
// returns them all to the queue (nack, requeue) and leaves. With cancelFirst its consumer is
// cancelled as soon as it has them: they stay unacknowledged on the channel, counted by no consumer.
func holdHead(t *testing.T, amqpURL, queue string, n int, hold time.Duration, holding chan<- struct{}, cancelFirst bool) {
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err == nil {
		err = ch.Qos(n, 0, false)
	}
	var deliveries <-chan amqp.Delivery
	if err == nil {
		deliveries, err = ch.Consume(queue, "other-reader", false, false, false, false, nil)
	}
	if err != nil {
		t.Error(err)
		return
	}
	var last uint64
	timeout := time.After(10 * time.Second)
	for range n {
		select {
		case d := <-deliveries:
			last = d.DeliveryTag
		case <-timeout:
			t.Errorf("the other reader got %d of %d messages", last, n)
			return
		}
	}
	cancel := func() {
		if err := ch.Cancel("other-reader", false); err != nil {
			t.Error(err)
		}
	}
	if cancelFirst {
		cancel()
	}
	close(holding)
	time.Sleep(hold)
	if !cancelFirst {
		cancel()
	}
	if err := ch.Nack(last, true, true); err != nil {
		t.Error(err)
	}
	_ = ch.Close()
}

// vhostURL is the test broker's AMQP URL for vhost.
func vhostURL(t *testing.T, vhost string) string {
	base, _ := rabbittest.Env(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path, u.RawPath = "/"+vhost, "/"+url.PathEscape(vhost)
	return u.String()
}
