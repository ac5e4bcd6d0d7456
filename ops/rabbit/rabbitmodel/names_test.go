package rabbitmodel

import "testing"

func TestVhostName(t *testing.T) {
	for _, tc := range []struct{ vhost, name, want string }{
		{"/", "orders.dlq", "orders.dlq"}, // never //orders.dlq
		{"", "orders.dlq", "orders.dlq"},
		{"billing", "invoices.dlq", "billing/invoices.dlq"},
		{"/", "", ""}, // the default exchange of the default vhost
		{"a/b", "c", "a/b/c"},
	} {
		if got := VhostName(tc.vhost, tc.name); got != tc.want {
			t.Errorf("VhostName(%q, %q) = %q, want %q", tc.vhost, tc.name, got, tc.want)
		}
		if got := (QueueRef{tc.vhost, tc.name}).String(); got != tc.want {
			t.Errorf("QueueRef{%q, %q}.String() = %q, want %q", tc.vhost, tc.name, got, tc.want)
		}
	}
}
