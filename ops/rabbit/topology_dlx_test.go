package rabbit

import (
	"context"
	"strings"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/rabbittest"
)

// A quorum queue that dead-letters at least once keeps what no queue takes (messages_dlx), counted
// toward its max-length, and retries: 3 rejected messages whose dead-letter exchange does not exist
// read 0 ready, 0 unacked, and an edge note that the broker drops them. They are shown as held for
// dead-lettering, with the strategy, and the note says they are kept. At-least-once asked for
// without overflow reject-publish is at most once, and the note says so.
func TestTopologyAtLeastOnceDeadLettersAreKept(t *testing.T) {
	e := newEnv(t)
	e.Queue("kept", amqp.Table{"x-queue-type": "quorum", "x-dead-letter-strategy": "at-least-once",
		"x-overflow": "reject-publish", "x-dead-letter-exchange": "nowhere"})
	e.Queue("fallback", amqp.Table{"x-queue-type": "quorum", "x-dead-letter-strategy": "at-least-once",
		"x-dead-letter-exchange": "nowhere"})
	e.Queue("by-policy", amqp.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": "nowhere"})
	e.policy("alo", "^by-policy$", rabbithole.PolicyDefinition{"dead-letter-strategy": "at-least-once", "overflow": "reject-publish"}, "by-policy")
	for _, q := range []string{"kept", "by-policy"} {
		for _, id := range []string{"a", "b", "c"} {
			e.publish("", q, amqp.Publishing{MessageId: id, Body: []byte(id)})
		}
		e.waitDepth(q, 3)
		for range 3 {
			e.reject(t, q)
		}
	}

	var topo Topology
	rabbittest.WaitFor(t, 20*time.Second, "the held dead letters reported", func(ctx context.Context) bool {
		var err error
		if topo, err = e.b.Topology(ctx); err != nil {
			return false
		}
		n := 0
		for _, q := range topo.Queues {
			if q.DeadLetterHeld == 3 {
				n++
			}
		}
		return n == 2
	})
	for _, q := range topo.Queues {
		edge := ""
		for _, x := range topo.Edges {
			if x.FromQueue == q.Name {
				edge = x.Note
			}
		}
		t.Logf("%s: total %d ready %d held %d strategy %q; edge: %s", q.Name, q.Total, q.Ready, q.DeadLetterHeld, q.DeadLetterStrategy, edge)
		switch q.Name {
		case "kept", "by-policy":
			if q.DeadLetterStrategy != rabbitmodel.StrategyAtLeastOnce || q.DeadLetterHeld != 3 || q.Total != 3 || q.Ready != 0 {
				t.Errorf("%s: strategy %q, held %d, total %d, ready %d; want at-least-once holding the 3", q.Name, q.DeadLetterStrategy, q.DeadLetterHeld, q.Total, q.Ready)
			}
			if !strings.Contains(edge, "keeps these dead letters") || strings.Contains(edge, "drop") {
				t.Errorf("%s: the edge says %q; want them kept, not dropped", q.Name, edge)
			}
		case "fallback":
			if q.DeadLetterStrategy != rabbitmodel.StrategyAtMostOnce || q.DeadLetterAsked != rabbitmodel.StrategyAtLeastOnce {
				t.Errorf("fallback: strategy %q (asked %q); want at-most-once", q.DeadLetterStrategy, q.DeadLetterAsked)
			}
			if !strings.Contains(edge, "drops these dead letters") || !strings.Contains(edge, "only with overflow reject-publish") {
				t.Errorf("fallback: the edge says %q; want dropped, and why at-least-once does not apply", edge)
			}
		}
	}
}
