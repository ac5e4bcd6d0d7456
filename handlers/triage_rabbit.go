package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/triage"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/components"
)

// RabbitTriage is what the queue pages and API need of ops/triage: notes on a queue's dead
// letters; *triage.Triage implements it.
type RabbitTriage interface {
	AddQueueNote(ctx context.Context, r triage.QueueNoteRequest) (triage.Note, error)
	QueueNotes(ctx context.Context, broker, vhost, queue string) ([]triage.Note, error)
}

// SetTriage wires notes into the queue pages and API; without it there are none and adding one
// answers 503.
func (h *Rabbit) SetTriage(t RabbitTriage) { h.triage = t }

// queueGroupJSON names an error group of a queue: its dead-letter reason and exception message.
type queueGroupJSON struct {
	Reason           string `json:"reason"`
	ExceptionMessage string `json:"exception_message"`
}

// queueNoteJSON is a note on a queue as the API gives it: on an error group or a message (the
// other empty).
type queueNoteJSON struct {
	ID         int64           `json:"id"`
	ErrorGroup *queueGroupJSON `json:"error_group"`
	MessageID  string          `json:"message_id,omitempty"`
	By         string          `json:"by"`
	At         time.Time       `json:"at"`
	Text       string          `json:"text"`
	Link       string          `json:"link"`
}

// queueNoteRequest is the body of POST …/queues/:vhost/:queue/notes.
type queueNoteRequest struct {
	ErrorGroup *queueGroupJSON `json:"error_group"`
	MessageID  string          `json:"message_id"`
	Text       string          `json:"text"`
	Link       string          `json:"link"`
}

func toQueueNoteJSON(n triage.Note) queueNoteJSON {
	j := queueNoteJSON{ID: n.ID, MessageID: n.MessageID, By: n.Actor, At: n.At.UTC(), Text: n.Text, Link: n.Link}
	if g := n.Group; g != nil {
		j.ErrorGroup = &queueGroupJSON{Reason: g.Type, ExceptionMessage: g.Cause}
	}
	return j
}

// APIQueueNote: POST /api/v1/rabbitmq/:broker/queues/:vhost/:queue/notes — {"error_group":
// {"reason","exception_message"} | "message_id", "text", "link"} → the note.
func (h *Rabbit) APIQueueNote(c echo.Context) error {
	return answerJSON(c, h.addQueueNote, toQueueNoteJSON)
}

// APIQueueNotes: GET /api/v1/rabbitmq/:broker/queues/:vhost/:queue/notes — every note of the
// queue, oldest first.
func (h *Rabbit) APIQueueNotes(c echo.Context) error {
	b, err := h.broker(c)
	if err != nil {
		return err
	}
	return answerNotes(c, h.triage != nil, func(ctx context.Context) ([]triage.Note, error) {
		return h.triage.QueueNotes(ctx, b.Name(), pathParam(c, "vhost"), pathParam(c, "queue"))
	}, toQueueNoteJSON)
}

// FormQueueNote: POST /rabbitmq/:broker/queues/:vhost/:queue/notes — the messages page's note
// forms (message_id, or reason and exception_message), back to the messages page.
func (h *Rabbit) FormQueueNote(c echo.Context) error {
	req := queueNoteRequest{MessageID: c.FormValue("message_id"), Text: c.FormValue("text"), Link: c.FormValue("link")}
	if c.Request().Form.Has("reason") {
		req.ErrorGroup = &queueGroupJSON{Reason: c.FormValue("reason"), ExceptionMessage: c.FormValue("exception_message")}
	}
	if _, err := h.addQueueNote(c, req); err != nil {
		return err
	}
	back := paths.QueueMessages(pathParam(c, "broker"), pathParam(c, "vhost"), pathParam(c, "queue"))
	if limit, err := strconv.Atoi(c.FormValue("limit")); err == nil && limit > 0 {
		back = paths.WithQuery(back, url.Values{"limit": {strconv.Itoa(limit)}})
	}
	return c.Redirect(http.StatusSeeOther, back)
}

func (h *Rabbit) addQueueNote(c echo.Context, req queueNoteRequest) (triage.Note, error) {
	b, err := h.broker(c)
	if err != nil {
		return triage.Note{}, err
	}
	if h.triage == nil {
		return triage.Note{}, errNoNoteStore
	}
	r := triage.QueueNoteRequest{Broker: b.Name(), Vhost: pathParam(c, "vhost"), Queue: pathParam(c, "queue"), MessageID: req.MessageID,
		Text: req.Text, Link: req.Link, Actor: ActorOf(c)}
	if g := req.ErrorGroup; g != nil {
		// A note sticks to the group the page shows (rabbitmodel.ErrorGroup.Key), also when a client
		// names it by one of its messages.
		r.Group = &triage.GroupKey{Type: g.Reason, Cause: ops.ErrorGroupKey(g.ExceptionMessage)}
	}
	return h.triage.AddQueueNote(clientContext(c), r)
}

// queueNotes reads a queue's notes for its messages page, by what they are on: none (and no
// error) when the store cannot say, so that the page still shows its messages.
func (h *Rabbit) queueNotes(ctx context.Context, broker, vhost, queue string) (map[triage.GroupKey][]components.NoteView, map[string][]components.NoteView) {
	groups, messages := map[triage.GroupKey][]components.NoteView{}, map[string][]components.NoteView{}
	if h.triage == nil {
		return groups, messages
	}
	notes, _ := h.triage.QueueNotes(ctx, broker, vhost, queue)
	for _, n := range notes {
		v := components.NoteView{By: n.Actor, At: n.At, Text: n.Text, Link: n.Link}
		switch {
		case n.Group != nil:
			groups[*n.Group] = append(groups[*n.Group], v)
		case n.MessageID != "":
			messages[n.MessageID] = append(messages[n.MessageID], v)
		}
	}
	return groups, messages
}
