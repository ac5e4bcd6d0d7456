package replay_test

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/replay"
)

// Two dead letters without an id whose bodies are the same are two messages when anything else
// of them differs (here the producer's timestamp: a command sent twice): a discard archives both,
// and a byte-identical copy of one (what a broker returns after it lost the discard's ack) is
// still a copy, dropped, not archived again. Before, the id-less locator was the body's hash
// alone: the plan held one message, the discard archived it and acked the other as its copy, and
// the archive (what a restore puts back) held one command of the two. On a quorum queue every read
// raises x-delivery-count, which names no message: the plan's read and the job's find the same
// two.
func TestRabbitIdlessSameBodyAreTwoMessages(t *testing.T) {
	for name, args := range map[string]amqp.Table{"classic": nil, "quorum": {"x-queue-type": "quorum"}} {
		t.Run(name, func(t *testing.T) { idlessSameBody(t, newRabbitWorldWith(t, args)) })
	}
}

func idlessSameBody(t *testing.T, w *rabbitWorld) {
	e := w.engine(t)
	work(t, e)
	at := time.Now().UTC().Truncate(time.Second)
	first := amqp.Publishing{DeliveryMode: amqp.Persistent, Timestamp: at, Headers: amqp.Table{"x-death": deathOf("order.created")},
		Body: []byte(`{"op":"increment"}`)}
	second := first
	second.Timestamp = at.Add(time.Second)
	w.putDLQ(t, first, second)
	w.waitDepth(t, "orders.dlq", 2)

	plan := w.planDiscard(t, e)
	if plan.Total != 2 || plan.Counts[replay.Discard] != 2 {
		t.Fatalf("discard plan %v of %d; want both messages", plan.Counts, plan.Total)
	}
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, Reason: "poison"})
	if job.Status != replay.JobDone || job.Published != 2 {
		t.Fatalf("discard job %+v; want both archived", job)
	}
	w.waitDepth(t, "orders.dlq", 0)
	archived, err := w.store.ArchivedMessages(ctxT(t), replay.ArchiveFilter{Queue: "orders.dlq"})
	if err != nil || len(archived) != 2 {
		t.Fatalf("archive holds %d (%v); want both messages", len(archived), err)
	}

	w.putDLQ(t, first) // the copy a broker returns after it lost the discard's ack
	w.waitDepth(t, "orders.dlq", 1)
	plan = w.planDiscard(t, e)
	if plan.Counts[replay.DropReplayedCopy] != 1 || plan.Counts[replay.Discard] != 0 {
		t.Fatalf("plan %v; want the copy dropped", plan.Counts)
	}
}
