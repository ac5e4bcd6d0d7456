package rabbitmodel

// Dead-letter strategies of a quorum queue (Queue.DeadLetterStrategy).
const (
	StrategyAtMostOnce  = "at-most-once"
	StrategyAtLeastOnce = "at-least-once"
)

// StatsDisabledNotice is what a page says once, above a broker's queues, when the broker reports
// no queue statistics (Queue.StatsDisabled), and what to do about it.
const StatsDisabledNotice = "This broker's management API reports no queue statistics " +
	"(management.disable_stats, or management_agent.disable_metrics_collector for Prometheus-only " +
	"monitoring): message counts, consumers and rates are not known, so Redrive counts no growth and no " +
	"lost dead letters. To see them here, remove that setting, or set management.enable_queue_totals = true " +
	"to have the message counts reported."

// StatsNote says why the queue's numbers are not known, for the place a page shows "—" instead of
// them: "" when its counts and consumers were reported.
func (q Queue) StatsNote() string {
	switch {
	case !q.CountsUnreported && !q.ConsumersUnreported:
		return ""
	case q.StatsDisabled && !q.CountsUnreported:
		return "consumers and rates not reported: the broker's statistics are disabled (only the queue totals are on)"
	case q.StatsDisabled:
		return "not reported: the broker's statistics are disabled"
	}
	return "not reported yet: a queue reports its statistics every 5 s (a new queue, or a node that restarted a moment ago)"
}

// IsDelay reports whether the queue's dead-lettering is a delay: it has a message TTL (the
// x-message-ttl argument or a message-ttl policy) and a dead-letter exchange, and nothing takes
// messages from it (no consumers, nothing delivered), so what it dead-letters is what expired
// there — a delay or retry queue returning messages to the queue it delays for, not messages
// that failed. A queue whose consumers are not known (ConsumersUnreported) is not taken for one.
// Topology does not count such a queue's dead letters as making their target a dead-letter queue,
// unless the queue is itself a dead-letter queue (expiring dead letters stay dead letters).
func (q Queue) IsDelay() bool {
	return q.HasDeadLetterExchange && q.MessageTTL != nil && q.Type != TypeStream &&
		!q.ConsumersUnreported && q.Consumers == 0 && q.DeliverRate == 0
}
