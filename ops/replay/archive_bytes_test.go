package replay_test

import (
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/replay"
)

// An archived message whose original routing key is not UTF-8 is restored to nowhere: the plan
// reads the key byte for byte from the archived x-death (the archive's columns hold the display
// form, "qa3.\uFFFD") and skips it as unresolvable, as a replay from the queue does. It used to be
// published to the display form; the message stays in the archive, unrestored.
func TestArchiveRestoreKeepsARoutingKeyThatIsNotUTF8(t *testing.T) {
	w := newRabbitWorld(t)
	w.putDLQ(t,
		amqp.Publishing{MessageId: "bytes", Headers: amqp.Table{"x-death": deathOf("qa3.\xff")}, Body: []byte(`{}`)},
		amqp.Publishing{MessageId: "text", Headers: amqp.Table{"x-death": deathOf("order.created")}, Body: []byte(`{}`)})
	w.waitDepth(t, "orders.dlq", 2)
	e := w.engine(t)
	ctx := ctxT(t)
	work(t, e)
	discard, err := e.Plan(ctx, "alice", replay.Source{Kind: "rabbitmq", Action: replay.ActionDiscard, Broker: "test", Vhost: w.vhost,
		Queue: "orders.dlq", Limit: 10}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	alice := access.Actor{Name: "alice", Role: access.Operator}
	if job := runJob(t, e, replay.StartRequest{PlanID: discard.ID, Actor: alice, Reason: "poison"}); job.Published != 2 {
		t.Fatalf("discard: %+v", job)
	}
	archived, err := w.store.ArchivedMessages(ctx, replay.ArchiveFilter{Queue: "orders.dlq"})
	if err != nil || len(archived) != 2 {
		t.Fatalf("archive: %d %v", len(archived), err)
	}
	for _, a := range archived {
		plan, err := e.Plan(ctx, "alice", replay.Source{Kind: "archive", ArchiveID: a.ID}, replay.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		it := plan.Items[0]
		switch a.MessageID {
		case "bytes":
			if it.Action != replay.SkipUnresolvable || it.Destination.RoutingKey != "" || !strings.Contains(it.Note, `qa3.\xff`) {
				t.Fatalf("the key that is not UTF-8: %s to %q (%s); want skipped as unresolvable", it.Action, it.Destination.RoutingKey, it.Note)
			}
			if job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: alice, Reason: "restore"}); job.Published != 0 || job.Skipped != 1 {
				t.Fatalf("its job: %+v", job)
			}
			if after, err := w.store.ArchivedMessageByID(ctx, a.ID); err != nil || after.RestoredAt != nil {
				t.Fatalf("the archive row after a skip: %+v %v", after, err)
			}
		case "text":
			if it.Action != replay.Publish || it.Destination.RoutingKey != "order.created" || it.Destination.Exchange != "orders" {
				t.Fatalf("the UTF-8 key: %s to %+v", it.Action, it.Destination)
			}
		}
	}
}
