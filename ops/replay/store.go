package replay

import (
	"context"
	"errors"
	"time"

	"github.com/redrive/redrive/ops/triage"
)

// Store is what the engine keeps in Redrive's store, one interface per aggregate;
// *store.Store (PostgreSQL) implements them all.
type Store interface {
	Plans
	Jobs
	Ledger
	Archive
	Resolutions
}

// Plans are frozen selections, written as they are read and then only read. A plan made in the
// background has its header first (StartPlanning, state planning), which the replica making it
// keeps alive with PlanProgress; BeginPlan's writer adds the items chunk by chunk and Commit makes
// the plan ready in one update — a plan that is not ready is never run, and one cancelled or
// failed has its items dropped (EndPlanning).
type Plans interface {
	BeginPlan(ctx context.Context, id string) (PlanWriter, error)
	// StartPlanning writes the header of a plan being made (p.State is planning).
	StartPlanning(ctx context.Context, p StoredPlan) error
	// PlanProgress records how far planning got and that its replica is alive, and returns the
	// plan's state: a plan no longer planning (cancelled meanwhile) is to be stopped.
	PlanProgress(ctx context.Context, id string, planned int, actions map[string]int) (string, error)
	// EndPlanning ends a planning plan as state (cancelled or failed) with why, and drops the
	// items it stored. false when the plan was no longer planning (ready, or ended before).
	EndPlanning(ctx context.Context, id, state, why string) (bool, error)
	// FailStalePlans ends as failed, with why, every planning plan whose heartbeat is older than
	// olderThan by the store's clock (its replica stopped), dropping their items; it returns their ids.
	FailStalePlans(ctx context.Context, olderThan time.Duration, why string) ([]string, error)
	// DeletePlan removes a plan that was refused before anyone was told its id.
	DeletePlan(ctx context.Context, id string) error
	Plan(ctx context.Context, id string) (StoredPlan, error)
	PlanItems(ctx context.Context, planID string, from, limit int) ([]StoredItem, error)
	PlanItemsByLocator(ctx context.Context, planID string, locators []string) ([]StoredItem, error)
	AnalyzePlanItems(ctx context.Context) error
}

// PlanWriter is one plan being written: items in chunks as they are read, each chunk committed
// (a plan of a million messages holds no transaction open), then the header (Commit), which
// makes the plan ready in one statement — or ops.ErrConflict when it is no longer planning (it
// was cancelled meanwhile). Rollback drops the items of a plan that was not committed.
// ReplayedLocators reads which of the locators a job holds and with what outcome (LedgerActive:
// in flight; LedgerPublished: confirmed).
type PlanWriter interface {
	Add(ctx context.Context, items []StoredItem) error
	Commit(ctx context.Context, p StoredPlan) error
	Rollback(ctx context.Context)
	ReplayedLocators(ctx context.Context, locators []string) (map[string]string, error)
}

// Jobs are runs of a plan: created, approved, claimed under a lease that a worker renews, paused,
// cancelled and finished.
type Jobs interface {
	CreateJob(ctx context.Context, j Job) error
	Job(ctx context.Context, id string) (Job, error)
	Jobs(ctx context.Context, limit int) ([]Job, error)
	ApproveJob(ctx context.Context, jobID, approver string) (bool, error)
	ClaimJob(ctx context.Context, owner string, lease time.Duration) (Job, error)
	RenewLease(ctx context.Context, jobID, owner string, lease time.Duration, nextSeq int) (held, cancel bool, err error)
	PauseJob(ctx context.Context, jobID, owner string, lease time.Duration, why string) (held, cancel bool, err error)
	RequestCancel(ctx context.Context, jobID string) (string, error)
	FinishJob(ctx context.Context, jobID, owner, status, errText string) error
}

// Ledger is the once-only record of every message a job moves: claimed before the publish,
// settled after the broker's ack. Claim (and Record) answer ErrJobEnded for a job that has ended.
type Ledger interface {
	Claim(ctx context.Context, jobID string, claims []LedgerClaim, finals []LedgerOutcome) (map[int]LedgerState, error)
	Settle(ctx context.Context, jobID string, outcomes []LedgerOutcome) error
	Record(ctx context.Context, jobID string, finals []LedgerOutcome) error
	LedgerOutcomes(ctx context.Context, jobID string, seqs []int) (map[int]string, error)
	// InFlight counts the job's claims not yet settled (FinishJob releases them as failed).
	InFlight(ctx context.Context, jobID string) (int, error)
	Ledger(ctx context.Context, jobID string, limit int) ([]LedgerEntry, error)
	Holders(ctx context.Context, locators []string) (map[string]string, error)
}

// Archive keeps discarded RabbitMQ messages whole, written before they are acked.
type Archive interface {
	ArchiveMessages(ctx context.Context, ms []Archived) error
	ArchivedMessageByID(ctx context.Context, id int64) (Archived, error)
	RestoreArchived(ctx context.Context, id int64, actor, to string, publish func(Archived) error) (Archived, error)
}

// Resolutions mark the dead letters (and outbox DEAD events) a job replayed, and say which are settled already (a plan
// leaves them out unless asked).
type Resolutions interface {
	triage.SettledStates
	MarkReplayed(ctx context.Context, jobID, actor, cluster, topic string, marks []triage.Mark) error
	MarkJobReplayed(ctx context.Context, jobID string) error
	MarkOutboxReplayed(ctx context.Context, jobID, actor, outbox string, ids []int64) error
}

// ErrJobEnded is the ledger's answer to a claim for a job that has ended — finished by another
// replica after this one's lease ran out, or cancelled before it ran. The runner stops as it does
// when its lease is lost: the job is no longer its to move.
var ErrJobEnded = errors.New("replay: the job has ended; its lease was lost")
