package rabbit

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/rabbittest"
)

// apiDeliveryLimit is the management API's own delivery_limit of queue ("20", "unlimited"; "" when
// not reported) and the policy it says applies.
func (e *env) apiDeliveryLimit(ctx context.Context, queue string) (limit, policy string) {
	var q struct {
		DeliveryLimit json.RawMessage `json:"delivery_limit"`
		Policy        *string         `json:"policy"`
	}
	if err := e.b.getJSON(ctx, "queues/"+url.PathEscape(e.vhost)+"/"+url.PathEscape(queue), nil, &q); err != nil {
		e.t.Fatalf("GET queue %s: %v", queue, err)
	}
	if q.Policy != nil {
		policy = *q.Policy
	}
	if s := string(q.DeliveryLimit); s != "null" {
		limit = strings.Trim(s, `"`)
	}
	return limit, policy
}

// requeue takes queue's only ready message with basic.get and returns it with nack(requeue), n
// times: each return counts one delivery (x-delivery-count).
func (e *env) requeue(queue string, n int) {
	e.t.Helper()
	for i := range n {
		d, ok, err := e.ch.Get(queue, false)
		if err != nil || !ok {
			e.t.Fatalf("get %s (%d): ok=%v err=%v", queue, i, ok, err)
		}
		if err := d.Nack(false, true); err != nil {
			e.t.Fatal(err)
		}
	}
}

// A quorum DLQ under a policy of delivery-limit -1 holds a message returned 20 times. The policy
// is deleted and the queue browsed at once: the management API still reports "unlimited" (it
// trails by a statistics interval), but RabbitMQ 4 already applies its default of 20 and would drop
// that message on its return. The browse must count the limit the policies give now — 20 — and
// take the message into custody; nothing reaches parking, where a dropped message would go.
func TestLimitPolicyRemovalRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	if !e.rules().negativeUnlimits {
		t.Skip("RabbitMQ 3.x: no default limit, and a policy refuses delivery-limit -1; the race is 4.x's")
	}
	e.Exchange("parking.dlx", "fanout")
	e.Queue("parking", nil)
	e.Bind("parking", "", "parking.dlx")
	e.Queue("race.dlq", amqp.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": "parking.dlx"})
	e.policy("unlimited", `^race\.dlq$`, rabbithole.PolicyDefinition{"delivery-limit": -1}, "race.dlq")
	rabbittest.WaitFor(t, 20*time.Second, "the API to report race.dlq unlimited", func(ctx context.Context) bool {
		l, _ := e.apiDeliveryLimit(ctx, "race.dlq")
		return l == "unlimited"
	})
	e.publish("", "race.dlq", amqp.Publishing{MessageId: "hot", Body: []byte("hot")})
	e.requeue("race.dlq", 20)
	e.publish("", "race.dlq", amqp.Publishing{MessageId: "cold", Body: []byte("cold")})
	e.waitDepth("race.dlq", 2)

	if _, err := e.mgmt.DeletePolicy(e.vhost, "unlimited"); err != nil {
		t.Fatal(err)
	}
	stale, _ := e.apiDeliveryLimit(ctx, "race.dlq")
	res, err := e.b.Browse(ctx, e.vhost, "race.dlq", 10)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the API said %q when the browse began; the browse: limit %s from %q, kept %d", stale, ptrText(res.DeliveryLimit),
		res.DeliveryLimitFrom, res.Kept)
	if stale != "unlimited" {
		t.Logf("the API had caught up already: the race was not exercised this time")
	}
	if d := e.depth("parking"); d != 0 {
		t.Fatalf("%d message(s) in parking: RabbitMQ dropped them at its default limit of 20 after a browse", d)
	}
	if res.DeliveryLimit == nil || *res.DeliveryLimit != 20 || !strings.Contains(res.DeliveryLimitFrom, "default") {
		t.Errorf("browse: limit %s from %q, want 20 from RabbitMQ 4's default", ptrText(res.DeliveryLimit), res.DeliveryLimitFrom)
	}
	var left []string
	for _, d := range e.drain("race.dlq") {
		left = append(left, d.MessageId)
	}
	kept := e.kept.keptIDs()
	if strings.Join(kept, ",") != "hot" || strings.Join(left, ",") != "cold" {
		t.Fatalf("kept %v, left in the queue %v; want hot kept and cold left", kept, left)
	}
}

// A queue's x-delivery-limit argument against the policies and operator policies, resolved by the
// console from their definitions the moment they are set, as RabbitMQ resolves them; on 4.x
// cross-checked with the management API's delivery_limit once it reports the new policies, on
// 3.x (which does not report one) by returning a message past the limit the console rejected.
func TestLimitArgumentPolicyResolution(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	rules := e.rules()
	put := func(name, pattern string, prio int, def rabbithole.PolicyDefinition) {
		t.Helper()
		if _, err := e.mgmt.PutPolicy(e.vhost, name, rabbithole.Policy{Pattern: pattern, ApplyTo: "queues", Priority: prio, Definition: def}); err != nil {
			t.Fatalf("policy %s: %v", name, err)
		}
	}
	putOp := func(name, pattern string, def rabbithole.PolicyDefinition) {
		t.Helper()
		if _, err := e.mgmt.PutOperatorPolicy(e.vhost, name, rabbithole.OperatorPolicy{Pattern: pattern, ApplyTo: "queues", Definition: def}); err != nil {
			t.Fatalf("operator policy %s: %v", name, err)
		}
	}
	quorum := func(name string, arg any) {
		args := amqp.Table{"x-queue-type": "quorum"}
		if arg != nil {
			args["x-delivery-limit"] = arg
		}
		e.Queue(name, args)
	}
	n := func(v int64) *int64 { return &v }
	want := map[string]*int64{}
	if rules.negativeUnlimits {
		quorum("arg5.minus", int32(5))
		put("minus-a", `^arg5\.minus$`, 0, rabbithole.PolicyDefinition{"delivery-limit": -1})
		want["arg5.minus"] = n(5)
		quorum("argm1.three", int32(-1))
		put("three-a", `^argm1\.three$`, 0, rabbithole.PolicyDefinition{"delivery-limit": 3})
		want["argm1.three"] = n(3)
		quorum("prio.lazy", nil)
		put("lazy-hi", `^prio\.lazy$`, 10, rabbithole.PolicyDefinition{"queue-mode": "lazy"})
		put("three-lo", `^prio\.lazy$`, 0, rabbithole.PolicyDefinition{"delivery-limit": 3})
		want["prio.lazy"] = n(3)
		quorum("op.four", nil)
		put("minus-o", `^op\.four$`, 0, rabbithole.PolicyDefinition{"delivery-limit": -1})
		putOp("four", `^op\.four$`, rabbithole.PolicyDefinition{"delivery-limit": 4})
		want["op.four"] = n(4)
		quorum("plain", nil)
		want["plain"] = n(20)
		quorum("argm1", int32(-1))
		want["argm1"] = nil
	} else {
		quorum("arg5.three", int32(5))
		put("three-a", `^arg5\.three$`, 0, rabbithole.PolicyDefinition{"delivery-limit": 3})
		want["arg5.three"] = n(3)
		quorum("prio.qv", nil)
		put("qv-hi", `^prio\.qv$`, 10, rabbithole.PolicyDefinition{"queue-version": 2})
		put("three-lo", `^prio\.qv$`, 0, rabbithole.PolicyDefinition{"delivery-limit": 3})
		want["prio.qv"] = nil // the queue-version policy applies to quorum queues on 3.10 too
		e.Exchange("parking.dlx", "fanout")
		e.Queue("parking", nil)
		e.Bind("parking", "", "parking.dlx")
		e.Queue("prio.lazy", amqp.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": "parking.dlx"})
		put("lazy-hi", `^prio\.lazy$`, 10, rabbithole.PolicyDefinition{"queue-mode": "lazy"})
		put("three-lz", `^prio\.lazy$`, 0, rabbithole.PolicyDefinition{"delivery-limit": 3})
		want["prio.lazy"] = n(3)
		quorum("op.four", nil)
		put("nine-o", `^op\.four$`, 0, rabbithole.PolicyDefinition{"delivery-limit": 9})
		putOp("four", `^op\.four$`, rabbithole.PolicyDefinition{"delivery-limit": 4})
		want["op.four"] = n(4)
		quorum("plain", nil)
		want["plain"] = nil
	}
	for q, w := range want {
		got, from, err := e.b.policyDeliveryLimit(ctx, e.vhost, q, rules)
		if err != nil {
			t.Fatal(err)
		}
		if ptrText(got) != ptrText(w) {
			t.Errorf("%s: the console works out %s (from %q) from the policies as set, want %s", q, ptrText(got), from, ptrText(w))
		}
	}
	if !rules.negativeUnlimits {
		// 3.10: prio.qv is unlimited (the console says so), not 3: five returns keep its message,
		// while four make RabbitMQ dead-letter prio.lazy's into parking (its limit is 3: the
		// queue-mode policy does not apply).
		for _, q := range []string{"prio.qv", "prio.lazy"} {
			e.publish("", q, amqp.Publishing{MessageId: "m", Body: []byte("m")})
			e.waitDepth(q, 1)
		}
		e.requeue("prio.qv", 5)
		e.waitDepth("prio.qv", 1)
		e.requeue("prio.lazy", 4)
		e.waitDepth("parking", 1)
		return
	}
	for q, w := range want {
		wantText := "unlimited"
		if w != nil {
			wantText = strconv.FormatInt(*w, 10)
		}
		var last string
		rabbittest.WaitFor(t, 20*time.Second, "the API's delivery_limit of "+q, func(ctx context.Context) bool {
			last, _ = e.apiDeliveryLimit(ctx, q)
			return last == wantText
		})
		info, err := e.b.queueInfo(ctx, e.vhost, q)
		if err != nil {
			t.Fatal(err)
		}
		if ptrText(info.DeliveryLimit) != ptrText(w) {
			t.Errorf("%s: the API says %s; the queue as sampled has %s", q, last, ptrText(info.DeliveryLimit))
		}
	}
}

// A console without an archive refuses to read a delivery-limited quorum queue on 4.x and says
// how to lift the limit. The DLQ's policy dlq-settings holds its dead-letter exchange and a
// max-length: the advice must add delivery-limit -1 to that policy, not add a policy that
// replaces it. Running the command the advice prints lifts the limit and leaves the other keys in
// force.
func TestLimitAdviceKeepsPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	if !e.rules().negativeUnlimits {
		t.Skip("RabbitMQ 3.x refuses the browse without asking for an archive (TestLimitFix… in ops/doctor covers 3.x's fix)")
	}
	e.Exchange("parking", "fanout")
	e.Queue("settings.dlq", amqp.Table{"x-queue-type": "quorum"})
	e.policy("dlq-settings", `^settings\.dlq$`, rabbithole.PolicyDefinition{"dead-letter-exchange": "parking", "max-length": 1000}, "settings.dlq")
	e.b.SetCustodian(nil)
	_, err := e.b.Browse(ctx, e.vhost, "settings.dlq", 10)
	if err == nil {
		t.Fatal("browse of a limited quorum queue without an archive: no error")
	}
	t.Logf("advice: %v", err)
	cmds := rabbittest.RabbitmqctlCommands(t, err.Error())
	if len(cmds) == 0 {
		t.Fatal("the advice prints no rabbitmqctl command")
	}
	for _, c := range cmds {
		if c.Verb != "set_policy" {
			t.Fatalf("the advice runs %s; want set_policy", c.Verb)
		}
		if _, err := e.mgmt.PutPolicy(c.Vhost, c.Name, rabbithole.Policy{Pattern: c.Pattern, ApplyTo: c.ApplyTo, Priority: c.Priority,
			Definition: c.Def}); err != nil {
			t.Fatalf("running the advice: %v", err)
		}
	}
	var def map[string]any
	rabbittest.WaitFor(t, 20*time.Second, "settings.dlq unlimited under the redefined policy", func(ctx context.Context) bool {
		var q struct {
			DeliveryLimit json.RawMessage `json:"delivery_limit"`
			Def           map[string]any  `json:"effective_policy_definition"`
		}
		if err := e.b.getJSON(ctx, "queues/"+url.PathEscape(e.vhost)+"/settings.dlq", nil, &q); err != nil {
			return false
		}
		def = q.Def
		return string(q.DeliveryLimit) == `"unlimited"`
	})
	if def["dead-letter-exchange"] != "parking" || !numberIs(def["max-length"], 1000) || !numberIs(def["delivery-limit"], -1) {
		t.Fatalf("effective policy definition after the advice: %v; want the dead-letter exchange and max-length kept", def)
	}
}

func numberIs(v any, n int64) bool {
	switch x := v.(type) {
	case json.Number:
		i, err := x.Int64()
		return err == nil && i == n
	case float64:
		return x == float64(n)
	}
	return false
}
