package outboxes

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
)

// Registry is a registry-format outbox's overview, as its format describes it.
type Registry struct {
	Format, Title    string
	ReadOnlyWhy      string // what does the work instead of the console
	KeyLabel         string // "listener", "handler", "aggregate"
	AttentionStates  []string
	Attention        int64
	Rows             int64
	OldestAge        *time.Duration // the oldest incomplete row; nil: none
	PerMinute        *float64       // rows created per minute over the last 5 minutes; nil: unknown
	Note             string
	CompletedDeleted bool
	// CompletedIsEstimate: the completed count is the database's estimate (a large registry).
	CompletedIsEstimate bool
	Groups              []RecordGroup
}

// RecordGroup is the incomplete rows of one state, key and type.
type RecordGroup struct {
	State, Key, Type string
	Count            int64
	Oldest           time.Duration
	MaxAttempts      int
	Attention        bool
}

// RecordRow is one record of a registry.
type RecordRow struct {
	ID, State, Type, Key, Aggregate string
	Created                         time.Time
	Completed, NextRetry, Resubmit  *time.Time
	Attempts                        int
	Error                           string
	Attention                       bool
}

// RecordFilters are a registry list's filters, as typed.
type RecordFilters struct {
	Status, EventType, Key string
}

// RegistryPage is one registry-format outbox.
type RegistryPage struct {
	Meta      layout.Meta
	Summary   Summary
	Filters   RecordFilters
	Records   []RecordRow
	ListError string
	NextURL   string
}

// RecordPage is one record with its payload.
type RecordPage struct {
	Meta      layout.Meta
	Outbox    string
	Format    *Registry
	Record    RecordRow
	Payload   string
	IsJSON    bool
	Truncated bool
	Size      int
	Redacted  bool
	CanReveal bool
}

func oldestText(r *Registry) string {
	if r.OldestAge == nil {
		return "none"
	}
	return components.FormatAge(*r.OldestAge)
}

func rateText(r *Registry) string {
	if r.PerMinute == nil {
		if r.Format == "debezium" {
			return "unknown (set columns.created_at)"
		}
		return "unknown"
	}
	return strconv.FormatFloat(*r.PerMinute, 'f', 1, 64) + "/min"
}

func stateHint(r *Registry, state string) string {
	if state == "COMPLETED" && r.CompletedIsEstimate {
		return "estimate (database statistics)"
	}
	return ""
}

func stateTone(attention bool, n int64) string {
	if attention && n > 0 {
		return components.StatusTone("DEAD")
	}
	return components.ToneNeutral
}

func (r *Registry) needsAttention(state string) bool {
	for _, s := range r.AttentionStates {
		if s == state {
			return true
		}
	}
	return false
}

func recordURL(name, id string) string { return paths.Outbox(name) + "/events/" + url.PathEscape(id) }

func keyFilterURL(name, state, key, typ string) string {
	q := url.Values{"key": {key}, "event_type": {typ}}
	if state != "" {
		q.Set("status", state)
	}
	return paths.WithQuery(paths.Outbox(name), q)
}

func timeText(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func fmtNum(n int64) string { return components.FormatNum(n) }

// capital is s with its first letter upper-case, for a column header.
func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
