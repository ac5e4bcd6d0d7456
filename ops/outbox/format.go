package outbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/catalog"
	"github.com/redrive/redrive/ops/payload"
)

// Format describes an outbox table's layout as the console presents it: its states in lifecycle
// order, which of them need a person, and what the console may do. Pages and the API present any
// outbox from its Format; the formats are listed here and nowhere else (Formats).
type Format struct {
	// Name is the outboxes[].format value: seed, spring-modulith, namastack, debezium.
	Name string
	// Title names the layout for people ("Spring Modulith event publication registry").
	Title string
	// States are the format's own state names in lifecycle order; empty for a format without
	// states (debezium: its state lives in the connector's offsets).
	States []Status
	// Attention are the states a person should look at (FAILED publications, DEAD events).
	Attention []Status
	// Incomplete are the states not yet done, whose oldest row's age the overview shows.
	Incomplete []Status
	// Repairs is true where the console itself repairs rows (release, requeue): the seed only.
	Repairs bool
	// ReadOnlyWhy says, for a format without repairs, why the console writes nothing and what
	// does the work instead (the application-side call), as the page and a refusal say it.
	ReadOnlyWhy string
	// KeyLabel names a record's key column for people ("listener", "handler", "aggregate").
	KeyLabel string
}

// The formats. Seed is today's outbox_event, with the console's repairs.
var (
	FormatSeed = Format{Name: "seed", Title: "transactional outbox (outbox_event)", States: Statuses,
		Attention: []Status{Dead}, Incomplete: []Status{Ready, Processing, Failed}, Repairs: true, KeyLabel: "aggregate"}
	// FormatSpringModulith is Spring Modulith's event publication registry (v2: with a status
	// column, whose value is the state whatever completion_date says, as Spring Modulith reads it;
	// v1: without, where incomplete means completion_date IS NULL and the states shown are
	// PUBLISHED, STALE and COMPLETED). Two states are the console's own words for rows nothing
	// will re-run by itself: STRANDED, a v2 row without a status (ModulithStranded), and STALE, a
	// v1 publication incomplete for longer than stale_ready_after (ModulithStale). The console
	// writes nothing: Spring Modulith re-invokes a listener only when the application calls its
	// resubmission API, which selects the rows by state and marks them RESUBMITTED itself
	// (JdbcEventPublicationRepositoryV2.markResubmitted); a state the console wrote would re-run
	// nothing and could take a row out of the selection that would.
	FormatSpringModulith = Format{Name: "spring-modulith", Title: "Spring Modulith event publication registry",
		States:     []Status{"PUBLISHED", "PROCESSING", "RESUBMITTED", "FAILED", ModulithStranded, ModulithStale, "COMPLETED"},
		Attention:  []Status{"FAILED", ModulithStranded, ModulithStale},
		Incomplete: []Status{"PUBLISHED", "PROCESSING", "RESUBMITTED", "FAILED", ModulithStranded, ModulithStale},
		ReadOnlyWhy: "Spring Modulith re-runs a listener only when the application resubmits: " +
			"FailedEventPublications.resubmit(ResubmissionOptions) for FAILED publications, " +
			"IncompleteEventPublications.resubmitIncompletePublications(…) for incomplete ones, or a restart with " +
			"spring.modulith.events.republish-outstanding-events-on-restart. A state written here would re-run nothing.",
		KeyLabel: "listener"}
	// FormatNamastack is namastack-outbox's outbox_record, retried by its own scheduler.
	FormatNamastack = Format{Name: "namastack", Title: "namastack-outbox (outbox_record)",
		States: []Status{"NEW", "FAILED", "COMPLETED"}, Attention: []Status{"FAILED"}, Incomplete: []Status{"NEW", "FAILED"},
		ReadOnlyWhy: "namastack-outbox's scheduler owns its records' states: it retries NEW records at next_retry_at and " +
			"marks them FAILED past its retry policy. Nothing shows that it would take up a record the console reset, " +
			"so a FAILED record is retried from the application, not from here.",
		KeyLabel: "handler"}
	// FormatDebezium is the insert-only outbox table Debezium's outbox event router reads from
	// the database's log: a row has no state; whether it was published is the connector's offset.
	FormatDebezium = Format{Name: "debezium", Title: "Debezium outbox (insert-only)",
		ReadOnlyWhy: "Debezium reads this table from the database's log: a row has no state, and whether it was " +
			"published lives in the connector's offsets, not here. See the connector's status in Kafka Connect.",
		KeyLabel: "aggregate"}
)

// ModulithStranded is a Spring Modulith v2 publication with no status and no completion_date: a
// v1 row the upgrade to the v2 columns left without one. Spring Modulith reads it as PROCESSING and
// selects it for resubmission, but its markResubmitted (… WHERE STATUS != 'RESUBMITTED') never
// matches a NULL status, so neither FailedEventPublications nor IncompleteEventPublications nor a
// restart ever runs its listener again.
const ModulithStranded Status = "STRANDED"

// ModulithStale is a Spring Modulith v1 publication (a table without a status column) still
// incomplete after the outbox's stale_ready_after: its listener failed or its run was lost, and
// only the application's resubmission of incomplete publications runs it again.
const ModulithStale Status = "STALE"

// Formats lists every format, the default first.
var Formats = []Format{FormatSeed, FormatSpringModulith, FormatNamastack, FormatDebezium}

// FormatNamed is the format of an outboxes[].format value (configs validated it); the seed for
// anything else.
func FormatNamed(name string) Format {
	for _, f := range Formats {
		if f.Name == name {
			return f
		}
	}
	return FormatSeed
}

// NeedsAttention reports whether s is one of the format's attention states.
func (f Format) NeedsAttention(s Status) bool {
	for _, a := range f.Attention {
		if a == s {
			return true
		}
	}
	return false
}

// ParseState accepts one of the format's state names in any case.
func (f Format) ParseState(s string) (Status, error) {
	for _, st := range f.States {
		if strings.EqualFold(s, string(st)) {
			return st, nil
		}
	}
	if len(f.States) == 0 {
		return "", ops.Invalid("status", fmt.Sprintf("a %s outbox has no states", f.Name))
	}
	names := make([]string, len(f.States))
	for i, st := range f.States {
		names[i] = string(st)
	}
	return "", ops.Invalid("status", fmt.Sprintf("%q is not one of %s", payload.Clip(s, EchoLimit), strings.Join(names, ", ")))
}

// Record is one row of a registry-format outbox (every format but the seed), in the console's
// words: a string id (a UUID), the format's own state name, what it carries and for whom.
type Record struct {
	ID        string
	State     Status // "" for a format without states
	Type      string // the event's type (event_type, record_type, type)
	Key       string // listener_id, handler_id or aggregateid: for whom or about what
	Aggregate string // record_key or aggregatetype, "" when the format has none
	Created   time.Time
	Completed *time.Time
	NextRetry *time.Time // namastack's next_retry_at
	Resubmit  *time.Time // spring-modulith's last_resubmission_date
	Attempts  int
	Error     *string // namastack's failure_reason
	Payload   string  // only from Record; a list carries none
}

// RecordFilter selects registry records: in a state, of a type, for a key, older than Before (the
// id of the last row of the previous page, with its Created: the list is newest first).
type RecordFilter struct {
	State  Status
	Type   string
	Key    string
	Limit  int // 1..MaxLimit+1
	Cursor *RecordCursor
}

// RecordCursor is where a page of records continues: rows strictly older than (Created, ID).
type RecordCursor struct {
	Created time.Time
	ID      string
}

// RecordGroup counts the rows of one state for one key and type, with the oldest's age and the
// most attempts: the "per listener and event type" view of the incomplete and failed ones.
type RecordGroup struct {
	State       Status
	Key, Type   string
	Count       int64
	Oldest      time.Duration
	MaxAttempts int
}

// RecordStats is a registry's overview: the rows per state ("" for a format without states),
// the oldest incomplete row's age, the rows created in the last RateWindow (when the format
// tells creation times), and the incomplete and attention rows grouped by key and type.
type RecordStats struct {
	Counts        map[Status]int64
	Total         int64
	OldestAge     *time.Duration // the oldest incomplete row (every row for a format without states)
	RecentRows    *int64         // created within RateWindow; nil when the table tells no creation time
	Groups        []RecordGroup
	Note          string // the layout found ("v1 layout: no status column"); why attention rows wait, what to do
	CompletedGone bool   // completed rows are deleted (completion_mode delete) and so not counted
	// CompletedIsEstimate: on a large registry the completed rows are the database's estimate of
	// the table's rows minus the incomplete ones, counted exactly (ExactSentBelow).
	CompletedIsEstimate bool
}

// RateWindow is the window a registry's rate is counted over.
const RateWindow = 5 * time.Minute

// MaxGroups bounds the groups a registry's overview lists.
const MaxGroups = 50

// Registry is a registry-format outbox table as an adapter of its database reads it: read-only,
// the format's own states. Errors are the ops kinds, as Store's: ops.ErrNotFound for a record
// that does not exist, ops.ErrUnavailable when the database cannot be reached or refuses.
//
// Every adapter passes ops/outbox/outboxtest.ExerciseRegistry.
type Registry interface {
	Ping(ctx context.Context) error
	Close()
	// Stats is the overview; it must stay cheap on a large table (counts by state with the
	// format's indexes, groups bounded by MaxGroups).
	Stats(ctx context.Context) (RecordStats, error)
	// Records returns at most f.Limit records matching f, newest first, without payloads.
	Records(ctx context.Context, f RecordFilter) ([]Record, error)
	// Record reads one record with its payload; ops.ErrNotFound when there is none.
	Record(ctx context.Context, id string) (Record, error)
	// Inspect reads from the catalog only, for console doctor, the table's columns and their
	// types and the account's SELECT on the format's mapped columns (Columns).
	Inspect(ctx context.Context) (catalog.TableFacts, error)
}
