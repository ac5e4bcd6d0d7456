package replay

import (
	"encoding/json"
	"time"
)

// The replay model as its store keeps it: plans (StoredPlan, StoredItem), jobs (Job, in a status),
// the ledger (LedgerClaim, LedgerOutcome, LedgerEntry) and the archive of discarded messages
// (Archived). The store is an adapter (ops/store, in PostgreSQL) behind the interfaces of
// store.go.

// Archived is one message a discard job took from a dead-letter queue (migration 026).
type Archived struct {
	ID                 int64
	JobID, Locator     string
	MessageID          string
	Broker, Vhost      string
	Queue              string
	ArchivedAt         time.Time
	Actor, Reason      string
	Exchange           string
	RoutingKey         string
	OriginalExchange   string
	OriginalRoutingKey string
	Properties         map[string]any
	Headers            map[string]any // for people: the headers as JSON
	HeadersWire        []byte         // for a restore: the AMQP table with its types
	Body               []byte
	RestoredAt         *time.Time
	RestoredBy         string
	RestoredTo         string
	// Restoring is the replay job restoring it to its original destination (awaiting approval,
	// pending or running) and that job's status; "" when none. Read by ArchivedMessageByID only.
	Restoring, RestoringStatus string
}

// ArchiveFilter narrows ArchivedMessages; zero fields do not filter. Before is the keyset cursor
// (ids below it); Limit 0 means 100.
type ArchiveFilter struct {
	Broker, Queue string
	Since         time.Time
	Before        int64
	Limit         int
}

// MaxArchiveLimit caps one page of the archive.
const MaxArchiveLimit = 500

// StoredPlan is a plan's header as the store keeps it (Plan is its read form).
type StoredPlan struct {
	ID        string
	CreatedAt time.Time
	Actor     string
	Source    json.RawMessage
	Filter    json.RawMessage
	Total     int
	Actions   map[string]int
	Warnings  []string
	// ErrorGroups counts the plan's messages per error group, then per action.
	ErrorGroups map[string]map[string]int
	// State is PlanPlanning, PlanReady, PlanCancelled or PlanFailed; "" is read as ready (a
	// header written whole, as BeginPlan's Commit does).
	State string
	// Planned is how many messages planning has frozen so far (Total once ready); Estimate how
	// many the selection reads at most (0: unknown).
	Planned, Estimate int
	// Error says why planning failed or who cancelled it, in words for people.
	Error string
	// Owner is the replica making the plan; Heartbeat when it last said it still is.
	Owner      string
	Heartbeat  *time.Time
	FinishedAt *time.Time
}

// Plan states. A plan is made in the background: planning until every item is stored, then
// ready; a job runs only a ready plan.
const (
	PlanPlanning  = "planning"
	PlanReady     = "ready"
	PlanCancelled = "cancelled"
	PlanFailed    = "failed"
)

// StoredItem is one frozen message of a plan as the store keeps it (Item is its read form).
type StoredItem struct {
	Seq         int
	Locator     string
	MessageID   string
	Consumer    string
	Destination json.RawMessage
	Inbox       string
	Action      string
	ErrorGroup  string
	ReplayCount int
	Position    *int64
	Partition   *int32
	Note        string // why it is skipped, when its action alone does not say
}

// Job is one run of a plan.
type Job struct {
	ID     string
	PlanID string
	Status string // pending | running | done | cancelled | failed
	Actor  string
	// Person is who started it as the two-person rule counts people (access.Actor.Person: a
	// token's owner); "" for a job started before it was kept, whose Actor is the person then.
	Person          string
	Reason          string
	Force           bool
	RatePerSecond   int
	Total           int
	NextSeq         int
	CancelRequested bool
	LeaseOwner      string
	Error           string
	CreatedAt       time.Time
	StartedAt       *time.Time
	FinishedAt      *time.Time
	ApprovedBy      string // four-eyes: who approved it; "" when no approval was needed
	// Paused says why a running job is waiting for a dependency; "" while it makes progress.
	Paused string
	// SourceKey names what the job moves (a DLQ, a DLT, an outbox): one pending or running job
	// per key at a time. "" opts out.
	SourceKey string
	// Counts, kept in the ledger's transactions.
	Published, Skipped, Failed int
}

// Job statuses.
const (
	JobAwaiting  = "awaiting_approval" // four-eyes: not claimable until approved
	JobPending   = "pending"
	JobRunning   = "running"
	JobDone      = "done"
	JobCancelled = "cancelled"
	JobFailed    = "failed"
)

// JobDoneWithFailures is the outcome of a finished job some of whose messages failed (Outcome).
const JobDoneWithFailures = "done_with_failures"

// Outcome is how a job ended: done when nothing failed, done_with_failures when some did; any
// other status (running, cancelled, failed, …) is its own outcome.
func (j Job) Outcome() string {
	if j.Status == JobDone && j.Failed > 0 {
		return JobDoneWithFailures
	}
	return j.Status
}

// Remaining is how many of the job's messages are not settled yet.
func (j Job) Remaining() int { return max(0, j.Total-j.Published-j.Skipped-j.Failed) }

// LedgerClaim asks to move one message.
type LedgerClaim struct {
	Seq       int
	Locator   string
	MessageID string
}

// LedgerState is what the ledger says about one claim.
type LedgerState int

// Claim results.
const (
	Claimed         LedgerState = iota // this job may publish it now
	AlreadyMine                        // this job settled it before (a resumed run): leave it
	MineInFlight                       // this job claimed it and died before settling: outcome unknown
	ReplayedByOther                    // another job published it or is publishing it
)

// LedgerOutcome settles one message of a job.
type LedgerOutcome struct {
	Seq       int
	Locator   string
	MessageID string
	Outcome   string // published | skipped | failed
	Detail    string
}

// Ledger outcomes.
const (
	LedgerActive    = "active"
	LedgerPublished = "published"
	LedgerSkipped   = "skipped"
	LedgerFailed    = "failed"
)

// LedgerEntry is one ledger row, for the job page.
type LedgerEntry struct {
	Seq       int
	Locator   string
	MessageID string
	Outcome   string
	Detail    string
	At        time.Time
}

// FailureGroup is how many of a job's messages failed with one reason (the ledger's detail).
type FailureGroup struct {
	Detail string
	Count  int
}

// PlanRoute is where a plan's messages come from and where they go back to, for the job pages.
type PlanRoute struct {
	// Source is the plan's stored source (replay.Source as JSON).
	Source json.RawMessage
	// Destinations are the distinct destinations (replay.Destination as JSON, without the Kafka
	// partition) among the plan's first items — a sample, so a list of jobs never reads whole plans.
	Destinations []json.RawMessage
}

// Traced is a ledger row of a message with the job that wrote it, for a trace.
type Traced struct {
	LedgerEntry
	JobID     string
	JobStatus string
	Actor     string
	PlanID    string
}
