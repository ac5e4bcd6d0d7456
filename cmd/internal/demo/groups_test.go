package demo

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/pgtest"
)

// The demo's consumer groups are each in the state the demo means, as the console's lag evaluator
// judges them from samples of the running demo (its rules, with a window of 12 s for 1 s samples
// in place of 5 min for 5 s ones, and the demo's warn_after_seconds): billing-service keeps up (OK)
// and has committed on every partition of orders, inventory-service commits on every partition but
// is days behind (WARN),
// shipping-service holds its partitions without a commit (STALL), legacy-reporting and fraud-check
// have no members (EMPTY), ledger-service keeps up with refunds (OK); notification-service (a
// KIP-848 consumer group) and order-mailer (a share group) keep up with orders (OK).
func TestDemoGroupsAreInTheirStates(t *testing.T) {
	pgDSN := pgtest.NewDatabase(t)
	outDSN, inDSN := mysqltest.NewDatabase(t), mysqltest.NewDatabase(t)
	brokers := kfaketest.Cluster(t).ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := SeedOutbox(ctx, pgDSN); err != nil {
		t.Fatal(err)
	}
	if err := SeedKafka(ctx, brokers); err != nil {
		t.Fatal(err)
	}
	if err := SeedRefunds(ctx, brokers, outDSN, inDSN); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	run, stop := context.WithCancel(ctx)
	defer stop()
	go RunKafkaTraffic(run, brokers)
	go RunRelay(run, pgDSN, brokers, log)
	go RunRefunds(run, brokers, outDSN, inDSN, log)

	c, err := kafka.New(configs.KafkaCluster{Name: "main", Brokers: brokers}, configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const every = time.Second
	rules := lag.Rules{Window: 12 * time.Second, StopAfter: 10 * time.Minute, WarnMinLag: 1, WarnAfter: WarnAfterSeconds * time.Second}
	samples := map[string]map[string][]lag.Sample{} // group → topic/partition → samples
	var last map[string]kafka.Group
	time.Sleep(3 * time.Second) // the members join
	for i := 0; i < 25; i++ {
		gs, err := c.Groups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last = map[string]kafka.Group{}
		now := time.Now()
		for _, g := range gs {
			last[g.Name] = g
			if samples[g.Name] == nil {
				samples[g.Name] = map[string][]lag.Sample{}
			}
			for _, tl := range g.Topics {
				for _, p := range tl.Partitions {
					k := lag.PartitionKey(tl.Topic, p.Partition)
					samples[g.Name][k] = append(samples[g.Name][k], lag.Sample{At: now, Committed: p.Committed, End: p.End, Lag: p.Lag, TimeLag: p.TimeLag})
				}
			}
		}
		time.Sleep(every)
	}
	want := map[string]lag.StatusCode{
		"billing-service": lag.StatusOK, "inventory-service": lag.StatusWarn, "shipping-service": lag.StatusStall,
		"legacy-reporting": lag.StatusEmpty, PoisonGroup: lag.StatusEmpty, RefundsConsumer: lag.StatusOK,
		NotificationGroup: lag.StatusOK, MailerShareGroup: lag.StatusOK,
	}
	kinds := map[string]string{NotificationGroup: kafka.GroupConsumer, MailerShareGroup: kafka.GroupShare, "billing-service": kafka.GroupClassic}
	for name, code := range want {
		g, ok := last[name]
		if !ok {
			t.Errorf("%s: not listed", name)
			continue
		}
		var parts []lag.PartitionSamples
		var never []string
		for _, tl := range g.Topics {
			for _, p := range tl.Partitions {
				parts = append(parts, lag.PartitionSamples{Topic: tl.Topic, Partition: p.Partition, Samples: samples[name][lag.PartitionKey(tl.Topic, p.Partition)]})
				if p.Committed < 0 && p.End > 0 {
					never = append(never, lag.PartitionKey(tl.Topic, p.Partition))
				}
			}
		}
		if want, ok := kinds[name]; ok && g.Kind() != want {
			t.Errorf("%s is a %s group, want %s", name, g.Kind(), want)
		}
		st := lag.EvaluateGroup(rules, every, g.State, g.Members, parts, time.Now())
		if g.Kind() == kafka.GroupShare {
			st = lag.EvaluateShareGroup(rules, every, g.State, g.Members, parts, time.Now())
		}
		if st.Status.Code != code {
			t.Errorf("%s (%s, %d members, lag %d): %s %q, want %s", name, g.State, g.Members, g.TotalLag, st.Status.Code, st.Status.Reason, code)
		}
		// A consumer that reads (billing, inventory, ledger) has committed on every partition.
		if (name == "billing-service" || name == "inventory-service" || name == RefundsConsumer) && len(never) > 0 {
			t.Errorf("%s never committed on %s", name, strings.Join(never, ", "))
		}
	}
}
