package handlers

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/layout"
	rabbitpages "github.com/redrive/redrive/views/pages/rabbitmq"
)

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

func toQueueRow(q queues.Queue) rabbitpages.QueueRow {
	r := rabbitpages.QueueRow{Vhost: q.Vhost, Name: q.Name, Type: q.Type, State: q.State, Ready: q.Ready, Unacked: q.Unacked,
		Consumers: q.Consumers, PublishRate: q.PublishRate, DeliverRate: q.DeliverRate, AckRate: q.AckRate,
		RedeliverRate: q.RedeliverRate, Inflow: q.Inflow, DLQ: q.IsDeadLetterQueue, Retry: q.Retry, Growing: q.Growing, Growth: q.Growth,
		Policy: q.Policy, CountsUnknown: q.CountsUnreported, ConsumersUnknown: q.ConsumersUnreported, StatsNote: q.StatsNote(),
		DeadLetterHeld: q.DeadLetterHeld, DeadLetterStrategy: q.DeadLetterStrategy, DeadLetterFallback: deadLetterFallback(q.Queue)}
	r.NotBrowsable, r.NotBrowsableWhy = notBrowsable(q.Queue)
	if c := q.LastCounted; q.CountsUnreported && !c.At.IsZero() {
		r.LastCounted = &rabbitpages.Counted{Ready: c.Ready, Unacked: c.Unacked, Ago: max(time.Since(c.At), time.Second)}
	}
	if !q.HeldSince.IsZero() {
		r.HeldFor = max(time.Since(q.HeldSince), time.Second) // known: never shown as unknown
	}
	if q.HasDeadLetterExchange {
		r.DeadLetterTo = exchangeLabel(q.DeadLetterExchange)
		if q.DeadLetterRoutingKey != "" {
			r.DeadLetterTo += " → " + q.DeadLetterRoutingKey
		}
	}
	return r
}

// deadLetterFallback says why a quorum queue dead-letters otherwise than its dead-letter-strategy
// asks ("" when it does as asked): at-least-once needs overflow reject-publish, without which
// RabbitMQ dead-letters at most once.
func deadLetterFallback(q rabbitmodel.Queue) string {
	if q.DeadLetterAsked == "" || q.DeadLetterStrategy == "" || q.DeadLetterAsked == q.DeadLetterStrategy {
		return ""
	}
	if q.DeadLetterAsked == rabbitmodel.StrategyAtLeastOnce {
		overflow := q.Overflow
		if overflow == "" {
			overflow = "drop-head (the default)"
		}
		return "Asks for at-least-once dead-lettering, but RabbitMQ fell back to at-most-once: at-least-once needs " +
			"overflow reject-publish, and this queue's overflow is " + overflow + ". Dead letters that no queue takes " +
			"are dropped. Set overflow reject-publish (argument x-overflow or policy overflow) to have them kept until one does."
	}
	return "Asks for dead-letter-strategy " + q.DeadLetterAsked + "; RabbitMQ dead-letters " + q.DeadLetterStrategy + "."
}

func toEdgeRow(e rabbitmodel.Edge, loops []rabbitmodel.RetryLoop) rabbitpages.EdgeRow {
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

func msText(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String() + " (" + strconv.FormatInt(ms, 10) + " ms)"
}

// settingSource says where an effective setting comes from: the queue argument, the policy, or
// both (RabbitMQ then applies the rule of rabbitmodel.Queue).
func settingSource(q queues.Queue, arg string, both string) string {
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

func queueSettings(q queues.Queue) []rabbitpages.Setting {
	var out []rabbitpages.Setting
	if q.HasDeadLetterExchange {
		src := "argument x-dead-letter-exchange"
		if q.DeadLetterSource == rabbitmodel.SourcePolicy {
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
	if q.DeadLetterStrategy != "" {
		src := "default: no dead-letter-strategy set"
		if _, ok := q.Arguments["x-dead-letter-strategy"]; ok {
			src = "argument x-dead-letter-strategy"
		} else if q.DeadLetterAsked != "" {
			src = "policy"
		}
		if q.DeadLetterAsked != "" && q.DeadLetterAsked != q.DeadLetterStrategy {
			src += " asks for " + q.DeadLetterAsked + "; RabbitMQ applies " + q.DeadLetterStrategy
		}
		out = append(out, rabbitpages.Setting{Key: "dead-letter strategy", Value: q.DeadLetterStrategy, Source: src})
	}
	return out
}

// queueCrumb names a queue in the breadcrumbs: its vhost only when it is not the default "/".
func queueCrumb(vhost, queue string) string {
	if vhost == "/" || vhost == "" {
		return queue
	}
	return vhost + " · " + queue
}

// versionWait bounds the version look-up of a page: a broker that does not answer must not hold
// the page, which shows its sampled numbers all the same.
const versionWait = 2 * time.Second

// browseCost is rabbitmodel.BrowseCost for q on b's series: why a browse of q is refused (no browse is
// offered then), or what each browse costs. A version b does not tell in time is taken as 4.x,
// the series on which a limit is never a reason to refuse: a page then warns rather than refuses.
func browseCost(ctx context.Context, b RabbitBroker, q rabbitmodel.Queue) (refusal, warning string) {
	switch {
	case q.AutoDelete:
		return autoDeleteRefusal, "" // the broker refuses the read too (ops/rabbit): no button that leads to that
	case q.Exclusive:
		return exclusiveRefusal, "" // likewise
	}
	if _, arg := q.Arguments["x-delivery-limit"]; q.Type != rabbitmodel.TypeQuorum || q.DeliveryLimit == nil && !arg {
		return "", "" // no version needed: nothing to say
	}
	ctx, cancel := context.WithTimeout(ctx, versionWait)
	defer cancel()
	v, err := b.Version(ctx)
	if err != nil {
		v = rabbitmodel.Version{} // unknown: rabbitmodel.BrowseCost takes it as 4.x
	}
	return rabbitmodel.BrowseCost(q, v)
}

// sampledQueue is the queue as the latest sample has it (its policy and arguments), or only its
// name when the sample does not have it.
func (h *Rabbit) sampledQueue(c echo.Context, broker, vhost, name string) rabbitmodel.Queue {
	if h.snapshots != nil {
		if snap, err := h.snapshots.LatestRabbit(c.Request().Context(), broker); err == nil {
			if q, ok := snap.Queue(vhost, name); ok {
				return q.Queue
			}
		}
	}
	return rabbitmodel.Queue{Vhost: vhost, Name: name}
}

// autoDeleteRefusal says why an auto-delete queue is not browsed: the queue page says it in place
// of the browse button, the queue list beside the queue's name (notBrowsable).
const autoDeleteRefusal = "Not browsable: an auto-delete queue. RabbitMQ deletes it, with its messages, when its last " +
	"consumer goes, and a browse is a consumer that goes: reading it would delete it. Shovel the messages to a durable " +
	"queue that is not auto-delete to look at them."

// exclusiveRefusal says why an exclusive queue is not browsed, as autoDeleteRefusal.
const exclusiveRefusal = "Not browsable: an exclusive queue. It belongs to the connection that declared it: RabbitMQ " +
	"lets no other connection read it, and deletes it, with its messages, when that connection closes. Have its owner " +
	"shovel the messages to a durable queue that is not exclusive to look at them."

// notBrowsable is the queue list's short word for a queue whose browse is refused ("" for one that
// is browsed), with the reason as its tooltip: only what the sample tells, the auto-delete and
// exclusive flags.
func notBrowsable(q rabbitmodel.Queue) (note, why string) {
	switch {
	case q.AutoDelete:
		return "auto-delete: not browsable", "auto-delete: reading would delete it — shovel to a durable queue to inspect"
	case q.Exclusive:
		return "exclusive: not browsable", "exclusive: only the connection that declared it may read it, and it goes with " +
			"that connection — have its owner shovel it to a durable queue to inspect"
	}
	return "", ""
}

// destination is where a replay sends the message: its original exchange and routing keys.
func destination(d *rabbitmodel.DeadLetter) string {
	x, keys := d.OriginalExchange, d.OriginalRoutingKeys
	if x == "" && len(keys) == 0 {
		if d.OriginalQueue == "" {
			return "unknown: no original exchange or routing key in the headers"
		}
		x, keys = "", []string{d.OriginalQueue}
	}
	return "exchange " + exchangeLabel(x) + ", routing key " + strings.Join(keys, ", ")
}

// toMessageView is what one message shows inline, each part cut (handlers/cut.go): the body at
// maxRenderedValue, each header's and property's value at maxRenderedField (an x-exception-stacktrace
// header can be hundreds of kilobytes), the decoded exception message too and its stack trace at
// maxRenderedValue, the rest of the dead-letter story at maxRenderedField; Line is what its row
// shows. The messages API gives the message whole (its body up to rabbitmodel.MaxBodyBytes).
func toMessageView(m redact.Message) rabbitpages.MessageView {
	v := rabbitpages.MessageView{Position: m.Position, MessageID: m.MessageID, Exchange: exchangeLabel(m.Exchange),
		RoutingKey: m.RoutingKey, Redelivered: m.Redelivered, Truncated: m.Truncated, Size: m.Size, Redacted: m.Redacted,
		DeliveryCount: m.DeliveryCount, DeliveriesLeft: m.DeliveriesLeft, Kept: m.Kept}
	if m.Offset != nil {
		v.Offset = strconv.FormatInt(*m.Offset, 10)
	}
	p := m.Properties
	add := func(k, val string) {
		if val != "" {
			v.Properties = append(v.Properties, cutKV(k, val))
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
		v.Headers = append(v.Headers, cutKV(hd.Key, hd.Value))
	}
	v.Body, v.BodyEncoding = payload.Render(m.Body)
	if cut, ok := payload.Cut(v.Body, maxRenderedValue); ok {
		v.Body, v.Truncated = cut, true
	}
	field := func(s string) string { return payload.Clip(s, maxRenderedField) }
	if d := m.DeadLetter; d != nil {
		dv := &rabbitpages.DeadLetterView{Reason: field(d.Reason), Count: d.Count, LastQueue: field(d.LastQueue),
			FirstReason: field(d.FirstReason), OriginalQueue: field(d.OriginalQueue), Destination: field(destination(d)),
			FirstDeathAt: d.FirstDeathAt, ReplayCount: d.ReplayCount, MessageSize: len(d.ExceptionMessage), StacktraceSize: len(d.Stacktrace)}
		dv.ExceptionMessage, dv.MessageCut = payload.Cut(d.ExceptionMessage, maxRenderedField)
		dv.Stacktrace, dv.StacktraceCut = payload.Cut(d.Stacktrace, maxRenderedValue)
		for _, x := range d.Deaths {
			dv.Deaths = append(dv.Deaths, rabbitpages.DeathView{Queue: field(x.Queue), Reason: field(x.Reason), Count: x.Count, Time: x.Time,
				Exchange: field(exchangeLabel(x.Exchange)), RoutingKeys: field(strings.Join(x.RoutingKeys, ", "))})
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
		v.ReplayTo = field(strings.TrimPrefix(destination(d), "exchange "))
	}
	v.Line = messageLine(v)
	return v
}

// cutKV is a header or property for display: its value cut at maxRenderedField, saying so with
// its whole length.
func cutKV(key, value string) rabbitpages.KV {
	kv := rabbitpages.KV{Key: payload.Clip(key, maxRenderedField), Size: len(value)}
	kv.Value, kv.Cut = payload.Cut(value, maxRenderedField)
	return kv
}

// messageLine is what a message's row shows of it (MessageView.Line): a line of each, cut with "…".
func messageLine(v rabbitpages.MessageView) rabbitpages.MessageLine {
	line := func(s string) string { return payload.Clip(s, maxRowText) }
	l := rabbitpages.MessageLine{MessageID: line(v.MessageID), ReplayTo: line(v.ReplayTo)}
	if d := v.DeadLetter; d != nil {
		l.Reason, l.Exception, l.OriginalQueue = line(d.Reason), line(d.ExceptionMessage), line(d.OriginalQueue)
	}
	return l
}
