package kafka

import (
	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
)

// SkipOffer is the "skip the record at offset N" form a STALL or STOP group page offers: the
// partition that decided the status, prefilled.
type SkipOffer struct {
	Topic     string
	Partition int32
	Offset    int64 // the record the consumer is stuck on: the first it gets from the committed offset
	// Running says the group has members: the move can be planned now but applied only once its
	// consumers are stopped.
	Running bool
}

// OffsetPlanPage shows a planned offset move with its Apply form, or its outcome.
type OffsetPlanPage struct {
	Meta       layout.Meta
	Cluster    string
	Group      string
	PlanID     string
	URL        string // this page, which the apply section polls while the group has members
	Topic      string
	Target     string // "offset 5", "shift by 1", …
	Partitions []OffsetMoveRow
	Skipped    int64
	CopyTo     string // "" copies nothing
	Warnings   []string
	// Members are the group's members now: while there are any, Apply is not offered (Kafka would
	// refuse it); the page says to stop them and checks again every MembersPoll seconds.
	Members    []string
	FourEyes   bool
	ApprovedBy string
	Applied    bool
	AppliedBy  string
	// Outcome is set after an apply from this page: "1 record copied to orders.DLT, offsets moved".
	Outcome string
	Error   string // why an apply from this page was refused
	// Approve and Apply are what the signed-in user may do with the plan, as the API would answer
	// (offsets.Plan.ApproveRefused, offsets.Plan.ApplyRefused): the page offers only these forms.
	Approve, Apply components.Offer
}

// MembersPoll is how often, in seconds, a plan page whose group has members checks again.
const MembersPoll = 5

// OffsetMoveRow is one partition of a plan.
type OffsetMoveRow struct {
	Partition int32
	Current   int64
	New       int64
	Skipped   int64
}
