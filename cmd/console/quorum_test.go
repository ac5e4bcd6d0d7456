package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
)

// The measurement, end to end through the console's API: a quorum DLQ of 40 dead letters
// (its own dead letters go to parking, where RabbitMQ would drop them at the delivery limit) is
// browsed 25 times a page of 10, planned 20 times and traced 5 times for an unrelated id. Every
// id is then still in the DLQ or in the console's archive, counted with the management API, the
// test's own AMQP client and the archive API; none is in parking. On RabbitMQ 4.x (a default
// limit of 20) custody took what reads would otherwise have made the broker drop; on 3.x (no
// limit) everything stayed.
func TestQuorumDLQIsNeverEmptiedByLooking(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	vhost, amqpURL, mgmt := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	top := rabbittest.Topology{TB: t, Ch: ch}
	top.Exchange("parking.dlx", "fanout")
	top.Queue("parking", nil)
	top.Bind("parking", "", "parking.dlx")
	top.OrdersWith("orders.work", "order.created", amqp.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": "parking.dlx"})
	const n = 40
	for i := range n {
		mustDo(t, ch.PublishWithContext(ctx, "orders", "order.created", false, false, amqp.Publishing{
			MessageId: fmt.Sprintf("m-%d", i), DeliveryMode: amqp.Persistent, Body: []byte(fmt.Sprintf(`{"n":%d}`, i))}))
	}
	mustDo(t, ch.Qos(n, 0, false))
	ds, err := ch.Consume("orders.work", "failing", false, false, false, false, nil)
	mustDo(t, err)
	for range n {
		mustDo(t, (<-ds).Reject(false))
	}
	mustDo(t, ch.Cancel("failing", false))
	rabbittest.WaitDepth(t, ch, "orders.dlq", n, 20*time.Second)

	cfg := rabbittest.Config(t, vhost)
	base := startConsole(t, fmt.Sprintf("auth: {mode: none}\nstore: {dsn: %q}\nrabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]\n",
		pgtest.NewDatabase(t), string(cfg.URL), cfg.ManagementURL, vhost))

	kept := 0
	for i := range 25 {
		r := do(t, nil, "GET", base+queuePath(vhost, "orders.dlq")+"/messages?limit=10", "", "")
		if r.status != 200 {
			t.Fatalf("browse %d: %d %s", i, r.status, r.body)
		}
		kept += decode[struct {
			Kept int `json:"kept"`
		}](t, r).Kept
	}
	for i := range 20 {
		r := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json",
			fmt.Sprintf(`{"source":{"kind":"rabbitmq","broker":"main","vhost":%q,"queue":"orders.dlq","limit":1000}}`, vhost))
		r.status, r.body = planned(t, base, r.status, r.body)
		switch {
		case r.status == 200:
		case r.status == 400 && strings.Contains(r.body, "holds no messages") && rabbittest.Depth(t, ch, "orders.dlq") == 0:
			// On 4.x the plans' reads took everything into custody: the queue is empty, the archive holds it.
		default:
			t.Fatalf("plan %d: %d %s", i, r.status, r.body)
		}
	}
	for range 5 {
		getTrace(t, base, "q="+url.QueryEscape("unrelated-id-7"))
	}

	// Counted from outside: the management API, the test's own client, the archive API.
	if d := rabbittest.Depth(t, ch, "parking"); d != 0 {
		t.Fatalf("%d message(s) in parking: RabbitMQ dropped them at the delivery limit", d)
	}
	rabbittest.WaitFor(t, 20*time.Second, "the management API to settle", func(context.Context) bool {
		q, err := mgmt.GetQueue(vhost, "orders.dlq")
		return err == nil && q.MessagesUnacknowledged == 0 && q.Messages == rabbittest.Depth(t, ch, "orders.dlq")
	})
	where := map[string][]string{}
	for {
		d, ok, err := ch.Get("orders.dlq", true)
		mustDo(t, err)
		if !ok {
			break
		}
		where[d.MessageId] = append(where[d.MessageId], "dlq")
	}
	archived := decode[struct{ Messages []archivedRow }](t, do(t, nil, "GET", base+"/api/v1/archive?queue=orders.dlq&limit=500", "", "")).Messages
	for _, a := range archived {
		where[a.MessageID] = append(where[a.MessageID], "archive")
		if a.JobID != replay.CustodyJob {
			t.Errorf("archived %s by job %q, want %q", a.MessageID, a.JobID, replay.CustodyJob)
		}
	}
	for i := range n {
		if got := where[fmt.Sprintf("m-%d", i)]; len(got) != 1 {
			t.Errorf("m-%d is in %v: want exactly one place", i, got)
		}
	}
	t.Logf("%d in the DLQ, %d in the archive (%d reported kept by browses)", n-len(archived), len(archived), kept)
}
