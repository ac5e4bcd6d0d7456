package rabbit

import (
	"slices"
	"testing"
)

// A queue name holding '/' is a RabbitMQ name like any other: "billing/invoices.dlq" matched no
// default dead_letter_queues pattern (path.Match's * stops at '/'), so a DLQ that no dead-letter
// exchange routes into (Spring's RepublishMessageRecoverer publishes to it directly) was not
// marked a DLQ, nor counted on the overview or in redrive_dead_letters.
func TestDLQNamePatternsMatchSlashes(t *testing.T) {
	t.Parallel()
	b := &Broker{patterns: append(slices.Clone(defaultDeadLetterQueues), "team/?x", "a/[b/]c")}
	for name, want := range map[string]bool{
		"orders.dlq":            true,
		"billing/invoices.dlq":  true,
		"a/b/c.DLQ":             true,
		"dead-letter/orders":    true,
		"/.dlq":                 true,
		"team//x":               true, // ? is one character, '/' too
		"a//c":                  true,
		"billing/invoices":      false,
		"billing/invoices.dlqx": false,
		"team/xx/x":             false,
	} {
		if got := b.isDLQName(name); got != want {
			t.Errorf("isDLQName(%q) = %v, want %v", name, got, want)
		}
	}
}
