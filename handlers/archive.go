package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/store"
)

// ArchiveStore is the archive of discarded messages and the audit log; *store.Store implements it.
type ArchiveStore interface {
	Auditor
	RecordIntent(ctx context.Context, e store.AuditEntry) (int64, error)
	ArchivedMessages(ctx context.Context, f store.ArchiveFilter) ([]store.ArchivedMessage, error)
	RestoreArchived(ctx context.Context, id int64, actor, to string, publish func(store.ArchivedMessage) error) (store.ArchivedMessage, error)
}

// ArchivePublisher publishes an archived message again; *rabbit.Broker implements it.
type ArchivePublisher interface {
	Name() string
	PublishWhole(ctx context.Context, vhost, exchange, routingKey string, w rabbit.Whole, extra amqp.Table) error
}

// Archive serves the archive of messages discard jobs took from RabbitMQ dead-letter queues.
type Archive struct {
	store   ArchiveStore
	brokers map[string]ArchivePublisher
	redact  *Redactor
}

// NewArchive wires the archive over the store and the configured brokers.
func NewArchive(st ArchiveStore, brokers []ArchivePublisher, redact *Redactor) *Archive {
	h := &Archive{store: st, brokers: map[string]ArchivePublisher{}, redact: redact}
	for _, b := range brokers {
		h.brokers[b.Name()] = b
	}
	return h
}

// archivedJSON is one archived message as the API gives it.
type archivedJSON struct {
	ID           int64          `json:"id"`
	MessageID    string         `json:"message_id"`
	Broker       string         `json:"broker"`
	Vhost        string         `json:"vhost"`
	Queue        string         `json:"queue"`
	ArchivedAt   time.Time      `json:"archived_at"`
	By           string         `json:"by"`
	Reason       string         `json:"reason"`
	Properties   map[string]any `json:"properties"`
	Headers      map[string]any `json:"headers"`
	Body         string         `json:"body"`
	BodyEncoding string         `json:"body_encoding"`
	JobID        string         `json:"job_id"`
	Redacted     bool           `json:"redacted,omitempty"`
	Original     struct {
		Exchange   string `json:"exchange"`
		RoutingKey string `json:"routing_key"`
	} `json:"original"`
	RestoredAt *time.Time `json:"restored_at"`
	RestoredBy string     `json:"restored_by,omitempty"`
	RestoredTo string     `json:"restored_to,omitempty"`
}

type archiveJSON struct {
	Messages   []archivedJSON `json:"messages"`
	NextCursor *string        `json:"next_cursor"`
}

// API: GET /api/v1/archive?broker=&queue=&since=&limit=&cursor= — newest first.
func (h *Archive) API(c echo.Context) error {
	f := store.ArchiveFilter{Broker: c.QueryParam("broker"), Queue: c.QueryParam("queue")}
	since, err := queryTime(c, "since", time.Now())
	if err != nil {
		return ops.Invalid("since", "must be RFC 3339 (2026-11-30T06:00:00Z), a date, or an age like 24h")
	}
	f.Since = since
	limit, err := queryInt(c, "limit", 100, 1, store.MaxArchiveLimit)
	if err != nil {
		return err
	}
	f.Limit = int(limit)
	if raw := c.QueryParam("cursor"); raw != "" {
		if f.Before, err = strconv.ParseInt(raw, 10, 64); err != nil || f.Before <= 0 {
			return ops.Invalid("cursor", "must be the next_cursor of the previous page")
		}
	}
	red, err := h.redact.For(c, "archive")
	if err != nil {
		return err
	}
	ms, err := h.store.ArchivedMessages(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := archiveJSON{Messages: make([]archivedJSON, 0, len(ms))}
	for _, m := range ms {
		out.Messages = append(out.Messages, toArchivedJSON(red, m))
	}
	if len(ms) == f.Limit {
		next := strconv.FormatInt(ms[len(ms)-1].ID, 10)
		out.NextCursor = &next
	}
	return c.JSON(http.StatusOK, out)
}

// toArchivedJSON masks, for a non-admin, the configured headers and the body's JSON paths (a
// body that is not JSON whole when paths are configured), and the message id when it is masked.
func toArchivedJSON(red *Redactor, m store.ArchivedMessage) archivedJSON {
	j := archivedJSON{ID: m.ID, MessageID: m.MessageID, Broker: m.Broker, Vhost: m.Vhost, Queue: m.Queue, ArchivedAt: m.ArchivedAt.UTC(),
		By: m.Actor, Reason: m.Reason, Properties: m.Properties, Headers: m.Headers, JobID: m.JobID, RestoredAt: m.RestoredAt,
		RestoredBy: m.RestoredBy, RestoredTo: m.RestoredTo}
	j.Original.Exchange, j.Original.RoutingKey = m.OriginalExchange, m.OriginalRoutingKey
	body := m.Body
	if red = red.current(); red != nil {
		headers := make(map[string]any, len(m.Headers))
		for k, v := range m.Headers {
			if red.Header(k) {
				v, j.Redacted = Redacted, true
			}
			headers[k] = v
		}
		j.Headers = headers
		if red.Header("message_id") && j.MessageID != "" {
			props := make(map[string]any, len(m.Properties))
			for k, v := range m.Properties {
				props[k] = v
			}
			props["message_id"], j.MessageID, j.Redacted = Redacted, Redacted, true
			j.Properties = props
		}
		if b, changed := red.maskBody(body, false, &messageMask{}); changed {
			body, j.Redacted = b, true
		}
	}
	if j.Properties == nil {
		j.Properties = map[string]any{}
	}
	if j.Headers == nil {
		j.Headers = map[string]any{}
	}
	j.Body, j.BodyEncoding = payload.Encode(body)
	return j
}

type restoreRequest struct {
	To     string `json:"to"`
	Reason string `json:"reason"`
}

// APIRestore: POST /api/v1/archive/:id/restore {"to":"dlq","reason"} — publishes the archived
// message again to the dead-letter queue it was discarded from (its properties, headers and body
// as they were, plus x-redrive-restored-from), audited before effect; 409 when restored already.
func (h *Archive) APIRestore(c echo.Context) error {
	id, err := strconv.ParseInt(pathParam(c, "id"), 10, 64)
	if err != nil || id <= 0 {
		return fmt.Errorf("archived message %q: %w", pathParam(c, "id"), ops.ErrNotFound)
	}
	var req restoreRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	switch {
	case req.To == "original":
		return ops.Invalid("to", "a restore goes back to the dead-letter queue (dlq); replay it from there to its original destination, guarded by the consumer's inbox")
	case req.To != "" && req.To != "dlq":
		return ops.Invalid("to", "must be dlq")
	case strings.TrimSpace(req.Reason) == "":
		return ops.Invalid("reason", "required: say why the message is restored (it goes to the audit log)")
	case len(req.Reason) > 1000:
		return ops.Invalid("reason", "at most 1000 characters")
	}
	base := auditEntry(c, "archive.restore", "archive/"+strconv.FormatInt(id, 10), req.Reason, map[string]any{"to": "dlq"})
	actx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), 30*time.Second)
	defer cancel()
	intent, err := h.store.RecordIntent(actx, base)
	if err != nil {
		return auditUnavailable(err)
	}
	m, err := h.store.RestoreArchived(actx, id, ActorOf(c).Name, "dlq", func(m store.ArchivedMessage) error {
		b, ok := h.brokers[m.Broker]
		if !ok {
			return fmt.Errorf("rabbitmq broker %q is not configured: %w", m.Broker, ops.ErrNotFound)
		}
		props, err := rabbit.PropertiesFromMap(m.Properties)
		if err != nil {
			return err
		}
		w := rabbit.Whole{Properties: props, Headers: m.HeadersWire, Body: m.Body}
		// The default exchange routes by queue name: straight back into the dead-letter queue.
		return b.PublishWhole(actx, m.Vhost, "", m.Queue, w, amqp.Table{"x-redrive-restored-from": "archive/" + strconv.FormatInt(id, 10)})
	})
	if err != nil {
		_ = h.store.RecordAudit(actx, store.OutcomeOf(base, intent, store.OutcomeFailed, nil, err))
		return err
	}
	one := int64(1)
	out := store.OutcomeOf(base, intent, store.OutcomeOK, &one, nil)
	out.Detail["queue"], out.Detail["message_id"] = m.Queue, m.MessageID
	_ = h.store.RecordAudit(actx, out)
	return c.JSON(http.StatusOK, map[string]any{"restored": true, "id": id, "queue": m.Queue, "vhost": m.Vhost, "broker": m.Broker})
}
