package rabbitmodel

// Queue types as the management API reports them.
const (
	TypeClassic = "classic"
	TypeQuorum  = "quorum"
	TypeStream  = "stream"
)

// Where a queue's effective dead-letter exchange came from (Queue.DeadLetterSource).
const (
	SourceArgument = "argument" // the x-dead-letter-exchange queue argument
	SourcePolicy   = "policy"   // the dead-letter-exchange key of the applied (operator) policy
)

// Queue is one queue with its depth, rates and effective dead-letter settings.
//
// The effective settings follow what RabbitMQ itself applies when a queue argument and a
// policy (the merged policy and operator policy the management API reports as
// effective_policy_definition) both set a key:
//   - dead-letter-exchange, dead-letter-routing-key: the argument wins (classic and quorum queues);
//   - message-ttl, max-length: the smaller value wins;
//   - delivery-limit: the smaller value wins; on 4.x a -1 on either side unlimits, and a quorum
//     queue nobody limited has 4.x's default of 20 (see quorumRules);
//   - overflow: the argument wins on classic queues, the policy on quorum queues.
//
// Stream queues do not dead-letter: their dead-letter settings are left empty whatever is set.
//
// Which policy applies is the broker's answer, not recomputed here. Two RabbitMQ 3.10 behaviours
// show through: a policy holding a key the queue type does not support (delivery-limit for a
// classic queue, ha-mode for a quorum queue) is not applied to that queue at all; and the
// management API reports a quorum queue's policy from statistics the queue emits every 5 s, so a
// policy change shows on quorum queues up to 5 s late (Browse does not rely on it; see Browse).
type Queue struct {
	Vhost string
	Name  string
	Type  string // TypeClassic, TypeQuorum or TypeStream
	State string // running, idle, flow, down, …; empty before the broker reported stats
	// Ready, Unacked and Total (and DeadLetterHeld, ReadyReturned) are 0 meaning "not known" when
	// CountsUnreported is set; Consumers and the rates when ConsumersUnreported is.
	Ready     int64
	Unacked   int64
	Total     int64
	Consumers int64
	// CountsUnreported is set when the management API's answer had no message counts for the
	// queue: its statistics are disabled (StatsDisabled), or it has not reported them yet — a
	// queue reports every 5 s, so a new queue has none for a few seconds, and neither have a
	// node's quorum queues for about 6 s after it restarts. ConsumersUnreported: no consumer
	// count (and so no rates): alike, or with management.enable_queue_totals, which keeps the
	// counts and drops the rest. See StatsNote.
	CountsUnreported    bool
	ConsumersUnreported bool
	// StatsDisabled: the broker reports no queue statistics at all (/api/overview's
	// disable_stats: management.disable_stats, or management_agent.disable_metrics_collector, which
	// RabbitMQ 4.x advises for monitoring with Prometheus only). Set only with one of the above.
	StatsDisabled bool
	// Rates in messages per second over the management sampling window: published into the queue,
	// delivered out of it (consumers and basic.get, with or without ack), acknowledged, redelivered.
	PublishRate   float64
	DeliverRate   float64
	AckRate       float64
	RedeliverRate float64

	DeadLetterExchange   string // "" with HasDeadLetterExchange set is the default exchange
	DeadLetterRoutingKey string // empty: dead letters keep their own routing keys
	// HasDeadLetterExchange is true when a dead-letter exchange is configured at all (the default
	// exchange's name is the empty string, so DeadLetterExchange alone cannot say).
	HasDeadLetterExchange bool
	DeadLetterSource      string // SourceArgument or SourcePolicy; empty without a dead-letter exchange
	MessageTTL            *int64 // milliseconds; nil when none
	// DeliveryLimit is a quorum queue's effective delivery limit: the management API's figure on
	// RabbitMQ 4.x (which counts the default 20 nobody set), else the argument and policy as the
	// broker's series combines them (quorumRules). Nil: unlimited, or not a quorum queue.
	DeliveryLimit *int64
	// ReadyReturned is how many ready messages of a quorum queue on 4.x were returned and are
	// delivered before the others (the management API's messages_ready_returned; 0 elsewhere).
	ReadyReturned int64
	// AutoDelete: RabbitMQ deletes the queue, with its messages, when its last consumer goes.
	AutoDelete bool
	// Exclusive: the queue belongs to the connection that declared it. No other connection may
	// consume from it (RESOURCE_LOCKED), and RabbitMQ deletes it, with its messages, when that
	// connection closes.
	Exclusive bool
	// DeadLetterStrategy is how a quorum queue dead-letters, as RabbitMQ applies it:
	// StrategyAtLeastOnce, or StrategyAtMostOnce (also when at-least-once is asked for without the
	// overflow reject-publish it needs: RabbitMQ then falls back to at-most-once). Empty without a
	// dead-letter exchange and for other queue types (always at most once).
	DeadLetterStrategy string
	// DeadLetterAsked is the dead-letter-strategy the argument or policy asks for ("" when none).
	DeadLetterAsked string
	// DeadLetterHeld is how many of a quorum queue's messages (counted in Total, not in Ready or
	// Unacked) are dead letters it keeps until a target queue confirms them: with at-least-once
	// dead-lettering, until its dead-letter exchange routes them somewhere (the management API's
	// messages_dlx). They count toward max-length.
	DeadLetterHeld       int64
	MaxLength            *int64 // messages; nil when none
	Overflow             string // drop-head, reject-publish, reject-publish-dlx; empty = drop-head
	SingleActiveConsumer bool
	Policy               string // name of the applied policy; empty when none
	OperatorPolicy       string // name of the applied operator policy; empty when none
	// IsDeadLetterQueue is true for a queue whose name matches the configured dead_letter_queues
	// patterns or that receives dead letters. Queues resolves only default-exchange dead-lettering
	// (it makes one API call); Topology resolves exchanges and bindings and is authoritative, and
	// it does not count what a delay queue's expiry returns to the queue it delays for (see
	// IsDelay).
	IsDeadLetterQueue bool
	Arguments         map[string]string // queue arguments, values rendered for display
}

// QueueRef names a queue within the broker.
type QueueRef struct {
	Vhost string
	Name  string
}

// Ref is the queue's QueueRef.
func (q Queue) Ref() QueueRef { return QueueRef{q.Vhost, q.Name} }
