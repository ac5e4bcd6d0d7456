package health

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/paths/links"
)

// An exclusive DLQ's problem linked its messages page, whose browse RabbitMQ refuses to any
// connection but the owner's: it links the queue's page, which says why, as for an auto-delete one.
func TestTopologyExclusiveDLQLinksItsQueuePage(t *testing.T) {
	q := queues.Queue{Queue: rabbitmodel.Queue{Vhost: "/", Name: "owned.dlq", Type: "classic", Ready: 3, Exclusive: true, IsDeadLetterQueue: true}}
	got := RabbitProblems("rmq", queues.Snapshot{Broker: "rmq", At: now, Queues: []queues.Queue{q}}, nil, now)
	if len(got) != 1 || links.To(got[0].Page, got[0].Labels) != "/rabbitmq/rmq/queues/%2F/owned.dlq" {
		t.Fatalf("problems %+v; want one linking the queue's page", got)
	}
}

// A quorum queue dead-lettering at least once, whose dead-letter exchange routes nowhere, holds
// what it dead-lettered (messages_dlx): 0 ready, 0 unacked, and no problem said so. It is a
// problem of its own, saying what they are and where the route ends; a DLQ that also holds some
// says it in its summary.
func TestTopologyHeldForDeadLetteringIsAProblem(t *testing.T) {
	note := `exchange "nowhere" does not exist: with at-least-once dead-lettering the queue keeps these dead letters`
	work := queues.Queue{Queue: rabbitmodel.Queue{Vhost: "/", Name: "orders", Type: "quorum", Total: 3, DeadLetterHeld: 3,
		DeadLetterStrategy: rabbitmodel.StrategyAtLeastOnce, HasDeadLetterExchange: true, DeadLetterExchange: "nowhere"}}
	dlq := queues.Queue{Queue: rabbitmodel.Queue{Vhost: "/", Name: "orders.dlq", Type: "quorum", Ready: 2, Total: 3, DeadLetterHeld: 1,
		DeadLetterStrategy: rabbitmodel.StrategyAtLeastOnce, IsDeadLetterQueue: true}}
	snap := queues.Snapshot{Broker: "rmq", At: now, Queues: []queues.Queue{work, dlq},
		Edges: []rabbitmodel.Edge{{FromVhost: "/", FromQueue: "orders", Exchange: "nowhere", Missing: true, Note: note}}}
	got := RabbitProblems("rmq", snap, nil, now)
	if len(got) != 2 {
		t.Fatalf("problems %+v", got)
	}
	p := got[0]
	if p.Key != "dead_letters/rabbitmq/rmq///orders" || p.Title != "orders holds 3 dead letters it has not handed on (dead-letter-strategy at-least-once)" ||
		!strings.Contains(p.Summary, note) || !strings.Contains(p.Summary, "max-length") {
		t.Errorf("the held dead letters: %+v", p)
	}
	if p := got[1]; p.Title != "orders.dlq holds 2 dead letters" || !strings.Contains(p.Summary, "keeps 1 message it dead-lettered") {
		t.Errorf("the DLQ that also holds some: %+v", p)
	}
}
