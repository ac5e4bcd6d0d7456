package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/sampler"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/layout"
	rabbitpages "github.com/redrive/redrive/views/pages/rabbitmq"
)

// RabbitBroker is one broker's live reads; *rabbit.Broker implements it. Browse errors:
// ErrInvalid (limit), ErrNotFound (unknown or unwatched vhost, unknown queue), ErrConflict (the
// queue cannot be browsed without changing it, with the reason), ErrUnavailable (unreachable).
type RabbitBroker interface {
	Name() string
	Browse(ctx context.Context, vhost, queue string, limit int) (rabbit.BrowseResult, error)
	Topology(ctx context.Context) (rabbit.Topology, error)
}

// RabbitSnapshots reads the sampler's stored queue snapshots and history (ops/sampler): queue
// lists and pages never call the management API themselves, so any number of viewers cost the
// broker one list call per sampler interval.
type RabbitSnapshots interface {
	LatestRabbit(ctx context.Context, broker string) (sampler.RabbitSnapshot, error)
	RabbitQueueHistory(ctx context.Context, broker, vhost, queue string, since time.Time, maxPoints int) ([]sampler.QueuePoint, error)
}

// Rabbit serves the RabbitMQ pages and API.
type Rabbit struct {
	brokers   []RabbitBroker
	byName    map[string]RabbitBroker
	snapshots RabbitSnapshots
	meta      MetaFunc
	redact    *Redactor
}

// NewRabbit wires the configured brokers (in config order). snapshots is required when brokers
// is not empty; redact masks message bodies and headers for non-admins (nil masks nothing).
func NewRabbit(brokers []RabbitBroker, snapshots RabbitSnapshots, meta MetaFunc, redact *Redactor) *Rabbit {
	h := &Rabbit{brokers: brokers, byName: map[string]RabbitBroker{}, snapshots: snapshots, meta: meta, redact: redact}
	for _, b := range brokers {
		h.byName[b.Name()] = b
	}
	return h
}

// defaultBrowse is the number of messages a browse reads when the request does not say.
const defaultBrowse = 50

func (h *Rabbit) broker(c echo.Context) (RabbitBroker, error) {
	name := pathParam(c, "broker")
	b, ok := h.byName[name]
	if !ok {
		return nil, fmt.Errorf("rabbitmq broker %q is not configured: %w", name, ops.ErrNotFound)
	}
	return b, nil
}

func (h *Rabbit) snapshot(c echo.Context) (RabbitBroker, sampler.RabbitSnapshot, error) {
	b, err := h.broker(c)
	if err != nil {
		return nil, sampler.RabbitSnapshot{}, err
	}
	snap, err := h.snapshots.LatestRabbit(c.Request().Context(), b.Name())
	return b, snap, err
}

// findQueue finds the path's queue in the snapshot: ErrNotFound when the sample does not have it,
// ErrUnavailable when there is no sample yet.
func findQueue(snap sampler.RabbitSnapshot, vhost, name string) (sampler.RabbitQueue, error) {
	if q, ok := snap.Queue(vhost, name); ok {
		return q, nil
	}
	if snap.At.IsZero() {
		return sampler.RabbitQueue{}, fmt.Errorf("rabbitmq broker %s has not been sampled yet; retry in a few seconds: %w", snap.Broker, ops.ErrUnavailable)
	}
	for _, q := range snap.Queues {
		if q.Vhost == vhost {
			return sampler.RabbitQueue{}, fmt.Errorf("queue %q not found in vhost %q of broker %s: %w", name, vhost, snap.Broker, ops.ErrNotFound)
		}
	}
	return sampler.RabbitQueue{}, fmt.Errorf("vhost %q of broker %s has no queues or is not watched: %w", vhost, snap.Broker, ops.ErrNotFound)
}

// queue finds a queue in the latest snapshot. A queue the snapshot does not have yet (declared
// since the last sample) is read through from the broker once, so that a page or a script asking
// right after creating it gets it, not a 404 for up to an interval.
func (h *Rabbit) queue(c echo.Context) (RabbitBroker, sampler.RabbitSnapshot, sampler.RabbitQueue, error) {
	b, snap, err := h.snapshot(c)
	if err != nil {
		return nil, snap, sampler.RabbitQueue{}, err
	}
	vhost, name := pathParam(c, "vhost"), pathParam(c, "queue")
	q, err := findQueue(snap, vhost, name)
	if err == nil || !(errors.Is(err, ops.ErrNotFound) || snap.At.IsZero()) {
		return b, snap, q, err
	}
	t, lerr := b.Topology(c.Request().Context())
	if lerr != nil {
		return b, snap, q, err // the snapshot's answer stands
	}
	live := sampler.RabbitSnapshotOf(b.Name(), t, time.Now())
	if lq, lerr := findQueue(live, vhost, name); lerr == nil {
		return b, live, lq, nil
	}
	return b, snap, q, err
}

// ---- JSON ----

// rabbitQueueJSON is one queue in the API. dead_letter_exchange is "" both without a dead-letter
// exchange and for the default exchange; has_dead_letter_exchange tells them apart.
type rabbitQueueJSON struct {
	Vhost                 string  `json:"vhost"`
	Name                  string  `json:"name"`
	Type                  string  `json:"type"`
	State                 string  `json:"state"`
	Ready                 int64   `json:"ready"`
	Unacked               int64   `json:"unacked"`
	Total                 int64   `json:"total"`
	Consumers             int64   `json:"consumers"`
	PublishRate           float64 `json:"publish_rate"`
	DeliverRate           float64 `json:"deliver_rate"`
	AckRate               float64 `json:"ack_rate"`
	RedeliverRate         float64 `json:"redeliver_rate"`
	DeadLetterExchange    string  `json:"dead_letter_exchange"`
	DeadLetterRoutingKey  string  `json:"dead_letter_routing_key"`
	HasDeadLetterExchange bool    `json:"has_dead_letter_exchange"`
	DeadLetterSource      string  `json:"dead_letter_source"` // argument, policy or ""
	IsDeadLetterQueue     bool    `json:"is_dead_letter_queue"`
	IsRetryQueue          bool    `json:"is_retry_queue"`
	MessageTTL            *int64  `json:"message_ttl"` // milliseconds
	DeliveryLimit         *int64  `json:"delivery_limit"`
	MaxLength             *int64  `json:"max_length"`
	Overflow              string  `json:"overflow"`
	SingleActiveConsumer  bool    `json:"single_active_consumer"`
	Policy                string  `json:"policy"`
	OperatorPolicy        string  `json:"operator_policy"`
	Growing               bool    `json:"growing"`
	Growth                string  `json:"growth,omitempty"`
}

func toRabbitQueueJSON(q sampler.RabbitQueue) rabbitQueueJSON {
	return rabbitQueueJSON{Vhost: q.Vhost, Name: q.Name, Type: q.Type, State: q.State, Ready: q.Ready, Unacked: q.Unacked,
		Total: q.Total, Consumers: q.Consumers, PublishRate: q.PublishRate, DeliverRate: q.DeliverRate, AckRate: q.AckRate,
		RedeliverRate: q.RedeliverRate, DeadLetterExchange: q.DeadLetterExchange, DeadLetterRoutingKey: q.DeadLetterRoutingKey,
		HasDeadLetterExchange: q.HasDeadLetterExchange, DeadLetterSource: q.DeadLetterSource,
		IsDeadLetterQueue: q.IsDeadLetterQueue, IsRetryQueue: q.Retry, MessageTTL: q.MessageTTL,
		DeliveryLimit: q.DeliveryLimit, MaxLength: q.MaxLength, Overflow: q.Overflow,
		SingleActiveConsumer: q.SingleActiveConsumer, Policy: q.Policy, OperatorPolicy: q.OperatorPolicy,
		Growing: q.Growing, Growth: q.Growth}
}

func sampledAt(snap sampler.RabbitSnapshot) *time.Time {
	if snap.At.IsZero() {
		return nil
	}
	at := snap.At.UTC()
	return &at
}

// APIQueues: GET /api/v1/rabbitmq/:broker/queues — every watched queue, from the latest snapshot.
func (h *Rabbit) APIQueues(c echo.Context) error {
	b, snap, err := h.snapshot(c)
	if err != nil {
		return err
	}
	resp := struct {
		Broker    string     `json:"broker"`
		SampledAt *time.Time `json:"sampled_at"`
		Error     string     `json:"error,omitempty"`
		freshnessJSON
		Queues []rabbitQueueJSON `json:"queues"`
	}{Broker: b.Name(), SampledAt: sampledAt(snap), Error: snap.Error, freshnessJSON: toFreshnessJSON(snap.Freshness, snap.At), Queues: make([]rabbitQueueJSON, len(snap.Queues))}
	for i, q := range snap.Queues {
		resp.Queues[i] = toRabbitQueueJSON(q)
	}
	return c.JSON(http.StatusOK, resp)
}

type edgeJSON struct {
	Exchange     string   `json:"exchange"`
	ExchangeType string   `json:"exchange_type"`
	RoutingKey   string   `json:"routing_key"`
	OwnKeys      []string `json:"own_routing_keys,omitempty"`
	ToQueues     []string `json:"to_queues"`
	AllBound     bool     `json:"all_bound,omitempty"`
	Missing      bool     `json:"exchange_missing,omitempty"`
	Note         string   `json:"note,omitempty"`
}

// APIQueue: GET /api/v1/rabbitmq/:broker/queues/:vhost/:queue — one queue, the queues that
// dead-letter into it, and where its own dead letters go.
func (h *Rabbit) APIQueue(c echo.Context) error {
	_, snap, q, err := h.queue(c)
	if err != nil {
		return err
	}
	resp := struct {
		rabbitQueueJSON
		SampledAt *time.Time `json:"sampled_at"`
		Error     string     `json:"error,omitempty"`
		freshnessJSON
		DeadLettersFrom []string  `json:"dead_letters_from"`
		DeadLettersTo   *edgeJSON `json:"dead_letters_to"`
		RetryOf         string    `json:"retry_of,omitempty"`
	}{rabbitQueueJSON: toRabbitQueueJSON(q), SampledAt: sampledAt(snap), Error: snap.Error,
		freshnessJSON: toFreshnessJSON(snap.Freshness, snap.At), DeadLettersFrom: snap.DeadLettersFrom(q.Vhost, q.Name)}
	if e, ok := snap.Edge(q.Vhost, q.Name); ok {
		resp.DeadLettersTo = &edgeJSON{Exchange: e.Exchange, ExchangeType: e.ExchangeType, RoutingKey: e.RoutingKey,
			OwnKeys: e.OwnKeys, ToQueues: e.ToQueues, AllBound: e.AllBound, Missing: e.Missing, Note: e.Note}
	}
	for _, l := range snap.RetryLoops {
		if l.Vhost == q.Vhost && l.RetryQueue == q.Name {
			resp.RetryOf = l.WorkQueue
		}
	}
	return c.JSON(http.StatusOK, resp)
}

type queuePointJSON struct {
	At            time.Time `json:"at"`
	Ready         int64     `json:"ready"`
	Unacked       int64     `json:"unacked"`
	Consumers     int       `json:"consumers"`
	PublishRate   float64   `json:"publish_rate"`
	DeliverRate   float64   `json:"deliver_rate"`
	AckRate       float64   `json:"ack_rate"`
	RedeliverRate float64   `json:"redeliver_rate"`
}

// APIQueueHistory: GET /api/v1/rabbitmq/:broker/queues/:vhost/:queue/history?since=1h. A queue the
// last sample does not have is a 404 (its old history is no longer charted).
func (h *Rabbit) APIQueueHistory(c echo.Context) error {
	b, snap, err := h.snapshot(c)
	if err != nil {
		return err
	}
	vhost, name := pathParam(c, "vhost"), pathParam(c, "queue")
	if !snap.At.IsZero() { // before the first sample, the history of the previous run may still be there
		if _, err := findQueue(snap, vhost, name); err != nil {
			return err
		}
	}
	since, _, err := historyRange(c)
	if err != nil {
		return err
	}
	points, err := h.snapshots.RabbitQueueHistory(c.Request().Context(), b.Name(), vhost, name, since, maxChartPoints)
	if err != nil {
		return err
	}
	out := make([]queuePointJSON, len(points))
	for i, p := range points {
		out[i] = queuePointJSON{At: p.At.UTC(), Ready: p.Ready, Unacked: p.Unacked, Consumers: p.Consumers,
			PublishRate: p.PublishRate, DeliverRate: p.DeliverRate, AckRate: p.AckRate, RedeliverRate: p.RedeliverRate}
	}
	return c.JSON(http.StatusOK, queueHistoryJSON{Points: out})
}

// queueHistoryJSON is a queue's history, oldest point first.
type queueHistoryJSON struct {
	Points []queuePointJSON `json:"points"`
}

type amqpPropertiesJSON struct {
	MessageID       string     `json:"message_id"`
	CorrelationID   string     `json:"correlation_id"`
	Timestamp       *time.Time `json:"timestamp"`
	Type            string     `json:"type"`
	ContentType     string     `json:"content_type"`
	ContentEncoding string     `json:"content_encoding"`
	AppID           string     `json:"app_id"`
	UserID          string     `json:"user_id"`
	DeliveryMode    uint8      `json:"delivery_mode"`
	Priority        uint8      `json:"priority"`
	Expiration      string     `json:"expiration"`
	ReplyTo         string     `json:"reply_to"`
}

type deathJSON struct {
	Queue       string     `json:"queue"`
	Reason      string     `json:"reason"`
	Count       int64      `json:"count"`
	Time        *time.Time `json:"time"`
	Exchange    string     `json:"exchange"`
	RoutingKeys []string   `json:"routing_keys"`
}

type rabbitDeadLetterJSON struct {
	Reason              string      `json:"reason"`
	Count               int64       `json:"count"`
	OriginalQueue       string      `json:"original_queue"`
	OriginalExchange    string      `json:"original_exchange"`
	OriginalRoutingKeys []string    `json:"original_routing_keys"`
	FirstDeathAt        *time.Time  `json:"first_death_at"`
	ExceptionMessage    string      `json:"exception_message"`
	Stacktrace          string      `json:"stacktrace,omitempty"`
	LastQueue           string      `json:"last_queue"`
	FirstReason         string      `json:"first_reason"`
	ReplayCount         int         `json:"replay_count"`
	Deaths              []deathJSON `json:"deaths"`
}

type rabbitMessageJSON struct {
	Position      int                   `json:"position"`
	Offset        *int64                `json:"offset,omitempty"` // stream queues only
	MessageID     string                `json:"message_id"`
	Exchange      string                `json:"exchange"`
	RoutingKey    string                `json:"routing_key"`
	Redelivered   bool                  `json:"redelivered"`
	Properties    amqpPropertiesJSON    `json:"properties"`
	Headers       map[string]string     `json:"headers"`
	Body          string                `json:"body"`
	BodyEncoding  string                `json:"body_encoding"` // json, text, base64 or empty
	BodyTruncated bool                  `json:"body_truncated"`
	BodyRedacted  bool                  `json:"body_redacted,omitempty"`
	Size          int                   `json:"size"`
	DeadLetter    *rabbitDeadLetterJSON `json:"dead_letter"`
}

// inUTC is t in UTC; nil stays nil. (Its own name: outbox.go has the same helper.)
func inUTC(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// shownMessage is a browsed message with what the caller may not see masked.
type shownMessage struct {
	rabbit.Message
	Headers      []rabbit.Header
	Redacted     bool // something in the message was masked
	BodyRedacted bool // the body itself was
}

// redactMessage is the masking pass over one message for a non-admin: the configured headers,
// the JSON paths of the body (a body cut at rabbit.MaxBodyBytes or not JSON is masked whole when
// paths are configured), then everything derived from what was hidden — other headers quoting
// it, the decoded dead-letter fields and the message id (see messageMask).
func redactMessage(r *Redactor, m rabbit.Message) shownMessage {
	out := shownMessage{Message: m, Headers: m.Headers}
	if r == nil {
		return out
	}
	mask := &messageMask{}
	hs := make([]rabbit.Header, len(m.Headers))
	for i, hd := range m.Headers {
		if r.Header(hd.Key) {
			mask.secrets = append(mask.secrets, hd.Value)
			hd.Value, out.Redacted = Redacted, true
		}
		hs[i] = hd
	}
	if r.Header("message_id") && m.Properties.MessageID != "" {
		mask.secrets = append(mask.secrets, m.Properties.MessageID)
		out.Properties.MessageID, out.Redacted = Redacted, true
	}
	if body, changed := r.maskBody(m.Body, m.Truncated, mask); changed {
		out.Body, out.Redacted, out.BodyRedacted = body, true, true
	}
	for i, hd := range hs {
		if r.Header(hd.Key) {
			continue
		}
		if mask.matches(hd.Value) {
			hs[i].Value, out.Redacted = Redacted, true
		} else {
			mask.clear = append(mask.clear, hd.Value)
		}
	}
	out.Headers = hs
	if out.Properties.MessageID != Redacted {
		mask.clear = append(mask.clear, m.Properties.MessageID)
	}
	if p := &out.Properties; mask.matches(p.CorrelationID) {
		p.CorrelationID, out.Redacted = Redacted, true
	}
	if id := mask.id(m.MessageID); id != m.MessageID {
		out.MessageID, out.Redacted = id, true
	}
	if d := m.DeadLetter; d != nil {
		dl := *d
		for _, f := range []*string{&dl.ExceptionMessage, &dl.Stacktrace, &dl.OriginalQueue, &dl.OriginalExchange, &dl.LastQueue} {
			if v := mask.text(*f); v != *f {
				*f, out.Redacted = v, true
			}
		}
		if len(dl.OriginalRoutingKeys) > 0 {
			keys := make([]string, len(dl.OriginalRoutingKeys))
			for i, k := range dl.OriginalRoutingKeys {
				if keys[i] = mask.text(k); keys[i] != k {
					out.Redacted = true
				}
			}
			dl.OriginalRoutingKeys = keys
		}
		out.DeadLetter = &dl
	}
	return out
}

// shownMessages masks every message of a browse, for the list and for the error groups built
// from it: a group's key is the masked exception message, so masked text never shows there.
func shownMessages(r *Redactor, msgs []rabbit.Message) ([]shownMessage, []rabbit.Message) {
	shown := make([]shownMessage, len(msgs))
	masked := make([]rabbit.Message, len(msgs))
	for i, m := range msgs {
		shown[i] = redactMessage(r, m)
		masked[i] = shown[i].Message
		masked[i].Headers = shown[i].Headers
	}
	return shown, masked
}

// bodyJSON is a body as the API gives it: empty, json, text or base64 (payload.Encode).
func bodyJSON(b []byte) (string, string) { return payload.Encode(b) }

func toRabbitMessageJSON(m shownMessage) rabbitMessageJSON {
	p := m.Properties
	j := rabbitMessageJSON{Position: m.Position, Offset: m.Offset, MessageID: m.MessageID, Exchange: m.Exchange,
		RoutingKey: m.RoutingKey, Redelivered: m.Redelivered, Headers: make(map[string]string, len(m.Headers)),
		BodyTruncated: m.Truncated, BodyRedacted: m.BodyRedacted, Size: m.Size,
		Properties: amqpPropertiesJSON{MessageID: p.MessageID, CorrelationID: p.CorrelationID, Timestamp: inUTC(p.Timestamp),
			Type: p.Type, ContentType: p.ContentType, ContentEncoding: p.ContentEncoding, AppID: p.AppID, UserID: p.UserID,
			DeliveryMode: p.DeliveryMode, Priority: p.Priority, Expiration: p.Expiration, ReplyTo: p.ReplyTo}}
	for _, hd := range m.Headers {
		j.Headers[hd.Key] = hd.Value
	}
	j.Body, j.BodyEncoding = bodyJSON(m.Body)
	if d := m.DeadLetter; d != nil {
		dl := &rabbitDeadLetterJSON{Reason: d.Reason, Count: d.Count, OriginalQueue: d.OriginalQueue,
			OriginalExchange: d.OriginalExchange, OriginalRoutingKeys: d.OriginalRoutingKeys, FirstDeathAt: inUTC(d.FirstDeathAt),
			ExceptionMessage: d.ExceptionMessage, Stacktrace: d.Stacktrace, LastQueue: d.LastQueue, FirstReason: d.FirstReason,
			ReplayCount: d.ReplayCount, Deaths: make([]deathJSON, len(d.Deaths))}
		if dl.OriginalRoutingKeys == nil {
			dl.OriginalRoutingKeys = []string{}
		}
		for i, x := range d.Deaths {
			dl.Deaths[i] = deathJSON{Queue: x.Queue, Reason: x.Reason, Count: x.Count, Time: inUTC(x.Time), Exchange: x.Exchange,
				RoutingKeys: x.RoutingKeys}
			if dl.Deaths[i].RoutingKeys == nil {
				dl.Deaths[i].RoutingKeys = []string{}
			}
		}
		j.DeadLetter = dl
	}
	return j
}

type errorGroupJSON struct {
	Reason           string     `json:"reason"`
	ExceptionMessage string     `json:"exception_message"`
	Count            int        `json:"count"`
	FirstAt          *time.Time `json:"first_at"`
	LastAt           *time.Time `json:"last_at"`
	OriginalQueues   []string   `json:"original_queues"`
	Positions        []int      `json:"positions"`
}

// browseLimit parses ?limit= (1…rabbit.MaxBrowse, default 50).
func browseLimit(c echo.Context) (int, error) {
	n, err := queryInt(c, "limit", defaultBrowse, 1, rabbit.MaxBrowse)
	return int(n), err
}

// messageFilter keeps the messages a replay plan with the same filter would select: the reason
// exactly, the exception message by substring.
func messageFilter(reason, exception string) func(rabbit.Message) bool {
	return func(m rabbit.Message) bool {
		var r, e string
		if d := m.DeadLetter; d != nil {
			r, e = d.Reason, d.ExceptionMessage
		}
		return (reason == "" || r == reason) && (exception == "" || strings.Contains(e, exception))
	}
}

// APIMessages: GET /api/v1/rabbitmq/:broker/queues/:vhost/:queue/messages?limit=50 — browse the
// head of a queue without changing it (see rabbit.Broker.Browse); ?reason= and ?exception= filter
// the messages returned (the error groups count every message read). A queue that cannot be
// browsed safely is a 409 with the reason.
func (h *Rabbit) APIMessages(c echo.Context) error {
	b, err := h.broker(c)
	if err != nil {
		return err
	}
	limit, err := browseLimit(c)
	if err != nil {
		return err
	}
	red, err := h.redact.For(c, fmt.Sprintf("rabbitmq/%s/%s/%s", b.Name(), pathParam(c, "vhost"), pathParam(c, "queue")))
	if err != nil {
		return err
	}
	res, err := b.Browse(c.Request().Context(), pathParam(c, "vhost"), pathParam(c, "queue"), limit)
	if err != nil {
		return err
	}
	keep := messageFilter(c.QueryParam("reason"), c.QueryParam("exception"))
	msgs := make([]rabbitMessageJSON, 0, len(res.Messages))
	shown, masked := shownMessages(red, res.Messages)
	for i, m := range masked { // filtered on what the reader may see
		if keep(m) {
			msgs = append(msgs, toRabbitMessageJSON(shown[i]))
		}
	}
	groups := rabbit.ErrorGroups(masked)
	gs := make([]errorGroupJSON, len(groups))
	for i, g := range groups {
		gs[i] = errorGroupJSON{Reason: g.Reason, ExceptionMessage: g.ExceptionMessage, Count: g.Count,
			FirstAt: inUTC(g.FirstAt), LastAt: inUTC(g.LastAt), OriginalQueues: g.OriginalQueues, Positions: g.Positions}
	}
	notes := res.Notes
	if notes == nil {
		notes = []string{}
	}
	return c.JSON(http.StatusOK, browseJSON{b.Name(), res.Vhost, res.Queue, res.Type, res.Ready, res.Consumers, res.Unacked, res.Complete, len(res.Messages),
		res.Redelivered, notes, msgs, gs})
}

// browseJSON is a browse of a queue's head: the messages read, their error groups and what may
// be missing.
type browseJSON struct {
	Broker      string              `json:"broker"`
	Vhost       string              `json:"vhost"`
	Queue       string              `json:"queue"`
	Type        string              `json:"type"`
	Ready       int64               `json:"ready"`
	Consumers   int64               `json:"consumers"`
	Unacked     int64               `json:"unacked"`  // held by others, not shown
	Complete    bool                `json:"complete"` // false: the list may miss messages (see notes)
	Read        int                 `json:"read"`
	Redelivered bool                `json:"redelivered"`
	Notes       []string            `json:"notes"`
	Messages    []rabbitMessageJSON `json:"messages"`
	ErrorGroups []errorGroupJSON    `json:"error_groups"`
}

// ---- pages ----

func (h *Rabbit) brokerMeta(c echo.Context, title, broker string, crumbs ...layout.Crumb) layout.Meta {
	m := h.meta(c, title, "rabbitmq")
	m.Breadcrumbs = append([]layout.Crumb{{Label: "RabbitMQ", Href: paths.RabbitMQ},
		{Label: broker, Href: paths.RabbitBroker(broker)}}, crumbs...)
	return m
}

func exchangeLabel(x string) string {
	if x == "" {
		return "(default)"
	}
	return x
}

func toQueueRow(q sampler.RabbitQueue) rabbitpages.QueueRow {
	r := rabbitpages.QueueRow{Vhost: q.Vhost, Name: q.Name, Type: q.Type, State: q.State, Ready: q.Ready, Unacked: q.Unacked,
		Consumers: q.Consumers, PublishRate: q.PublishRate, DeliverRate: q.DeliverRate, AckRate: q.AckRate,
		RedeliverRate: q.RedeliverRate, DLQ: q.IsDeadLetterQueue, Retry: q.Retry, Growing: q.Growing, Growth: q.Growth,
		Policy: q.Policy}
	if q.HasDeadLetterExchange {
		r.DeadLetterTo = exchangeLabel(q.DeadLetterExchange)
		if q.DeadLetterRoutingKey != "" {
			r.DeadLetterTo += " → " + q.DeadLetterRoutingKey
		}
	}
	return r
}

func toEdgeRow(e rabbit.Edge, loops []rabbit.RetryLoop) rabbitpages.EdgeRow {
	row := rabbitpages.EdgeRow{From: rabbitpages.QueueLink{Vhost: e.FromVhost, Name: e.FromQueue}, Exchange: exchangeLabel(e.Exchange),
		ExchangeType: e.ExchangeType, RoutingKey: e.RoutingKey, OwnKeys: strings.Join(e.OwnKeys, ", "), Missing: e.Missing,
		AllBound: e.AllBound, Note: e.Note}
	for _, to := range e.ToQueues {
		row.To = append(row.To, rabbitpages.QueueLink{Vhost: e.FromVhost, Name: to})
	}
	for _, l := range loops {
		if l.Vhost == e.FromVhost && (l.RetryQueue == e.FromQueue || l.WorkQueue == e.FromQueue) {
			row.Loop = true
		}
	}
	return row
}

// Index: GET /rabbitmq — the brokers, or straight to the only one.
func (h *Rabbit) Index(c echo.Context) error {
	if len(h.brokers) == 1 {
		return c.Redirect(http.StatusFound, paths.RabbitBroker(h.brokers[0].Name()))
	}
	page := rabbitpages.IndexPage{Meta: h.meta(c, "RabbitMQ", "rabbitmq")}
	for _, b := range h.brokers {
		page.Brokers = append(page.Brokers, b.Name())
	}
	return render(c, http.StatusOK, rabbitpages.Index(page))
}

// BrokerPage: GET /rabbitmq/:broker — the queue table and the topology, from the snapshot.
func (h *Rabbit) BrokerPage(c echo.Context) error {
	b, err := h.broker(c)
	if err != nil {
		return err
	}
	page := rabbitpages.BrokerPage{Meta: h.meta(c, "RabbitMQ "+b.Name(), "rabbitmq"), Broker: b.Name(),
		LiveURL: c.Request().URL.RequestURI(), Refresh: refreshSeconds(h.snapshots)}
	page.Meta.Breadcrumbs = []layout.Crumb{{Label: "RabbitMQ", Href: paths.RabbitMQ}, {Label: b.Name()}}
	snap, err := h.snapshots.LatestRabbit(c.Request().Context(), b.Name())
	if err != nil {
		page.SnapshotError = err.Error()
		return render(c, http.StatusOK, rabbitpages.Broker(page))
	}
	page.SampledAt, page.SampleError, page.SampleErrorAt = snap.At, sampleNote(snap.Error, snap.Freshness), snap.ErrorAt
	vhosts := map[string]bool{}
	page.Queues = make([]rabbitpages.QueueRow, len(snap.Queues))
	for i, q := range snap.Queues {
		vhosts[q.Vhost] = true
		page.Queues[i] = toQueueRow(q)
		if q.IsDeadLetterQueue {
			page.DLQs++
			page.DLQMessages += q.Ready + q.Unacked
			page.DLQInflow += q.PublishRate
		}
		if q.Growing {
			page.Growing++
		}
	}
	page.MultiVhost = len(vhosts) > 1
	for v := range vhosts {
		page.Vhost = v
	}
	// Growing first, then dead-letter queues holding messages, then by depth; the table re-sorts.
	sort.SliceStable(page.Queues, func(i, j int) bool {
		a, b := page.Queues[i], page.Queues[j]
		if a.Growing != b.Growing {
			return a.Growing
		}
		if ad, bd := a.DLQ && a.Ready > 0, b.DLQ && b.Ready > 0; ad != bd {
			return ad
		}
		return a.Ready+a.Unacked > b.Ready+b.Unacked
	})
	for _, e := range snap.Edges {
		page.Edges = append(page.Edges, toEdgeRow(e, snap.RetryLoops))
	}
	for _, l := range snap.RetryLoops {
		page.RetryLoops = append(page.RetryLoops, rabbitpages.RetryLoopRow{Vhost: l.Vhost, Retry: l.RetryQueue, Work: l.WorkQueue,
			Delay: l.Delay.String()})
	}
	return render(c, http.StatusOK, rabbitpages.Broker(page))
}

func msText(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String() + " (" + strconv.FormatInt(ms, 10) + " ms)"
}

// settingSource says where an effective setting comes from: the queue argument, the policy, or
// both (RabbitMQ then applies the rule of rabbit.Queue).
func settingSource(q sampler.RabbitQueue, arg string, both string) string {
	_, hasArg := q.Arguments[arg]
	hasPolicy := q.Policy != "" || q.OperatorPolicy != ""
	switch {
	case hasArg && hasPolicy && both != "":
		return "argument " + arg + " or policy (" + both + ")"
	case hasArg:
		return "argument " + arg
	case hasPolicy:
		return "policy"
	}
	return ""
}

func queueSettings(q sampler.RabbitQueue) []rabbitpages.Setting {
	var out []rabbitpages.Setting
	if q.HasDeadLetterExchange {
		src := "argument x-dead-letter-exchange"
		if q.DeadLetterSource == rabbit.SourcePolicy {
			src = "policy " + q.Policy
			if q.Policy == "" {
				src = "operator policy " + q.OperatorPolicy
			}
		}
		out = append(out, rabbitpages.Setting{Key: "dead-letter exchange", Value: exchangeLabel(q.DeadLetterExchange), Source: src})
		rk := q.DeadLetterRoutingKey
		rkSrc := ""
		if rk == "" {
			rk = "(the message's own routing keys)"
		} else if _, ok := q.Arguments["x-dead-letter-routing-key"]; ok {
			rkSrc = "argument x-dead-letter-routing-key"
		} else {
			rkSrc = "policy"
		}
		out = append(out, rabbitpages.Setting{Key: "dead-letter routing key", Value: rk, Source: rkSrc})
	}
	if q.MessageTTL != nil {
		out = append(out, rabbitpages.Setting{Key: "message TTL", Value: msText(*q.MessageTTL),
			Source: settingSource(q, "x-message-ttl", "the smaller wins")})
	}
	if q.DeliveryLimit != nil {
		out = append(out, rabbitpages.Setting{Key: "delivery limit", Value: strconv.FormatInt(*q.DeliveryLimit, 10),
			Source: settingSource(q, "x-delivery-limit", "the smaller wins")})
	}
	if q.MaxLength != nil {
		out = append(out, rabbitpages.Setting{Key: "max length", Value: strconv.FormatInt(*q.MaxLength, 10),
			Source: settingSource(q, "x-max-length", "the smaller wins")})
	}
	if q.Overflow != "" {
		out = append(out, rabbitpages.Setting{Key: "overflow", Value: q.Overflow, Source: settingSource(q, "x-overflow", "")})
	}
	return out
}

// QueuePage: GET /rabbitmq/:broker/queues/:vhost/:queue.
func (h *Rabbit) QueuePage(c echo.Context) error {
	b, snap, q, err := h.queue(c)
	if err != nil {
		return err
	}
	_, rangeLabel, err := historyRange(c)
	if err != nil {
		return err
	}
	page := rabbitpages.QueuePage{Meta: h.brokerMeta(c, "Queue "+q.Name, b.Name(), layout.Crumb{Label: queueCrumb(q.Vhost, q.Name)}),
		LiveURL: c.Request().URL.RequestURI(), Refresh: refreshSeconds(h.snapshots), BrowseRefused: browseRefused(q),
		Broker: b.Name(), Vhost: q.Vhost, Name: q.Name, Row: toQueueRow(q), Total: q.Total, SampledAt: snap.At,
		SampleError: sampleNote(snap.Error, snap.Freshness), Range: rangeLabel, Settings: queueSettings(q), SingleActive: q.SingleActiveConsumer,
		OperatorPolicy: q.OperatorPolicy}
	for k, v := range q.Arguments {
		page.Arguments = append(page.Arguments, rabbitpages.KV{Key: k, Value: v})
	}
	sort.Slice(page.Arguments, func(i, j int) bool { return page.Arguments[i].Key < page.Arguments[j].Key })
	if e, ok := snap.Edge(q.Vhost, q.Name); ok {
		row := toEdgeRow(e, snap.RetryLoops)
		page.Edge = &row
	}
	for _, f := range snap.DeadLettersFrom(q.Vhost, q.Name) {
		page.From = append(page.From, rabbitpages.QueueLink{Vhost: q.Vhost, Name: f})
	}
	for _, l := range snap.RetryLoops {
		if l.Vhost == q.Vhost && l.RetryQueue == q.Name {
			page.RetryOf = l.WorkQueue
		}
	}
	return render(c, http.StatusOK, rabbitpages.Queue(page))
}

// queueCrumb names a queue in the breadcrumbs: its vhost only when it is not the default "/".
func queueCrumb(vhost, queue string) string {
	if vhost == "/" || vhost == "" {
		return queue
	}
	return vhost + " · " + queue
}

// browseRefused says why a browse of q cannot work, as the browse itself would refuse it: a
// quorum queue counts each browse as a delivery, so with a delivery limit browsing would
// dead-letter or drop the messages looked at.
func browseRefused(q sampler.RabbitQueue) string {
	if q.Type != "quorum" || q.DeliveryLimit == nil {
		return ""
	}
	return fmt.Sprintf("Not browsable: quorum queue with a delivery limit of %d — each browse counts a delivery, so browsing "+
		"would dead-letter or drop these messages. Remove the limit, or shovel them to a classic queue to look at them.", *q.DeliveryLimit)
}

// maxRenderedBody caps what one message shows inline; the API gives up to rabbit.MaxBodyBytes.
const maxRenderedBody = 64 << 10

// destination is where a replay sends the message: its original exchange and routing keys.
func destination(d *rabbit.DeadLetter) string {
	x, keys := d.OriginalExchange, d.OriginalRoutingKeys
	if x == "" && len(keys) == 0 {
		if d.OriginalQueue == "" {
			return "unknown: no original exchange or routing key in the headers"
		}
		x, keys = "", []string{d.OriginalQueue}
	}
	return "exchange " + exchangeLabel(x) + ", routing key " + strings.Join(keys, ", ")
}

func toMessageView(m shownMessage) rabbitpages.MessageView {
	v := rabbitpages.MessageView{Position: m.Position, MessageID: m.MessageID, Exchange: exchangeLabel(m.Exchange),
		RoutingKey: m.RoutingKey, Redelivered: m.Redelivered, Truncated: m.Truncated, Size: m.Size, Redacted: m.Redacted}
	if m.Offset != nil {
		v.Offset = strconv.FormatInt(*m.Offset, 10)
	}
	p := m.Properties
	add := func(k, val string) {
		if val != "" {
			v.Properties = append(v.Properties, rabbitpages.KV{Key: k, Value: val})
		}
	}
	add("message_id", p.MessageID)
	add("correlation_id", p.CorrelationID)
	if p.Timestamp != nil {
		add("timestamp", p.Timestamp.UTC().Format(time.RFC3339))
	}
	add("type", p.Type)
	add("content_type", p.ContentType)
	add("content_encoding", p.ContentEncoding)
	add("app_id", p.AppID)
	add("user_id", p.UserID)
	switch p.DeliveryMode {
	case 1:
		add("delivery_mode", "1 (transient)")
	case 2:
		add("delivery_mode", "2 (persistent)")
	}
	if p.Priority > 0 {
		add("priority", strconv.Itoa(int(p.Priority)))
	}
	add("expiration", p.Expiration)
	add("reply_to", p.ReplyTo)
	for _, hd := range m.Headers {
		v.Headers = append(v.Headers, rabbitpages.KV{Key: hd.Key, Value: hd.Value})
	}
	v.Body, v.BodyEncoding = payload.Render(m.Body)
	if cut, ok := payload.Cut(v.Body, maxRenderedBody); ok {
		v.Body, v.Truncated = cut, true
	}
	if d := m.DeadLetter; d != nil {
		dv := &rabbitpages.DeadLetterView{Reason: d.Reason, Count: d.Count, LastQueue: d.LastQueue, FirstReason: d.FirstReason,
			OriginalQueue: d.OriginalQueue, Destination: destination(d), FirstDeathAt: d.FirstDeathAt,
			ExceptionMessage: d.ExceptionMessage, Stacktrace: d.Stacktrace, ReplayCount: d.ReplayCount}
		for _, x := range d.Deaths {
			dv.Deaths = append(dv.Deaths, rabbitpages.DeathView{Queue: x.Queue, Reason: x.Reason, Count: x.Count, Time: x.Time,
				Exchange: exchangeLabel(x.Exchange), RoutingKeys: strings.Join(x.RoutingKeys, ", ")})
		}
		v.DeadLetter = dv
		if d.FirstDeathAt != nil {
			v.At = *d.FirstDeathAt
		}
	}
	if v.At.IsZero() && p.Timestamp != nil {
		v.At = *p.Timestamp
	}
	switch d := m.DeadLetter; {
	case d == nil:
		v.ReplayTo, v.CannotReplay = "unknown", "no x-death or original-destination headers: where it came from is unknown"
	case d.OriginalExchange == "" && len(d.OriginalRoutingKeys) == 0 && d.OriginalQueue == "":
		v.ReplayTo, v.CannotReplay = "unknown", "no original exchange, routing key or queue in its headers"
	default:
		v.ReplayTo = strings.TrimPrefix(destination(d), "exchange ")
	}
	return v
}

// MessagesPage: GET /rabbitmq/:broker/queues/:vhost/:queue/messages?limit=&reason=&exception= —
// the dead-letter queue browser. A refused browse renders the page with the reason and a 409; a
// broker that cannot be reached renders it with the error.
func (h *Rabbit) MessagesPage(c echo.Context) error {
	b, err := h.broker(c)
	if err != nil {
		return err
	}
	limit, err := browseLimit(c)
	if err != nil {
		return err
	}
	vhost, queue := pathParam(c, "vhost"), pathParam(c, "queue")
	page := rabbitpages.MessagesPage{Meta: h.brokerMeta(c, "Messages in "+queue, b.Name(),
		layout.Crumb{Label: queueCrumb(vhost, queue), Href: paths.Queue(b.Name(), vhost, queue)}, layout.Crumb{Label: "messages"}),
		Broker: b.Name(), Vhost: vhost, Queue: queue, Limit: limit, Reason: c.QueryParam("reason"), Exception: c.QueryParam("exception")}
	red, err := h.redact.For(c, fmt.Sprintf("rabbitmq/%s/%s/%s", b.Name(), vhost, queue))
	if err != nil {
		return err
	}
	page.CanReveal = red != nil && ActorOf(c).Role == RoleAdmin
	res, err := b.Browse(c.Request().Context(), vhost, queue, limit)
	switch {
	case errors.Is(err, ops.ErrConflict):
		page.Refused = err.Error()
		return render(c, http.StatusConflict, rabbitpages.Messages(page))
	case errors.Is(err, ops.ErrUnavailable):
		page.Error = err.Error()
		return render(c, http.StatusOK, rabbitpages.Messages(page))
	case err != nil:
		return err
	}
	page.Type, page.Ready, page.Consumers, page.Redelivered, page.Notes = res.Type, res.Ready, res.Consumers, res.Redelivered, res.Notes
	page.Unacked, page.Complete = res.Unacked, res.Complete
	page.Read = len(res.Messages)
	reasons := map[string]bool{}
	shown, masked := shownMessages(red, res.Messages)
	for _, g := range rabbit.ErrorGroups(masked) {
		row := rabbitpages.GroupRow{Reason: g.Reason, ExceptionMessage: g.ExceptionMessage, Count: g.Count, FirstAt: g.FirstAt,
			LastAt: g.LastAt, OriginalQueues: strings.Join(g.OriginalQueues, ", ")}
		pos := make([]string, len(g.Positions))
		for i, p := range g.Positions {
			pos[i] = strconv.Itoa(p)
		}
		row.Positions = strings.Join(pos, ", ")
		page.Groups = append(page.Groups, row)
		if g.Reason != "" && !reasons[g.Reason] {
			reasons[g.Reason] = true
			page.Reasons = append(page.Reasons, g.Reason)
		}
	}
	sort.Strings(page.Reasons)
	keep := messageFilter(page.Reason, page.Exception)
	for i, m := range masked { // filtered on what the reader may see
		if keep(m) {
			page.Messages = append(page.Messages, toMessageView(shown[i]))
		}
	}
	return render(c, http.StatusOK, rabbitpages.Messages(page))
}
