package rabbitmodel

import (
	"strings"
	"testing"
)

// The fix for a quorum queue's delivery limit, from the queue as sampled: never a command that
// replaces the policy applying to it (RabbitMQ applies one policy to a queue, so a second policy
// of delivery-limit -1 at a higher priority takes the first one's dead-letter exchange and
// max-length away), and never a -1 policy for a limit set by the x-delivery-limit argument, which
// RabbitMQ 4.0 keeps against a policy's -1 (resolve_delivery_limit takes the higher when either is
// negative).
func TestLimitAdviceFromSample(t *testing.T) {
	lim := func(n int64) *int64 { return &n }
	withPolicy := Queue{Type: TypeQuorum, Vhost: "/", Name: "settings.dlq", DeliveryLimit: lim(20), Policy: "dlq-settings"}
	withArg := Queue{Type: TypeQuorum, Vhost: "/", Name: "arg.dlq", DeliveryLimit: lim(5), Arguments: map[string]string{"x-delivery-limit": "5"}}
	plain := Queue{Type: TypeQuorum, Vhost: "/", Name: "orders.dlq", DeliveryLimit: lim(20)}
	for _, tc := range []struct {
		name       string
		got        string
		has, avoid []string
	}{
		{"UnlimitPolicy with a policy", UnlimitPolicy(withPolicy), []string{`policy "dlq-settings"`, `"delivery-limit": -1`}, []string{"set_policy"}},
		{"UnlimitAdvice with a policy", UnlimitAdvice(withPolicy), []string{`policy "dlq-settings"`}, []string{"set_policy"}},
		{"UnlimitPolicy with an argument", UnlimitPolicy(withArg), []string{"x-delivery-limit argument (5)", "shovel"}, []string{"set_policy"}},
		{"UnlimitFix with an argument", UnlimitFix(withArg), []string{"x-delivery-limit argument (5)", "shovel"}, []string{"set_policy", "policy with delivery-limit -1"}},
		{"UnlimitCommand with an argument", UnlimitCommand(withArg), nil, []string{"set_policy"}},
		{"BrowseCost with an argument", warning(BrowseCost(withArg, Version{Major: 4, Minor: 0})), []string{"shovel"}, []string{"set_policy"}},
		{"UnlimitPolicy without a policy", UnlimitPolicy(plain), []string{
			`rabbitmqctl set_policy -p '/' --apply-to quorum_queues dlq-unlimited-orders.dlq '^orders\.dlq$' '{"delivery-limit":-1}'`}, []string{"--priority"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range tc.has {
				if !strings.Contains(tc.got, s) {
					t.Errorf("lacks %q: %s", s, tc.got)
				}
			}
			for _, s := range tc.avoid {
				if strings.Contains(tc.got, s) {
					t.Errorf("says %q: %s", s, tc.got)
				}
			}
		})
	}
	// Two queues' fixes name two policies: one name for both would leave the first one limited.
	other := plain
	other.Name = "payments.dlq"
	if a, b := policyName(t, UnlimitPolicy(plain)), policyName(t, UnlimitPolicy(other)); a == b {
		t.Errorf("the fixes of orders.dlq and payments.dlq both set policy %q", a)
	}
}

func warning(_, w string) string { return w }

// policyName is the name set_policy sets in fix.
func policyName(t *testing.T, fix string) string {
	t.Helper()
	_, cmd, ok := strings.Cut(fix, "--apply-to quorum_queues ")
	if !ok {
		t.Fatalf("no set_policy in %q", fix)
	}
	return strings.Fields(cmd)[0]
}
