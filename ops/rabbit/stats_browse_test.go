package rabbit

import (
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/waittest"
)

// A browse of a queue whose counts the broker does not report (statistics disabled) cannot tell
// what a channel holds after a basic.get: it said nothing of it, and the page read as complete.
// It says so now; the messages it read are read as before.
func TestBrowseSaysWhatUnreportedCountsHide(t *testing.T) {
	e := newEnv(t)
	e.Queue("orders.dlq", nil)
	for range 3 {
		e.publish("", "orders.dlq", amqp.Publishing{MessageId: "m", Body: []byte("{}")})
	}
	e.waitDepth("orders.dlq", 3)
	p := rabbittest.NewStatsProxy(t)
	cfg := rabbittest.Config(t, e.vhost)
	cfg.ManagementURL = p.URL
	b, err := New(cfg, testIDs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	browse := func() (said bool) {
		res, err := b.Browse(ctxT(t), e.vhost, "orders.dlq", 10)
		if err != nil || len(res.Messages) != 3 {
			t.Fatalf("%d messages, %v", len(res.Messages), err)
		}
		return strings.Contains(strings.Join(res.Notes, " "), "cannot be told")
	}
	p.Disabled.Store(true)
	if !browse() {
		t.Error("statistics disabled: the browse does not say what it cannot tell")
	}
	p.Disabled.Store(false) // once the queue has reported its counts (every 5 s), nothing to say
	waittest.Until(t, 20*time.Second, "a browse with the queue's counts reported says nothing of them", func() bool { return !browse() })
}

// A quorum queue's passive declare answers 0 when its leader is unavailable (RabbitMQ 4's
// rabbit_quorum_queue:stat), while the management API goes on reporting the last counts: a browse
// said "no ready messages", complete. When the two disagree it says what the management API
// counted and what it may mean, and is not complete. (The management API's counts are held here
// by the proxy, as after a drain its statistics interval has not caught up with.)
func TestEmptyQuorumReadAgainstItsLastCounts(t *testing.T) {
	e := newEnv(t)
	e.Queue("orders.dlq", amqp.Table{"x-queue-type": "quorum"})
	for range 3 {
		e.publish("", "orders.dlq", amqp.Publishing{MessageId: "m", Body: []byte("{}")})
	}
	p := rabbittest.NewStatsProxy(t)
	cfg := rabbittest.Config(t, e.vhost)
	cfg.ManagementURL = p.URL
	b, err := New(cfg, testIDs)
	if err != nil {
		t.Fatal(err)
	}
	b.SetCustodian(e.kept) // RabbitMQ 4: a quorum queue has a delivery limit (20 by default)
	t.Cleanup(b.Close)
	waittest.Until(t, 20*time.Second, "the management API counts 3 ready", func() bool {
		q, err := b.queueInfo(ctxT(t), e.vhost, "orders.dlq")
		return err == nil && q.Ready == 3
	})
	p.Frozen.Store(true)
	e.drain("orders.dlq")
	res, err := b.Browse(ctxT(t), e.vhost, "orders.dlq", 10)
	if err != nil || len(res.Messages) != 0 {
		t.Fatalf("%d messages, %v", len(res.Messages), err)
	}
	if notes := strings.Join(res.Notes, " "); res.Complete || !strings.Contains(notes, "counted 3 ready messages") {
		t.Errorf("an empty read against a count of 3: complete %v, notes %q", res.Complete, notes)
	}
	p.Frozen.Store(false)
	waittest.Until(t, 20*time.Second, "an empty read with the counts caught up says nothing of them", func() bool {
		res, err := b.Browse(ctxT(t), e.vhost, "orders.dlq", 10)
		return err == nil && res.Complete && !strings.Contains(strings.Join(res.Notes, " "), "counted")
	})
}
