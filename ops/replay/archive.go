package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/source"
)

// WholePublisher publishes an archived message with the headers a replay gives it;
// *rabbit.Broker implements it.
type WholePublisher interface {
	PublishWholeWith(ctx context.Context, vhost, exchange, routingKey string, w rabbitmodel.Whole, headers map[string]any) error
}

// archiveKind replays a message a discard job archived to where it was dead-lettered from (its
// x-death's exchange and routing key), as a plan of one: the ledger and the consumer's inbox
// guard it like any replay. Its locator is the one the message had in its dead-letter queue,
// so the ledger knows it as the same dead letter whichever way it is sent back.
type archiveKind struct{ e *Engine }

func (archiveKind) batch() int { return 1 }

// RestoredToOriginal is what an archived message replayed to its original destination records as
// where it was restored to.
const RestoredToOriginal = "original"

func (k archiveKind) plan(ctx context.Context, src *Source, _ Filter, emit func(Item) error) error {
	switch {
	case src.ArchiveID <= 0:
		return invalid("source.archive_id", "required: the id of an archived message")
	case src.Destination != nil || src.Edit != nil || src.discards():
		return invalid("source", "an archived message is replayed as it was, to its original destination")
	}
	m, err := k.e.o.Store.ArchivedMessageByID(ctx, src.ArchiveID)
	if err != nil {
		return err
	}
	if err := RestoreRefused(m); err != nil {
		return err // before the plan is written: a restore that meets another leaves no plan
	}
	r, err := configured(k.e.rabbit, "source.broker", "rabbitmq broker", m.Broker)
	if err != nil {
		return err
	}
	src.Broker, src.Vhost, src.Queue = m.Broker, m.Vhost, m.Queue
	it := Item{Locator: strings.TrimPrefix(m.Locator, discardLocator("")), MessageID: m.MessageID,
		ErrorGroup: strings.TrimSpace(headerText(m.Headers, "x-first-death-reason")), ReplayCount: parseCount([]byte(headerText(m.Headers, HeaderReplayCount)))}
	if x, rk := archivedDestination(r, m); x != "" || rk != "" {
		it.Destination = Destination{Kind: source.RabbitMQ, Broker: m.Broker, Vhost: m.Vhost, Exchange: x, RoutingKey: rk}
	}
	firstQueue := headerText(m.Headers, "x-first-death-queue")
	it.Consumer, it.diedIn = k.e.consumerForQueue(m.Broker, m.Vhost, firstQueue), firstQueue
	if firstQueue == "" { // republished by Spring: where it was going says whose inbox guards it
		if it.Consumer, err = k.e.rabbitConsumers(r, m.Broker, m.Vhost).byRoute(ctx, it.Destination); err != nil {
			return err
		}
	}
	return emit(it)
}

// ArchiveSourceKey is the source key (one job at a time) of the replays of archived message id.
func ArchiveSourceKey(id int64) string { return "archive " + strconv.FormatInt(id, 10) }

// RestoreRefused is why archived message m cannot be restored now, either way, as an
// ops.ErrConflict a person reads; nil when it can. One restore of an archived message at a time,
// and once: restored already (who, when, where to), or a replay job restoring it to its original
// destination (m.Restoring: awaiting approval, pending or running) — the second of two operators
// restoring it at once is told so, whichever way each asked.
func RestoreRefused(m Archived) error {
	switch {
	case m.RestoredAt != nil:
		return ops.Conflict("archived message %d was restored already, by %s at %s (to %s)", m.ID, m.RestoredBy,
			m.RestoredAt.UTC().Format("2006-01-02T15:04:05Z"), m.RestoredTo)
	case m.Restoring != "":
		return ops.Conflict("archived message %d is being restored to its original destination by replay job %s (%s); "+
			"follow that job", m.ID, m.Restoring, strings.ReplaceAll(m.RestoringStatus, "_", " "))
	}
	return nil
}

// archivedDestination is where an archived message was going, byte for byte, read from its
// archived headers as a replay from the queue reads them (DeadLetter.Destination): the archive's
// original_* columns are text, and hold a key that is not UTF-8 in its display form, which a
// restore must not publish to (sanitize skips the real one as unresolvable). The columns answer
// for a row whose headers cannot be read.
func archivedDestination(r RabbitBroker, m Archived) (exchange, routingKey string) {
	if headers, err := r.ArchivedHeaders(m.HeadersWire); err == nil {
		if dl := r.DeadLetterOf(headers); dl != nil {
			return dl.Destination()
		}
	}
	return m.OriginalExchange, m.OriginalRoutingKey
}

// headerText is a header of an archived message as text ("" when absent or not text).
func headerText(headers map[string]any, key string) string {
	s, _ := headers[key].(string)
	return s
}

func (k archiveKind) open(_ context.Context, _ Job, src Source) (mover, error) {
	b, err := configured(k.e.rabbit, "source.broker", "rabbitmq broker", src.Broker)
	if err != nil {
		return nil, err
	}
	pub, ok := b.(WholePublisher)
	if !ok {
		return nil, fmt.Errorf("rabbitmq broker %q cannot publish archived messages: %w", src.Broker, ops.ErrUnavailable)
	}
	return &archiveMover{e: k.e, src: src, b: b, pub: pub}, nil
}

type archiveMover struct {
	e   *Engine
	src Source
	b   RabbitBroker // reads the archived headers back
	pub WholePublisher
}

// restoredByEarlierRun tells whether the archived message was restored to its original
// destination by job itself, in a run that published it and recorded it restored and was then
// interrupted before its ledger settled: a resumed claim meeting "restored already". Only this job can
// have restored it there since it started: one job per archived message runs at a time, and a
// restore to the dead-letter queue is refused while it runs.
func (m *archiveMover) restoredByEarlierRun(ctx context.Context, job Job) (bool, error) {
	a, err := m.e.o.Store.ArchivedMessageByID(ctx, m.src.ArchiveID)
	if err != nil {
		return false, err
	}
	return a.RestoredAt != nil && a.RestoredTo == RestoredToOriginal && job.StartedAt != nil &&
		!a.RestoredAt.Before(*job.StartedAt), nil
}

func (*archiveMover) finish(context.Context, Job) error { return nil }
func (*archiveMover) close()                            {}

// move publishes the archived message (confirmed, mandatory) with a replay's headers and records
// it restored, in one step of the store (the row locked meanwhile): a second restore of it, to
// its queue or here, is refused. A crash between the publish and the record leaves the claim
// active, and the resumed job publishes again: at-least-once, the consumer's inbox absorbs it. A
// crash after the record and before the ledger settles leaves it recorded restored by this job,
// which the resumed claim recognises: published, not "restored already".
func (m *archiveMover) move(ctx context.Context, job Job, items []Item, resumed map[int]bool) (moved, error) {
	var out moved
	for _, it := range items {
		o := LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID, Outcome: LedgerPublished}
		if resumed[it.Seq] {
			o.Detail = "resumed after an interruption: may be a duplicate the consumer's inbox absorbs"
		}
		source := "archive/" + strconv.FormatInt(m.src.ArchiveID, 10)
		_, err := m.e.o.Store.RestoreArchived(ctx, m.src.ArchiveID, job.Actor, RestoredToOriginal, func(a Archived) error {
			props, err := rabbitmodel.PropertiesFromMap(a.Properties)
			if err != nil {
				return err
			}
			headers, err := m.b.ArchivedHeaders(a.HeadersWire)
			if err != nil {
				return err
			}
			w := rabbitmodel.Whole{Properties: props, Body: a.Body}
			return m.pub.PublishWholeWith(ctx, a.Vhost, it.Destination.Exchange, it.Destination.RoutingKey, w,
				m.e.headers.rabbit(headers, job, it, source))
		})
		if errors.Is(err, ops.ErrConflict) && resumed[it.Seq] {
			mine, merr := m.restoredByEarlierRun(ctx, job)
			if merr != nil {
				return moved{}, merr
			}
			if mine {
				o.Detail, err = "published by an earlier run of this job, which recorded it restored before an interruption", nil
			}
		}
		switch {
		case errors.Is(err, rabbitmodel.ErrUnroutable), errors.Is(err, ops.ErrConflict), errors.Is(err, ops.ErrNotFound):
			o.Outcome, o.Detail = LedgerFailed, ops.Message(err)+"; the message stays in the archive"
		case err != nil:
			return moved{}, err // unknown: the claim stays, the run is retried
		}
		out.outcomes = append(out.outcomes, o)
	}
	return out, nil
}
