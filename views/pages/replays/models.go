// Package replays renders the guarded-replay pages: jobs, a plan with its verdicts, a job's
// progress and ledger.
package replays

import (
	"net/url"
	"strconv"
	"time"

	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
)

// IndexPage lists recent jobs.
type IndexPage struct {
	Meta  layout.Meta
	Jobs  []JobView
	Error string
}

// JobView is one job and its progress.
type JobView struct {
	ID         string
	PlanID     string
	Status     string
	Total      int64
	Published  int64
	Skipped    int64
	Failed     int64
	Actor      string
	Reason     string
	Force      bool
	Rate       int
	Error      string
	CreatedAt  time.Time
	FinishedAt *time.Time
	ApprovedBy string
	Running    bool
	Awaiting   bool // four-eyes: waiting for a second person
}

// Remaining is what the job has not settled yet.
func (j JobView) Remaining() int64 { return max(0, j.Total-j.Published-j.Skipped-j.Failed) }

// PlanPage is a plan: counts, groups, warnings, items and the run form.
type PlanPage struct {
	Meta      layout.Meta
	ID        string
	CreatedAt time.Time
	Actor     string
	Source    string
	Total     int
	Counts    []ActionCount
	Groups    []GroupCount
	Warnings  []string
	Items     []ItemView
	CanRun    bool
	CanForce  bool
}

// ActionCount is how many messages get one action.
type ActionCount struct {
	Action string
	Count  int
}

// GroupCount is the actions of one error group.
type GroupCount struct {
	Group  string
	Counts []ActionCount
}

// ItemView is one planned message.
type ItemView struct {
	Seq         int
	Locator     string
	MessageID   string
	Consumer    string
	Destination string
	Inbox       string
	Action      string
	ErrorGroup  string
}

// JobPage is one job with its ledger.
type JobPage struct {
	Meta        layout.Meta
	Job         JobView
	Ledger      []LedgerRow
	LedgerError string
}

// LedgerRow is one message's outcome.
type LedgerRow struct {
	Seq       int
	Locator   string
	MessageID string
	Outcome   string
	Detail    string
	At        time.Time
}

func jobURL(id string) string { return "/replays/" + url.PathEscape(id) }

func planURL(id string) string { return "/replays/plans/" + url.PathEscape(id) }

func itoa(n int) string { return strconv.Itoa(n) }

func actionTone(a string) string {
	switch a {
	case "publish":
		return components.ToneOK
	case "skip_processed", "skip_already_replayed":
		return components.ToneNeutral
	case "skip_in_progress", "skip_replay_limit":
		return components.ToneWarn
	}
	return components.ToneAlert
}

func outcomeTone(o string) string {
	switch o {
	case "published":
		return components.ToneOK
	case "failed":
		return components.ToneDanger
	case "active":
		return components.ToneWarn
	}
	return components.ToneNeutral
}

func statusLabel(s string) string { return s }

func countTone(c ActionCount) string {
	if c.Count == 0 {
		return components.ToneNeutral
	}
	return actionTone(c.Action)
}

func failedTone(n int64) string {
	if n > 0 {
		return components.ToneDanger
	}
	return components.ToneNeutral
}
