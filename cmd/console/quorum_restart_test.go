package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/cmd/internal/devstack"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
)

// A node restart under a console that reads a quorum DLQ on RabbitMQ 4.0 (a private node: the
// test kills it): the DLQ (x-delivery-limit 6, its own dead letters to parking) is browsed and
// planned, the node killed -9 and started again, then read again until reads must take custody.
// Every id is in the DLQ or in the archive, none in parking. (RabbitMQ 4.0.5 itself empties a
// quorum queue killed within about a second of its declaration; the test waits that out.)
func TestQuorumDLQSurvivesANodeRestartOnRabbitMQ4(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := devstack.RabbitMQ4Root(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rmq, err := devstack.StartRabbitMQ(ctx, devstack.RabbitOptions{Dir: filepath.Join(t.TempDir(), "rabbitmq4"), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rmq.Stop(context.Background()) })

	setup := func() *amqp.Channel {
		conn, err := amqp.Dial(rmq.URL())
		mustDo(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		ch, err := conn.Channel()
		mustDo(t, err)
		return ch
	}
	ch := setup()
	top := rabbittest.Topology{TB: t, Ch: ch}
	top.Exchange("parking.dlx", "fanout")
	top.Queue("parking", nil)
	top.Bind("parking", "", "parking.dlx")
	top.OrdersWith("orders.work", "order.created", amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(6),
		"x-dead-letter-exchange": "parking.dlx"})
	const n = 20
	for i := range n {
		mustDo(t, ch.PublishWithContext(ctx, "orders", "order.created", false, false, amqp.Publishing{
			MessageId: fmt.Sprintf("m-%d", i), DeliveryMode: amqp.Persistent, Body: []byte("{}")}))
	}
	mustDo(t, ch.Qos(n, 0, false))
	ds, err := ch.Consume("orders.work", "failing", false, false, false, false, nil)
	mustDo(t, err)
	for range n {
		mustDo(t, (<-ds).Reject(false))
	}
	mustDo(t, ch.Cancel("failing", false))
	rabbittest.WaitDepth(t, ch, "orders.dlq", n, 20*time.Second)

	base := startConsole(t, fmt.Sprintf("auth: {mode: none}\nstore: {dsn: %q}\nrabbitmq: [{name: main, url: %q, management_url: %q}]\n",
		pgtest.NewDatabase(t), rmq.URL(), rmq.ManagementURL()))
	read := func(what string) {
		t.Helper()
		var r response
		for try := 0; try < 30; try++ { // right after a restart the console redials
			if r = do(t, nil, "GET", base+queuePath("/", "orders.dlq")+"/messages?limit=10", "", ""); r.status == 200 {
				break
			}
			time.Sleep(time.Second)
		}
		if r.status != 200 {
			t.Fatalf("%s: %d %.300s", what, r.status, r.body)
		}
		p := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json",
			`{"source":{"kind":"rabbitmq","broker":"main","vhost":"/","queue":"orders.dlq","limit":1000}}`)
		if p.status, p.body = planned(t, base, p.status, p.body); p.status != 200 && p.status != 400 {
			t.Fatalf("%s: plan %d %.300s", what, p.status, p.body)
		}
	}
	read("before the restart")
	read("before the restart, again")
	mustDo(t, rmq.WaitQuorumQueueSaved(ctx, "/", "orders.dlq")) // else the broker itself loses it
	mustDo(t, rmq.Kill(ctx))
	mustDo(t, rmq.Start(ctx))
	for i := range 5 {
		read(fmt.Sprintf("after the restart, %d", i))
	}

	ch = setup()
	if d := rabbittest.Depth(t, ch, "parking"); d != 0 {
		t.Fatalf("%d message(s) in parking: RabbitMQ dropped them at the delivery limit", d)
	}
	where := map[string]int{}
	// The count reads as the console does, with a consumer: RabbitMQ 4.0.5 answers a basic.get on
	// this quorum queue after the kill -9 with 541 "Cannot get a message from queue … timeout" for
	// minutes (seen here at the commit before this wave's too), while consumers are served.
	inDLQ := rabbittest.Depth(t, ch, "orders.dlq")
	if inDLQ > 0 {
		mustDo(t, ch.Qos(inDLQ, 0, false))
		ds, err := ch.Consume("orders.dlq", "count", false, false, false, false, nil)
		mustDo(t, err)
		for range inDLQ {
			select {
			case d := <-ds:
				where[d.MessageId]++
			case <-time.After(30 * time.Second):
				t.Fatalf("%d of the %d messages in orders.dlq delivered", len(where), inDLQ)
			}
		}
	}
	inQueue := len(where)
	archived := decode[struct{ Messages []archivedRow }](t, do(t, nil, "GET", base+"/api/v1/archive?queue=orders.dlq&limit=500", "", "")).Messages
	for _, a := range archived {
		where[a.MessageID]++
	}
	for i := range n {
		if c := where[fmt.Sprintf("m-%d", i)]; c != 1 {
			t.Errorf("m-%d is in %d places", i, c)
		}
	}
	t.Logf("%d in the DLQ, %d in the archive", inQueue, len(archived))
}
