package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/alerts"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/health"
	"github.com/redrive/redrive/ops/notify"
	"github.com/redrive/redrive/paths"
	notifypages "github.com/redrive/redrive/views/pages/notifications"
)

// NotificationStore is the delivery log and the silences in the console's store.
type NotificationStore interface {
	Notifications(ctx context.Context, limit int) ([]alerts.Notification, error)
	Silences(ctx context.Context) ([]alerts.Silence, error)
	CreateSilence(ctx context.Context, s alerts.Silence) (alerts.Silence, error)
	// Silence reads one silence, ended or not; EndSilence ends it now (an ended one stays as it
	// was). Both: ops.ErrNotFound for an unknown id.
	Silence(ctx context.Context, id int64) (alerts.Silence, error)
	EndSilence(ctx context.Context, id int64) (alerts.Silence, error)
	audit.Log
}

// Notifications serves the delivery log, the silences and the test buttons.
type Notifications struct {
	store  NotificationStore
	sender notify.TestSender
	meta   MetaFunc
	limits configs.NotifySilences // zero: none beyond alerts.MaxSilence

	// What the console watches, for refusing a silence that names a cluster or a group it does
	// not know (Watching); nil: not checked.
	kafka  []KafkaCluster
	snaps  KafkaSnapshots
	rabbit []RabbitBroker
}

// Watching lets the notifications refuse a silence naming a cluster or a consumer group that
// matches nothing the console watches: such a silence was accepted and silenced nothing, while
// its author believed the noise handled.
func (h *Notifications) Watching(kafka []KafkaCluster, snaps KafkaSnapshots, rabbit []RabbitBroker) *Notifications {
	h.kafka, h.snaps, h.rabbit = kafka, snaps, rabbit
	return h
}

// silences is the silences' use case over what the console watches.
func (h *Notifications) silences(c echo.Context) notify.Silences {
	return notify.Silences{Store: h.store, Watched: h.watched(), Log: loggerOf(c)}
}

// watched is what the console watches (Watching), for refusing a silence that would silence
// nothing; nil: not checked.
func (h *Notifications) watched() *notify.Watched {
	if h.kafka == nil && h.rabbit == nil {
		return nil
	}
	w := &notify.Watched{}
	for _, k := range h.kafka {
		w.Clusters = append(w.Clusters, k.Name())
	}
	for _, b := range h.rabbit {
		w.Brokers = append(w.Brokers, b.Name())
	}
	if h.snaps != nil {
		w.Groups = func(ctx context.Context, cluster string) ([]string, bool) {
			snap, err := h.snaps.LatestKafka(ctx, cluster)
			if err != nil {
				return nil, false
			}
			groups := make([]string, 0, len(snap.Groups))
			for _, g := range snap.Groups {
				groups = append(groups, g.Name)
			}
			return groups, true
		}
	}
	return w
}

// BoundingSilences bounds the silences people set by role (notify.silences): an operator's may
// last at most OperatorMax and must name one of OperatorSeverities; an admin's at most AdminMax.
func (h *Notifications) BoundingSilences(limits configs.NotifySilences) *Notifications {
	h.limits = limits
	return h
}

// silenceLimits are the limits of actor's silences (notify.silences).
func (h *Notifications) silenceLimits(actor access.Actor) alerts.SilenceLimits {
	if actor.Can(access.Admin) {
		return alerts.SilenceLimits{Max: h.limits.AdminMax.D(), MaxKey: "notify.silences.admin_max"}
	}
	l := alerts.SilenceLimits{Max: h.limits.OperatorMax.D(), MaxKey: "notify.silences.operator_max",
		Severities: h.limits.OperatorSeverities, SeverityKey: "notify.silences.operator_severities"}
	if l.Severities == nil && l.Max == 0 {
		return alerts.SilenceLimits{} // not configured (tests): no bound beyond alerts.MaxSilence
	}
	return l
}

// NewNotifications wires the notifications handlers; sender may be nil.
func NewNotifications(st NotificationStore, sender notify.TestSender, meta MetaFunc) *Notifications {
	return &Notifications{store: st, sender: sender, meta: meta}
}

type notificationJSON struct {
	ID            int64      `json:"id"`
	Key           string     `json:"key"`
	State         string     `json:"state"`
	Channel       string     `json:"channel"`
	Event         any        `json:"event"`
	CreatedAt     time.Time  `json:"created_at"`
	Attempts      int        `json:"attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	DeliveredAt   *time.Time `json:"delivered_at"`
	FailedAt      *time.Time `json:"failed_at"`
	LastError     string     `json:"last_error"`
	Outcome       string     `json:"outcome"` // pending, retrying, delivered, failed
}

type silenceJSON struct {
	ID        int64             `json:"id"`
	Matchers  map[string]string `json:"matchers"`
	EndsAt    time.Time         `json:"ends_at"`
	Comment   string            `json:"comment"`
	CreatedBy string            `json:"created_by"`
	CreatedAt time.Time         `json:"created_at"`
}

func outcomeOf(n alerts.Notification) string {
	switch {
	case n.DeliveredAt != nil:
		return "delivered"
	case n.FailedAt != nil:
		return "failed"
	case n.Attempts > 0:
		return "retrying"
	}
	return "pending"
}

// APIList: GET /api/v1/notifications?limit=N (default 100, at most 1000) — newest first.
func (h *Notifications) APIList(c echo.Context) error {
	limit := 100
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return ops.Invalid("limit", "must be 1-1000")
		}
		limit = n
	}
	list, err := h.store.Notifications(c.Request().Context(), limit)
	if err != nil {
		return err
	}
	out := struct {
		Channels      []string           `json:"channels"`
		Notifications []notificationJSON `json:"notifications"`
	}{Channels: []string{}, Notifications: []notificationJSON{}}
	if h.sender != nil {
		out.Channels = append(out.Channels, h.sender.Channels()...)
	}
	for _, n := range list {
		j := notificationJSON{ID: n.ID, Key: n.Key, State: n.State, Channel: n.Channel, Event: n.Event, CreatedAt: n.CreatedAt,
			Attempts: n.Attempts, DeliveredAt: n.DeliveredAt, FailedAt: n.FailedAt, LastError: n.LastError, Outcome: outcomeOf(n)}
		if n.DeliveredAt == nil && n.FailedAt == nil {
			next := n.NextAttemptAt
			j.NextAttemptAt = &next
		}
		out.Notifications = append(out.Notifications, j)
	}
	return c.JSON(http.StatusOK, out)
}

type silenceRequest struct {
	Matchers map[string]string `json:"matchers"`
	// EndsAt is text read by bodyTime: decoded as a time.Time, "tomorrow" was "body: could not be
	// read as JSON" instead of a word about ends_at.
	EndsAt   string `json:"ends_at"`
	Duration string `json:"duration"`
	Comment  string `json:"comment"`
}

// parse reads a silence request; what a silence may be is alerts.SilenceRequest.Silence's to say.
// A duration is the age grammar of the console's time filters (30m, 2h, 7d).
func (r silenceRequest) parse(by string, limits alerts.SilenceLimits) (alerts.SilenceRequest, error) {
	req := alerts.SilenceRequest{Matchers: r.Matchers, Comment: r.Comment, CreatedBy: by, Limits: limits}
	switch {
	case r.EndsAt != "" && r.Duration != "":
		return req, ops.Invalid("ends_at", "give ends_at or duration, not both")
	case r.EndsAt != "":
		at, err := bodyTime("ends_at", r.EndsAt, time.Now())
		if err != nil {
			return req, err
		}
		req.EndsAt = at
	case r.Duration != "":
		d, ok := parseAge(strings.TrimSpace(r.Duration))
		if !ok || d == 0 {
			return req, ops.Invalid("duration", "must be a duration such as 30m, 2h or 7d")
		}
		req.For = d
	default:
		return req, ops.Invalid("ends_at", "required (or duration)")
	}
	return req, nil
}

// createSilence sets a silence (notify.Silences.Create: bounded, checked, audited).
func (h *Notifications) createSilence(c echo.Context, req silenceRequest) (alerts.Silence, error) {
	r, err := req.parse(ActorOf(c).Name, h.silenceLimits(ActorOf(c)))
	if err != nil {
		return alerts.Silence{}, err
	}
	return h.silences(c).Create(c.Request().Context(), auditEntry(c, "", "", "", nil), r)
}

// APISilence: POST /api/v1/silences {"matchers": {...}, "ends_at" | "duration", "comment"} — audited.
func (h *Notifications) APISilence(c echo.Context) error {
	return answerJSON(c, h.createSilence, silenceOf)
}

func silenceOf(s alerts.Silence) silenceJSON {
	return silenceJSON{ID: s.ID, Matchers: s.Matchers, EndsAt: s.EndsAt.UTC(), Comment: s.Comment,
		CreatedBy: s.CreatedBy, CreatedAt: s.CreatedAt.UTC()}
}

// endSilence ends silence :id now (notify.Silences.End): an unknown one is a 404 before anything
// is written; ending one that has ended already answers it as it is.
func (h *Notifications) endSilence(c echo.Context) (alerts.Silence, error) {
	raw := pathParam(c, "id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 1 {
		return alerts.Silence{}, ops.NotFound("silence %q does not exist", ops.Echo(raw))
	}
	return h.silences(c).End(c.Request().Context(), auditEntry(c, "", "", "", nil), id)
}

// APIEndSilence: DELETE /api/v1/silences/:id — ends the silence now; answers it as it stands.
func (h *Notifications) APIEndSilence(c echo.Context) error {
	s, err := h.endSilence(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, silenceOf(s))
}

// FormEndSilence: POST /notifications/silences/:id/end (the page's End button).
func (h *Notifications) FormEndSilence(c echo.Context) error {
	s, err := h.endSilence(c)
	if err != nil {
		return err
	}
	return notificationsFlash(c, "Silence "+strconv.FormatInt(s.ID, 10)+" ended.")
}

// APISilences: GET /api/v1/silences — the silences in force, soonest to end first.
func (h *Notifications) APISilences(c echo.Context) error {
	list, err := h.store.Silences(c.Request().Context())
	if err != nil {
		return err
	}
	out := struct {
		Silences []silenceJSON `json:"silences"`
	}{Silences: make([]silenceJSON, 0, len(list))}
	for _, s := range list {
		out.Silences = append(out.Silences, silenceOf(s))
	}
	return c.JSON(http.StatusOK, out)
}

// test sends a test notification, audited (notify.Silences.SendTest).
func (h *Notifications) test(c echo.Context) (string, error) {
	name := pathParam(c, "name")
	return name, h.silences(c).SendTest(c.Request().Context(), h.sender, auditEntry(c, "", "", "", nil), name)
}

// APITest: POST /api/v1/notifications/channels/:name/test — sends a test notification now.
func (h *Notifications) APITest(c echo.Context) error {
	name, err := h.test(c)
	switch {
	case errors.Is(err, ops.ErrNotFound):
		return err
	case err != nil && !errors.Is(err, ops.ErrUnavailable) && !errors.Is(err, ops.ErrInvalid):
		// The channel refused or could not be reached: that is the answer, not a console error, and
		// its text is what the operator asked for (the delivery log keeps it too).
		return c.JSON(http.StatusOK, channelTestJSON{Channel: name, Delivered: false, Error: err.Error()})
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, channelTestJSON{Channel: name, Delivered: true})
}

// channelTestJSON is the outcome of a test notification: delivered, or the channel's refusal.
type channelTestJSON struct {
	Channel   string `json:"channel"`
	Delivered bool   `json:"delivered"`
	Error     string `json:"error,omitempty"` // only when not delivered
}

// FormTest: POST /notifications/channels/:name/test (the page's button).
func (h *Notifications) FormTest(c echo.Context) error {
	name, err := h.test(c)
	flash := "Test notification delivered to " + name + "."
	if errors.Is(err, ops.ErrNotFound) {
		return err
	} else if err != nil {
		flash = "Test notification to " + name + " failed: " + err.Error()
	}
	return notificationsFlash(c, flash)
}

// FormSilence: POST /notifications/silences (the page's form).
func (h *Notifications) FormSilence(c echo.Context) error {
	req := silenceRequest{Matchers: map[string]string{}, Duration: c.FormValue("duration"), Comment: c.FormValue("comment")}
	for _, k := range []string{"kind", "severity", "cluster", "topic", "queue", "group"} {
		if v := c.FormValue(k); v != "" {
			req.Matchers[k] = v
		}
	}
	s, err := h.createSilence(c, req)
	if err != nil {
		return err
	}
	return notificationsFlash(c, "Silenced until "+s.EndsAt.UTC().Format(time.RFC3339)+".")
}

// notificationsFlash answers a form action with the notifications page, showing flash once.
func notificationsFlash(c echo.Context, flash string) error {
	setFlash(c, flash)
	return c.Redirect(http.StatusSeeOther, paths.Notifications)
}

// Page: GET /notifications.
func (h *Notifications) Page(c echo.Context) error {
	ctx := c.Request().Context()
	p := notifypages.Page{Meta: h.meta(c, "Notifications", "notifications"), Flash: readFlash(c), Kinds: health.Kinds}
	p.Test = offer(p.Meta, nil, "Operators can send a test notification.")
	p.Silence = offer(p.Meta, nil, "Operators can silence problems here.")
	if l := h.silenceLimits(ActorOf(c)); l.Max > 0 {
		p.SilenceLimits = "You may silence for at most " + ops.FormatAge(l.Max)
		if l.Severities != nil {
			p.SilenceLimits += ", problems of severity " + strings.Join(l.Severities, " or ") + " (name it)"
		}
		p.SilenceLimits += "."
	}
	p.End = offer(p.Meta, nil, "Operators can end a silence.")
	if h.sender != nil {
		p.Channels = h.sender.Channels()
	}
	list, err := h.store.Notifications(ctx, 200)
	if err != nil {
		p.Error = "the console's store cannot be read"
	}
	for _, n := range list {
		var e struct{ Title, Link string }
		_ = json.Unmarshal(n.Event, &e)
		if !strings.HasPrefix(e.Link, "/") && !strings.HasPrefix(e.Link, "https://") && !strings.HasPrefix(e.Link, "http://") {
			e.Link = ""
		}
		p.Rows = append(p.Rows, notifypages.Row{ID: n.ID, At: n.CreatedAt, Channel: n.Channel, State: n.State, Key: n.Key, Title: e.Title,
			Link: e.Link, Attempts: n.Attempts, Delivered: n.DeliveredAt, GaveUp: n.FailedAt != nil, LastError: n.LastError})
	}
	if sil, err := h.store.Silences(ctx); err == nil {
		for _, s := range sil {
			var parts []string
			for _, k := range alerts.SilenceKeys {
				if v, ok := s.Matchers[k]; ok {
					parts = append(parts, k+"="+v)
				}
			}
			p.Silences = append(p.Silences, notifypages.Silence{ID: s.ID, Matchers: strings.Join(parts, " "), EndsAt: s.EndsAt,
				Comment: s.Comment, CreatedBy: s.CreatedBy})
		}
	}
	return render(c, http.StatusOK, notifypages.List(p))
}
