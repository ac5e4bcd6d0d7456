package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/rabbittest"
)

// A group or a queue that appeared after the last sample is read through from the broker, so a
// script that creates one and asks at once gets it, not a 404 for up to a sampler interval.
func TestReadThroughBeforeTheNextSample(t *testing.T) {
	t.Run("KafkaGroup", func(t *testing.T) {
		base, addr := kafkaConsoleAt(t) // sampler.interval is the default 15 s
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		offsets := kadm.Offsets{}
		offsets.AddOffset("orders", 0, 5, -1)
		if _, err := kadm.NewClient(cl).CommitOffsets(context.Background(), "late-joiner", offsets); err != nil {
			t.Fatal(err)
		}
		r := do(t, nil, "GET", base+"/api/v1/kafka/main/groups/late-joiner", "", "")
		g := decode[apiGroup](t, r)
		if r.status != 200 || g.Group != "late-joiner" || g.Status != "EMPTY" || len(g.Topics) != 1 {
			t.Fatalf("a group committed just now: %d %s", r.status, r.body)
		}
		if r := do(t, nil, "GET", base+"/api/v1/kafka/main/groups/never-existed", "", ""); r.status != 404 {
			t.Fatalf("an unknown group: %d %s", r.status, r.body)
		}
	})
	t.Run("RabbitQueue", func(t *testing.T) {
		base, vhost, vhostURL := rabbitConsole(t)
		_, ch := rabbittest.Channel(t, vhostURL)
		if _, err := ch.QueueDeclare("declared.just.now", true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := do(t, nil, "GET", base+queuePath(vhost, "declared.just.now"), "", "")
		if r.status != 200 || !strings.Contains(r.body, `"name":"declared.just.now"`) {
			t.Fatalf("a queue declared just now: %d %s (after %v)", r.status, r.body, time.Since(start))
		}
		if r := do(t, nil, "GET", base+queuePath(vhost, "never.existed"), "", ""); r.status != 404 {
			t.Fatalf("an unknown queue: %d %s", r.status, r.body)
		}
	})
}
