package trace

import (
	"fmt"
	"testing"
	"time"
)

func TestVerdict(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	q := Query{MessageID: "e-1"}
	for _, tc := range []struct {
		name  string
		steps []Step
		want  string
	}{
		{"TheSeedsExample", []Step{
			{Kind: KindOutbox, Source: "outbox orders", Found: true, At: &at, fact: fact{status: "SENT"}},
			{Kind: KindKafka, Source: "kafka main/orders", Found: true, fact: fact{role: "original", topic: "orders", partition: 2, offset: 811}},
			{Kind: KindKafka, Source: "kafka main/orders.DLT", Found: true, fact: fact{role: "dead_letter", topic: "orders.DLT", by: "inventory-service", exception: "DeserializationException"}},
			{Kind: KindInbox, Source: "inbox billing-service", Found: true, fact: fact{status: "processed"}},
			{Kind: KindInbox, Source: "inbox inventory-service", fact: fact{status: "not_processed"}},
		}, "in the outbox as SENT, published to orders/2 at offset 811, dead-lettered by inventory-service (DeserializationException), " +
			"not processed by inventory-service, processed by billing-service"},
		{"StuckLease", []Step{
			{Kind: KindOutbox, Source: "outbox orders", Found: true, fact: fact{status: "PROCESSING", stuck: true}},
			{Kind: KindKafka, Source: "kafka main/orders", Detail: "not found: …", fact: fact{role: "original", topic: "orders"}},
		}, "in the outbox as PROCESSING with an expired lease (stuck), not found in orders"},
		{"Nowhere", []Step{
			{Kind: KindOutbox, Source: "outbox orders", Detail: "no row with id e-1"},
			{Kind: KindKafka, Source: "kafka main/orders", Detail: "not found: …", fact: fact{role: "original", topic: "orders"}},
			{Kind: KindReplay, Source: "replay ledger"},
			{Kind: KindAudit, Source: "audit log"},
		}, "message e-1 was found nowhere: every source was searched (1 outbox, 1 Kafka topic, the replay ledger, the audit log); not in the outbox, not found in orders"},
		{"InPartAndDown", []Step{
			{Kind: KindKafka, Source: "kafka main/orders", fact: fact{role: "original", topic: "orders", partial: "orders: 3 of 6 partitions searched, time budget of 5s exceeded"}},
			{Kind: KindKafka, Source: "kafka other", Down: true},
		}, "message e-1 was not found in what was searched; searched in part — orders: 3 of 6 partitions searched, time budget of 5s exceeded; could not be searched (down): kafka other"},
		{"RabbitMQ", []Step{
			{Kind: KindRabbitMQ, Source: "rabbitmq main/orders.dlq", Found: true, Ref: Ref{Queue: "orders.dlq"}, fact: fact{role: "dlq", by: "shipping-service", exception: "rejected"}},
			{Kind: KindRabbitMQ, Source: "rabbitmq main/orders.retry", Found: true, Ref: Ref{Queue: "orders.retry"}, fact: fact{role: "retry"}},
		}, "dead-lettered by shipping-service into orders.dlq (rejected), waiting in the retry queue orders.retry"},
		// Only a publish reads "replayed": a skip says why, and the jobs that skipped the message
		// for one reason are one phrase ("replayed by job … (skipped)" was written once per job, 19
		// times for one message).
		{"Replays", replaySteps(), "replayed by job j-0 (published), 19 jobs skipped it: already replayed by job j-0 " +
			"(job j-1, job j-2, job j-3 and 16 more), job j-20 skipped it: already processed by the consumer, " +
			"job j-21 skipped it: the consumer had received it but not processed it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := verdict(q, tc.steps, nil); got != tc.want {
				t.Errorf("verdict\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// replaySteps are the ledger steps of a message job j-0 published, jobs j-1 … j-19 found already
// replayed, j-20 found processed by the consumer and j-21 in progress there.
func replaySteps() []Step {
	step := func(i int, outcome, detail string) Step {
		return Step{Kind: KindReplay, Source: "replay ledger", Found: true, Ref: Ref{JobID: fmt.Sprintf("j-%d", i)},
			fact: fact{status: outcome, note: detail}}
	}
	steps := []Step{step(0, "published", "")}
	for i := 1; i <= 19; i++ {
		steps = append(steps, step(i, "skipped", "skip_already_replayed (job j-0 replayed it)"))
	}
	return append(steps, step(20, "skipped", "skip_processed"), step(21, "skipped", "skip_in_progress (at run time)"))
}
