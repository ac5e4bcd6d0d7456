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
