package main

import (
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/source"
	"github.com/redrive/redrive/ops/trace"
)

// The domain receives its settings as its own types: each function below converts one section of
// the configuration, which configs has checked and given its defaults, to the type of the package
// that uses it. Where the two have the same fields, Go's struct conversion does it, so that a
// field added on one side and not the other fails the build. Nothing outside configs, cmd/, web,
// handlers, ops/doctor and the adapters reads configs (ops/architecture_test.go holds the line).

// messageIDRules are message_id: how a message's idempotency key is found.
func messageIDRules(c configs.MessageIDRules) ops.MessageIDRules {
	return ops.MessageIDRules(c)
}

// lagRules are one Kafka cluster's status thresholds (kafka[].lag).
func lagRules(c configs.LagRules) lag.Rules {
	return lag.Rules{Window: c.Window.D(), StopAfter: c.StopAfter.D(), WarnMinLag: c.WarnMinLag,
		WarnAfter: seconds(c.WarnAfterSeconds), ErrorAfter: seconds(c.ErrorAfterSeconds)}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// fourEyes is replay.four_eyes, the one two-person rule of every staged action.
func fourEyes(c configs.FourEyes) foureyes.Settings {
	return foureyes.Settings{Enabled: c.Enabled, Threshold: int64(c.Threshold), Window: c.Window.D()}
}

// consumers are consumers[]: who reads which topic or queue.
func consumers(cs []configs.Consumer) []ops.Consumer {
	out := make([]ops.Consumer, 0, len(cs))
	for _, c := range cs {
		oc := ops.Consumer{Name: c.Name}
		if k := c.Kafka; k != nil {
			ck := ops.ConsumerKafka(*k)
			oc.Kafka = &ck
		}
		if r := c.RabbitMQ; r != nil {
			cr := ops.ConsumerRabbit(*r)
			oc.RabbitMQ = &cr
		}
		out = append(out, oc)
	}
	return out
}

// replaySettings are the replay section but its lease (replay.Options.Lease).
func replaySettings(c configs.Replay) replay.Settings {
	s := replay.Settings{MaxReplaysPerMessage: c.MaxReplaysPerMessage, DefaultRatePerSecond: c.DefaultRatePerSecond,
		OperatorMaxMessages: c.OperatorMaxMessages, FourEyes: fourEyes(c.FourEyes), StripHeaders: c.StripHeaders,
		PlanWait: c.PlanWait.D()}
	for _, a := range c.AllowedDestinations {
		s.AllowedDestinations = append(s.AllowedDestinations, replay.AllowedDestination{Kind: source.Kind(a.Kind),
			Cluster: a.Cluster, Topic: a.Topic, Broker: a.Broker, Vhost: a.Vhost, Exchange: a.Exchange, RoutingKey: a.RoutingKey})
	}
	return s
}

// outboxRelays are the outboxes' relay_to by outbox name; an outbox without one is left out.
func outboxRelays(outboxes []configs.Outbox) map[string]replay.OutboxRelay {
	out := map[string]replay.OutboxRelay{}
	for _, o := range outboxes {
		if r := o.RelayTo; r != nil {
			out[o.Name] = replay.OutboxRelay(*r)
		}
	}
	return out
}

// traceBudget is what one trace's look-up may read: a content search's (search.max_scan records,
// search.timeout), within a third of request_timeout since a trace's Kafka reads wait for its
// outbox look-up.
func traceBudget(c *configs.Config) trace.Budget {
	b := trace.Budget{Records: c.Search.MaxScan, Time: c.Search.Timeout.D()}
	if rt := c.RequestTimeout.D(); rt > 0 && (b.Time <= 0 || b.Time > rt/3) {
		b.Time = rt / 3
	}
	return b
}
