// Package replays renders the guarded-replay pages: jobs, a plan with its verdicts, a job's
// progress and ledger.
package replays

import (
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
)

// IndexPage lists recent jobs.
type IndexPage struct {
	Meta  layout.Meta
	Jobs  []JobView
	Error string
	// RoutesError: the jobs' sources and destinations could not be read (the jobs still show).
	RoutesError string
}

// JobView is one job and its progress.
type JobView struct {
	ID     string
	PlanID string
	Status string
	// Outcome is how it ended: done, done_with_failures, or the status.
	Outcome string
	// Paused says why a running job waits for a dependency; "" while it progresses.
	Paused     string
	Total      int64
	Published  int64
	Skipped    int64
	Failed     int64
	Remaining  int64 // not settled yet (replay.Job.Remaining)
	Actor      string
	Reason     string
	Force      bool
	Rate       int
	Error      string
	CreatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
	ApprovedBy string
	Running    bool
	Awaiting   bool // four-eyes: waiting for a second person
	// Source and Destination word where the plan's messages come from and go back to; "" unknown.
	Source      string
	Destination string
	// Discard: the job archives each message and acks it from its queue, publishing nothing; its
	// Published count is what it archived.
	Discard bool
	// Requeue: an outbox job, which sets DEAD or FAILED rows back to READY for the service's relay
	// to publish; the console publishes nothing, so no broker confirms anything. Its Published
	// count is what it set back to READY.
	Requeue bool
	// Approve and Cancel are what the signed-in user may do with the job, as the engine would
	// answer (replay.ApproveRefused, replay.CancelRefused): the job page offers only these buttons.
	// Cancel is also the Reject of a job awaiting approval.
	Approve, Cancel components.Offer
}

// Noun is what the job is called on its page: a replay, or a discard.
func (j JobView) Noun() string { return noun(j.Discard) }

// noun names a job or plan by what it does with the messages it moves.
func noun(discard bool) string {
	if discard {
		return "Discard"
	}
	return "Replay"
}

// Outcomes beside the statuses.
const (
	OutcomeDone             = "done"
	OutcomeDoneWithFailures = "done_with_failures"
)

// Duration is how long the job ran ("3 min 12 s"), how long it has been running ("running for
// 12 s"), or "not started".
func (j JobView) Duration(now time.Time) string {
	prefix, amount := j.durationParts(now)
	return prefix + amount
}

// durationParts splits Duration into its words ("running for ", or "") and the amount, which a
// table cell keeps on one line ("5 min 24 s", or "not started").
func (j JobView) durationParts(now time.Time) (prefix, amount string) {
	d, ok := j.elapsed(now)
	switch {
	case !ok:
		return "", "not started"
	case j.FinishedAt != nil:
		return "", components.FormatAge(d)
	}
	return "running for ", components.FormatAge(d)
}

// elapsed is how long the job ran, or has been running at now; ok is false before it started.
func (j JobView) elapsed(now time.Time) (d time.Duration, ok bool) {
	switch {
	case j.StartedAt == nil:
		return 0, false
	case j.FinishedAt != nil:
		return j.FinishedAt.Sub(*j.StartedAt), true
	}
	return now.Sub(*j.StartedAt), true
}

// durationSort is what a Duration cell sorts by: the length in milliseconds, so that "17 ms"
// comes before "1 s" and "28 s" before "5 min 24 s" (a running job by how long it has run so
// far); "" for a job that never started, which app.js puts last in either direction.
func (j JobView) durationSort(now time.Time) string {
	if d, ok := j.elapsed(now); ok {
		return strconv.FormatInt(d.Milliseconds(), 10)
	}
	return ""
}

// OutcomeLabel is the outcome for people.
func (j JobView) OutcomeLabel() string {
	if j.Outcome == OutcomeDoneWithFailures {
		return "done with failures"
	}
	return j.Outcome
}

// WithFailures reports a finished job some of whose messages failed: it is not shown as a green
// done.
func (j JobView) WithFailures() bool { return j.Outcome == OutcomeDoneWithFailures }

// Summary is "done: 10 published, 2 skipped, 0 failed".
func (j JobView) Summary() string {
	return j.OutcomeLabel() + ": " + components.FormatNum(j.Published) + " " + j.Moved() + ", " + components.FormatNum(j.Skipped) +
		" skipped, " + components.FormatNum(j.Failed) + " failed"
}

// Moved is the word for what the job did with a message it moved: published, archived, or (an
// outbox's rows) set back to READY for the relay.
func (j JobView) Moved() string {
	switch {
	case j.Discard:
		return "archived"
	case j.Requeue:
		return RequeuedWords
	}
	return "published"
}

// RequeuedWords is what an outbox job did with a row it moved: the relay publishes it, not the
// console.
const RequeuedWords = "set back to READY for the relay"

// FailureGroup is how many messages failed for one reason.
type FailureGroup struct {
	Detail string
	Count  int64
}

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
	// Run is whether the user may start a job of the plan (the start route's role and
	// replay.operator_max_messages), Force whether they may force it past the inbox (an admin).
	Run, Force components.Offer
	// Discard: a discard plan (each message archived, then acked; nothing published, no force).
	Discard bool
	// Jobs ran the plan, newest first; JobsError says they could not be read.
	Jobs      []JobView
	JobsError string
	// State is ready, or planning while the plan is made in the background (Planned of at most
	// Estimate messages so far; Counts as they fill; the page follows it), cancelled or failed
	// (Error says why). Cancel is whether the user may cancel it while it is planning.
	State             string
	Planned, Estimate int
	Error             string
	Cancel            components.Offer
	// Edit is an edit and retry's change, before and after, masked as any content; nil for a
	// plan that publishes messages as they died.
	Edit *EditView
}

// EditView is what an edit and retry changes of its one message, as its plan, its job and the
// four-eyes approver see it: the value before and after (each cut at 4 KiB), the headers it sets
// or drops, and the message id when a new one is asked for.
type EditView struct {
	ValueBefore, ValueAfter string
	ValueChanged            bool
	Headers                 []HeaderChange
	// MessageID is [before, after] when the copy gets a new message id; nil when it keeps its own.
	MessageID *[2]string
	// Encoding names the schema the edited value is encoded back with; "" for plain bytes.
	Encoding string
	// RawURL is the plan in the API, which gives the change whole: where a header cut for display
	// points.
	RawURL string
}

// HeaderChange is one header an edit sets or drops: "" stands for absent. Before and After are
// cut for display when BeforeCut and AfterCut, BeforeSize and AfterSize being their whole lengths
// in bytes.
type HeaderChange struct {
	Name, Before, After   string
	BeforeCut, AfterCut   bool
	BeforeSize, AfterSize int
}

// Ready reports whether the plan is made (the state of every plan made before plans were made in
// the background is ready).
func (p PlanPage) Ready() bool { return p.State == "" || p.State == "ready" }

// Planning reports whether the plan is being made.
func (p PlanPage) Planning() bool { return p.State == "planning" }

// Noun is what the plan is called: a replay plan, or a discard plan.
func (p PlanPage) Noun() string { return noun(p.Discard) }

// Ran reports whether a job already ran (or runs) the plan.
func (p PlanPage) Ran() bool { return len(p.Jobs) > 0 }

// Count is how many of the plan's messages get action a.
func (p PlanPage) Count(a string) int {
	for _, c := range p.Counts {
		if c.Action == a {
			return c.Count
		}
	}
	return 0
}

// ranBefore ends the "this plan ran" sentence: how many earlier jobs ran it.
func ranBefore(p PlanPage) string {
	if len(p.Jobs) > 1 {
		return ", and " + itoa(len(p.Jobs)-1) + " time(s) before: see the jobs below."
	}
	return "."
}

// Replayer is the newest job of the plan that moved messages (published, or archived by a
// discard): a second run skips those as skip_already_replayed naming it. ok is false when no job
// moved anything.
func (p PlanPage) Replayer() (j JobView, ok bool) {
	for _, j := range p.Jobs {
		if j.Published > 0 {
			return j, true
		}
	}
	return JobView{}, false
}

// Latest is the newest job of the plan; only when Ran.
func (p PlanPage) Latest() JobView { return p.Jobs[0] }

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
	// Partition says which Kafka partition it goes to and why ("partition 2 (from the dead-letter
	// header)"); PartitionSource is header or key. Both "" for other kinds.
	Partition       string
	PartitionSource string
	Inbox           string
	Action          string
	ErrorGroup      string
	Note            string // why it is skipped, when its action alone does not say
}

// JobPage is one job with its ledger.
type JobPage struct {
	Meta        layout.Meta
	Job         JobView
	Edit        *EditView // the edit and retry the job publishes, as its plan shows it
	Ledger      []LedgerRow
	LedgerError string
	// FailureGroups count the failed messages per reason, most first; FailuresError says they
	// could not be read.
	FailureGroups []FailureGroup
	FailuresError string
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

func itoa(n int) string { return strconv.Itoa(n) }

func actionTone(a string) string {
	switch a {
	case "publish":
		return components.ToneOK
	case "skip_processed", "skip_already_replayed", "drop_replayed_copy":
		return components.ToneNeutral
	case "skip_in_progress", "skip_replay_limit":
		return components.ToneWarn
	}
	return components.ToneAlert
}

func outcomeTone(o string) string {
	switch o {
	case "published", "archived", RequeuedWords:
		return components.ToneOK
	case "failed":
		return components.ToneDanger
	case "active":
		return components.ToneWarn
	}
	return components.ToneNeutral
}

// jobTone colours a job's outcome: a done with failures is amber, never the green of done.
func jobTone(j JobView) string {
	switch j.Outcome {
	case OutcomeDone:
		return components.ToneOK
	case OutcomeDoneWithFailures:
		return components.ToneWarn
	case "failed":
		return components.ToneDanger
	case "cancelled":
		return components.ToneNeutral
	}
	if j.Running && j.Paused != "" {
		return components.ToneWarn
	}
	if j.Running || j.Awaiting {
		return components.ToneInfo // under way: neither the green of done nor a problem
	}
	return components.StatusTone(j.Status)
}

// jobClass marks a job's row or panel with its outcome, for the amber edge of done_with_failures.
func jobClass(j JobView) string { return "job-outcome-" + j.Outcome }

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

// WarningGroup is the plan's warnings that call for the same action.
type WarningGroup struct {
	Title string // what to do
	Tone  string
	Items []string
}

// warningGroups sorts a plan's warnings by what to do about them: messages going out without an
// idempotency check, other consumers that will receive the replay, and anything else.
func warningGroups(ws []string) []WarningGroup {
	groups := []WarningGroup{
		{Title: "Unguarded: nothing stops these from being processed twice — configure the consumer's inbox, or accept duplicates", Tone: "danger"},
		{Title: "Other consumers will receive these — check that they are idempotent or expect them", Tone: "warn"},
		{Title: "Check before running", Tone: "warn"},
	}
	for _, w := range ws {
		switch {
		case strings.Contains(w, "without an idempotency check"):
			groups[0].Items = append(groups[0].Items, w)
		case strings.Contains(w, "also reads"):
			groups[1].Items = append(groups[1].Items, w)
		default:
			groups[2].Items = append(groups[2].Items, w)
		}
	}
	out := groups[:0]
	for _, g := range groups {
		if len(g.Items) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// planTone colours a plan's state: under way, failed, or cancelled.
func planTone(state string) string {
	switch state {
	case "planning":
		return components.ToneInfo
	case "failed":
		return components.ToneDanger
	}
	return components.ToneNeutral
}
