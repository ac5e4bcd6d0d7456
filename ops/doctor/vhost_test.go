package doctor_test

import (
	"context"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/doctor"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
)

// The doctor names a queue or an exchange of the default vhost "/" by its name alone
// (rabbit.VhostName): its checks once read "read //orders.dlq" and "write //orders". The test's
// queues and exchanges live in "/" under names of their own, deleted at cleanup.
func TestRabbitChecksNameTheDefaultVhostOnce(t *testing.T) {
	s := "doc-" + suffix()
	exchange, dlx, work, dlq := s+".x", s+".dlx", s+".work", s+".dlq"
	base, _ := rabbittest.Env(t)
	_, ch := rabbittest.Channel(t, base)
	topo := rabbittest.Topology{TB: t, Ch: ch}
	topo.Exchange(exchange, "direct")
	topo.Exchange(dlx, "fanout")
	topo.Queue(work, amqp.Table{"x-dead-letter-exchange": dlx})
	topo.Queue(dlq, nil)
	topo.Bind(work, "created", exchange)
	topo.Bind(dlq, "", dlx)
	t.Cleanup(func() {
		_, cc := rabbittest.Channel(t, base)
		for _, q := range []string{work, dlq} {
			_, _ = cc.QueueDelete(q, false, false, false)
		}
		for _, x := range []string{exchange, dlx} {
			_ = cc.ExchangeDelete(x, false, false)
		}
	})

	b := rabbittest.Config(t, rabbit.DefaultVhost)
	b.DeadLetterQueues = []string{dlq}
	cfg := baseConfig(t, pgtest.NewDatabase(t))
	cfg.RabbitMQ = []configs.RabbitMQBroker{b}
	rep := doctor.New(cfg, withSystems(doctor.Adapters{})).Run(context.Background())
	expect(t, rep, "rabbitmq/test", "read "+dlq, doctor.OK)
	expect(t, rep, "rabbitmq/test", "write "+exchange, doctor.OK)
	for _, c := range rep.Checks {
		if strings.Contains(c.Name, "//") || strings.Contains(c.Detail, "//"+s) || strings.Contains(c.Fix, "//"+s) {
			t.Errorf("%s %q: %s (fix %q)", c.Target, c.Name, c.Detail, c.Fix)
		}
	}
}
