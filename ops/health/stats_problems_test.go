package health

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// Counts the broker does not report are not zeros: a DLQ without them is no "holds 0" and no
// empty queue. One that held dead letters when last counted keeps its problem (its key), as of
// then, saying why there are no counts now; one never counted is no problem.
func TestStatsUnreportedCountsAreNoFacts(t *testing.T) {
	counted := now.Add(-30 * time.Second)
	held := queues.Queue{Queue: rabbitmodel.Queue{Vhost: "/", Name: "orders.dlq", Type: "classic", IsDeadLetterQueue: true,
		CountsUnreported: true, ConsumersUnreported: true, StatsDisabled: true},
		LastCounted: queues.Counted{At: counted, Ready: 40}}
	never := queues.Queue{Queue: rabbitmodel.Queue{Vhost: "/", Name: "new.dlq", Type: "quorum", IsDeadLetterQueue: true,
		CountsUnreported: true, ConsumersUnreported: true}}
	got := RabbitProblems("rmq", queues.Snapshot{Broker: "rmq", At: now, Queues: []queues.Queue{held, never}}, nil, now)
	if len(got) != 1 {
		t.Fatalf("problems %+v; want orders.dlq's only", got)
	}
	if p := got[0]; p.Key != "dead_letters/rabbitmq/rmq///orders.dlq" ||
		p.Title != "orders.dlq held 40 dead letters when last counted at 11:59 UTC; its counts are not reported: the broker's statistics are disabled" {
		t.Errorf("orders.dlq: %+v", p)
	}
	if !strings.Contains(never.StatsNote(), "not reported yet") || !strings.Contains(held.StatsNote(), "disabled") {
		t.Errorf("notes: %q, %q", never.StatsNote(), held.StatsNote())
	}
}
