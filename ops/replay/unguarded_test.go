package replay

import (
	"reflect"
	"testing"

	"github.com/redrive/redrive/ops/inbox"
)

// Every kind's plan warns about the messages it publishes with no inbox verdict, counted per
// consumer, whether no inbox is configured or it could not be read; skipped or guarded ones are
// not counted.
func TestUnguardedWarnings(t *testing.T) {
	var u unguardedCounter
	u.add([]Item{
		{Consumer: "billing", Inbox: inbox.Unknown, Action: Publish},
		{Consumer: "billing", Inbox: inbox.Unknown, Action: Publish},
		{Consumer: "billing", Inbox: inbox.Unknown, Action: SkipAlreadyReplayed},
		{Consumer: "inventory-service", Inbox: inbox.NotProcessed, Action: Publish},
		{Consumer: "inventory-service", Inbox: inbox.Unknown, Action: Publish},
	})
	u.add([]Item{{Consumer: "", Inbox: inbox.Unknown, Action: Publish}, {Consumer: "billing", Inbox: inbox.Unknown, Action: Publish}})
	got := u.warnings(func(c string) bool { return c == "inventory-service" })
	want := []string{
		"1 message(s) will be published without an idempotency check (inbox: unknown): no configured consumer reads their destination",
		"3 message(s) for consumer billing will be published without an idempotency check (inbox: unknown): no inbox is configured for it",
		"1 message(s) for consumer inventory-service will be published without an idempotency check (inbox: unknown): its inbox could not be read",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings\n%q\nwant\n%q", got, want)
	}
	var none unguardedCounter
	none.add([]Item{{Consumer: "billing", Inbox: inbox.Processed, Action: SkipProcessed}})
	if w := none.warnings(func(string) bool { return true }); len(w) != 0 {
		t.Errorf("guarded plan warns %q", w)
	}
}
