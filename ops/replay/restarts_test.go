package replay_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

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
		Consumers: []ops.Consumer{{Name: "inventory-service", RabbitMQ: &ops.ConsumerRabbit{Broker: "test", Vhost: w.vhost, Queue: "orders.work"}}},
		Replay:    replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 1000}, Lease: 2 * time.Second,
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
