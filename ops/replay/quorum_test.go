package replay_test

import (
	"fmt"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
)

// A guarded replay of a quorum DLQ that people have browsed: the inbox-processed messages are
// skipped and stay, the others reach the work queue once each without the DLQ's x-delivery-count,
// and nothing is dropped at the delivery limit (RabbitMQ 4.x's default 20): the DLQ's own
// dead-letter target, parking, stays empty. Then 20 more browses: on 4.x the two skipped ones,
// which a return would bring too near the limit, move to the archive (audited as custody); on
// 3.x they stay. Every id is in exactly one place, counted with the test's own client and the
// store.
func TestRabbitGuardedReplayOfAQuorumDLQ(t *testing.T) {
	w := newRabbitWorldWith(t, amqp.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": "parking.dlx"})
	top := rabbittest.Topology{TB: t, Ch: w.ch}
	top.Exchange("parking.dlx", "fanout")
	top.Queue("parking", nil)
	top.Bind("parking", "", "parking.dlx")
	const n = 30
	w.deadLetter(t, n)
	for _, id := range []string{"m-11", "m-14"} {
		pgtest.Exec(t, w.inboxDSN, `INSERT INTO inbox_message VALUES ($1, 'inventory-service', now(), now())`, id)
	}
	ctx := ctxT(t)
	v, err := w.broker.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := w.broker.Browse(ctx, w.vhost, "orders.dlq", 10); err != nil {
			t.Fatal(err)
		}
	}
	e := w.engine(t)
	plan := w.planQueue(t, e, 100, replay.Filter{})
	if plan.Total != n || plan.Counts[replay.Publish] != n-2 || plan.Counts[replay.SkipProcessed] != 2 {
		t.Fatalf("plan %v", plan.Counts)
	}
	work(t, e)
	job := w.run(t, e, plan.ID)
	if job.Status != replay.JobDone || job.Published != n-2 || job.Skipped != 2 || job.Failed != 0 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.work", n-2)
	where := map[string][]string{}
	for _, d := range w.drain(t, "orders.work") {
		where[d.MessageId] = append(where[d.MessageId], "work")
		for k := range d.Headers {
			if strings.EqualFold(k, "x-delivery-count") {
				t.Errorf("replayed %s carries %s=%v", d.MessageId, k, d.Headers[k])
			}
		}
	}
	for range 20 {
		if _, err := w.broker.Browse(ctx, w.vhost, "orders.dlq", 10); err != nil {
			t.Fatal(err)
		}
	}
	if d := w.depth(t, "parking"); d != 0 {
		t.Fatalf("%d message(s) dropped at the delivery limit into parking", d)
	}
	for _, d := range w.drain(t, "orders.dlq") {
		where[d.MessageId] = append(where[d.MessageId], "dlq")
	}
	archived, err := w.store.ArchivedMessages(ctx, replay.ArchiveFilter{Broker: "test", Queue: "orders.dlq", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range archived {
		where[a.MessageID] = append(where[a.MessageID], "archive")
		if a.JobID != replay.CustodyJob || a.Actor != replay.CustodyActor {
			t.Errorf("archived %s by job %q actor %q, want custody", a.MessageID, a.JobID, a.Actor)
		}
	}
	for i := range n {
		id := fmt.Sprintf("m-%d", i)
		want := "work"
		if id == "m-11" || id == "m-14" {
			want = "dlq"
			if v.Major >= 4 {
				want = "archive"
			}
		}
		if got := where[id]; len(got) != 1 || got[0] != want {
			t.Errorf("%s is in %v, want [%s]", id, got, want)
		}
	}
	if v.Major >= 4 {
		entries, err := w.store.ListAudit(ctx, audit.Filter{Action: "rabbitmq.custody", Limit: 10})
		if err != nil || len(entries) == 0 || entries[0].Actor != replay.CustodyActor ||
			entries[0].Target != "rabbitmq/test/"+(rabbit.QueueRef{Vhost: w.vhost, Name: "orders.dlq"}).String() {
			t.Fatalf("custody audit %+v, %v", entries, err)
		}
	}
}
