package audit

import (
	"time"

	"github.com/redrive/redrive/ops"
)

// The audit log's model: what a row says (Entry), how a listing is narrowed (Filter), the
// outcomes. The log itself is kept by an adapter (ops/store, in PostgreSQL) behind Log.

// Outcomes of an audited action.
const (
	OutcomeOK     = "ok"
	OutcomeDenied = "denied"
	OutcomeFailed = "failed"
	// A replay job's finish: it was cancelled, or it ended with some messages failed.
	OutcomeCancelled = "cancelled"
	OutcomePartial   = "partial"
)

// Entry is one row of the append-only audit log.
type Entry struct {
	ID        int64
	At        time.Time
	Actor     string
	Role      string
	SourceIP  string
	UserAgent string
	Action    string // e.g. outbox.release_leases, outbox.requeue
	Target    string // e.g. outbox/orders
	Count     *int64 // rows or messages affected, when it applies
	Reason    string
	Outcome   string // OutcomeOK, OutcomeDenied, OutcomeFailed
	Detail    map[string]any
}

// OutboxTarget is the Target of a change to outbox name's events: "outbox/orders".
func OutboxTarget(name string) string { return "outbox/" + name }

// RowRef names one row a change touched, as the outbox repairs record them: the entry's Target and
// one of the ids in its detail.ids.
type RowRef struct {
	Target string
	ID     int64
}

// Outcomes are every outcome a row may have, as a listing's filter may name them.
var Outcomes = []string{OutcomeOK, OutcomeFailed, OutcomeDenied, OutcomeStarted, OutcomePartial, OutcomeCancelled}

// Filter narrows a listing. Zero fields do not filter; Limit 0 means 100.
type Filter struct {
	Actor  string
	Action string
	// Outcome is one of Outcomes. OutcomeStarted lists the intents no outcome row names yet (a
	// change under way, or one whose outcome could not be written) unless Intents is set.
	Outcome string
	Target  string    // exact: "outbox/orders"
	Since   time.Time // at or after
	Until   time.Time // before
	Before  int64     // keyset cursor: entries with id < Before
	Limit   int
	// Intents also lists the intent row ("started") of changes whose outcome row follows it; by
	// default an action reads as one entry, its outcome.
	Intents bool
}

// MaxLimit caps one page of the audit list.
const MaxLimit = 1000

// The two-phase audit of a change.
const (
	// OutcomeStarted is the intent row, written before the change is attempted: when it cannot be
	// written, nothing is changed. The outcome row that follows (ok or failed) names it in
	// detail.intent_id, so the audit page can show the two as one action.
	OutcomeStarted = "started"
)

// OutcomeOf is the outcome row of the change whose intent row (id intent) was written from base:
// base's detail with intent_id, n as its count, and, when cause is set, what a person may read
// of it (ops.Message) as detail.error.
func OutcomeOf(base Entry, intent int64, outcome string, n *int64, cause error) Entry {
	e := base
	e.Outcome, e.Count = outcome, n
	e.Detail = map[string]any{"intent_id": intent}
	for k, v := range base.Detail {
		e.Detail[k] = v
	}
	// What a person may read about the cause, never its text: the audit log is shown to every
	// viewer, and a cause's text is a driver's or a broker's ("… (SQLSTATE 22P05)", a host, a
	// webhook URL with its token). The console's log has the whole error.
	if cause != nil {
		e.Detail["error"] = ops.Message(cause)
	}
	return e
}
