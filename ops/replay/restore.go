package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/source"
)

// RestoredToDLQ is what an archived message put back into its dead-letter queue records as
// restored_to (RestoredToOriginal: replayed to its original destination).
const RestoredToDLQ = "dlq"

// RestoreStore is what a restore needs of the archive: the message, a lock every replica shares,
// and the restore itself (publish inside, marked restored once it returns nil).
type RestoreStore interface {
	ArchivedMessageByID(ctx context.Context, id int64) (Archived, error)
	// Lock takes a lock every replica shares (a PostgreSQL advisory lock) until unlock.
	Lock(ctx context.Context, key string) (unlock func(), err error)
	RestoreArchived(ctx context.Context, id int64, actor, to string, publish func(Archived) error) (Archived, error)
}

// QueuePublisher puts an archived message back into its queue; *rabbit.Broker implements it.
type QueuePublisher interface {
	Name() string
	RestoreToQueue(ctx context.Context, vhost, queue string, w rabbitmodel.Whole, archiveID int64) error
}

// Replays plans and starts a replay; the Engine implements it.
type Replays interface {
	Plan(ctx context.Context, actor string, src Source, f Filter) (Plan, error)
	Start(ctx context.Context, r StartRequest) (Job, error)
}

// RestoreRequest is one restore of an archived message: To is RestoredToDLQ or RestoredToOriginal.
type RestoreRequest struct {
	ID     int64
	To     string
	Actor  access.Actor
	Reason string
	Force  bool // past the consumer's inbox; a replay to the original destination only
}

// Restored is what a restore did: put back in the dead-letter queue (Restored), or a replay job
// started (JobID) that sends it to its original destination.
type Restored struct {
	Restored              bool
	ID                    int64
	To                    string
	Broker, Vhost, Queue  string
	PlanID, JobID, Status string
	Action                string // the plan's verdict on the message (a replay)
}

// Restores puts messages a discard archived back where people ask: their dead-letter queue, or
// their original destination through a plan of one, so that the ledger and the consumer's inbox
// guard it as any replay.
type Restores struct {
	store   RestoreStore
	brokers map[string]QueuePublisher
	replays Replays // nil: only restores to the dead-letter queue
	// turn makes this process's restores take turns, so that at most one of them waits for the
	// store's lock, and its database connection, at a time (restores are rare, and short).
	turn sync.Mutex
}

// NewRestores restores through st into brokers; replays (nil: none) sends to original destinations.
func NewRestores(st RestoreStore, brokers []QueuePublisher, replays Replays) *Restores {
	r := &Restores{store: st, brokers: map[string]QueuePublisher{}, replays: replays}
	for _, b := range brokers {
		r.brokers[b.Name()] = b
	}
	return r
}

// Restore restores one archived message. Restores of one message take turns, across replicas,
// from their checks to their effect: a restore to the original destination plans and starts its
// job inside the turn, so the next one finds that job (or the row restored) and is refused
// before it plans anything (RestoreRefused) — no plan is left behind by a restore that lost a race.
func (r *Restores) Restore(ctx context.Context, req RestoreRequest) (Restored, error) {
	if req.To == RestoredToOriginal && r.replays == nil {
		return Restored{}, &ops.Error{Kind: ops.ErrUnavailable, Message: "a replay to the original destination needs the replay engine"}
	}
	r.turn.Lock()
	defer r.turn.Unlock()
	unlock, err := r.store.Lock(ctx, "archive.restore/"+strconv.FormatInt(req.ID, 10))
	if errors.Is(err, ops.ErrConflict) { // the lock's own words name a key, not what waits
		err = ops.Conflict("another restore of archived message %d is still under way; look at the archive when it ends", req.ID)
	}
	if err != nil {
		return Restored{}, err
	}
	defer unlock()
	if req.To == RestoredToOriginal {
		return r.toOriginal(ctx, req)
	}
	return r.toDLQ(ctx, req)
}

// toDLQ publishes the archived message again to its dead-letter queue.
func (r *Restores) toDLQ(ctx context.Context, req RestoreRequest) (Restored, error) {
	m, err := r.store.RestoreArchived(ctx, req.ID, req.Actor.Name, RestoredToDLQ, func(m Archived) error {
		b, ok := r.brokers[m.Broker]
		if !ok {
			return ops.NotFound("rabbitmq broker %q is not configured", m.Broker)
		}
		props, err := rabbitmodel.PropertiesFromMap(m.Properties)
		if err != nil {
			return err
		}
		w := rabbitmodel.Whole{Properties: props, Headers: m.HeadersWire, Body: m.Body}
		// Marked restored (rabbitmodel.HeaderRestoredFrom): a dead letter of the queue again, which the
		// next discard archives again, never a copy of the archived one that it drops.
		return b.RestoreToQueue(ctx, m.Vhost, m.Queue, w, req.ID)
	})
	if err != nil {
		return Restored{}, err
	}
	return Restored{Restored: true, ID: req.ID, To: RestoredToDLQ, Broker: m.Broker, Vhost: m.Vhost, Queue: m.Queue}, nil
}

// toOriginal plans the archived message's replay (one item: its original destination, the
// inbox's verdict) and starts it; a message the plan would skip is refused, saying why.
func (r *Restores) toOriginal(ctx context.Context, req RestoreRequest) (Restored, error) {
	plan, err := r.replays.Plan(ctx, req.Actor.Name, Source{Kind: source.Archive, ArchiveID: req.ID}, Filter{})
	if err != nil {
		return Restored{}, err
	}
	out := Restored{ID: req.ID, To: RestoredToOriginal, Broker: plan.Source.Broker, Vhost: plan.Source.Vhost, Queue: plan.Source.Queue,
		PlanID: plan.ID}
	if len(plan.Items) == 1 {
		it := plan.Items[0]
		out.Action = string(it.Action)
		// Refused by the plan's verdict: the plan stays, as every plan previewed and not run
		// does (frozen, never started, moving nothing), named as the record of why.
		switch {
		case it.Action.Forcible() && !req.Force:
			return Restored{}, ops.Conflict("archived message %d is not replayed: %s (plan %s); an admin may force a replay past "+
				"the consumer's inbox with a reason", req.ID, SkipWords(it), plan.ID)
		case it.Action != Publish && !it.Action.Forcible():
			return Restored{}, ops.Conflict("archived message %d is not replayed: %s (plan %s)", req.ID, SkipWords(it), plan.ID)
		}
	}
	job, err := r.replays.Start(ctx, StartRequest{PlanID: plan.ID, Actor: req.Actor, Reason: req.Reason, Force: req.Force})
	if errors.Is(err, ops.ErrConflict) {
		// Another restore's job was created since this one's plan (one job per source): say
		// which, in the archive's words; this plan is never started.
		if m, merr := r.store.ArchivedMessageByID(ctx, req.ID); merr == nil && RestoreRefused(m) != nil {
			return Restored{}, &ops.Error{Kind: ops.ErrConflict, Message: ops.Message(RestoreRefused(m)), Err: err}
		}
	}
	if err != nil {
		return Restored{}, err
	}
	out.JobID, out.Status = job.ID, string(job.Status)
	return out, nil
}

// SkipWords says, for a person, why a plan's item is not published.
func SkipWords(it Item) string {
	switch it.Action {
	case SkipProcessed:
		return fmt.Sprintf("the inbox of consumer %s says it processed message %s", it.Consumer, it.MessageID)
	case SkipInProgress:
		return fmt.Sprintf("the inbox of consumer %s says message %s is being processed", it.Consumer, it.MessageID)
	case SkipAlreadyReplayed:
		return "the ledger shows this dead letter replayed already"
	case DropReplayedCopy:
		return "an earlier job published it and its broker confirmed it: this copy is removed from the queue, not sent again"
	case SkipReplayLimit:
		return fmt.Sprintf("it was replayed %d times (replay.max_replays_per_message)", it.ReplayCount)
	case SkipUnresolvable:
		return "its dead-letter headers name no original exchange or routing key"
	case SkipNoMessageID:
		return "it has no message id for the consumer's inbox to check"
	}
	return string(it.Action)
}
