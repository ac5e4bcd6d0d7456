package doctor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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

// TestQuorumDLQLimits: doctor warns about every quorum dead-letter queue with a finite delivery
// limit — on RabbitMQ 4.x a plain quorum DLQ too (its default of 20), on 3.x one whose argument is
// -1 (which 3.10 takes as a limit of 0) — with the policy that lifts it; on 4.x a DLQ with
// delivery-limit -1 is not named, and once the fix's policy is applied the warning goes. The limits are cross-checked with the management API's own figure.
func TestQuorumDLQLimits(t *testing.T) {
	vhost, amqpURL, mgmt := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	top := rabbittest.Topology{TB: t, Ch: ch}
	top.Queue("plain.dlq", amqp.Table{"x-queue-type": "quorum"})
	top.Queue("lim.dlq", amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(5)})
	top.Queue("free.dlq", amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(-1)})
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
	run := func() doctor.Report {
		rep := doctor.New(cfg, withSystems(doctor.Adapters{})).Run(context.Background())
		t.Log("\n" + text(rep))
		return rep
	}
	name := func(q string) string { return "delivery limit " + rabbit.QueueRef{Vhost: vhost, Name: q}.String() }
	has := func(rep doctor.Report, q string) bool {
		for _, c := range rep.Checks {
			if c.Name == name(q) {
				return true
			}
		}
		return false
	}
	rep := run()
	// An argument's limit: no policy lifts it (4.0 keeps argument 5 against a policy's -1).
	if c := expect(t, rep, "rabbitmq/test", name("lim.dlq"), doctor.Warning, "x-delivery-limit", "shovel"); strings.Contains(c.Fix, "set_policy") {
		t.Errorf("lim.dlq: the fix sets a policy, which cannot lift an argument's limit: %s", c.Fix)
	}
	// -1 unlimits on 4.x; 3.10 accepts it as an argument and drops at the first return (a limit of 0).
	if v.Major >= 4 && has(rep, "free.dlq") {
		t.Errorf("4.x: free.dlq (delivery-limit -1) was named")
	} else if v.Major < 4 {
		expect(t, rep, "rabbitmq/test", name("free.dlq"), doctor.Warning, "delivery-limit")
	}
	if v.Major >= 4 {
		c := expect(t, rep, "rabbitmq/test", name("plain.dlq"), doctor.Warning, "--apply-to quorum_queues")
		if !strings.Contains(c.Detail, "delivery limit of 20") {
			t.Errorf("4.x plain quorum DLQ: %q, want the default limit of 20 named", c.Detail)
		}
		// The management API says the same, once the queue has reported its statistics.
		rabbittest.WaitFor(t, 20*time.Second, "the management API's delivery_limit of plain.dlq", func(ctx context.Context) bool {
			var q struct {
				DeliveryLimit json.RawMessage `json:"delivery_limit"`
			}
			return mgmtGet(ctx, t, "/api/queues/"+url.PathEscape(vhost)+"/plain.dlq", &q) == nil && string(q.DeliveryLimit) == "20"
		})
		// Apply the fix's policy: the warning goes.
		if _, err := mgmt.PutPolicy(vhost, "dlq-unlimited", rabbithole.Policy{Pattern: `^plain\.dlq$`, ApplyTo: "quorum_queues",
			Priority: 10, Definition: rabbithole.PolicyDefinition{"delivery-limit": -1}}); err != nil {
			t.Fatal(err)
		}
		rabbittest.WaitFor(t, 20*time.Second, "the policy to lift plain.dlq's limit", func(ctx context.Context) bool {
			qs, err := b.Queues(ctx)
			for _, q := range qs {
				if q.Name == "plain.dlq" {
					return err == nil && q.DeliveryLimit == nil
				}
			}
			return false
		})
		if rep := run(); has(rep, "plain.dlq") {
			t.Errorf("plain.dlq still named after its limit was lifted")
		}
	} else if has(rep, "plain.dlq") {
		t.Errorf("3.x: plain.dlq has no delivery limit, yet was named")
	}
}

// mgmtGet reads path from the test broker's management API as its administrator, into out.
func mgmtGet(ctx context.Context, t *testing.T, path string, out any) error {
	amqpURL, mgmtURL := rabbittest.Env(t)
	u, err := amqp.ParseURI(amqpURL)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, mgmtURL+path, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(u.Username, u.Password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
