package offsets

import "time"

// StoredPlan is a plan as the store keeps it (table offset_move_plan). Body is the Plan as JSON;
// the store does not read it.
type StoredPlan struct {
	ID         string
	Cluster    string
	Group      string
	Topic      string
	CreatedBy  string
	CreatedAt  time.Time
	Body       []byte
	AppliedAt  *time.Time // nil until applied
	AppliedBy  string
	ApprovedBy string // the second person of a four-eyes plan; "" when none
}
