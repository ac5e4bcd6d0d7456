package configs

import (
	"testing"
)

// An inbox's format picks its default table and columns; columns: overrides them, and a key of
// the other format, an unknown format or a column that is no identifier is refused naming the key.
func TestInboxFormats(t *testing.T) {
	parse := func(inbox string) *Inbox {
		t.Helper()
		cfg, err := Parse([]byte(minimal+"consumers: [{name: c, inbox: {dsn: \"mysql://u:p@h:3306/d\""+inbox+"}}]\n"), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Consumers[0].Inbox
	}
	if in := parse(""); in.Format != InboxSeed || in.Table != "inbox_message" ||
		in.Columns != (InboxColumns{MessageID: "message_id", Consumer: "consumer", ReceivedAt: "received_at", ProcessedAt: "processed_at"}) {
		t.Errorf("seed defaults: %+v", in)
	}
	if in := parse(", format: eventuate"); in.Format != InboxEventuate || in.Table != "received_messages" ||
		in.Columns != (InboxColumns{MessageID: "message_id", ConsumerID: "consumer_id", CreationTime: "creation_time"}) {
		t.Errorf("eventuate defaults: %+v", in)
	}
	if in := parse(", format: eventuate, table: eventuate.received_messages, columns: {consumer_id: subscriber, creation_time: created_ms}"); in.Table != "eventuate.received_messages" ||
		in.Columns != (InboxColumns{MessageID: "message_id", ConsumerID: "subscriber", CreationTime: "created_ms"}) {
		t.Errorf("eventuate overrides: %+v", in)
	}

	inbox := func(opts string) string {
		return minimal + "consumers: [{name: c}, {name: d, inbox: {dsn: \"postgres://x@h/d\", " + opts + "}}]\n"
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"UnknownFormat", inbox("format: debezium"), `consumers[1].inbox.format: must be seed or eventuate, got "debezium"`},
		{"SeedKeyOnEventuate", inbox("format: eventuate, columns: {processed_at: done_at}"),
			"consumers[1].inbox.columns.processed_at: is not a column of the eventuate format (its columns: message_id, consumer_id, creation_time)"},
		{"EventuateKeyOnSeed", inbox("columns: {creation_time: t}"),
			"consumers[1].inbox.columns.creation_time: is not a column of the seed format (its columns: message_id, consumer, received_at, processed_at)"},
		{"BadEventuateColumn", inbox("format: eventuate, columns: {consumer_id: \"x; drop\"}"), `consumers[1].inbox.columns.consumer_id: "x; drop" is not a plain SQL identifier`},
		{"BadSeedColumn", inbox("columns: {message_id: \"a b\"}"), `consumers[1].inbox.columns.message_id: "a b" is not a plain SQL identifier`},
		{"MisspeltKey", inbox("format: eventuate, columns: {creation_tme: t}"), "creation_tme"},
	} {
		t.Run(tc.name, func(t *testing.T) { refused(t, tc.yaml, tc.want) })
	}
}
