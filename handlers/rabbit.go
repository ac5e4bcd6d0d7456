package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/a-h/templ"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/sampler"
	"github.com/redrive/redrive/ops/triage"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/layout"
	rabbitpages "github.com/redrive/redrive/views/pages/rabbitmq"
)

// RabbitBroker is one broker's live reads; *rabbit.Broker implements it. Browse errors:
// ErrInvalid (limit), ErrNotFound (unknown or unwatched vhost, unknown queue), ErrConflict (the
// queue cannot be browsed without changing it, with the reason), ErrUnavailable (unreachable).
// Version is the broker's RabbitMQ version (ErrUnavailable when the management API does not
// answer): what a browse of a quorum queue costs depends on its series (rabbitmodel.BrowseCost).
type RabbitBroker interface {
	replay.QueuePublisher // an archived message restored to its DLQ
	Name() string
	Browse(ctx context.Context, vhost, queue string, limit int) (rabbitmodel.BrowseResult, error)
	Topology(ctx context.Context) (rabbitmodel.Topology, error)
	Version(ctx context.Context) (rabbitmodel.Version, error)
}

// RabbitSnapshots reads the sampler's stored queue snapshots and history (ops/sampler): queue
// lists and pages never call the management API themselves, so any number of viewers cost the
// broker one list call per sampler interval.
type RabbitSnapshots interface {
	LatestRabbit(ctx context.Context, broker string) (queues.Snapshot, error)
	RabbitQueueHistory(ctx context.Context, broker, vhost, queue string, since time.Time, maxPoints int) ([]history.RabbitQueuePoint, error)
}

// RabbitReplays says which browsed dead letters a replay job already holds in its ledger, by
// their index, naming the job (the replay engine): copies a crashed broker returned after it lost
// the job's acks.
type RabbitReplays interface {
	ReplayedCopies(ctx context.Context, broker, vhost, queue string, ms []rabbitmodel.Message) (map[int]string, error)
}

// Rabbit serves the RabbitMQ pages and API.
type Rabbit struct {
	brokers   []RabbitBroker
	byName    map[string]RabbitBroker
	snapshots RabbitSnapshots
	meta      MetaFunc
	redact    *redact.Rules
	exports   *Search       // who may export (export.min_role); nil: nobody is offered it
	triage    RabbitTriage  // notes; nil: none
	replays   RabbitReplays // nil: copies of replayed messages are not pointed out
}

// ReplaysBy lets the messages page and API point out the copies of messages a job replayed.
func (h *Rabbit) ReplaysBy(r RabbitReplays) *Rabbit {
	h.replays = r
	return h
}

// replayedCopies is RabbitReplays' answer, or none: a store that does not answer costs the
// browse nothing but the marks (the plan still finds the copies).
func (h *Rabbit) replayedCopies(c echo.Context, b RabbitBroker, res rabbitmodel.BrowseResult) map[int]string {
	if h.replays == nil {
		return nil
	}
	copies, err := h.replays.ReplayedCopies(c.Request().Context(), b.Name(), res.Vhost, res.Queue, res.Messages)
	if err != nil {
		loggerOf(c).Warn("replayed copies: the ledger cannot be read", "err", err)
		return nil
	}
	return copies
}

// ExportsBy lets the messages page offer "Export matches" to whom s allows (export.min_role).
func (h *Rabbit) ExportsBy(s *Search) *Rabbit {
	h.exports = s
	return h
}

// NewRabbit wires the configured brokers (in config order). snapshots is required when brokers
// is not empty; redact masks message bodies and headers for non-admins (nil masks nothing).
func NewRabbit(brokers []RabbitBroker, snapshots RabbitSnapshots, meta MetaFunc, red *redact.Rules) *Rabbit {
	return &Rabbit{brokers: brokers, byName: byName(brokers), snapshots: snapshots, meta: meta, redact: red}
}

// defaultBrowse is the number of messages a browse reads when the request does not say.
const defaultBrowse = 50

func (h *Rabbit) broker(c echo.Context) (RabbitBroker, error) {
	return lookup(h.byName, pathParam(c, "broker"), "rabbitmq broker")
}

func (h *Rabbit) snapshot(c echo.Context) (RabbitBroker, queues.Snapshot, error) {
	b, err := h.broker(c)
	if err != nil {
		return nil, queues.Snapshot{}, err
	}
	snap, err := h.snapshots.LatestRabbit(c.Request().Context(), b.Name())
	return b, snap, err
}

// findQueue finds the path's queue in the snapshot: ErrNotFound when the sample does not have it,
// ErrUnavailable when there is no sample yet.
func findQueue(snap queues.Snapshot, vhost, name string) (queues.Queue, error) {
	if q, ok := snap.Queue(vhost, name); ok {
		return q, nil
	}
	if snap.At.IsZero() {
		return queues.Queue{}, ops.NotSampledYet("rabbitmq broker", snap.Broker)
	}
	for _, q := range snap.Queues {
		if q.Vhost == vhost {
			return queues.Queue{}, ops.NotFound("queue %q not found in vhost %q of rabbitmq broker %q", name, vhost, snap.Broker)
		}
	}
	return queues.Queue{}, ops.NotFound("vhost %q of rabbitmq broker %q has no queues or is not watched", vhost, snap.Broker)
}

// queue finds a queue in the latest snapshot. A queue the snapshot does not have yet (declared
// since the last sample) is read through from the broker once, so that a page or a script asking
// right after creating it gets it, not a 404 for up to an interval.
func (h *Rabbit) queue(c echo.Context) (RabbitBroker, queues.Snapshot, queues.Queue, error) {
	b, snap, err := h.snapshot(c)
	if err != nil {
		return nil, snap, queues.Queue{}, err
	}
	vhost, name := pathParam(c, "vhost"), pathParam(c, "queue")
	q, err := findQueue(snap, vhost, name)
	if !ops.ReadThrough(err, snap.At) {
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
	}{Broker: b.Name(), SampledAt: knownUTC(snap.At), Error: snap.Error, freshnessJSON: toFreshnessJSON(snap.Freshness, snap.At), Queues: make([]rabbitQueueJSON, len(snap.Queues))}
	for i, q := range snap.Queues {
		resp.Queues[i] = toRabbitQueueJSON(q)
	}
	return c.JSON(http.StatusOK, resp)
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
	}{rabbitQueueJSON: toRabbitQueueJSON(q), SampledAt: knownUTC(snap.At), Error: snap.Error,
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

// browseLimit parses ?limit= (1…rabbitmodel.MaxBrowse, default 50).
func browseLimit(c echo.Context) (int, error) {
	n, err := queryInt(c, "limit", defaultBrowse, 1, rabbitmodel.MaxBrowse)
	return int(n), err
}

// browsed is the broker named in the path and how many messages of its queue's head to read
// (browseLimit): what the messages API and page start from.
func (h *Rabbit) browsed(c echo.Context) (RabbitBroker, int, error) {
	b, err := h.broker(c)
	if err != nil {
		return nil, 0, err
	}
	limit, err := browseLimit(c)
	return b, limit, err
}

// messageFilter keeps the browsed messages that pass the page's filters: the reason exactly, the
// exception message by substring (a search), and group as a replay plan's filter.exception_type
// selects (ops.InErrorGroup), so a plan made from a group selects what the page showed.
func messageFilter(reason, exception, group string) func(rabbitmodel.Message) bool {
	return func(m rabbitmodel.Message) bool {
		var r, e, st string
		if d := m.DeadLetter; d != nil {
			r, e, st = d.Reason, d.ExceptionMessage, d.Stacktrace
		}
		return (reason == "" || r == reason) && (exception == "" || strings.Contains(e, exception)) && ops.InErrorGroupTraced(e, st, group)
	}
}

// APIMessages: GET /api/v1/rabbitmq/:broker/queues/:vhost/:queue/messages?limit=50 — browse the
// head of a queue without changing it (see rabbit.Broker.Browse); ?reason=, ?exception= and
// ?group= (messageFilter) filter the messages returned (the error groups count every message read). A queue that cannot be
// browsed safely is a 409 with the reason. The answer says which delivery limit the browse counted against and how many
// messages it moved to the archive instead of returning them; each message its delivery count and what it has left.
func (h *Rabbit) APIMessages(c echo.Context) error {
	b, limit, err := h.browsed(c)
	if err != nil {
		return err
	}
	red, err := redactionFor(c, h.redact, fmt.Sprintf("rabbitmq/%s/%s/%s", b.Name(), pathParam(c, "vhost"), pathParam(c, "queue")))
	if err != nil {
		return err
	}
	res, err := b.Browse(c.Request().Context(), pathParam(c, "vhost"), pathParam(c, "queue"), limit)
	if err != nil {
		return err
	}
	keep := messageFilter(c.QueryParam("reason"), c.QueryParam("exception"), c.QueryParam("group"))
	msgs := make([]browsedMessageJSON, 0, len(res.Messages))
	shown, masked := red.Messages(res.Messages)
	copies := h.replayedCopies(c, b, res)
	for i, m := range masked { // filtered on what the reader may see
		if keep(m) {
			j := toBrowsedMessageJSON(shown[i])
			j.ReplayedBy = copies[i]
			msgs = append(msgs, j)
		}
	}
	groups := rabbitmodel.ErrorGroups(masked)
	gs := make([]errorGroupJSON, len(groups))
	for i, g := range groups {
		gs[i] = errorGroupJSON{Reason: g.Reason, Key: g.Key, ExceptionMessage: g.ExceptionMessage, Count: g.Count,
			FirstAt: inUTC(g.FirstAt), LastAt: inUTC(g.LastAt), OriginalQueues: g.OriginalQueues, Positions: g.Positions}
	}
	notes := res.Notes
	if notes == nil {
		notes = []string{}
	}
	return c.JSON(http.StatusOK, browseJSON{Broker: b.Name(), Vhost: res.Vhost, Queue: res.Queue, Type: res.Type, Ready: res.Ready,
		Consumers: res.Consumers, Unacked: res.Unacked, Complete: res.Complete, Read: len(res.Messages), Redelivered: res.Redelivered,
		Notes: notes, DeliveryLimit: res.DeliveryLimit, DeliveryLimitFrom: res.DeliveryLimitFrom, Kept: res.Kept, Messages: msgs, ErrorGroups: gs})
}

// Index: GET /rabbitmq — the brokers, or straight to the only one.
func (h *Rabbit) Index(c echo.Context) error {
	return areaIndex(c, h.brokers, paths.RabbitBroker, func(names []string) templ.Component {
		return rabbitpages.Index(rabbitpages.IndexPage{Meta: h.meta(c, "RabbitMQ", "rabbitmq"), Brokers: names})
	})
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
		page.SnapshotError = shown(c, err)
		return render(c, http.StatusOK, rabbitpages.Broker(page))
	}
	page.SampledAt, page.SampleError, page.SampleErrorAt = snap.At, sampleNote(snap.Error, snap.Freshness), snap.ErrorAt
	if snap.StatsDisabled() {
		page.StatsNotice = rabbitmodel.StatsDisabledNotice
	}
	vhosts := map[string]bool{}
	page.Queues = make([]rabbitpages.QueueRow, len(snap.Queues))
	for i, q := range snap.Queues {
		vhosts[q.Vhost] = true
		page.Queues[i] = toQueueRow(q)
		switch {
		case !q.IsDeadLetterQueue:
		case q.CountsUnreported: // not known: not added as 0
			page.DLQs++
			page.DLQUnknown++
		default:
			page.DLQs++
			page.DLQMessages += q.Ready + q.Unacked
			page.DLQInflow += q.Inflow
		}
		if q.Growing {
			page.Growing++
		}
	}
	page.MultiVhost = len(vhosts) > 1
	for v := range vhosts {
		page.Vhost = v
	}
	// Growing first, then dead-letter queues holding messages, then by depth, the queues whose
	// depth is not known after the others (as the table sorts a "—"); the table re-sorts.
	sort.SliceStable(page.Queues, func(i, j int) bool {
		a, b := page.Queues[i], page.Queues[j]
		if a.Growing != b.Growing {
			return a.Growing
		}
		if ad, bd := a.DLQ && a.Ready > 0, b.DLQ && b.Ready > 0; ad != bd {
			return ad
		}
		if a.CountsUnknown != b.CountsUnknown {
			return b.CountsUnknown
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
		LiveURL: c.Request().URL.RequestURI(), Refresh: refreshSeconds(h.snapshots),
		Broker: b.Name(), Vhost: q.Vhost, Name: q.Name, Row: toQueueRow(q), Total: q.Total, SampledAt: snap.At,
		SampleError: sampleNote(snap.Error, snap.Freshness), Range: rangeLabel, Settings: queueSettings(q), SingleActive: q.SingleActiveConsumer,
		OperatorPolicy: q.OperatorPolicy}
	if snap.StatsDisabled() {
		page.StatsNotice = rabbitmodel.StatsDisabledNotice
	}
	page.BrowseRefused, page.BrowseCost = browseCost(c.Request().Context(), b, q.Queue)
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

// MessagesPage: GET /rabbitmq/:broker/queues/:vhost/:queue/messages?limit=&reason=&exception=&group= —
// the dead-letter queue browser. A refused browse renders the page with the reason and a 409; a
// broker that cannot be reached renders it with the error.
func (h *Rabbit) MessagesPage(c echo.Context) error {
	b, limit, err := h.browsed(c)
	if err != nil {
		return err
	}
	vhost, queue := pathParam(c, "vhost"), pathParam(c, "queue")
	page := rabbitpages.MessagesPage{Meta: h.brokerMeta(c, "Messages in "+queue, b.Name(),
		layout.Crumb{Label: queueCrumb(vhost, queue), Href: paths.Queue(b.Name(), vhost, queue)}, layout.Crumb{Label: "messages"}),
		Broker: b.Name(), Vhost: vhost, Queue: queue, Limit: limit, Reason: c.QueryParam("reason"), Exception: c.QueryParam("exception"),
		Group: c.QueryParam("group")}
	red, err := redactionFor(c, h.redact, fmt.Sprintf("rabbitmq/%s/%s/%s", b.Name(), vhost, queue))
	if err != nil {
		return err
	}
	page.CanReveal = red != nil && ActorOf(c).Can(access.Admin)
	page.Revealed, _ = queryBool(c, "reveal") // redactionFor refused a reveal it did not grant
	if page.Filter = strings.TrimSpace(c.QueryParam("filter")); page.Filter != "" {
		page.ScanURL = paths.WithQuery(paths.APIQueueMessages(b.Name(), vhost, queue), url.Values{"filter": {page.Filter}, "limit": {"500"}})
		if h.exports.CanExport(c) {
			page.ExportURL = paths.WithQuery(paths.APIQueueExport(b.Name(), vhost, queue), url.Values{"filter": {page.Filter}, "format": {"ndjson"}})
		}
	}
	res, err := b.Browse(c.Request().Context(), vhost, queue, limit)
	switch {
	case errors.Is(err, ops.ErrConflict):
		page.Refused = shown(c, err)
		return render(c, http.StatusConflict, rabbitpages.Messages(page))
	case errors.Is(err, ops.ErrUnavailable):
		page.Error = shown(c, err)
		return render(c, http.StatusOK, rabbitpages.Messages(page))
	case err != nil:
		return err
	}
	page.Type, page.Ready, page.Consumers, page.Redelivered, page.Notes = res.Type, res.Ready, res.Consumers, res.Redelivered, res.Notes
	if res.Type == rabbitmodel.TypeStream {
		page.NoPlan = rabbitmodel.StreamNotASource // the engine refuses such a plan: no button that leads to that
	}
	page.Unacked, page.Complete = res.Unacked, res.Complete
	page.Read = len(res.Messages)
	page.Kept = res.Kept
	sampled := h.sampledQueue(c, b.Name(), vhost, queue)
	// The browse's unacked count (and a stream's ready count) come from the management API's
	// statistics, as the sample's do: not known when the sample has none.
	page.CountsUnknown, page.StatsNote = sampled.CountsUnreported, sampled.StatsNote()
	if res.DeliveryLimit != nil {
		page.DeliveryLimit, page.DeliveryLimitFrom = strconv.FormatInt(*res.DeliveryLimit, 10), res.DeliveryLimitFrom
		// The notes say what this browse cost; the page adds how to make browsing free, which the
		// queue's policy decides (a new policy would not apply beside it).
		page.BrowseFix = rabbitmodel.UnlimitFix(sampled)
	}
	reasons := map[string]bool{}
	shown, masked := red.Messages(res.Messages)
	groupNotes, messageNotes := h.queueNotes(c.Request().Context(), b.Name(), vhost, queue)
	for _, g := range rabbitmodel.ErrorGroups(masked) {
		row := rabbitpages.GroupRow{Reason: g.Reason, Key: g.Key, ExceptionMessage: payload.Clip(g.ExceptionMessage, maxSampleMessage),
			Count: g.Count, FirstAt: g.FirstAt,
			LastAt: g.LastAt, OriginalQueues: strings.Join(g.OriginalQueues, ", "),
			Notes: groupNotes[triage.GroupKey{Type: g.Reason, Cause: g.Key}]}
		if class := ops.ErrorGroupClass(g.Key); len(row.Notes) == 0 && class != g.Key {
			row.Notes = groupNotes[triage.GroupKey{Type: g.Reason, Cause: class}] // written before groups had fingerprints
		}
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
	keep := messageFilter(page.Reason, page.Exception, page.Group)
	copies := h.replayedCopies(c, b, res)
	page.ReplayedCopies = len(copies)
	for i, m := range masked { // filtered on what the reader may see
		if keep(m) {
			v := toMessageView(shown[i])
			if page.NoPlan != "" {
				v.ReplayTo, v.CannotReplay = "—", "a stream is no replay source"
			}
			v.Notes = messageNotes[res.Messages[i].MessageID]
			v.ReplayedBy = copies[i]
			page.Messages = append(page.Messages, v)
		}
	}
	return render(c, http.StatusOK, rabbitpages.Messages(page))
}
