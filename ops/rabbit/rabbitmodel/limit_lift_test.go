package rabbitmodel

import (
	"encoding/json"
	"strings"
	"testing"
)

// LiftLimit with the policies' definitions: delivery-limit -1 (3.x: no delivery-limit) goes into
// the policy that applies, printed whole — pattern, priority, apply-to and every other key —
// and into an operator policy whose limit a policy's -1 does not lift; nothing goes where it
// would not change the outcome.
func TestLimitLiftWithDefinitions(t *testing.T) {
	v40, v310 := Version{Major: 4, Minor: 0, Text: "4.0.5"}, Version{Major: 3, Minor: 10, Text: "3.10.8"}
	num := func(s string) json.Number { return json.Number(s) }
	settings := &Policy{Name: "dlq-settings", Pattern: `\.dlq$`, ApplyTo: "queues", Priority: 3,
		Definition: map[string]any{"dead-letter-exchange": "park&ing", "max-length": num("1000")}}
	withLimit := func(p *Policy, n string) *Policy {
		c := *p
		c.Definition = map[string]any{"delivery-limit": num(n)}
		for k, v := range p.Definition {
			c.Definition[k] = v
		}
		return &c
	}
	capOp := &Policy{Name: "cap", Pattern: ".*", ApplyTo: "all", Priority: 0, Definition: map[string]any{"delivery-limit": num("4"), "max-length": num("5000")}}
	q := Queue{Type: TypeQuorum, Vhost: "shop", Name: "a.dlq"}
	argMinus := q
	argMinus.Arguments = map[string]string{"x-delivery-limit": "-1"}
	argFive := q
	argFive.Arguments = map[string]string{"x-delivery-limit": "5"}
	for _, tc := range []struct {
		name       string
		q          Queue
		v          Version
		s          LimitSetting
		has, avoid []string
	}{
		{"4.x policy keeps its keys", q, v40, LimitSetting{Policy: settings}, []string{
			`rabbitmqctl set_policy -p 'shop' --priority 3 --apply-to queues dlq-settings '\.dlq$' '{"dead-letter-exchange":"park&ing","delivery-limit":-1,"max-length":1000}'`,
			"every queue the policy matches"}, []string{"set_operator_policy", "dlq-unlimited"}},
		{"4.x policy's limit replaced", q, v40, LimitSetting{Policy: withLimit(settings, "7")}, []string{
			`'{"dead-letter-exchange":"park&ing","delivery-limit":-1,"max-length":1000}'`}, nil},
		{"4.x policy -1 already, operator 4", q, v40, LimitSetting{Policy: withLimit(settings, "-1"), OperatorPolicy: capOp}, []string{
			`rabbitmqctl set_operator_policy -p 'shop' --priority 0 --apply-to all cap '.*' '{"delivery-limit":-1,"max-length":5000}'`,
			"administrator"}, []string{"set_policy -p"}},
		{"4.x policy 7 and operator 4", q, v40, LimitSetting{Policy: withLimit(settings, "7"), OperatorPolicy: capOp}, []string{
			"set_operator_policy", "set_policy -p 'shop' --priority 3"}, nil},
		{"4.x operator 4, no policy", q, v40, LimitSetting{OperatorPolicy: capOp}, []string{"set_operator_policy"}, []string{"set_policy -p"}},
		{"4.x argument -1, policy 3", argMinus, v40, LimitSetting{Policy: withLimit(settings, "3")}, []string{
			`"delivery-limit":-1`, "dlq-settings"}, nil},
		{"4.x argument 5, policy -1", argFive, v40, LimitSetting{Policy: withLimit(settings, "-1")}, []string{
			"x-delivery-limit argument (5)", "shovel"}, []string{"set_policy", "set_operator_policy"}},
		{"4.x no policy, names taken", q, v40, LimitSetting{PolicyNames: []string{"dlq-unlimited-a.dlq", "dlq-unlimited-a.dlq-2"}}, []string{
			`set_policy -p 'shop' --apply-to quorum_queues dlq-unlimited-a.dlq-3 '^a\.dlq$' '{"delivery-limit":-1}'`}, nil},
		{"4.x unlimited already", argMinus, v40, LimitSetting{Policy: settings}, []string{"nothing to do"}, []string{"rabbitmqctl"}},
		{"3.x policy loses delivery-limit", q, v310, LimitSetting{Policy: withLimit(settings, "7")}, []string{
			`rabbitmqctl set_policy -p 'shop' --priority 3 --apply-to queues dlq-settings '\.dlq$' '{"dead-letter-exchange":"park&ing","max-length":1000}'`},
			[]string{`"delivery-limit":`}},
		{"3.x policy of delivery-limit alone", q, v310, LimitSetting{Policy: &Policy{Name: "lim", Pattern: ".*", Definition: map[string]any{"delivery-limit": num("3")}}},
			[]string{"rabbitmqctl clear_policy -p 'shop' lim"}, []string{"set_policy"}},
		{"3.x operator policy", q, v310, LimitSetting{OperatorPolicy: capOp}, []string{
			`rabbitmqctl set_operator_policy -p 'shop' --priority 0 --apply-to all cap '.*' '{"max-length":5000}'`}, []string{`"delivery-limit":`}},
		{"3.x argument", argFive, v310, LimitSetting{Policy: settings}, []string{"without x-delivery-limit", "shovel"}, []string{"rabbitmqctl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LiftLimit(tc.q, tc.v, tc.s)
			for _, s := range tc.has {
				if !strings.Contains(got, s) {
					t.Errorf("lacks %q: %s", s, got)
				}
			}
			for _, s := range tc.avoid {
				if strings.Contains(got, s) {
					t.Errorf("says %q: %s", s, got)
				}
			}
		})
	}
}
