package rabbit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/pglock"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/waittest"
)

const concurrentDLQ = "orders.dlq"

// fillDLQ declares concurrentDLQ (a classic queue unless args say otherwise) and publishes n
// messages with ids m-000, m-001, ….
func (e *env) fillDLQ(n int, args ...amqp.Table) {
	e.t.Helper()
	var a amqp.Table
	if len(args) > 0 {
		a = args[0]
	}
	e.Queue(concurrentDLQ, a)
	for i := range n {
		e.publish("", concurrentDLQ, amqp.Publishing{MessageId: msgID(i), DeliveryMode: amqp.Persistent,
			Body: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	e.waitDepth(concurrentDLQ, n)
}

func msgID(i int) string { return fmt.Sprintf("m-%03d", i) }

// inOrder reports how msgs differ from ids m-<from> … m-<from+n-1> at positions 0 … n-1.
func inOrder(msgs []Message, from, n int) error {
	if len(msgs) != n {
		return fmt.Errorf("saw %d messages, want %d", len(msgs), n)
	}
	for i, m := range msgs {
		if m.MessageID != msgID(from+i) || m.Position != i {
			return fmt.Errorf("message %d is %s at position %d, want %s at %d", i, m.MessageID, m.Position, msgID(from+i), i)
		}
	}
	return nil
}

// assertUnchanged checks, with the management API and a last browse, that the queue holds the n
// messages, all ready, in their original order.
// assertWhole fails unless every reader saw the queue's n messages in order and read it whole, and
// the queue is then as it was; name(i) names reader i in an order failure.
func (e *env) assertWhole(t *testing.T, results []BrowseResult, seen [][]Message, n int, name func(i int) string) {
	t.Helper()
	for i := range results {
		if err := inOrder(seen[i], 0, n); err != nil {
			t.Errorf("%s: %v", name(i), err)
		}
		if !results[i].Complete {
			t.Errorf("reader %d: incomplete: %q", i, results[i].Notes)
		}
	}
	e.assertUnchanged(n)
}

func (e *env) assertUnchanged(n int) {
	e.t.Helper()
	rabbittest.WaitFor(e.t, 15*time.Second, fmt.Sprintf("management API: %d ready, 0 unacked", n), func(context.Context) bool {
		q, err := e.mgmt.GetQueue(e.vhost, concurrentDLQ)
		return err == nil && q.MessagesReady == n && q.MessagesUnacknowledged == 0
	})
	res, err := e.b.Browse(context.Background(), e.vhost, concurrentDLQ, MaxBrowse)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := inOrder(res.Messages, 0, n); err != nil {
		e.t.Fatalf("final browse: %v", err)
	}
}

// browseAll runs each reader at once (after a common start) and returns what each saw.
func browseAll(t *testing.T, readers []func() (BrowseResult, []Message, error)) ([]BrowseResult, [][]Message) {
	t.Helper()
	results := make([]BrowseResult, len(readers))
	seen := make([][]Message, len(readers))
	errs := make([]error, len(readers))
	waittest.AtOnce(len(readers), func(i int) { results[i], seen[i], errs[i] = readers[i]() })
	for i, err := range errs {
		if err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
	}
	return results, seen
}

func browser(b *Broker, vhost string, limit int) func() (BrowseResult, []Message, error) {
	return func() (BrowseResult, []Message, error) {
		res, err := b.Browse(context.Background(), vhost, concurrentDLQ, limit)
		return res, res.Messages, err
	}
}

// browsers are k browsers of the queue, each reading up to limit messages.
func browsers(b *Broker, vhost string, limit, k int) []func() (BrowseResult, []Message, error) {
	readers := make([]func() (BrowseResult, []Message, error), k)
	for i := range readers {
		readers[i] = browser(b, vhost, limit)
	}
	return readers
}

func peeker(b *Broker, vhost string, limit int) func() (BrowseResult, []Message, error) {
	return func() (BrowseResult, []Message, error) {
		var msgs []Message
		res, err := b.Peek(context.Background(), vhost, concurrentDLQ, limit, func(m Message) { msgs = append(msgs, m) })
		return res, msgs, err
	}
}

func TestBrowseConcurrent(t *testing.T) {
	t.Parallel()
	const n = 50
	e := newEnv(t)
	e.fillDLQ(n)

	t.Run("FiveBrowses", func(t *testing.T) {
		readers := browsers(e.b, e.vhost, 100, 5)
		start := time.Now()
		results, seen := browseAll(t, readers)
		t.Logf("5 concurrent browses of %d messages took %v", n, time.Since(start))
		for i := range results {
			if err := inOrder(seen[i], 0, n); err != nil {
				t.Errorf("browse %d: %v", i, err)
			}
			if !results[i].Complete || results[i].Unacked != 0 || results[i].Ready != n {
				t.Errorf("browse %d: complete=%v unacked=%d ready=%d, want true, 0, %d; notes %q",
					i, results[i].Complete, results[i].Unacked, results[i].Ready, n, results[i].Notes)
			}
		}
		e.assertUnchanged(n)
	})

	t.Run("PeeksAndBrowses", func(t *testing.T) {
		var readers []func() (BrowseResult, []Message, error)
		for range 3 {
			readers = append(readers, peeker(e.b, e.vhost, n), browser(e.b, e.vhost, n))
		}
		results, seen := browseAll(t, readers)
		e.assertWhole(t, results, seen, n, func(i int) string { return fmt.Sprintf("reader %d (%s)", i, []string{"peek", "browse"}[i%2]) })
	})

	t.Run("TwentyBrowses", func(t *testing.T) {
		readers := browsers(e.b, e.vhost, 20, 20)
		start := time.Now()
		_, seen := browseAll(t, readers)
		t.Logf("20 concurrent browses of 20 messages took %v", time.Since(start))
		for i := range seen {
			if err := inOrder(seen[i], 0, 20); err != nil {
				t.Errorf("browse %d: %v", i, err)
			}
		}
		e.assertUnchanged(n)
	})
}

// A quorum queue returns browsed messages asynchronously: the next browse in turn still sees them all.
func TestBrowseConcurrentQuorum(t *testing.T) {
	t.Parallel()
	const n = 30
	e := newEnv(t)
	e.fillDLQ(n, amqp.Table{"x-queue-type": "quorum"})
	var readers []func() (BrowseResult, []Message, error)
	for range 2 {
		readers = append(readers, browser(e.b, e.vhost, n), peeker(e.b, e.vhost, n))
	}
	start := time.Now()
	results, seen := browseAll(t, readers)
	t.Logf("2 browses and 2 peeks of a %d-message quorum queue took %v", n, time.Since(start))
	e.assertWhole(t, results, seen, n, func(i int) string { return fmt.Sprintf("reader %d", i) })
}

// Two Broker values over one store are two replicas of the console: their browses take turns too,
// and the lock needs no pooled connection (plans hold one while they read the queue).
func TestBrowseAcrossReplicas(t *testing.T) {
	t.Parallel()
	const n = 50
	e := newEnv(t)
	e.fillDLQ(n)
	ctx := context.Background()
	// The locks' database has a pool, every connection of it taken, as when plans hold their
	// transactions: the locks must not need one.
	pool, err := pgxpool.New(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	other := e.replica(t, pglock.Locker{Config: pool.Config().ConnConfig})

	for range pool.Config().MaxConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
	}

	var readers []func() (BrowseResult, []Message, error)
	for range 3 {
		readers = append(readers, browser(e.b, e.vhost, n), browser(other, e.vhost, n))
	}
	readers = append(readers, peeker(e.b, e.vhost, n), peeker(other, e.vhost, n))
	results, seen := browseAll(t, readers)
	e.assertWhole(t, results, seen, n, func(i int) string { return fmt.Sprintf("reader %d (replica %d)", i, i%2) })
}

func TestBrowseWaitBound(t *testing.T) {
	t.Parallel()
	const n = 5
	e := newEnv(t)
	e.fillDLQ(n)
	ctx := context.Background()
	e.b.browsing.wait = 300 * time.Millisecond
	wantMsg := `another browse or replay plan of queue "orders.dlq" is reading it`

	expectBusy := func(t *testing.T) {
		t.Helper()
		start := time.Now()
		_, err := e.b.Browse(ctx, e.vhost, concurrentDLQ, 10)
		waited := time.Since(start)
		if !errors.Is(err, ops.ErrUnavailable) || !strings.Contains(err.Error(), wantMsg) || !strings.HasSuffix(err.Error(), "try again") {
			t.Fatalf("browse of a busy queue: %v, want ops.ErrUnavailable saying %q … try again", err, wantMsg)
		}
		if waited < 250*time.Millisecond || waited > 3*time.Second {
			t.Errorf("gave up after %v, want about 300ms", waited)
		}
		_, err = e.b.Peek(ctx, e.vhost, concurrentDLQ, 10, func(Message) {})
		if !errors.Is(err, ops.ErrUnavailable) || !strings.Contains(err.Error(), wantMsg) {
			t.Fatalf("peek of a busy queue: %v", err)
		}
		t.Logf("%v", err)
	}

	t.Run("InProcess", func(t *testing.T) {
		release, _, err := e.b.browsing.acquire(ctx, e.b.name, e.vhost, concurrentDLQ)
		if err != nil {
			t.Fatal(err)
		}
		expectBusy(t)
		// A caller that gives up while waiting gets its own cancellation, not "busy".
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(50*time.Millisecond, cancel)
		if _, err := e.b.Browse(cctx, e.vhost, concurrentDLQ, 10); !errors.Is(err, context.Canceled) || errors.Is(err, ops.ErrUnavailable) {
			t.Errorf("cancelled wait: %v, want context.Canceled", err)
		}
		release()
		res, err := e.b.Browse(ctx, e.vhost, concurrentDLQ, 10)
		if err != nil || inOrder(res.Messages, 0, n) != nil {
			t.Fatalf("after release: %v %v", err, inOrder(res.Messages, 0, n))
		}
	})

	t.Run("OtherReplica", func(t *testing.T) {
		st := locker(t, pgtest.NewDatabase(t))
		e.b.SetQueueLock(st)
		defer e.b.SetQueueLock(nil)
		unlock, err := st.Lock(ctx, "rabbitmq-browse:"+e.b.name+"/"+e.vhost+"/"+concurrentDLQ)
		if err != nil {
			t.Fatal(err)
		}
		expectBusy(t)
		unlock()
		// The browse that must go through waits as a console's does (see
		// TestCursorTakesTheQueuesTurn/OtherReplica); the next subtest's browse needs no turn.
		e.b.browsing.wait = DefaultBrowseWait
		res, err := e.b.Browse(ctx, e.vhost, concurrentDLQ, 10)
		if err != nil || !res.Complete || inOrder(res.Messages, 0, n) != nil {
			t.Fatalf("after the other replica unlocked: %v complete=%v %v notes %q", err, res.Complete, inOrder(res.Messages, 0, n), res.Notes)
		}
	})

	t.Run("StoreDown", func(t *testing.T) {
		// The lock's database is gone: the browse still shows the queue, and says what it could not promise.
		st := locker(t, pgtest.NewDatabase(t))
		pgtest.Exec(t, pgtest.AdminDSN(t), `DROP DATABASE `+st.Config.Database+` WITH (FORCE)`)
		e.b.SetQueueLock(st)
		defer e.b.SetQueueLock(nil)
		res, err := e.b.Browse(ctx, e.vhost, concurrentDLQ, 10)
		if err != nil {
			t.Fatal(err)
		}
		if res.Complete || inOrder(res.Messages, 0, n) != nil || !hasNote(res, "other console replicas could not be excluded") {
			t.Fatalf("complete=%v %v notes %q", res.Complete, inOrder(res.Messages, 0, n), res.Notes)
		}
	})
}

func hasNote(res BrowseResult, s string) bool {
	for _, n := range res.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// A browse cannot see what others hold unacknowledged: it says so, with the count.
func TestBrowseHeldByOthers(t *testing.T) {
	t.Parallel()
	const n = 50
	e := newEnv(t)
	e.fillDLQ(n)
	ctx := context.Background()
	waitStats := func(unacked, consumers int64) {
		rabbittest.WaitFor(t, 15*time.Second, fmt.Sprintf("management API: %d unacked, %d consumers", unacked, consumers), func(ctx context.Context) bool {
			q, err := e.b.queueInfo(ctx, e.vhost, concurrentDLQ)
			return err == nil && q.Unacked == unacked && q.Consumers == consumers
		})
	}

	t.Run("Consumer", func(t *testing.T) {
		ch, deliveries := rabbittest.Consume(t, e.url, concurrentDLQ, "holder", 12)
		defer ch.Close()
		for range 12 {
			<-deliveries
		}
		waitStats(12, 1)
		res, err := e.b.Browse(ctx, e.vhost, concurrentDLQ, 100)
		if err != nil {
			t.Fatal(err)
		}
		if res.Complete || res.Unacked != 12 || res.Consumers != 1 {
			t.Errorf("complete=%v unacked=%d consumers=%d, want false, 12, 1", res.Complete, res.Unacked, res.Consumers)
		}
		if err := inOrder(res.Messages, 12, n-12); err != nil {
			t.Errorf("%v", err)
		}
		if !hasNote(res, "12 messages are held unacknowledged by 1 consumer and are not shown; the list may be partial.") {
			t.Errorf("notes %q", res.Notes)
		}
		t.Logf("notes: %q", res.Notes)
	})

	t.Run("BasicGet", func(t *testing.T) {
		_, ch := rabbittest.Channel(t, e.url)
		defer ch.Close()
		for range 3 {
			if _, ok, err := ch.Get(concurrentDLQ, false); err != nil || !ok {
				t.Fatalf("get: %v %v", ok, err)
			}
		}
		waitStats(3, 0)
		res, err := e.b.Browse(ctx, e.vhost, concurrentDLQ, 100)
		if err != nil {
			t.Fatal(err)
		}
		if res.Complete || res.Unacked != 3 || res.Consumers != 0 || len(res.Messages) != n-3 {
			t.Errorf("complete=%v unacked=%d consumers=%d read=%d, want false, 3, 0, %d", res.Complete, res.Unacked, res.Consumers, len(res.Messages), n-3)
		}
		if !hasNote(res, "3 messages are held unacknowledged by a channel that has no consumer") {
			t.Errorf("notes %q", res.Notes)
		}
	})

	// Once the holders are gone the queue is whole again, and a browse right after another one
	// (statistics still counting the first one's holding) is complete.
	waitStats(0, 0)
	var during int64
	_, err := e.b.Peek(ctx, e.vhost, concurrentDLQ, n, func(m Message) {
		if m.Position == 0 {
			rabbittest.WaitFor(t, 15*time.Second, "management API: the peek's messages unacked", func(ctx context.Context) bool {
				q, err := e.b.queueInfo(ctx, e.vhost, concurrentDLQ)
				during = q.Unacked
				return err == nil && q.Unacked == n
			})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := e.b.queueInfo(ctx, e.vhost, concurrentDLQ)
	res, err := e.b.Browse(ctx, e.vhost, concurrentDLQ, 100)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("statistics after the peek: %d unacked (during: %d); browse: complete=%v unacked=%d", q.Unacked, during, res.Complete, res.Unacked)
	if !res.Complete || res.Unacked != 0 || inOrder(res.Messages, 0, n) != nil {
		t.Errorf("browse after a peek: complete=%v unacked=%d %v notes %q", res.Complete, res.Unacked, inOrder(res.Messages, 0, n), res.Notes)
	}
}

func TestHeldByOthers(t *testing.T) {
	for _, c := range []struct {
		name                  string
		unacked, total, ready int64
		want                  int64
	}{
		{"Nothing", 0, 50, 50, 0},
		{"SampleDuringEarlierBrowse", 50, 50, 50, 0},
		{"Held", 12, 62, 50, 12},
		{"PublishedSinceSampleUndercounts", 12, 62, 55, 7},
		{"NoStatisticsYet", 0, 0, 50, 0},
		{"ReadyBelowSample", 5, 50, 20, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := heldByOthers(Queue{Unacked: c.unacked, Total: c.total}, c.ready); got != c.want {
				t.Errorf("heldByOthers(unacked %d, total %d, ready %d) = %d, want %d", c.unacked, c.total, c.ready, got, c.want)
			}
		})
	}
}

// locker takes the queue locks on the database dsn names, as replicas sharing a store do.
// replica is another console replica: a second Broker of the env's vhost, with e.b's waits, that
// takes turns with e.b through the queue lock st (e.b takes turns through st until t ends).
func (e *env) replica(t *testing.T, st QueueLocker) *Broker {
	t.Helper()
	other, err := New(rabbittest.Config(t, e.vhost), testIDs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	other.firstWait, other.idleWait, other.browsing.wait = e.b.firstWait, e.b.idleWait, e.b.browsing.wait
	e.b.SetQueueLock(st)
	t.Cleanup(func() { e.b.SetQueueLock(nil) })
	other.SetQueueLock(st)
	return other
}

func locker(t *testing.T, dsn string) pglock.Locker {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return pglock.Locker{Config: cfg}
}

// Right after a consumer acked most of what it held and left — what a replay job does — the
// management statistics still count them unacknowledged for up to a sample interval; no consumer
// is attached, so the browse waits for a fresh sample instead of calling the queue partial (a plan
// made right after a job was refused with 409 for a few seconds).
func TestBrowseRightAfterAConsumerAckedAndLeft(t *testing.T) {
	t.Parallel()
	const n, acked = 60, 45
	e := newEnv(t)
	e.fillDLQ(n)
	ctx := context.Background()
	ch, deliveries := rabbittest.Consume(t, e.url, concurrentDLQ, "job", n)
	var last amqp.Delivery
	for range n {
		last = <-deliveries
	}
	rabbittest.WaitFor(t, 15*time.Second, "management API: the consumer's messages unacked", func(ctx context.Context) bool {
		q, err := e.b.queueInfo(ctx, e.vhost, concurrentDLQ)
		return err == nil && q.Unacked == n
	})
	if err := ch.Ack(last.DeliveryTag-uint64(n-acked), true); err != nil { // the first 45, then the rest go back
		t.Fatal(err)
	}
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	e.waitDepth(concurrentDLQ, n-acked)
	res, err := e.b.Browse(ctx, e.vhost, concurrentDLQ, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Unacked != 0 || len(res.Messages) != n-acked {
		t.Fatalf("browse right after: complete=%v unacked=%d read=%d notes %q; want complete, 0, %d", res.Complete, res.Unacked,
			len(res.Messages), res.Notes, n-acked)
	}
}
