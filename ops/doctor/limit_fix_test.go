package doctor_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/doctor"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
)

// TestLimitFixKeepsPolicyKeys runs the fixes `console doctor` prints for quorum dead-letter
// queues' delivery limits, as printed (rabbit-hole's PutPolicy with the command's name, pattern,
// priority, apply-to and definition), and checks what RabbitMQ then applies:
//   - settings.dlq's policy dlq-settings holds its dead-letter exchange and a max-length (and on
//     3.x a delivery-limit of 5): after the fix the queue is unlimited and both keys are still in
//     force — RabbitMQ applies one policy to a queue, so a second policy of delivery-limit -1
//     above it would have taken them away;
//   - two.dlq and three.dlq (4.x: the default of 20, no policy): after both fixes both are
//     unlimited — one policy name for both would leave the first at 20;
//   - arg.dlq's limit is its x-delivery-limit argument of 5, under a policy of delivery-limit -1
//     (4.x) that does not lift it: the fix prints no policy (none can lift it) and says what can.
func TestLimitFixKeepsPolicyKeys(t *testing.T) {
	vhost, amqpURL, mgmt := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	top := rabbittest.Topology{TB: t, Ch: ch}
	cfg := baseConfig(t, pgtest.NewDatabase(t))
	rc := rabbittest.Config(t, vhost)
	cfg.RabbitMQ = []configs.RabbitMQBroker{rc}
	b, err := rabbit.New(rc, configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	v, err := b.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v4 := v.Major >= 4
	put := func(name, pattern string, def rabbithole.PolicyDefinition) {
		t.Helper()
		// apply-to queues: 3.10 knows no quorum_queues.
		if _, err := mgmt.PutPolicy(vhost, name, rabbithole.Policy{Pattern: pattern, ApplyTo: "queues", Definition: def}); err != nil {
			t.Fatalf("policy %s: %v", name, err)
		}
	}
	top.Exchange("parking", "fanout")
	settings := rabbithole.PolicyDefinition{"dead-letter-exchange": "parking", "max-length": 1000}
	if !v4 {
		settings["delivery-limit"] = 5
	}
	put("dlq-settings", `^settings\.dlq$`, settings)
	top.Queue("settings.dlq", amqp.Table{"x-queue-type": "quorum"})
	top.Queue("arg.dlq", amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(5)})
	if v4 {
		put("arg-minus", `^arg\.dlq$`, rabbithole.PolicyDefinition{"delivery-limit": -1})
		top.Queue("two.dlq", amqp.Table{"x-queue-type": "quorum"})
		top.Queue("three.dlq", amqp.Table{"x-queue-type": "quorum"})
	}
	limited := []string{"settings.dlq", "two.dlq", "three.dlq"}
	if !v4 {
		limited = limited[:1]
	}
	// The doctor reads the queues' limits from the management API's statistics: wait for them.
	rabbittest.WaitFor(t, 20*time.Second, "the queues' limits as sampled", func(ctx context.Context) bool {
		qs, err := b.Queues(ctx)
		if err != nil {
			return false
		}
		seen := 0
		for _, q := range qs {
			if q.DeliveryLimit != nil && (q.Name == "arg.dlq" && *q.DeliveryLimit == 5 || q.Name == "settings.dlq" && q.Policy == "dlq-settings" ||
				q.Name == "two.dlq" || q.Name == "three.dlq") {
				seen++
			}
		}
		return seen == len(limited)+1
	})
	run := func() doctor.Report {
		rep := doctor.New(cfg, withSystems(doctor.Adapters{})).Run(context.Background())
		t.Log("\n" + text(rep))
		return rep
	}
	name := func(q string) string { return "delivery limit " + rabbit.QueueRef{Vhost: vhost, Name: q}.String() }
	rep := run()

	arg := expect(t, rep, "rabbitmq/test", name("arg.dlq"), doctor.Warning, "x-delivery-limit", "shovel")
	if strings.Contains(arg.Fix, "set_policy") {
		t.Errorf("arg.dlq: the fix sets a policy, which cannot lift an argument's limit: %s", arg.Fix)
	}
	if v4 {
		var q struct {
			DeliveryLimit json.RawMessage `json:"delivery_limit"`
		}
		rabbittest.WaitFor(t, 20*time.Second, "the API's delivery_limit of arg.dlq", func(ctx context.Context) bool {
			return mgmtGet(ctx, t, "/api/queues/"+url.PathEscape(vhost)+"/arg.dlq", &q) == nil && len(q.DeliveryLimit) > 0
		})
		if string(q.DeliveryLimit) != "5" {
			t.Errorf("arg.dlq: the management API says delivery_limit %s under a -1 policy, want 5", q.DeliveryLimit)
		}
	}

	for _, qn := range limited {
		c := expect(t, rep, "rabbitmq/test", name(qn), doctor.Warning)
		cmds := rabbittest.RabbitmqctlCommands(t, c.Fix)
		if len(cmds) == 0 {
			t.Fatalf("%s: the fix prints no command: %s", qn, c.Fix)
		}
		for _, cmd := range cmds {
			if cmd.Verb != "set_policy" {
				t.Fatalf("%s: the fix runs %s", qn, cmd.Verb)
			}
			if _, err := mgmt.PutPolicy(cmd.Vhost, cmd.Name, rabbithole.Policy{Pattern: cmd.Pattern, ApplyTo: cmd.ApplyTo,
				Priority: cmd.Priority, Definition: cmd.Def}); err != nil {
				t.Fatalf("%s: running the fix: %v", qn, err)
			}
		}
	}
	for _, qn := range limited {
		var q struct {
			DeliveryLimit json.RawMessage `json:"delivery_limit"`
			Def           map[string]any  `json:"effective_policy_definition"`
		}
		rabbittest.WaitFor(t, 20*time.Second, qn+"'s policy after the fix", func(ctx context.Context) bool {
			q.DeliveryLimit, q.Def = nil, nil // a decode into a map keeps the keys it had
			if mgmtGet(ctx, t, "/api/queues/"+url.PathEscape(vhost)+"/"+url.PathEscape(qn), &q) != nil {
				return false
			}
			_, limit := q.Def["delivery-limit"]
			if v4 {
				return string(q.DeliveryLimit) == `"unlimited"` && limit
			}
			return !limit && q.Def["dead-letter-exchange"] != nil
		})
		if qn == "settings.dlq" && (q.Def["dead-letter-exchange"] != "parking" || !isNumber(q.Def["max-length"], 1000)) {
			t.Errorf("settings.dlq after the fix: effective policy %v; want its dead-letter exchange and max-length kept", q.Def)
		}
	}
	rep = run()
	for _, c := range rep.Checks {
		for _, qn := range limited {
			if c.Name == name(qn) {
				t.Errorf("%s still named after its fix: %s", qn, c.Detail)
			}
		}
	}
}

func isNumber(v any, n float64) bool {
	f, ok := v.(float64)
	return ok && f == n
}
