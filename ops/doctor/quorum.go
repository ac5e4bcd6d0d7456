package doctor

import (
	"context"
	"fmt"

	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// checkQuorumLimits warns about every quorum dead-letter queue with a finite delivery limit: on
// RabbitMQ 4.x every quorum queue has one (20) unless a policy or argument sets -1, each read by
// the console counts against it, and messages near it are taken into Redrive's archive instead of
// going back (so that RabbitMQ never drops one because someone looked); on 3.x such a queue is not
// browsed at all. The fix (liftLimit) follows what sets the limit: delivery-limit -1 (3.x: no
// delivery-limit) in the policy that applies, printed with its whole definition, or a new policy
// when none does; for an x-delivery-limit argument, which no policy lifts, a queue without it.
func checkQuorumLimits(ctx context.Context, r *recorder, b RabbitBroker, targets []rabbitmodel.DLQTarget) {
	qs, err := b.Queues(ctx)
	if err != nil {
		r.warn("quorum dead-letter queues", "", "not checked: reading the queues failed: %s", short(err))
		return
	}
	v, _ := b.Version(ctx) // unknown: the words below say "RabbitMQ" without a series
	byRef := make(map[rabbitmodel.QueueRef]rabbitmodel.Queue, len(qs))
	for _, q := range qs {
		byRef[q.Ref()] = q
	}
	for _, t := range targets {
		q, ok := byRef[rabbitmodel.QueueRef{Vhost: t.Vhost, Name: t.Queue}]
		if !ok || q.Type != rabbitmodel.TypeQuorum || q.DeliveryLimit == nil {
			continue
		}
		name := "delivery limit " + q.Ref().String()
		fix := liftLimit(ctx, b, q, v)
		if v.Major >= 4 {
			r.warn(name, fix, "quorum dead-letter queue %s has a delivery limit of %d on RabbitMQ %s: every "+
				"browse, plan and search counts a delivery of each message it reads, and messages within 2 of the limit are "+
				"moved to Redrive's archive rather than returned (RabbitMQ would drop them); a consumer's requeues count too",
				q.Ref(), *q.DeliveryLimit, v.Text)
			continue
		}
		r.warn(name, fix, "quorum dead-letter queue %s has a delivery limit of %d%s: the console does not "+
			"browse it, since each read counts a delivery and enough would make RabbitMQ drop its messages",
			q.Ref(), *q.DeliveryLimit, versionSuffix(v))
	}
}

// limitFixer is a broker that works the fix out from the policies in force, definitions and all
// (*rabbit.Broker's LimitFix); RabbitBroker does not promise it.
type limitFixer interface {
	LimitFix(ctx context.Context, q rabbitmodel.Queue) (string, error)
}

// liftLimit is how to lift quorum queue q's delivery limit on b: LimitFix's where b has it and its
// management API answers; else from q as sampled, which names the policy to change without
// printing its definition (a command printing only delivery-limit would replace the policy's other
// keys).
func liftLimit(ctx context.Context, b RabbitBroker, q rabbitmodel.Queue, v rabbitmodel.Version) string {
	if f, ok := b.(limitFixer); ok {
		if fix, err := f.LimitFix(ctx, q); err == nil {
			return fix
		}
	}
	return rabbitmodel.LiftLimit(q, v, rabbitmodel.LimitSetting{})
}

func versionSuffix(v rabbitmodel.Version) string {
	if v.Text == "" {
		return ""
	}
	return fmt.Sprintf(" on RabbitMQ %s", v.Text)
}
