package redact

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/source"
)

// A job's ledger names its RabbitMQ dead letters by id, inside the locator too, and a Kafka
// failure quotes the ids it found and expected: all hidden where ids are masked, the locator's
// other parts (which the ledger keys on) kept.
func TestLedgerEntryMasksTheMessageID(t *testing.T) {
	ids, err := New([]string{"message_id"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const fp = "~0123456789abcdef#"
	for _, c := range []struct{ name, locator, id, want string }{
		{"replay", "rabbitmq:main///orders.dlq/alice@example.com" + fp + "0", "alice@example.com",
			"rabbitmq:main///orders.dlq/" + Redacted + fp + "0"},
		{"discard, restored, an id of separators", "discard:rabbitmq:main/v/q/a~b/c#d" + fp + "1@archive-7", "a~b/c#d",
			"discard:rabbitmq:main/v/q/" + Redacted + fp + "1@archive-7"},
		{"the id is the queue's name too", "rabbitmq:main/v/alice/alice" + fp + "0", "alice",
			"rabbitmq:main/v/alice/" + Redacted + fp + "0"},
		{"kafka", "kafka:main/orders.DLT@id/0/7", "alice", "kafka:main/orders.DLT@id/0/7"},
		{"id-less", "rabbitmq:main/v/q/sha256:00ff#0", "", "rabbitmq:main/v/q/sha256:00ff#0"},
	} {
		got := ids.LedgerEntry(replay.LedgerEntry{Locator: c.locator, MessageID: c.id})
		if got.Locator != c.want {
			t.Errorf("%s: locator %q, want %q", c.name, got.Locator, c.want)
		}
		if c.id != "" && got.MessageID != Redacted {
			t.Errorf("%s: message id %q", c.name, got.MessageID)
		}
	}
	detail := `not the record the plan saw: its offset now holds message "bob \"b\"", not "alice"; ` +
		"the dead-letter topic was deleted and created again since the plan was made"
	want := `not the record the plan saw: its offset now holds message "` + Redacted + `", not "` + Redacted + `"; ` +
		"the dead-letter topic was deleted and created again since the plan was made"
	if got := ids.LedgerEntry(replay.LedgerEntry{MessageID: "alice", Detail: detail}).Detail; got != want {
		t.Errorf("detail %q, want %q", got, want)
	}
	if got := ids.FailureDetail(detail); got != want {
		t.Errorf("failure group %q, want %q", got, want)
	}
	if got := ids.FailureDetail("the record no longer exists in the dead-letter topic"); got != "the record no longer exists in the dead-letter topic" {
		t.Errorf("a detail quoting no id changed: %q", got)
	}
	// Rules that mask no id, and none, leave the row whole.
	card, err := New(nil, []string{"$.card.number"})
	if err != nil {
		t.Fatal(err)
	}
	row := replay.LedgerEntry{Locator: "rabbitmq:main/v/q/alice" + fp + "0", MessageID: "alice", Detail: detail}
	for _, r := range []*Rules{card, nil} {
		if got := r.LedgerEntry(row); got != row {
			t.Errorf("%v: %+v", r, got)
		}
	}
}

// A plan's items carry the id in their locators; its filter and its edit's warning name it.
func TestPlanMasksTheIDsItNames(t *testing.T) {
	ids, err := New([]string{"message_id"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const id = "alice@example.com"
	p := replay.Plan{Source: replay.Source{Kind: source.RabbitMQ, Edit: &replay.Edit{FreshID: "new-1",
		Diff: &replay.EditDiff{MessageID: &[2]string{id, "new-1"}}}},
		Filter:   replay.Filter{MessageIDs: []string{id}},
		Warnings: []string{"edit and retry: the message id change; a NEW message id new-1 replaces " + id + ": the consumer's inbox …"},
		Items:    []replay.Item{{Locator: "rabbitmq:main/v/q/" + id + "~0123456789abcdef#0", MessageID: id}}}
	got := ids.Plan(p)
	if s := strings.Join(append(append([]string{got.Items[0].Locator, got.Items[0].MessageID, got.Source.Edit.Diff.MessageID[0]},
		got.Filter.MessageIDs...), got.Warnings...), "\n"); strings.Contains(s, "alice") {
		t.Errorf("the plan shows the masked id: %s", s)
	}
	if !strings.Contains(got.Warnings[0], "new-1 replaces "+Redacted+":") || got.Source.Edit.Diff.MessageID[1] != "new-1" {
		t.Errorf("the new id is the console's, shown: %q %v", got.Warnings[0], got.Source.Edit.Diff.MessageID)
	}
	if p.Items[0].MessageID != id || p.Filter.MessageIDs[0] != id || !strings.Contains(p.Warnings[0], id) {
		t.Error("the plan masked is a copy: the stored one changed")
	}
}

// An edit's diff hides what its record's page hides: a header quoting a value masked in the value
// before or after, one the planner found masked in the whole message, and an id likewise.
func TestEditMasksWhatQuotesAHiddenValue(t *testing.T) {
	r, err := New([]string{"x-secret"}, []string{"$.card.number"})
	if err != nil {
		t.Fatal(err)
	}
	const card, newCard = "4000000000000002", "4111111111111111"
	ed := replay.Edit{SetHeaders: map[string]string{"x-note": "card was " + newCard, "x-plain": "retried", "x-secret": "s3cr3t-value"},
		Diff: &replay.EditDiff{
			ValueBefore: `{"card":{"number":"` + card + `"}}`, ValueAfter: `{"card":{"number":"` + newCard + `"}}`,
			Headers: map[string][2]string{
				"kafka_dlt-exception-message": {"card " + card + " declined", ""},
				"x-note":                      {"", "card was " + newCard},
				"x-plain":                     {"before", "retried"},
				"x-secret":                    {"old-secret", "s3cr3t-value"},
				"x-quotes-secret":             {"saw s3cr3t-value", ""}}}}
	got := r.Edit(ed)
	d := got.Diff
	for _, s := range []string{card, newCard, "secret-value", "s3cr3t"} {
		if strings.Contains(d.ValueBefore+d.ValueAfter, s) {
			t.Errorf("the value shows %s", s)
		}
		for k, v := range d.Headers {
			if strings.Contains(v[0]+v[1], s) {
				t.Errorf("header %s shows %s: %q", k, s, v)
			}
		}
		for k, v := range got.SetHeaders {
			if strings.Contains(v, s) {
				t.Errorf("set header %s shows %s: %q", k, s, v)
			}
		}
	}
	if d.Headers["x-plain"] != [2]string{"before", "retried"} || got.SetHeaders["x-plain"] != "retried" {
		t.Errorf("a header quoting nothing hidden was masked: %v %q", d.Headers["x-plain"], got.SetHeaders["x-plain"])
	}
	if d.Headers["kafka_dlt-exception-message"][1] != "" {
		t.Errorf("a dropped header's after is empty: %q", d.Headers["kafka_dlt-exception-message"])
	}

	// A diff that keeps no value cannot tell what quotes it: the planner's marks do.
	quoting := map[string][2]string{"kafka_dlt-exception-message": {"card " + card + " declined", ""}}
	if got := r.Edit(replay.Edit{Diff: &replay.EditDiff{Headers: quoting}}); got.Diff.Headers["kafka_dlt-exception-message"][0] != quoting["kafka_dlt-exception-message"][0] {
		t.Fatalf("without the planner's mark: %q", got.Diff.Headers)
	}
	marked := r.Edit(replay.Edit{Diff: &replay.EditDiff{Headers: quoting, Masked: []string{"kafka_dlt-exception-message"},
		MessageID: &[2]string{"order-7", "new-1"}, MessageIDMasked: true}})
	if h := marked.Diff.Headers["kafka_dlt-exception-message"]; h != [2]string{Redacted, ""} {
		t.Errorf("a header the planner found masked: %q", h)
	}
	if id := marked.Diff.MessageID; *id != [2]string{Redacted, "new-1"} {
		t.Errorf("an id the planner found masked: %q", *id)
	}
	if id := r.Edit(replay.Edit{Diff: &replay.EditDiff{MessageID: &[2]string{"order-7", "new-1"}}}).Diff.MessageID; id[0] != "order-7" {
		t.Errorf("an id nothing masks: %q", *id)
	}
}
