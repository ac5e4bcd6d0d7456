package rabbitmodel

import (
	"strings"
	"testing"
)

// What a page says about browsing a queue follows the broker's series: a limited quorum queue is
// refused on 3.x with 3.x's fix, browsed with a warning on 4.x with 4.x's fix (a -1 policy; the
// exact command when no policy applies), and an unknown version is taken as 4.x.
func TestBrowseCost(t *testing.T) {
	lim := func(n int64) *int64 { return &n }
	v310, v40 := Version{Major: 3, Minor: 10, Text: "3.10.8"}, Version{Major: 4, Minor: 0, Text: "4.0.5"}
	for _, tc := range []struct {
		name                    string
		q                       Queue
		v                       Version
		refusal, warning, avoid []string // wanted in the refusal and the warning; in neither
	}{
		{name: "Classic40", q: Queue{Type: TypeClassic}, v: v40},
		{name: "Stream40", q: Queue{Type: TypeStream}, v: v40},
		{name: "QuorumUnlimited40", q: Queue{Type: TypeQuorum, Vhost: "/", Name: "a.dlq"}, v: v40},
		{name: "QuorumUnlimited310", q: Queue{Type: TypeQuorum}, v: v310},
		{name: "DefaultLimit40", q: Queue{Type: TypeQuorum, Vhost: "/", Name: "orders.dlq", DeliveryLimit: lim(20)}, v: v40,
			warning: []string{"one of its 20 deliveries", "RabbitMQ 4's default", "fewer than 2 left", "Redrive's archive",
				"delivery-limit -1", `rabbitmqctl set_policy -p '/' --apply-to quorum_queues dlq-unlimited-orders.dlq '^orders\.dlq$' '{"delivery-limit":-1}'`}},
		{name: "ArgumentLimit40", q: Queue{Type: TypeQuorum, Vhost: "shop/eu", Name: "it's.dlq", DeliveryLimit: lim(3),
			Arguments: map[string]string{"x-delivery-limit": "3"}}, v: v40,
			// No policy lifts an argument's limit on 4.0 (argument 3, policy -1: 3): no set_policy.
			warning: []string{"one of its 3 deliveries", "x-delivery-limit argument", "shovel", `"it's.dlq"`}, avoid: []string{"set_policy"}},
		{name: "PolicyLimit40", q: Queue{Type: TypeQuorum, Vhost: "/", Name: "audit.dlq", DeliveryLimit: lim(5), Policy: "dlx"}, v: v40,
			warning: []string{`policy "dlx"`, `add "delivery-limit": -1 to the definition of policy "dlx"`}, avoid: []string{"set_policy"}},
		{name: "UnknownVersionIs4", q: Queue{Type: TypeQuorum, Name: "q", DeliveryLimit: lim(20)}, v: Version{},
			warning: []string{"one of its 20 deliveries"}},
		{name: "ArgumentLimit310", q: Queue{Type: TypeQuorum, Name: "invoices", DeliveryLimit: lim(3),
			Arguments: map[string]string{"x-delivery-limit": "3"}}, v: v310,
			refusal: []string{"Not browsable on RabbitMQ 3.10.8", "delivery limit of 3", "x-delivery-limit argument",
				"declare a queue without x-delivery-limit", "classic queue"}},
		{name: "NegativeArgument310", q: Queue{Type: TypeQuorum, Name: "q", Arguments: map[string]string{"x-delivery-limit": "-1"}}, v: v310,
			refusal: []string{"x-delivery-limit -1", "drops a message of this queue the first time it goes back", "classic queue"}},
		{name: "NegativeArgument40", q: Queue{Type: TypeQuorum, Name: "q", Arguments: map[string]string{"x-delivery-limit": "-1"}}, v: v40},
		{name: "PolicyLimit310", q: Queue{Type: TypeQuorum, Name: "q", DeliveryLimit: lim(7), Policy: "lim"}, v: v310,
			refusal: []string{`remove delivery-limit from policy "lim"`, "classic queue", "delivery-limit -1 instead"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusal, warning := BrowseCost(tc.q, tc.v)
			if (refusal != "") != (len(tc.refusal) > 0) || (warning != "") != (len(tc.warning) > 0) {
				t.Fatalf("refusal %q, warning %q", refusal, warning)
			}
			for _, w := range tc.refusal {
				if !strings.Contains(refusal, w) {
					t.Errorf("refusal lacks %q: %s", w, refusal)
				}
			}
			for _, w := range tc.warning {
				if !strings.Contains(warning, w) {
					t.Errorf("warning lacks %q: %s", w, warning)
				}
			}
			for _, a := range tc.avoid {
				if strings.Contains(refusal+warning, a) {
					t.Errorf("says %q: %s %s", a, refusal, warning)
				}
			}
		})
	}
}
