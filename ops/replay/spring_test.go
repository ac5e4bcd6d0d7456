package replay_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
)

// springRepublished is a message as Spring AMQP's RepublishMessageRecoverer publishes it straight
// to a DLQ after its listener failed: the original exchange and routing key in x-original-*
// headers, the exception's, and no x-death (the broker never dead-lettered it).
func springRepublished(id, exchange, key string) amqp.Publishing {
	return amqp.Publishing{MessageId: id, ContentType: "application/json", DeliveryMode: amqp.Persistent,
		Headers: amqp.Table{
			rabbit.HeaderOriginalExchange:   exchange,
			rabbit.HeaderOriginalRoutingKey: key,
			rabbit.HeaderExceptionMessage:   "Listener method threw exception: out of stock for " + id,
			rabbit.HeaderExceptionStacktrace: "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException: " +
				"Listener method threw exception\n\tat org.acme.Inventory.onOrder(Inventory.java:42)",
			"x-exception-fqcn": "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException",
		},
		Body: []byte(fmt.Sprintf(`{"messageId":%q}`, id))}
}

// Dead letters a Spring RepublishMessageRecoverer put in the DLQ carry no x-death, so no queue
// names their consumer; their x-original-exchange and x-original-routingKey lead, through the
// broker's bindings, to orders.work, whose consumer's inbox now guards their replay: the ids it
// processed are skipped, the rest published, and nothing says "no configured consumer". They were
// all published (inbox verdict unknown) with that false warning. A message whose destination
// reaches only a queue no configured consumer reads is still named unguarded. Archived, the
// processed ones are guarded the same way on a restore to the original destination.
func TestRabbitSpringRepublishedDLQGetsItsInboxCheck(t *testing.T) {
	w := newRabbitWorld(t)
	topo := rabbittest.Topology{TB: t, Ch: w.ch}
	topo.Queue("audit.work", nil)
	topo.Bind("audit.work", "order.audited", "orders")
	var ps []amqp.Publishing
	for i := range 6 {
		ps = append(ps, springRepublished(fmt.Sprintf("m-%d", i), "orders", "order.created"))
	}
	ps = append(ps, springRepublished("a-1", "orders", "order.audited"))
	w.putDLQ(t, ps...)
	w.waitDepth(t, "orders.dlq", len(ps))
	for _, id := range []string{"m-1", "m-4"} {
		pgtest.Exec(t, w.inboxDSN, `INSERT INTO inbox_message VALUES ($1, 'inventory-service', now(), now())`, id)
	}

	e := w.engine(t)
	plan := w.planQueue(t, e, 100, replay.Filter{})
	if plan.Total != 7 || plan.Counts[replay.Publish] != 5 || plan.Counts[replay.SkipProcessed] != 2 {
		t.Fatalf("plan %v; want 5 to publish and the 2 processed skipped", plan.Counts)
	}
	for _, it := range plan.Items {
		want := "inventory-service"
		if it.MessageID == "a-1" {
			want = "" // audit.work: no configured consumer
		}
		if it.Consumer != want || it.Destination.Exchange != "orders" {
			t.Errorf("%s: consumer %q, destination %+v; want consumer %q", it.MessageID, it.Consumer, it.Destination, want)
		}
	}
	unguarded := slices.DeleteFunc(slices.Clone(plan.Warnings), func(s string) bool { return !strings.Contains(s, "no configured consumer") })
	if len(unguarded) != 1 || !strings.HasPrefix(unguarded[0], "1 message(s)") {
		t.Errorf("warnings %q; want only a-1 named unguarded", plan.Warnings)
	}

	work(t, e)
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1000})
	if job.Status != replay.JobDone || job.Published != 5 || job.Skipped != 2 || job.Failed != 0 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.work", 4)
	w.waitDepth(t, "audit.work", 1)
	w.waitDepth(t, "orders.dlq", 2)
	var replayed []string
	for _, d := range w.drain(t, "orders.work") {
		replayed = append(replayed, d.MessageId)
	}
	if slices.Sort(replayed); !slices.Equal(replayed, []string{"m-0", "m-2", "m-3", "m-5"}) {
		t.Errorf("replayed %v", replayed)
	}

	// Discarded into the archive, the two left are guarded the same way on their way back.
	ctx := ctxT(t)
	discard, err := e.Plan(ctx, "ops", replay.Source{Kind: "rabbitmq", Action: replay.ActionDiscard, Broker: "test", Vhost: w.vhost,
		Queue: "orders.dlq", Limit: 10}, replay.Filter{})
	if err != nil || discard.Counts[replay.Discard] != 2 {
		t.Fatalf("discard plan %v %v", discard.Counts, err)
	}
	if job := runJob(t, e, replay.StartRequest{PlanID: discard.ID, Actor: access.Actor{Name: "ops"}, Reason: "r"}); job.Published != 2 {
		t.Fatalf("discard job %+v", job)
	}
	archived, err := w.store.ArchivedMessages(ctx, replay.ArchiveFilter{Queue: "orders.dlq"})
	if err != nil || len(archived) != 2 {
		t.Fatalf("archive: %d, %v", len(archived), err)
	}
	for _, a := range archived {
		back, err := e.Plan(ctx, "ops", replay.Source{Kind: "archive", ArchiveID: a.ID}, replay.Filter{})
		if err != nil || len(back.Items) != 1 || back.Items[0].Consumer != "inventory-service" || back.Counts[replay.SkipProcessed] != 1 {
			t.Errorf("restore of archived %s to the original: %v %+v %v", a.MessageID, back.Counts, back.Items, err)
		}
	}
}
