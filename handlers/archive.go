package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/paths"
	archivepages "github.com/redrive/redrive/views/pages/archive"
)

// ArchiveStore is the archive of discarded messages and the audit log; *store.Store implements it.
type ArchiveStore interface {
	audit.Log
	replay.RestoreStore
	ArchivedMessages(ctx context.Context, f replay.ArchiveFilter) ([]replay.Archived, error)
}

// Archive serves the archive of messages discard jobs took from RabbitMQ dead-letter queues.
type Archive struct {
	store    ArchiveStore
	brokers  []replay.QueuePublisher
	restores *replay.Restores
	redact   *redact.Rules
	meta     MetaFunc
}

// WithPages gives the archive its page (meta builds each page's layout).
func (h *Archive) WithPages(meta MetaFunc) *Archive {
	h.meta = meta
	return h
}

// ReplaysBy lets restores go to the original destination, through the replay engine.
func (h *Archive) ReplaysBy(r replay.Replays) *Archive {
	h.restores = replay.NewRestores(h.store, h.brokers, r)
	return h
}

// NewArchive wires the archive over the store and the configured brokers.
func NewArchive(st ArchiveStore, brokers []replay.QueuePublisher, red *redact.Rules) *Archive {
	return &Archive{store: st, brokers: brokers, restores: replay.NewRestores(st, brokers, nil), redact: red}
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
	f, err := archiveFilter(c)
	if err != nil {
		return err
	}
	red, err := redactionFor(c, h.redact, "archive")
	if err != nil {
		return err
	}
	ms, next, err := h.list(c, f)
	if err != nil {
		return err
	}
	out := archiveJSON{Messages: make([]archivedJSON, 0, len(ms)), NextCursor: cursorJSON(next)}
	for _, m := range ms {
		out.Messages = append(out.Messages, toArchivedJSON(red, m))
	}
	return c.JSON(http.StatusOK, out)
}

// Page: GET /archive?broker=&queue=&since=&cursor= — the archive, newest first, each message with
// its restore forms until it is restored.
func (h *Archive) Page(c echo.Context) error {
	f, err := archiveFilter(c)
	if err != nil {
		return err
	}
	page := archivepages.Page{Meta: h.meta(c, "Archive", "rabbitmq"), Broker: f.Broker, Queue: f.Queue, Flash: readFlash(c)}
	red, err := redactionFor(c, h.redact, "archive")
	if err != nil {
		return err
	}
	ms, next, err := h.list(c, f)
	if err != nil {
		page.Error = shown(c, err)
	}
	for _, m := range ms {
		j := toArchivedJSON(red, m)
		r := archivepages.Row{ID: m.ID, MessageID: j.MessageID, Broker: m.Broker, Vhost: m.Vhost, Queue: m.Queue, ArchivedAt: m.ArchivedAt,
			By: m.Actor, Reason: m.Reason, JobID: m.JobID, Body: j.Body, BodyEncoding: j.BodyEncoding, Redacted: j.Redacted,
			RestoredAt: m.RestoredAt, RestoredBy: m.RestoredBy, RestoredTo: m.RestoredTo}
		if m.JobID == replay.CustodyJob {
			r.JobID = "" // taken by a read (rabbit's Custody), not by a job: no job page to link
		}
		if m.OriginalExchange != "" || m.OriginalRoutingKey != "" {
			ex := m.OriginalExchange
			if ex == "" {
				ex = "(default exchange)"
			}
			r.Original = fmt.Sprintf("exchange %s, routing key %s", ex, m.OriginalRoutingKey)
		}
		page.Rows = append(page.Rows, r)
	}
	page.NextURL = nextPageURL(c, paths.Archive, next)
	return render(c, http.StatusOK, archivepages.List(page))
}

// list reads the page of the archive f asks for and the cursor of the next one.
func (h *Archive) list(c echo.Context, f replay.ArchiveFilter) ([]replay.Archived, int64, error) {
	return keysetPage(f.Limit, archivedID, func(limit int) ([]replay.Archived, error) {
		f.Limit = limit
		return h.store.ArchivedMessages(c.Request().Context(), f)
	})
}

// FormRestore: POST /archive/:id/restore — the archive page's row forms (to, reason): back to the
// archive saying what was done, or to the replay job that sends it to its original destination.
func (h *Archive) FormRestore(c echo.Context) error {
	id, req, err := restoreInput(c, func() (restoreRequest, error) {
		return restoreRequest{To: c.FormValue("to"), Reason: c.FormValue("reason")}, nil
	})
	if err != nil {
		return err
	}
	out, err := h.restore(c, id, req)
	if err != nil {
		return err
	}
	if out.JobID != "" {
		return c.Redirect(http.StatusSeeOther, paths.Replay(out.JobID))
	}
	flash := fmt.Sprintf("Archived message %d put back in %s.", id, out.Queue)
	setFlash(c, flash)
	return c.Redirect(http.StatusSeeOther, paths.Archive)
}

func archivedID(m replay.Archived) int64 { return m.ID }

// archiveFilter reads the archive's query: broker, queue, since, limit, cursor.
func archiveFilter(c echo.Context) (replay.ArchiveFilter, error) {
	f := replay.ArchiveFilter{Broker: c.QueryParam("broker"), Queue: c.QueryParam("queue")}
	since, err := queryTime(c, "since", time.Now())
	if err != nil {
		return f, ops.Invalid("since", "must be RFC 3339 (2026-11-30T06:00:00Z), a date, or an age like 24h")
	}
	f.Since = since
	f.Limit, f.Before, err = pageQuery(c, 100, replay.MaxArchiveLimit)
	return f, err
}

// toArchivedJSON masks, for a non-admin, the configured headers and the body's JSON paths (a
// body that is not JSON whole when paths are configured), and the message id when it is masked.
func toArchivedJSON(red *redact.Rules, m replay.Archived) archivedJSON {
	m, masked := red.Archived(m)
	j := archivedJSON{ID: m.ID, MessageID: m.MessageID, Broker: m.Broker, Vhost: m.Vhost, Queue: m.Queue, ArchivedAt: m.ArchivedAt.UTC(),
		By: m.Actor, Reason: m.Reason, Properties: m.Properties, Headers: m.Headers, JobID: m.JobID, RestoredAt: m.RestoredAt,
		RestoredBy: m.RestoredBy, RestoredTo: m.RestoredTo, Redacted: masked}
	j.Original.Exchange, j.Original.RoutingKey = m.OriginalExchange, m.OriginalRoutingKey
	body := m.Body
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
	Force  bool   `json:"force"`
}

// restoreJSON is what a restore did: put back in the dead-letter queue, or a replay job started
// (to: original) that sends it to its original destination.
type restoreJSON struct {
	Restored bool   `json:"restored"` // in the DLQ now; a replay's copy is sent by its job
	ID       int64  `json:"id"`
	To       string `json:"to"`
	Broker   string `json:"broker"`
	Vhost    string `json:"vhost"`
	Queue    string `json:"queue"`
	PlanID   string `json:"plan_id,omitempty"`
	JobID    string `json:"job_id,omitempty"`
	Status   string `json:"status,omitempty"` // the job's: pending, or awaiting_approval under four-eyes
	Action   string `json:"action,omitempty"` // the plan's verdict on the message: publish
}

// APIRestore: POST /api/v1/archive/:id/restore {"to":"dlq"|"original","reason","force"} — "dlq"
// (the default) publishes the archived message again to the dead-letter queue it was discarded
// from (its properties, headers and body as they were, plus x-redrive-restored-from; 409 when that
// queue no longer exists); "original"
// replays it to where it was dead-lettered from as a plan of one through the replay engine, so
// the ledger and the consumer's inbox guard it like any replay (a message the inbox says was
// processed is refused with 409 unless an admin forces it). Audited before effect; 409 when
// restored already.
func (h *Archive) APIRestore(c echo.Context) error {
	id, req, err := restoreInput(c, func() (restoreRequest, error) {
		var req restoreRequest
		return req, decodeJSON(c, &req)
	})
	if err != nil {
		return err
	}
	out, err := h.restore(c, id, req)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if out.JobID != "" {
		status = http.StatusAccepted // the job sends it
	}
	return c.JSON(status, out)
}

// restoreInput reads and checks a restore's id and request.
func restoreInput(c echo.Context, read func() (restoreRequest, error)) (int64, restoreRequest, error) {
	id, err := strconv.ParseInt(pathParam(c, "id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, restoreRequest{}, ops.NotFound("archived message %q not found", ops.Echo(pathParam(c, "id")))
	}
	req, err := read()
	if err != nil {
		return 0, req, err
	}
	if req.To == "" {
		req.To = replay.RestoredToDLQ
	}
	switch {
	case req.To != replay.RestoredToDLQ && req.To != replay.RestoredToOriginal:
		return 0, req, ops.Invalid("to", "must be dlq (back into its dead-letter queue) or original (replayed to where it was dead-lettered from)")
	case req.Force && req.To != replay.RestoredToOriginal:
		return 0, req, ops.Invalid("force", "applies to a replay to the original destination (past the consumer's inbox)")
	}
	req.Reason, err = requiredReason(req.Reason, "say why the message is restored (it goes to the audit log)")
	return id, req, err
}

func (h *Archive) restore(c echo.Context, id int64, req restoreRequest) (restoreJSON, error) {
	base := auditEntry(c, "archive.restore", "archive/"+strconv.FormatInt(id, 10), req.Reason, map[string]any{"to": req.To})
	one := int64(1)
	base.Count = &one
	done, err := intend(c, h.store, base)
	if err != nil {
		return restoreJSON{}, err
	}
	// Not the request's context: a restore that has begun ends, whoever disconnects.
	actx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), 30*time.Second)
	defer cancel()
	r, err := h.restores.Restore(actx, replay.RestoreRequest{ID: id, To: req.To, Actor: ActorOf(c), Reason: req.Reason, Force: req.Force})
	if err != nil {
		done(err, nil)
		return restoreJSON{}, err
	}
	done(nil, map[string]any{"to": req.To, "queue": r.Queue, "plan_id": r.PlanID, "job_id": r.JobID})
	return restoreJSON{Restored: r.Restored, ID: r.ID, To: r.To, Broker: r.Broker, Vhost: r.Vhost, Queue: r.Queue,
		PlanID: r.PlanID, JobID: r.JobID, Status: r.Status, Action: r.Action}, nil
}
