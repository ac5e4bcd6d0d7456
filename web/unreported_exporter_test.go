package web

import (
	"testing"
	"time"

	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// A broker that stops reporting queue statistics (management.disable_stats, or a queue in the
// seconds before it reports) had every queue exported at 0: redrive_dead_letters of a DLQ holding
// 40 dropped to 0, resolving its alert, and redrive_rabbitmq_queue_messages read as drained. A
// queue whose counts were not reported has no depth series (an alert on it goes stale, not to 0);
// the queues that were counted and the snapshot's age are exported as before.
func TestExporterLeavesOutUnreportedCounts(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	snaps := fakeSnapshots{rabbit: map[string]queues.Snapshot{"mq": {Broker: "mq", At: now.Add(-5 * time.Second), Queues: []queues.Queue{
		{Queue: rabbitmodel.Queue{Vhost: "/", Name: "orders", Ready: 3, Unacked: 2, ConsumersUnreported: true}},
		{Queue: rabbitmodel.Queue{Vhost: "/", Name: "orders.dlq", IsDeadLetterQueue: true, CountsUnreported: true, ConsumersUnreported: true,
			StatsDisabled: true}, LastCounted: queues.Counted{At: now.Add(-time.Minute), Ready: 40}},
		{Queue: rabbitmodel.Queue{Vhost: "/", Name: "billing.dlq", IsDeadLetterQueue: true, CountsUnreported: true}},
	}}}}
	got := scrape(t, testExporter(snaps, nil, []string{"mq"}, nil, nil))
	wantSeries(t, got, map[string]float64{
		`redrive_snapshot_age_seconds{source="rabbitmq/mq"}`:                                    5,
		`redrive_rabbitmq_queue_messages{broker="mq",queue="orders",state="ready",vhost="/"}`:   3, // counts reported, consumers not
		`redrive_rabbitmq_queue_messages{broker="mq",queue="orders",state="unacked",vhost="/"}`: 2,
	})
	for _, absent := range []string{
		`redrive_rabbitmq_queue_messages{broker="mq",queue="orders.dlq",state="ready",vhost="/"}`,
		`redrive_rabbitmq_queue_messages{broker="mq",queue="orders.dlq",state="unacked",vhost="/"}`,
		`redrive_dead_letters{name="orders.dlq",source="rabbitmq/mq"}`,
		`redrive_dead_letters{name="orders.dlq",source="rabbitmq/mq",state="open"}`,
		`redrive_rabbitmq_queue_messages{broker="mq",queue="billing.dlq",state="ready",vhost="/"}`,
		`redrive_dead_letters{name="billing.dlq",source="rabbitmq/mq"}`,
	} {
		if v, ok := got[absent]; ok {
			t.Errorf("%s = %v is exported for a count that was not reported", absent, v)
		}
	}
}
