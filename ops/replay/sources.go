package replay

import (
	"context"
	"fmt"
	"github.com/redrive/redrive/ops/source"
)

// kind is one kind of dead-letter source. The controller (jobs.go) does everything that is the
// same for all of them — lease, rate, cancel, approval, inbox re-check, claim, settle, completion,
// resume — and asks the kind only two things: what a selection holds, and how to move a batch.
type kind interface {
	// plan reads the selection and emits its messages in the order a job moves them. It may
	// record in src what a run needs to know of the read (RabbitMQ: how far it read).
	plan(ctx context.Context, src *Source, f Filter, emit func(Item) error) error
	// open prepares one run of a job: the controller hands it batches of claimed items in seq
	// order and closes it when the run ends, however it ends.
	open(ctx context.Context, job Job, src Source) (mover, error)
	// batch is how many items a batch holds at most.
	batch() int
}

// mover moves claimed items for one run of a job.
type mover interface {
	// move moves the claimed items of one batch and reports each one's outcome. An error means
	// the batch's outcome is unknown (a broker went away): its claims stay, and the resumed run
	// moves them again (at-least-once; the consumer's inbox absorbs a duplicate).
	move(ctx context.Context, job Job, items []Item, resumed map[int]bool) (moved, error)
	// finish runs once every item is settled, before close: what the source still holds of the
	// job is tidied (RabbitMQ: copies of published messages whose ack a crash lost are dropped,
	// even when no batch was left to move in this run).
	finish(ctx context.Context, job Job) error
	close()
}

// moved is a batch's outcome.
type moved struct {
	outcomes []LedgerOutcome
	// await, when set, waits for the broker's acknowledgements of what move sent and returns the
	// rest of the outcomes. It runs in its own stage, so the next batch is sent meanwhile.
	await func(ctx context.Context) ([]LedgerOutcome, error)
	// afterSettle, when set, runs once the outcomes are in the ledger: RabbitMQ acks the
	// dead-letter copies of what it published only then (publish → confirm → ledger → ack).
	afterSettle func(ctx context.Context) error
}

// kindOf is the one place a source kind is looked up.
func (e *Engine) kindOf(name source.Kind) (kind, error) {
	switch name {
	case source.Kafka:
		return kafkaKind{e}, nil
	case source.RabbitMQ:
		return rabbitKind{e}, nil
	case source.Outbox:
		return outboxKind{e}, nil
	case source.Archive:
		return archiveKind{e}, nil
	case "":
		return nil, invalid("source.kind", "required: kafka, rabbitmq, outbox or archive")
	}
	return nil, invalid("source.kind", fmt.Sprintf("%q is not kafka, rabbitmq, outbox or archive", name))
}

// sourceKey names what a job moves, for the rule of one job per source at a time: a second job
// on a DLQ would find the first one's messages held unacked and call them missing; on a DLT or an
// outbox it would race it for the same messages.
// OutboxSourceKey is what a job of outbox name moves, as the two-person rule's ledger names it
// too: a direct requeue of the outbox's events counts with its jobs.
func OutboxSourceKey(name string) string { return sourceKey(Source{Kind: source.Outbox, Outbox: name}) }

func sourceKey(src Source) string {
	switch src.Kind {
	case source.Kafka:
		return fmt.Sprintf("kafka %s topic %s", src.Cluster, src.Topic)
	case source.RabbitMQ:
		vhost := src.Vhost
		if vhost == "" {
			vhost = "/"
		}
		return fmt.Sprintf("rabbitmq %s queue %s%s", src.Broker, src.Queue, vhostLabel(vhost))
	case source.Outbox:
		return "outbox " + src.Outbox
	case source.Archive:
		return ArchiveSourceKey(src.ArchiveID)
	}
	return ""
}
