package rabbit

import (
	"encoding/json"
	"testing"
)

// The delivery limit the console works out from policies alone, as RabbitMQ 4.0 and 3.10 do
// (rabbit_policy:match with rabbit_quorum_queue:capabilities' unsupported_policies;
// rabbit_policies:merge_policy_value; 4.0's default of 20): the audit's cases first — 4.x's
// default when nothing sets a limit, and a higher-priority policy of keys quorum queues refuse,
// which does not apply, above a lower one with a limit.
func TestLimitPolicyResolution(t *testing.T) {
	num := func(n string) json.Number { return json.Number(n) }
	lim := func(n string) map[string]any { return map[string]any{"delivery-limit": num(n)} }
	v310, v40, v42 := rulesFor(Version{Major: 3, Minor: 10}), rulesFor(Version{Major: 4, Minor: 0}), rulesFor(Version{Major: 4, Minor: 2})
	above := func(key string, val any) []policyCandidate {
		return []policyCandidate{
			{"p-hi", "^q$", "queues", 10, map[string]any{key: val}, false},
			{"p-lo", "^q$", "queues", 0, lim("3"), false},
		}
	}
	for _, tc := range []struct {
		name  string
		rules quorumRules
		cands []policyCandidate
		want  *int64
		from  string
	}{
		{"4.x nothing set: the default", v40, nil, i64(20), "RabbitMQ 4's default for quorum queues: no argument or policy sets one"},
		{"3.x nothing set: unlimited", v310, nil, nil, ""},
		{"4.x queue-mode above", v40, above("queue-mode", "lazy"), i64(3), `policy "p-lo"`},
		{"4.x max-age above", v40, above("max-age", "1D"), i64(3), `policy "p-lo"`},
		{"4.x initial-cluster-size above", v40, above("initial-cluster-size", num("3")), i64(3), `policy "p-lo"`},
		{"4.x stream-max-segment-size-bytes above", v40, above("stream-max-segment-size-bytes", num("1000")), i64(3), `policy "p-lo"`},
		{"4.x max-priority above", v40, above("max-priority", num("5")), i64(3), `policy "p-lo"`},
		{"4.x ha-mode above", v40, above("ha-mode", "all"), i64(3), `policy "p-lo"`},
		{"3.x queue-mode above", v310, above("queue-mode", "lazy"), i64(3), `policy "p-lo"`},
		{"4.1 single-active-consumer above", v40, above("single-active-consumer", true), i64(3), `policy "p-lo"`},
		{"4.2 single-active-consumer applies", v42, above("single-active-consumer", true), i64(20), "RabbitMQ 4's default for quorum queues: no argument or policy sets one"},
		// queue-version was never on the list: the policy holding it applies, and the lower one does not.
		{"4.x queue-version applies", v40, above("queue-version", num("2")), i64(20), "RabbitMQ 4's default for quorum queues: no argument or policy sets one"},
		{"3.x queue-version applies", v310, above("queue-version", num("2")), nil, ""},
		{"4.x -1 above a limit", v40, []policyCandidate{
			{"hi", "^q$", "queues", 10, lim("-1"), false}, {"lo", ".*", "all", 0, lim("3"), false},
		}, nil, ""},
		{"4.x policy -1, operator 4", v40, []policyCandidate{
			{"p", ".*", "", 0, lim("-1"), false}, {"op", ".*", "queues", 0, lim("4"), true},
		}, i64(4), `operator policy "op"`},
		{"4.x policy 7, operator -1", v40, []policyCandidate{
			{"p", ".*", "", 0, lim("7"), false}, {"op", ".*", "queues", 0, lim("-1"), true},
		}, i64(7), `policy "p"`},
		{"4.x both -1", v40, []policyCandidate{
			{"p", ".*", "", 0, lim("-1"), false}, {"op", ".*", "queues", 0, lim("-1"), true},
		}, nil, ""},
		{"4.x operator without a limit: the default", v40, []policyCandidate{
			{"op", ".*", "queues", 0, map[string]any{"max-length": num("10")}, true},
		}, i64(20), "RabbitMQ 4's default for quorum queues: no argument or policy sets one"},
		{"4.x a tie takes the lower", v40, []policyCandidate{
			{"a", ".*", "", 1, lim("-1"), false}, {"b", ".*", "", 1, lim("7"), false},
		}, i64(7), `policy "b"`},
		// A pattern Go cannot compile may or may not match: both outcomes count, the lower wins.
		{"4.x Erlang-only -1 above a limit", v40, []policyCandidate{
			{"erl", `^(?!x)q$`, "", 10, lim("-1"), false}, {"lo", ".*", "", 0, lim("3"), false},
		}, i64(3), `policy "lo"`},
		{"4.x Erlang-only limit above -1", v40, []policyCandidate{
			{"erl", `^(?!x)q$`, "", 10, lim("4"), false}, {"lo", ".*", "", 0, lim("-1"), false},
		}, i64(4), `policy "erl"`},
		{"4.x Erlang-only -1 alone", v40, []policyCandidate{{"erl", `^(?!x)q$`, "", 10, lim("-1"), false}},
			i64(20), "RabbitMQ 4's default for quorum queues: no argument or policy sets one"},
		{"4.x classic_queues only", v40, []policyCandidate{{"c", ".*", "classic_queues", 10, lim("-1"), false}},
			i64(20), "RabbitMQ 4's default for quorum queues: no argument or policy sets one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, from := quorumPolicyLimit("q", tc.cands, tc.rules)
			if ptrText(got) != ptrText(tc.want) || from != tc.from {
				t.Fatalf("got %s from %q, want %s from %q", ptrText(got), from, ptrText(tc.want), tc.from)
			}
		})
	}
}

// The limit of a queue as sampled — the management API's figure beside the x-delivery-limit
// argument and the effective policy definition — as RabbitMQ 4.0 resolves an argument against a
// policy (rabbit_quorum_queue:resolve_delivery_limit: the higher when either is negative, else the
// lower), and an "unlimited" the API reports believed only as far as the settings confirm it.
func TestLimitArgumentAgainstPolicy(t *testing.T) {
	num := func(n string) json.Number { return json.Number(n) }
	arg := func(n string) map[string]any { return map[string]any{"x-delivery-limit": num(n)} }
	pol := func(n string) map[string]any { return map[string]any{"delivery-limit": num(n)} }
	v310, v40 := rulesFor(Version{Major: 3, Minor: 10}), rulesFor(Version{Major: 4, Minor: 0})
	for _, tc := range []struct {
		name        string
		rules       quorumRules
		reported    string
		args, polic map[string]any
		want        *int64
	}{
		{"4.x argument 5, policy -1", v40, "", arg("5"), pol("-1"), i64(5)},
		{"4.x argument -1, policy 3", v40, "", arg("-1"), pol("3"), i64(3)},
		{"4.x argument 5, policy 3", v40, "", arg("5"), pol("3"), i64(3)},
		{"4.x argument -1 alone", v40, "", arg("-1"), nil, nil},
		{"4.x policy -1 alone", v40, "", nil, pol("-1"), nil},
		{"4.x argument 30 alone", v40, "", arg("30"), nil, i64(30)},
		{"4.x argument int32 5, policy -1", v40, "", map[string]any{"x-delivery-limit": int32(5)}, pol("-1"), i64(5)},
		// The API's "unlimited" trails a policy's removal by a statistics interval.
		{"4.x unlimited confirmed", v40, `"unlimited"`, nil, pol("-1"), nil},
		{"4.x unlimited unconfirmed", v40, `"unlimited"`, nil, nil, i64(20)},
		{"4.x unlimited against an argument", v40, `"unlimited"`, arg("5"), pol("-1"), i64(5)},
		{"4.x reported 20, policy -1 just applied", v40, "20", nil, pol("-1"), i64(20)},
		{"4.x reported 7, argument 9", v40, "7", arg("9"), nil, i64(7)},
		{"3.x argument 9, policy 3", v310, "", arg("9"), pol("3"), i64(3)},
		{"3.x argument -1, policy 3", v310, "", arg("-1"), pol("3"), i64(0)},
		{"3.x nothing", v310, "", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rules.quorumLimit(json.RawMessage(tc.reported), tc.args, tc.polic); ptrText(got) != ptrText(tc.want) {
				t.Fatalf("got %s, want %s", ptrText(got), ptrText(tc.want))
			}
		})
	}
}
