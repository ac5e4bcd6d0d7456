package configs

import (
	"maps"
	"testing"
)

// An outbox's format picks its default table and columns (upper-case ones for Spring Modulith on
// MySQL, as its MySQL schema has them); columns: overrides them, and a key of another format, an
// unknown format or a setting of another format is refused naming the key.
func TestOutboxFormats(t *testing.T) {
	parse := func(o string) Outbox {
		t.Helper()
		cfg, err := Parse([]byte(minimal+"outboxes: [{name: o, "+o+"}]\n"), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Outboxes[0]
	}
	const pg, my = `dsn: "postgres://u@h/d"`, `dsn: "mysql://u:p@h:3306/d"`
	if o := parse(pg); o.Format != OutboxFormatSeed || o.Table != "outbox_event" || o.Columns.Status != "status" || len(o.Columns.Other) != 0 {
		t.Errorf("seed defaults: %+v", o)
	}
	o := parse(pg + ", format: spring-modulith")
	if o.Table != "event_publication" || o.Columns.Other["listener_id"] != "listener_id" || o.Columns.Other["status"] != "status" ||
		o.CompletionMode != "update" || o.ArchiveTable != "event_publication_archive" || o.Columns.Status != "" {
		t.Errorf("spring-modulith defaults on PostgreSQL: %+v", o)
	}
	o = parse(my + ", format: spring-modulith, completion_mode: archive")
	if o.Table != "EVENT_PUBLICATION" || o.Columns.Other["serialized_event"] != "SERIALIZED_EVENT" || o.ArchiveTable != "EVENT_PUBLICATION_ARCHIVE" {
		t.Errorf("spring-modulith defaults on MySQL: %+v", o)
	}
	o = parse(pg + ", format: namastack, table: app.outbox_record, columns: {handler_id: handler, payload: body}")
	want := map[string]string{"id": "id", "status": "status", "record_key": "record_key", "record_type": "record_type",
		"payload": "body", "created_at": "created_at", "completed_at": "completed_at", "failure_count": "failure_count",
		"failure_reason": "failure_reason", "next_retry_at": "next_retry_at", "handler_id": "handler"}
	if o.Table != "app.outbox_record" || !maps.Equal(o.Columns.Other, want) {
		t.Errorf("namastack overrides: %+v", o)
	}
	o = parse(pg + ", format: debezium")
	if o.Table != "outbox" || o.Columns.Other["aggregateid"] != "aggregateid" || o.Columns.Other["created_at"] != "" {
		t.Errorf("debezium defaults: %+v", o)
	}
	if o = parse(pg + ", format: debezium, columns: {created_at: ts}"); o.Columns.Other["created_at"] != "ts" {
		t.Errorf("debezium created_at: %+v", o)
	}

	outbox := func(opts string) string {
		return minimal + "outboxes: [{name: a, " + pg + "}, {name: b, " + pg + ", " + opts + "}]\n"
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"UnknownFormat", outbox("format: eventuate"), `outboxes[1].format: must be seed, spring-modulith, namastack or debezium, got "eventuate"`},
		{"SeedKeyOnModulith", outbox("format: spring-modulith, columns: {locked_until: lease}"),
			"outboxes[1].columns.locked_until: is not a column of the spring-modulith format (its columns: id, listener_id, event_type,"},
		{"ModulithKeyOnSeed", outbox("columns: {listener_id: l}"), "outboxes[1].columns.listener_id: is not a column of the seed format"},
		{"BadColumn", outbox("format: namastack, columns: {handler_id: \"x; drop\"}"), `outboxes[1].columns.handler_id: "x; drop" is not a plain SQL identifier`},
		{"BadCompletionMode", outbox("format: spring-modulith, completion_mode: ARCHIVED"),
			`outboxes[1].completion_mode: must be update, delete or archive (spring.modulith.events.completion-mode), got "ARCHIVED"`},
		{"CompletionModeOnSeed", outbox("completion_mode: archive"), "outboxes[1].completion_mode: is a setting of format spring-modulith only"},
		{"BadArchiveTable", outbox("format: spring-modulith, archive_table: \"a b\""), `outboxes[1].archive_table: "a b" must be an identifier`},
	} {
		t.Run(tc.name, func(t *testing.T) { refused(t, tc.yaml, tc.want) })
	}
}
