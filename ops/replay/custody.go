package replay

import (
	"context"
	"fmt"

	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// CustodyActor is who the archive and the audit log name for messages a read took into custody:
// the console itself, since no person asked for it (see rabbit's Custody).
const CustodyActor = "redrive (custody)"

// CustodyJob is the archive's job id of messages taken into custody: their rows are found with
// the queue's archive like a discard's, and restored or replayed the same way.
const CustodyJob = "custody"

// Custody keeps what a read of a delivery-limited quorum queue must not return, in the console's
// archive, and audits it: the archive rows commit, then the audit entry, and only then does the
// read ack the messages from their queue (rabbitmodel.Custodian). It is the discard job's ordering —
// archive → ack — without a job, since the read that needs it is not one.
type Custody struct {
	Store interface {
		Archive
		Ping(ctx context.Context) error
	}
	Audit Auditor // required: every move of a message is audited
}

var _ rabbitmodel.Custodian = Custody{}

// Keep implements rabbitmodel.Custodian: one archive row per message (CustodyJob, its
// rabbitmodel.Delivery.CustodyLocator: keeping a message twice writes it once), then one audit entry.
func (c Custody) Keep(ctx context.Context, broker, vhost, queue string, ds []rabbitmodel.Delivery, why string) error {
	rows := make([]Archived, 0, len(ds))
	ids := make([]string, 0, len(ds))
	for _, d := range ds {
		w, err := d.Whole()
		if err != nil {
			return err
		}
		row := Archived{JobID: CustodyJob, Locator: d.CustodyLocator(broker, vhost, queue), MessageID: d.Message().MessageID,
			Broker: broker, Vhost: vhost, Queue: queue, Actor: CustodyActor, Reason: why, Exchange: w.Exchange,
			RoutingKey: w.RoutingKey, Properties: rabbitmodel.PropertiesMap(w.Properties), Headers: w.HeadersJSON,
			HeadersWire: w.Headers, Body: w.Body}
		if dl := d.Message().DeadLetter; dl != nil {
			row.OriginalExchange, row.OriginalRoutingKey = dl.Destination()
		}
		rows = append(rows, row)
		ids = append(ids, d.Message().MessageID)
	}
	if err := c.Store.ArchiveMessages(ctx, rows); err != nil {
		return err
	}
	n := int64(len(ds))
	err := c.Audit.RecordAudit(ctx, audit.Entry{Actor: CustodyActor, Role: "system", Action: "rabbitmq.custody",
		Target: fmt.Sprintf("rabbitmq/%s/%s", broker, rabbitmodel.QueueRef{Vhost: vhost, Name: queue}), Count: &n,
		Reason: why, Outcome: audit.OutcomeOK, Detail: map[string]any{"message_ids": ids}})
	if err != nil {
		return fmt.Errorf("audit the custody of %d message(s): %w", n, err)
	}
	return nil
}

// Ping implements rabbitmodel.Custodian.
func (c Custody) Ping(ctx context.Context) error { return c.Store.Ping(ctx) }
