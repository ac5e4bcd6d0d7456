package sampler

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/lag"
)

func TestStageOf(t *testing.T) {
	for topic, want := range map[string][2]string{
		"orders": {"orders", StageMain}, "orders-retry": {"orders", StageRetry}, "orders-retry-0": {"orders", StageRetry},
		"orders-retry-5000": {"orders", StageRetry}, "orders-retry-10s": {"orders", StageRetry}, "orders.retry.1": {"orders", StageRetry},
		"orders.DLT": {"orders", StageDLT}, "orders-dlt": {"orders", StageDLT}, "payments.dlq": {"payments", StageDLT},
		"retry": {"retry", StageMain}, "order-retryable": {"order-retryable", StageMain},
	} {
		if base, stage := StageOf(topic, false); base != want[0] || stage != want[1] {
			t.Errorf("%s: %s %s, want %v", topic, base, stage, want)
		}
	}
	if base, stage := StageOf("poison-bin", true); base != "poison-bin" || stage != StageDLT {
		t.Errorf("a DLT by pattern: %s %s", base, stage)
	}
}

// The seed's warning: the main topic keeps up while failures pile up in the retry topics and
// the DLT. The pipeline shows the stages together and says so.
func TestPipelines(t *testing.T) {
	g := lag.Group{Group: kafka.Group{Name: "inventory", Topics: []kafka.TopicLag{
		{Topic: "orders", Lag: 0}, {Topic: "orders-retry-10", Lag: 7}, {Topic: "orders-retry-2", Lag: 120}, {Topic: "audit", Lag: 3},
	}}, RateKnown: true, TopicRates: map[string]lag.TopicRate{"orders": {Consumed: 50, Produced: 50}}}
	dlts := []kafka.DLTopic{
		{Topic: "orders-retry-2", Retry: true, Records: 400}, {Topic: "orders-retry-10", Retry: true, Records: 90},
		{Topic: "orders.DLT", Records: 1234, InflowPerSecond: 0.4, InflowKnown: true},
		{Topic: "payments.DLT", Records: 5}, // another consumer's
	}
	ps := Pipelines(g, dlts)
	if len(ps) != 1 || ps[0].Base != "orders" || !ps[0].BackedUp {
		t.Fatalf("pipelines %+v", ps)
	}
	var names []string
	for _, s := range ps[0].Stages {
		names = append(names, s.Topic+":"+s.Stage)
	}
	if strings.Join(names, " ") != "orders:main orders-retry-2:retry orders-retry-10:retry orders.DLT:dlt" {
		t.Errorf("stages %v", names)
	}
	if s := ps[0].Stages[0]; s.ConsumedPerSecond == nil || *s.ConsumedPerSecond != 50 || *s.InflowPerSecond != 50 {
		t.Errorf("main stage rates %+v", s)
	}
	if d := ps[0].Stages[3]; d.Consumed || d.Records != 1234 || d.InflowPerSecond == nil || *d.InflowPerSecond != 0.4 {
		t.Errorf("DLT stage %+v", d)
	}
	want := "orders: the main topic's lag is 0, but 120 records wait in orders-retry-2, 7 records wait in orders-retry-10, orders.DLT receives 0.4/s."
	if ps[0].Verdict != want {
		t.Errorf("verdict %q\nwant    %q", ps[0].Verdict, want)
	}
}

// A retry topic that holds records the group does not read is named, not covered by "nothing
// waits in its retry topics" (the demo's orders.retry-1: 12 records, no reader in the group).
func TestPipelineUnreadRetryTopic(t *testing.T) {
	g := lag.Group{Group: kafka.Group{Name: "billing", Topics: []kafka.TopicLag{{Topic: "orders", Lag: 5}}}}
	dlts := []kafka.DLTopic{{Topic: "orders.retry-1", Retry: true, Records: 12}, {Topic: "orders.DLT", Records: 240, InflowKnown: true}}
	ps := Pipelines(g, dlts)
	if len(ps) != 1 || ps[0].BackedUp {
		t.Fatalf("pipelines %+v; want one, not backed up", ps)
	}
	want := "orders: the main topic's lag is 5, and nothing arrives in its DLT; this group does not read the retry topic orders.retry-1 (12 records)."
	if ps[0].Verdict != want {
		t.Errorf("verdict %q\nwant    %q", ps[0].Verdict, want)
	}
}

// A DLT's inflow and a group's per-topic rates are sampled by the leader and reach another
// replica through the stored snapshot.
func TestPipelineRatesRoundTrip(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	b.topic(t, "orders", 2)
	b.topic(t, "orders.DLT", 3)
	b.fill(t, "orders", 5, 0, 1)
	b.commit(t, "inventory", "orders", map[int32]int64{0: 1, 1: 1})
	clk := newClock()
	leader, reader := replicas(t, b, clk, 5*time.Second, func(o *Options) { o.CacheTTL = -1 })
	if err := leader.SampleOnce(ctx); err != nil {
		t.Fatal(err)
	}
	b.fill(t, "orders.DLT", 10, 0, 1, 2) // 30 dead letters in 15 s
	b.fill(t, "orders", 15, 0, 1)        // 30 records in 15 s
	sampleAfter(t, ctx, leader, clk, 15*time.Second)
	snap, err := reader.LatestKafka(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	var dlt kafka.DLTopic
	for _, d := range snap.DeadLetterTopics {
		if d.Topic == "orders.DLT" {
			dlt = d
		}
	}
	if !dlt.InflowKnown || math.Abs(dlt.InflowPerSecond-2) > 1e-9 {
		t.Errorf("orders.DLT inflow %v (known %v), want 2/s", dlt.InflowPerSecond, dlt.InflowKnown)
	}
	g := group(t, snap, "inventory")
	if r := g.TopicRates["orders"]; math.Abs(r.Produced-2) > 1e-9 || r.Consumed != 0 {
		t.Errorf("orders' rates %+v, want 2/s produced, none consumed", r)
	}
	ps := Pipelines(g, snap.DeadLetterTopics)
	if len(ps) != 1 || len(ps[0].Stages) != 2 || !ps[0].BackedUp || !strings.Contains(ps[0].Verdict, "orders.DLT receives 2.0/s") {
		t.Errorf("pipelines %+v", ps)
	}
}
