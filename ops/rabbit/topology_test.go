package rabbit

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTopicMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, key string
		want         bool
	}{
		{"a.b", "a.b", true},
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", false},
		{"a.*", "a", false},
		{"a.#", "a", true},
		{"a.#", "a.b.c", true},
		{"#", "", true},
		{"#", "x.y", true},
		{"#.c", "a.b.c", true},
		{"#.c", "c", true},
		{"*.b.#", "a.b", true},
		{"a.#.z", "a.b.c.z", true},
		{"a.#.z", "a.z.q", false},
		{"#.#", "a", true},
		{"order.created", "order.paid", false},
	} {
		if got := topicMatch(tc.pattern, tc.key); got != tc.want {
			t.Errorf("topicMatch(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
	}
}

func i64(n int64) *int64 { return &n }

func TestEffectiveSettings(t *testing.T) {
	num := func(s string) json.Number { return json.Number(s) }
	args := map[string]any{"x-dead-letter-exchange": "arg-dlx", "x-message-ttl": num("60000"), "x-max-length": num("10"),
		"x-overflow": "drop-head", "x-delivery-limit": num("9")}
	policy := map[string]any{"dead-letter-exchange": "pol-dlx", "dead-letter-routing-key": "pol-rk", "message-ttl": num("1000"),
		"max-length": num("100"), "overflow": "reject-publish", "delivery-limit": num("3")}

	c := effectiveSettings(TypeClassic, args, policy)
	if c.dlx != "arg-dlx" || c.dlxSource != SourceArgument || c.dlrk != "pol-rk" || *c.ttl != 1000 || *c.maxLength != 10 ||
		c.overflow != "drop-head" {
		t.Errorf("classic: %+v", c)
	}
	q := effectiveSettings(TypeQuorum, args, policy)
	if q.dlx != "arg-dlx" || q.overflow != "reject-publish" {
		t.Errorf("quorum: %+v", q)
	}
	s := effectiveSettings(TypeStream, args, policy)
	if s.hasDLX || s.ttl != nil {
		t.Errorf("stream: %+v", s)
	}
	p := effectiveSettings(TypeClassic, nil, map[string]any{"dead-letter-exchange": ""})
	if !p.hasDLX || p.dlx != "" || p.dlxSource != SourcePolicy {
		t.Errorf("default exchange from a policy: %+v", p)
	}
}

func TestQuorumPolicyLimit(t *testing.T) {
	lim := func(n int) map[string]any {
		return map[string]any{"delivery-limit": json.Number(strconv.Itoa(n))}
	}
	for _, tc := range []struct {
		name  string
		cands []policyCandidate
		want  *int64
		from  string
	}{
		{"None", nil, nil, ""},
		{"Matches", []policyCandidate{{name: "p", pattern: "^q$", priority: 0, def: lim(5)}}, i64(5), `policy "p"`},
		{"NoMatch", []policyCandidate{{name: "p", pattern: "^other$", def: lim(5)}}, nil, ""},
		{"ExchangesOnly", []policyCandidate{{name: "p", pattern: ".*", applyTo: "exchanges", def: lim(5)}}, nil, ""},
		{"HigherPriorityWithoutLimitWins", []policyCandidate{
			{name: "low", pattern: ".*", priority: 0, def: lim(5)},
			{name: "high", pattern: "^q", priority: 10, def: map[string]any{"max-length": json.Number("1")}},
		}, nil, ""},
		{"ClassicOnlyPolicyIsSkipped", []policyCandidate{
			{name: "low", pattern: ".*", priority: 0, def: lim(5)},
			{name: "ha", pattern: "^q", priority: 10, def: map[string]any{"ha-mode": "all"}},
		}, i64(5), `policy "low"`},
		{"TieAssumesTheLimit", []policyCandidate{
			{name: "a", pattern: ".*", priority: 1, def: map[string]any{}},
			{name: "b", pattern: ".*", priority: 1, def: lim(7)},
		}, i64(7), `policy "b"`},
		{"OperatorPolicyMergesWithMin", []policyCandidate{
			{name: "p", pattern: ".*", def: lim(8)},
			{name: "op", pattern: ".*", def: lim(2), operator: true},
		}, i64(2), `operator policy "op"`},
		{"ErlangOnlyRegexCountsAsMatch", []policyCandidate{{name: "p", pattern: `^(?!x)`, def: lim(4)}}, i64(4), `policy "p"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, from := quorumPolicyLimit("q", tc.cands, rulesFor(Version{Major: 3, Minor: 10}))
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) || from != tc.from {
				t.Fatalf("got %v from %q, want %v from %q", got, from, tc.want, tc.from)
			}
		})
	}
}

// The delivery limit a quorum queue's reads count against, as each RabbitMQ series works it out
// (rabbit_quorum_queue on 3.10 and 4.0): 4.x's default of 20, its -1, and the management API's
// own figure first.
func TestQuorumLimitRules(t *testing.T) {
	num := func(s string) json.Number { return json.Number(s) }
	v3, v4 := rulesFor(Version{Major: 3, Minor: 10}), rulesFor(Version{Major: 4, Minor: 0})
	for _, tc := range []struct {
		name     string
		rules    quorumRules
		reported string
		args     map[string]any
		policy   map[string]any
		want     *int64
	}{
		{"3.x unset is unlimited", v3, "", nil, nil, nil},
		{"4.x unset is the default 20", v4, "", nil, nil, i64(20)},
		{"4.x reported number wins", v4, "7", map[string]any{"x-delivery-limit": num("9")}, nil, i64(7)},
		{"4.x reported unlimited, unconfirmed by the settings", v4, `"unlimited"`, nil, nil, i64(20)},
		{"4.x reported unlimited, confirmed", v4, `"unlimited"`, nil, map[string]any{"delivery-limit": num("-1")}, nil},
		{"smaller of argument and policy", v3, "", map[string]any{"x-delivery-limit": num("9")}, map[string]any{"delivery-limit": num("3")}, i64(3)},
		{"4.x argument -1 yields to a policy's limit", v4, "", map[string]any{"x-delivery-limit": num("-1")}, map[string]any{"delivery-limit": num("3")}, i64(3)},
		{"4.x policy -1 yields to an argument's limit", v4, "", map[string]any{"x-delivery-limit": int32(5)}, map[string]any{"delivery-limit": num("-1")}, i64(5)},
		{"3.x argument -1 drops at the first return", v3, "", map[string]any{"x-delivery-limit": num("-1")}, map[string]any{"delivery-limit": num("3")}, i64(0)},
		{"3.x argument -1 alone", v3, "", map[string]any{"x-delivery-limit": num("-1")}, nil, i64(0)},
		{"4.x explicit 20", v4, "", map[string]any{"x-delivery-limit": int64(20)}, nil, i64(20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.rules.quorumLimit(json.RawMessage(tc.reported), tc.args, tc.policy)
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("got %v, want %v", ptrText(got), ptrText(tc.want))
			}
		})
	}
	// A policy holding queue-version applies to quorum queues on 3.10 and 4.0 alike (it is not among
	// rabbit_quorum_queue:capabilities' unsupported_policies).
	cands := []policyCandidate{
		{name: "low", pattern: ".*", priority: 0, def: map[string]any{"delivery-limit": num("50")}},
		{name: "dlq", pattern: "^q$", priority: 5, def: map[string]any{"queue-version": num("2"), "delivery-limit": num("4")}},
	}
	if got, from := quorumPolicyLimit("q", cands, v4); got == nil || *got != 4 || from != `policy "dlq"` {
		t.Errorf("4.x: %v from %q, want 4 from policy \"dlq\"", ptrText(got), from)
	}
	if got, from := quorumPolicyLimit("q", cands, v3); got == nil || *got != 4 || from != `policy "dlq"` {
		t.Errorf("3.x: %v from %q, want 4 from policy \"dlq\"", ptrText(got), from)
	}
	for in, want := range map[string]Version{"4.0.5": {Major: 4, Minor: 0, Text: "4.0.5"}, "3.10.8": {Major: 3, Minor: 10, Text: "3.10.8"}, "4.1.0-rc.1": {Major: 4, Minor: 1, Text: "4.1.0-rc.1"}, "x": {Text: "x"}} {
		if got := parseVersion(in); got != want {
			t.Errorf("parseVersion(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func ptrText(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// TestBuildTopology covers what the broker test cannot easily: alternate exchanges, exchange
// loops, unknown exchange types and wildcard own keys.
func TestBuildTopology(t *testing.T) {
	v := "v"
	dl := func(name, x, rk string) Queue {
		return Queue{Vhost: v, Name: name, HasDeadLetterExchange: true, DeadLetterExchange: x, DeadLetterRoutingKey: rk}
	}
	queues := []Queue{
		dl("alt", "strict", "nomatch"), {Vhost: v, Name: "alt.dlq"},
		dl("loop", "x1", "k"), {Vhost: v, Name: "loop.dlq"},
		dl("plugin", "delayed", "k"), {Vhost: v, Name: "plugin.dlq"},
		dl("own", "dlx", ""), {Vhost: v, Name: "own.dlq"},
		dl("gone", "", "nobody"),
		{Vhost: v, Name: "parking-lot"},
	}
	exchanges := []exchange{
		{Vhost: v, Name: "strict", Type: "direct", Alternate: "ae"},
		{Vhost: v, Name: "ae", Type: "fanout"},
		{Vhost: v, Name: "x1", Type: "fanout"},
		{Vhost: v, Name: "x2", Type: "fanout"},
		{Vhost: v, Name: "delayed", Type: "x-delayed-message"},
		{Vhost: v, Name: "dlx", Type: "direct"},
		{Vhost: v, Name: "src", Type: "topic"},
	}
	bindings := []binding{
		{Vhost: v, Source: "strict", Destination: "nobody", Key: "other"},
		{Vhost: v, Source: "ae", Destination: "alt.dlq"},
		{Vhost: v, Source: "x1", Destination: "x2", ToExchange: true},
		{Vhost: v, Source: "x2", Destination: "x1", ToExchange: true},
		{Vhost: v, Source: "x2", Destination: "loop.dlq"},
		{Vhost: v, Source: "delayed", Destination: "plugin.dlq", Key: "k"},
		{Vhost: v, Source: "src", Destination: "own", Key: "own.*"},
		{Vhost: v, Source: "src", Destination: "own", Key: "own.exact"},
		{Vhost: v, Source: "dlx", Destination: "own.dlq", Key: "own.exact"},
	}
	topo := buildTopology(queues, exchanges, bindings, func(n string) bool { return n == "parking-lot" })
	edges := map[string]Edge{}
	for _, e := range topo.Edges {
		edges[e.FromQueue] = e
	}
	for q, want := range map[string]string{"alt": "alt.dlq", "loop": "loop.dlq", "plugin": "plugin.dlq", "own": "own.dlq", "gone": ""} {
		if got := strings.Join(edges[q].ToQueues, ","); got != want {
			t.Errorf("%s → %q, want %q (%+v)", q, got, want, edges[q])
		}
	}
	if e := edges["plugin"]; !e.AllBound || !strings.Contains(e.Note, "x-delayed-message") {
		t.Errorf("plugin: %+v", e)
	}
	if e := edges["own"]; strings.Join(e.OwnKeys, ",") != "own,own.exact" {
		t.Errorf("own keys: %v (wildcard binding keys are not message keys)", e.OwnKeys)
	}
	if e := edges["gone"]; e.Note == "" || len(e.ToQueues) != 0 {
		t.Errorf("gone: %+v", e)
	}
	for _, q := range []string{"alt.dlq", "loop.dlq", "plugin.dlq", "own.dlq", "parking-lot"} {
		if !topo.DLQs[QueueRef{Vhost: v, Name: q}] {
			t.Errorf("%s should be a DLQ", q)
		}
	}
	if got := DeadLettersFrom(topo, v, "loop.dlq"); len(got) != 1 || got[0] != "loop" {
		t.Errorf("DeadLettersFrom loop.dlq = %v", got)
	}
	if got := DeadLettersFrom(topo, "other-vhost", "loop.dlq"); len(got) != 0 {
		t.Errorf("DeadLettersFrom in another vhost = %v", got)
	}
}

func TestErrorGroups(t *testing.T) {
	at := func(s string) *time.Time { return ts(s) }
	msg := func(pos int, reason, exc, queue string, times ...*time.Time) Message {
		var deaths []Death
		for _, tm := range times {
			deaths = append(deaths, Death{Queue: queue, Reason: reason, Time: tm})
		}
		return Message{Position: pos, DeadLetter: &DeadLetter{Reason: reason, ExceptionMessage: exc, OriginalQueue: queue, Deaths: deaths}}
	}
	msgs := []Message{
		msg(0, "rejected", "NPE", "orders", at("2026-03-01T10:00:00Z")),
		msg(1, "expired", "", "slow", at("2026-03-01T09:00:00Z")),
		msg(2, "rejected", "NPE", "payments", at("2026-03-01T11:00:00Z"), at("2026-03-01T08:00:00Z")),
		{Position: 3, Properties: Properties{Timestamp: at("2026-03-01T12:00:00Z")}},
		msg(4, "rejected", "timeout", "orders", at("2026-03-01T07:00:00Z")),
		msg(5, "rejected", "NPE", "orders"),
	}
	groups := ErrorGroups(msgs)
	if len(groups) != 4 {
		t.Fatalf("%d groups: %+v", len(groups), groups)
	}
	g := groups[0]
	if g.Reason != "rejected" || g.ExceptionMessage != "NPE" || g.Count != 3 || !g.FirstAt.Equal(*at("2026-03-01T08:00:00Z")) ||
		!g.LastAt.Equal(*at("2026-03-01T11:00:00Z")) || strings.Join(g.OriginalQueues, ",") != "orders,payments" ||
		len(g.Positions) != 3 || g.Positions[2] != 5 {
		t.Errorf("largest group: %+v", g)
	}
	// Ties on count: the most recent first; the message without dead-letter headers is its own group.
	if groups[1].Reason != "" || groups[2].Reason != "expired" || groups[3].ExceptionMessage != "timeout" {
		t.Errorf("order: %+v", groups[1:])
	}
	if len(ErrorGroups(nil)) != 0 {
		t.Error("groups of nothing")
	}

	// One bug whatever the ids in its message: grouped by ops.ErrorGroupKey, as a plan is.
	stock := ErrorGroups([]Message{
		msg(0, "rejected", "com.acme.StockException: out of stock for o-17", "orders"),
		msg(1, "rejected", "com.acme.StockException: out of stock for o-18", "orders"),
		msg(2, "expired", "com.acme.StockException: out of stock for o-19", "orders"),
	})
	if len(stock) != 2 || stock[0].Key != "com.acme.StockException" || stock[0].Count != 2 ||
		stock[0].ExceptionMessage != "com.acme.StockException: out of stock for o-17" || stock[1].Reason != "expired" {
		t.Errorf("groups of one exception class with ids in its messages: %+v", stock)
	}
}
