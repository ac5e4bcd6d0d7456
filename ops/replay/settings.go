package replay

import (
	"time"

	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/source"
)

// Settings limit guarded replays (the configuration's replay section; cmd/console converts it).
// A zero field takes the default New gives it.
type Settings struct {
	MaxReplaysPerMessage int // default 3
	DefaultRatePerSecond int // default 200
	// OperatorMaxMessages is the largest job (messages to publish) an operator may start; larger
	// ones need an admin. 0 sets no limit.
	OperatorMaxMessages int
	// FourEyes, when enabled, holds a job above its threshold, or any forced one, as
	// awaiting_approval until a second, different operator or admin approves it.
	FourEyes foureyes.Settings
	// StripHeaders are the prefixes (any case) of the dead-letter headers a replay drops: the
	// failed attempt's exception story. Nil means DefaultStripHeaders; an empty list keeps them
	// all. Redrive's own x-redrive-* headers are always written anew, and RabbitMQ's x-death
	// always dropped.
	StripHeaders []string
	// AllowedDestinations are where a plan may redirect messages instead of their original
	// destination; empty allows no redirect.
	AllowedDestinations []AllowedDestination
	// PlanWait is how long a plan request waits for its plan before it answers with the plan
	// still planning; 0 answers at once.
	PlanWait time.Duration
}

// AllowedDestination is one destination a replay may be redirected to: each field but Kind is a
// glob (path.Match: *, ?, [...]) the destination's must match; an empty field matches any value.
type AllowedDestination struct {
	Kind       source.Kind // source.Kafka or source.RabbitMQ
	Cluster    string
	Topic      string
	Broker     string
	Vhost      string
	Exchange   string
	RoutingKey string
}

// OutboxRelay is where an outbox's relay publishes (outboxes[].relay_to): a Kafka topic on a
// cluster, or a RabbitMQ queue on a broker's vhost ("" is "/"). The consumer reading there guards
// a replay of the outbox's events.
type OutboxRelay struct {
	Cluster string
	Topic   string
	Broker  string
	Vhost   string
	Queue   string
}

// DefaultStripHeaders are the exception headers of Spring Kafka's DLT, @RetryableTopic and Spring
// Cloud Stream: what a replay drops when Settings.StripHeaders is nil.
var DefaultStripHeaders = []string{"kafka_dlt-exception", "kafka_exception-", "x-exception-"}
