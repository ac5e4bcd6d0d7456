package replay_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/storetest"
)

// A replay from a DLQ of the default vhost "/" names its source in x-redrive-source as the queue
// alone (rabbit.VhostName), as the console prints that vhost's queues everywhere: it once read
// "//orders.dlq". The test's queues live in "/" under names of their own, deleted at cleanup.
func TestRabbitReplaySourceOfTheDefaultVhost(t *testing.T) {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	s := "vh-" + hex.EncodeToString(b)
	exchange, workQ, dlq := s+".x", s+".work", s+".dlq"
	base, _ := rabbittest.Env(t)
	_, ch := rabbittest.Channel(t, base)
	topo := rabbittest.Topology{TB: t, Ch: ch}
	topo.Exchange(exchange, "direct")
	topo.Queue(workQ, nil)
	topo.Queue(dlq, nil)
	topo.Bind(workQ, "created", exchange)
	t.Cleanup(func() {
		_, cc := rabbittest.Channel(t, base)
		_, _ = cc.QueueDelete(workQ, false, false, false)
		_, _ = cc.QueueDelete(dlq, false, false, false)
		_ = cc.ExchangeDelete(exchange, false, false)
	})
	death := []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": workQ, "exchange": exchange,
		"routing-keys": []any{"created"}, "time": time.Now().UTC().Truncate(time.Second)}}
	if err := ch.PublishWithContext(ctxT(t), "", dlq, false, false, amqp.Publishing{MessageId: "m-1", DeliveryMode: amqp.Persistent,
		Headers: amqp.Table{"x-death": death}, Body: []byte(`{"messageId":"m-1"}`)}); err != nil {
		t.Fatal(err)
	}
	rabbittest.WaitDepth(t, ch, dlq, 1, 10*time.Second)

	cfg := rabbittest.Config(t, rabbit.DefaultVhost)
	br, err := rabbit.New(cfg, configs.MessageIDRules{Headers: []string{"messageId"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Close)
	e, err := replay.New(replay.Options{Store: storetest.Open(t), Rabbit: []replay.RabbitBroker{br},
		Replay: replay.Settings{MaxReplaysPerMessage: 3, DefaultRatePerSecond: 1000}, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := e.Plan(ctxT(t), "ops", replay.Source{Kind: "rabbitmq", Broker: cfg.Name, Vhost: "/", Queue: dlq, Limit: 10}, replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != 1 {
		t.Fatalf("plan %v %v", plan.Counts, err)
	}
	work(t, e)
	if job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, Reason: "r"}); job.Published != 1 {
		t.Fatalf("job %+v", job)
	}
	rabbittest.WaitDepth(t, ch, workQ, 1, 10*time.Second)
	d, ok, err := ch.Get(workQ, true)
	if err != nil || !ok {
		t.Fatalf("get %s: %v %v", workQ, ok, err)
	}
	if got := d.Headers[replay.HeaderSource]; got != dlq {
		t.Errorf("%s = %q, want %q", replay.HeaderSource, got, dlq)
	}
}
