package handlers

import (
	"time"

	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/redact"
)

// rabbitQueueJSON is one queue in the API. dead_letter_exchange is "" both without a dead-letter
// exchange and for the default exchange; has_dead_letter_exchange tells them apart. Counts the
// broker did not report (statistics disabled, or not yet reported) are null, never 0, and
// stats_not_reported says why.
type rabbitQueueJSON struct {
	Vhost            string   `json:"vhost"`
	Name             string   `json:"name"`
	Type             string   `json:"type"`
	State            string   `json:"state"`
	Ready            *int64   `json:"ready"`
	Unacked          *int64   `json:"unacked"`
	Total            *int64   `json:"total"`
	Consumers        *int64   `json:"consumers"`
	PublishRate      *float64 `json:"publish_rate"`
	DeliverRate      *float64 `json:"deliver_rate"`
	AckRate          *float64 `json:"ack_rate"`
	RedeliverRate    *float64 `json:"redeliver_rate"`
	InflowRate       *float64 `json:"inflow_rate"` // queues.Queue.Inflow: counts dead-lettering, which publish_rate does not
	StatsNotReported string   `json:"stats_not_reported,omitempty"`
	// DeadLetterHeld is a quorum queue's messages held for at-least-once dead-lettering
	// (messages_dlx); DeadLetterStrategy how it dead-letters as RabbitMQ applies it.
	DeadLetterHeld        *int64 `json:"dead_letter_held,omitempty"`
	DeadLetterStrategy    string `json:"dead_letter_strategy,omitempty"`
	Exclusive             bool   `json:"exclusive"`
	DeadLetterExchange    string `json:"dead_letter_exchange"`
	DeadLetterRoutingKey  string `json:"dead_letter_routing_key"`
	HasDeadLetterExchange bool   `json:"has_dead_letter_exchange"`
	DeadLetterSource      string `json:"dead_letter_source"` // argument, policy or ""
	IsDeadLetterQueue     bool   `json:"is_dead_letter_queue"`
	IsRetryQueue          bool   `json:"is_retry_queue"`
	MessageTTL            *int64 `json:"message_ttl"` // milliseconds
	DeliveryLimit         *int64 `json:"delivery_limit"`
	MaxLength             *int64 `json:"max_length"`
	Overflow              string `json:"overflow"`
	SingleActiveConsumer  bool   `json:"single_active_consumer"`
	Policy                string `json:"policy"`
	OperatorPolicy        string `json:"operator_policy"`
	Growing               bool   `json:"growing"`
	Growth                string `json:"growth,omitempty"`
	// HoldingSince is queues.Queue.HeldSince: a dead-letter queue's messages, since the first
	// sample that found them after one that found it empty; null when unknown or empty.
	HoldingSince *time.Time `json:"holding_since"`
}

func toRabbitQueueJSON(q queues.Queue) rabbitQueueJSON {
	j := rabbitQueueJSON{Vhost: q.Vhost, Name: q.Name, Type: q.Type, State: q.State, StatsNotReported: q.StatsNote(),
		DeadLetterStrategy: q.DeadLetterStrategy, Exclusive: q.Exclusive, DeadLetterExchange: q.DeadLetterExchange, DeadLetterRoutingKey: q.DeadLetterRoutingKey,
		HasDeadLetterExchange: q.HasDeadLetterExchange, DeadLetterSource: q.DeadLetterSource,
		IsDeadLetterQueue: q.IsDeadLetterQueue, IsRetryQueue: q.Retry, MessageTTL: q.MessageTTL,
		DeliveryLimit: q.DeliveryLimit, MaxLength: q.MaxLength, Overflow: q.Overflow,
		SingleActiveConsumer: q.SingleActiveConsumer, Policy: q.Policy, OperatorPolicy: q.OperatorPolicy,
		Growing: q.Growing, Growth: q.Growth, HoldingSince: knownUTC(q.HeldSince)}
	if !q.CountsUnreported {
		j.Ready, j.Unacked, j.Total = new(q.Ready), new(q.Unacked), new(q.Total)
		if q.DeadLetterHeld > 0 {
			j.DeadLetterHeld = new(q.DeadLetterHeld)
		}
	}
	if !q.ConsumersUnreported {
		j.Consumers, j.PublishRate, j.DeliverRate = new(q.Consumers), new(q.PublishRate), new(q.DeliverRate)
		j.AckRate, j.RedeliverRate = new(q.AckRate), new(q.RedeliverRate)
	}
	if !q.CountsUnreported && !q.ConsumersUnreported { // the inflow counts both (queues.Queue.Inflow)
		j.InflowRate = new(q.Inflow)
	}
	return j
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

// queueHistoryJSON is a queue's history, oldest point first.
type queueHistoryJSON struct {
	Points []queuePointJSON `json:"points"`
}

// amqpPropertiesJSON is a message's properties as the API gives them.
type amqpPropertiesJSON = rabbitmodel.PropertiesJSON

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
	// ReplayedBy is the job whose ledger holds this dead letter already (browse only): a copy the
	// broker returned after it lost the job's ack, which a plan of the queue drops.
	ReplayedBy string `json:"replayed_by,omitempty"`
}

// bodyJSON is a body as the API gives it: empty, json, text or base64 (payload.Encode).
func bodyJSON(b []byte) (string, string) { return payload.Encode(b) }

func toRabbitMessageJSON(m redact.Message) rabbitMessageJSON {
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
	Key              string     `json:"key"`               // ops.ErrorGroupKey: what ?group= and a plan's exception_type select
	ExceptionMessage string     `json:"exception_message"` // the first message's, an example
	Count            int        `json:"count"`
	FirstAt          *time.Time `json:"first_at"`
	LastAt           *time.Time `json:"last_at"`
	OriginalQueues   []string   `json:"original_queues"`
	Positions        []int      `json:"positions"`
}

// browseJSON is a browse of a queue's head: the messages read, their error groups and what may
// be missing.
type browseJSON struct {
	Broker      string   `json:"broker"`
	Vhost       string   `json:"vhost"`
	Queue       string   `json:"queue"`
	Type        string   `json:"type"`
	Ready       int64    `json:"ready"`
	Consumers   int64    `json:"consumers"`
	Unacked     int64    `json:"unacked"`  // held by others, not shown
	Complete    bool     `json:"complete"` // false: the list may miss messages (see notes)
	Read        int      `json:"read"`
	Redelivered bool     `json:"redelivered"`
	Notes       []string `json:"notes"`
	// DeliveryLimit is the quorum queue's delivery limit this browse counted against (null: none
	// applies), DeliveryLimitFrom where it comes from; Kept how many of the messages read had too
	// few deliveries left to go back and were moved to Redrive's archive.
	DeliveryLimit     *int64               `json:"delivery_limit"`
	DeliveryLimitFrom string               `json:"delivery_limit_from"`
	Kept              int                  `json:"kept"`
	Messages          []browsedMessageJSON `json:"messages"`
	ErrorGroups       []errorGroupJSON     `json:"error_groups"`
}

// browsedMessageJSON is a message as a browse read it: with its delivery count and what its
// queue's delivery limit leaves it.
type browsedMessageJSON struct {
	rabbitMessageJSON
	// DeliveryCount is how many deliveries the queue had counted for it before this browse (a
	// quorum queue's x-delivery-count; 0 elsewhere).
	DeliveryCount int64 `json:"delivery_count"`
	// DeliveriesLeft is how many more returns the queue's delivery limit allows it after this
	// browse's; null when the queue has no limit.
	DeliveriesLeft *int64 `json:"deliveries_left"`
	// Kept: too few deliveries were left to return it; it was moved to Redrive's archive and is no
	// longer in the queue.
	Kept bool `json:"kept"`
}

func toBrowsedMessageJSON(m redact.Message) browsedMessageJSON {
	j := browsedMessageJSON{rabbitMessageJSON: toRabbitMessageJSON(m), DeliveryCount: m.DeliveryCount, Kept: m.Kept}
	if m.DeliveriesLeft >= 0 {
		left := m.DeliveriesLeft
		j.DeliveriesLeft = &left
	}
	return j
}
