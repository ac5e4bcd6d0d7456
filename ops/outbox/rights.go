package outbox

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/redrive/redrive/ops/catalog"
)

// ColumnKind is what the console does with a column's values, which decides the types it accepts.
type ColumnKind string

// Column kinds.
const (
	KindInteger   ColumnKind = "integer"   // id, attempts, schema_version: read as bigint/int
	KindText      ColumnKind = "text"      // ids, names, status, errors: read as text, status compared to 'READY'…
	KindTimestamp ColumnKind = "timestamp" // available_at, locked_until, created_at, sent_at: compared to now()
	KindPayload   ColumnKind = "payload"   // the event body: read as text
)

// Column is one mapped column of the outbox table.
type Column struct {
	Logical string // the config key under outboxes[].columns
	Name    string // the table's real column name
	Kind    ColumnKind
	// Repaired is true for the columns release and requeue UPDATE.
	Repaired bool
}

// ColumnNames are an outbox table's real column names by logical name, defaults applied: the
// domain's copy of outboxes[].columns, which the adapters and the doctor convert to
// (outbox.ColumnNames(cfg.Columns): the fields must stay the same for that conversion to compile).
type ColumnNames struct {
	ID, EventID, AggregateType, AggregateID, EventType, SchemaVersion, Payload string
	Status, Attempts, AvailableAt, LockedUntil, LastError, CreatedAt, SentAt   string
	// Other holds a registry format's columns by its own logical names (spring-modulith,
	// namastack, debezium): its whole mapping.
	Other map[string]string
}

// Columns lists the mapped columns of c (defaults applied), in the seed's order: what an adapter
// inspects and console doctor checks.
//
// A registry format's mapping (c.Other, filled for spring-modulith, namastack and debezium) gives
// that format's columns, by their logical names in sorted order, none repaired: the console only
// reads them.
func Columns(c ColumnNames) []Column {
	if len(c.Other) > 0 {
		var out []Column
		for _, logical := range slices.Sorted(maps.Keys(c.Other)) {
			if c.Other[logical] == "" {
				continue
			}
			out = append(out, Column{Logical: logical, Name: c.Other[logical], Kind: registryKind(logical)})
		}
		return out
	}
	return []Column{
		{"id", c.ID, KindInteger, false},
		{"event_id", c.EventID, KindText, false},
		{"aggregate_type", c.AggregateType, KindText, false},
		{"aggregate_id", c.AggregateID, KindText, false},
		{"event_type", c.EventType, KindText, false},
		{"schema_version", c.SchemaVersion, KindInteger, false},
		{"payload", c.Payload, KindPayload, false},
		{"status", c.Status, KindText, true},
		{"attempts", c.Attempts, KindInteger, true},
		{"available_at", c.AvailableAt, KindTimestamp, true},
		{"locked_until", c.LockedUntil, KindTimestamp, true},
		{"last_error", c.LastError, KindText, false},
		{"created_at", c.CreatedAt, KindTimestamp, false},
		{"sent_at", c.SentAt, KindTimestamp, false},
	}
}

// Rights are the columns of c (Columns) on which the console needs the account's rights: it
// selects every mapped one and updates the repaired ones. An adapter's Inspect asks about them.
func Rights(c ColumnNames) (selected, updated []string) {
	for _, col := range Columns(c) {
		selected = append(selected, col.Name)
		if col.Repaired {
			updated = append(updated, col.Name)
		}
	}
	return selected, updated
}

// registryKind is the kind of a registry format's logical column, from its name.
func registryKind(logical string) ColumnKind {
	switch {
	case logical == "serialized_event" || logical == "payload":
		return KindPayload
	case strings.HasSuffix(logical, "_date") || strings.HasSuffix(logical, "_at"):
		return KindTimestamp
	case logical == "completion_attempts" || logical == "failure_count":
		return KindInteger
	}
	return KindText
}

// Inspect reads, from the catalog only, what the doctor checks about this outbox's table: its
// columns and their types, its indexes, and the account's SELECT on every mapped column and UPDATE
// on the repaired ones (Columns of the table's configured mapping). Nothing is tried or written.
func (o *Outbox) Inspect(ctx context.Context) (catalog.TableFacts, error) {
	return o.store.Inspect(ctx)
}
