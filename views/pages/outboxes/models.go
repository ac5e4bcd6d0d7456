// Package outboxes renders the outbox pages: every outbox's overview, one outbox's events with
// filters and repair actions, and one event's detail.
package outboxes

import (
	"net/url"
	"strconv"
	"time"

	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
)

// Summary is one outbox's overview panel. Error set means the panel could not be loaded.
type Summary struct {
	Name           string
	Counts         []StatusCount // READY, PROCESSING, SENT, FAILED, DEAD in that order
	SentIsEstimate bool
	Stuck          int64
	Dead           int64
	OldestReadyAge *time.Duration // nil: nothing due
	OldestStuckAge *time.Duration // since the earliest stuck lease expired; nil: none stuck
	MaxAttempts    int
	CheckedAt      time.Time
	Error          string
	// Registry is set for a registry-format outbox (spring-modulith, namastack, debezium): the
	// panel shows its own states (Counts) and overview instead of leases and relay delay.
	Registry *Registry
}

// StatusCount is the number of events in one state.
type StatusCount struct {
	Status string
	Count  int64
}

// EventRow is one event in a list or on its detail page.
type EventRow struct {
	ID            int64
	EventID       string
	AggregateType string
	AggregateID   string
	EventType     string
	SchemaVersion int
	Status        string
	Attempts      int
	AvailableAt   time.Time
	LockedUntil   *time.Time
	LastError     string
	CreatedAt     time.Time
	SentAt        *time.Time
	Stuck         bool
	Requeueable   bool // DEAD or FAILED
	// Resolution is what was decided about a DEAD event (kept in the console's store); zero
	// for one never marked, which is open.
	Resolution Resolution
}

// Resolution is a DEAD event's resolution: resolved or ignored by a person, replayed by a job,
// or open again.
type Resolution struct {
	State  string
	By     string
	At     time.Time
	Reason string
	JobID  string
}

// Filters are the event list's current filter values, as typed.
type Filters struct {
	Status      string
	EventType   string
	AggregateID string
	Stuck       bool
	CreatedFrom string
	CreatedTo   string
	Limit       int
}

// IndexPage lists every configured outbox.
type IndexPage struct {
	Meta     layout.Meta
	Outboxes []Summary
}

// ShowPage is one outbox: its panel, filters, events and actions.
type ShowPage struct {
	Meta      layout.Meta
	Summary   Summary
	Filters   Filters
	Events    []EventRow
	ListError string
	NextURL   string
	FirstPage bool
	Notice    string // what the form action that led here did (its flash); never read from the URL
	Self      string // this page's URL with its filters: where its forms come back to
	CanAct    bool
	// Resolvable: the console has a store, so DEAD events can be marked resolved or ignored.
	Resolvable bool
}

// The repairs of ticked events that can apply to what the filters list: a button for rows the
// list cannot hold only leads to a refusal.

// CanRelease: the list may hold stuck leases (PROCESSING rows).
func (p ShowPage) CanRelease() bool {
	return p.CanAct && (p.Filters.Stuck || p.Filters.Status == "" || p.Filters.Status == "PROCESSING")
}

// CanRequeue: the list may hold DEAD or FAILED events, which a requeue or a guarded replay takes.
func (p ShowPage) CanRequeue() bool {
	return p.CanAct && !p.Filters.Stuck && (p.Filters.Status == "" || p.Filters.Status == "DEAD" || p.Filters.Status == "FAILED")
}

// CanResolve: the list may hold DEAD events and the console can keep their resolution.
func (p ShowPage) CanResolve() bool {
	return p.CanAct && p.Resolvable && !p.Filters.Stuck && (p.Filters.Status == "" || p.Filters.Status == "DEAD")
}

// reasonPlaceholder says which of the shown repairs the reason is for.
func reasonPlaceholder(p ShowPage) string {
	switch {
	case p.CanRequeue() && p.CanResolve():
		return "Reason for requeue or resolution (required, audited)"
	case p.CanResolve():
		return "Reason for the resolution (required, audited)"
	}
	return "Reason for the requeue (required, audited)"
}

// CanSelect: one of the repairs of ticked events applies, so the rows have boxes to tick.
func (p ShowPage) CanSelect() bool { return p.CanRelease() || p.CanRequeue() || p.CanResolve() }

// EventPage is one event's detail.
type EventPage struct {
	Meta             layout.Meta
	Outbox           string
	MaxAttempts      int
	Event            EventRow
	Payload          string
	PayloadIsJSON    bool
	PayloadTruncated bool
	PayloadSize      int
	CanAct           bool
	Redacted         bool   // some values are masked (redaction rules)
	CanReveal        bool   // an admin may reveal them, audited
	Notice           string // what the form action that led here did (its flash)
}

// statusURL is the outbox's events in one status.
func statusURL(name, status string) string {
	return paths.WithQuery(paths.Outbox(name), url.Values{"status": {status}})
}

// stuckURL is the outbox's events whose lease expired.
func stuckURL(name string) string {
	return paths.WithQuery(paths.Outbox(name), url.Values{"stuck": {"true"}})
}

func countHint(s Summary, status string) string {
	switch status {
	case "SENT":
		if s.SentIsEstimate {
			return "estimate (planner statistics)"
		}
	case "PROCESSING":
		if s.Stuck > 0 {
			return components.FormatNum(s.Stuck) + " with an expired lease"
		}
	}
	return ""
}

func countTone(status string, n int64) string {
	if n == 0 {
		return components.ToneNeutral
	}
	return components.StatusTone(status)
}

func backlogText(s Summary) string {
	if s.OldestReadyAge == nil {
		return "nothing due"
	}
	return components.FormatAge(*s.OldestReadyAge)
}

// stuckText is the stuck leases' card's caption: since when the oldest is stuck, when known.
func stuckText(s Summary) string {
	if s.Stuck == 0 || s.OldestStuckAge == nil {
		return "PROCESSING past locked_until"
	}
	return "oldest lease expired " + components.FormatAge(*s.OldestStuckAge) + " ago"
}

func itoa(n int) string { return strconv.Itoa(n) }

var statuses = []string{"READY", "PROCESSING", "SENT", "FAILED", "DEAD"}

// resolutionTitle says who settled a DEAD event, when and why.
func resolutionTitle(r Resolution) string {
	t := r.State + " by " + r.By + " at " + r.At.UTC().Format("2006-01-02 15:04 UTC")
	if r.JobID != "" {
		t += " (job " + r.JobID + ")"
	}
	if r.Reason != "" {
		t += ": " + r.Reason
	}
	return t
}

// timeKey is an optional time's sort key (components.TimeSortKey); "" (sorted last) for none.
func timeKey(t *time.Time) string {
	if t == nil {
		return ""
	}
	return components.TimeSortKey(*t)
}
