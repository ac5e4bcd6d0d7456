// Package offsets moves a consumer group's committed offsets, planned then applied like a replay,
// without losing what it skips: with a copy destination (by default the topic's dead-letter
// topic) the skipped records are copied there first, with Spring's dead-letter headers, and the
// offsets move only after every copy is acknowledged. A poison record skipped this way can be
// fixed and replayed later through the guarded replay engine.
//
// Kafka accepts an offset commit from outside the group only while the group has no members, so
// apply is refused (ops.ErrConflict, naming the members) while consumers are running. Every
// plan is audited (kafka.offsets.plan), and every apply: an intent row before the copies and an
// outcome row after the commit, both naming each partition's move, or one denied row for a
// refusal.
package offsets

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
)

// Cluster is what a move needs of a Kafka cluster; *kafka.Cluster implements it. Errors carry the
// ops kinds: ErrNotFound for an unknown group or topic, ErrConflict for a commit Kafka refuses
// because the group has members, ErrUnavailable when the cluster cannot be reached.
type Cluster interface {
	Name() string
	GroupMembership(ctx context.Context, group string) (kafkamodel.Membership, error)
	GroupTopicOffsets(ctx context.Context, group, topic string) (kafkamodel.TopicOffsets, error)
	OffsetsAfter(ctx context.Context, topic string, at time.Time) (map[int32]int64, error)
	DeadLetterTopicOf(ctx context.Context, topic string) (string, bool, error)
	PartitionCount(ctx context.Context, topic string) (int, error)
	EndOffsets(ctx context.Context, topic string) (map[int32]int64, error)
	// CountRecords counts the records a read_committed consumer gets from each range [from, to),
	// reading for at most budget; exact is false when it ran out (the rest counted as records).
	CountRecords(ctx context.Context, topic string, ranges map[int32][2]int64, budget time.Duration) (map[int32]int64, bool, error)
	CopySkipped(ctx context.Context, req kafkamodel.CopyRequest) (kafkamodel.CopyResult, error)
	CommitGroupOffsets(ctx context.Context, group, topic string, offsets map[int32]int64) error
	// TopicID is the topic's ID now ("" when the broker has none); unknown topic → ErrNotFound.
	TopicID(ctx context.Context, topic string) (string, error)
}

// Store keeps plans and the audit log; *store.Store implements it. Errors: ErrNotFound for an
// unknown plan, ErrConflict for one already applied or approved, ErrUnavailable.
type Store interface {
	CreateOffsetPlan(ctx context.Context, p StoredPlan) error
	OffsetPlan(ctx context.Context, id string) (StoredPlan, error)
	ApproveOffsetPlan(ctx context.Context, id, approver string) error
	MarkOffsetPlanApplied(ctx context.Context, id, actor string) error
	RecordAudit(ctx context.Context, e audit.Entry) error
	RecordIntent(ctx context.Context, e audit.Entry) (int64, error)
	// Lock takes the lock named key, shared by every replica of the console, and returns the
	// function that releases it; it waits a bounded time. Errors: still held elsewhere when the
	// wait ends → ErrConflict; ErrUnavailable.
	Lock(ctx context.Context, key string) (unlock func(), err error)
}

// Kinds of target.
const (
	KindShift     = "shift"     // By records from the committed offset (negative: back)
	KindOffset    = "offset"    // exactly Offset
	KindTimestamp = "timestamp" // the first record at or after At
	KindEarliest  = "earliest"  // the log start
	KindLatest    = "latest"    // the log end: skip everything
)

// Target is where the offsets go.
type Target struct {
	Kind   string     `json:"kind"`
	By     int64      `json:"by,omitempty"`
	Offset *int64     `json:"offset,omitempty"`
	At     *time.Time `json:"at,omitempty"`
}

// PlanRequest selects a move. Partitions nil means every partition of Topic.
type PlanRequest struct {
	Cluster    string  // required
	Group      string  // required
	Topic      string  // required
	Partitions []int32 // nil: all
	To         Target
	// CopySkippedTo is where skipped records are copied first: nil means the topic's configured
	// dead-letter topic when there is one; "" copies nothing.
	CopySkippedTo *string
	Actor         string
	// Person is who asks, as the two-person rule counts people (access.Actor.Person: a token's
	// owner); "" means Actor.
	Person string
}

// Move is one partition of a plan.
type Move struct {
	Partition int32 `json:"partition"`
	Current   int64 `json:"current"` // committed offset when planned; -1 when none
	New       int64 `json:"new"`
	Skipped   int64 `json:"skipped"` // records between the position and New that will not be consumed
	// SkipFrom is the first skipped offset (the position: the committed offset, or the log start
	// when nothing is committed or the commit was deleted by retention).
	SkipFrom int64 `json:"skip_from"`
}

// Plan is a frozen move, stored until applied.
type Plan struct {
	ID      string `json:"id"`
	Cluster string `json:"cluster"`
	Group   string `json:"group"`
	Topic   string `json:"topic"`
	// TopicID is Topic's ID when planned ("" from a broker without topic IDs, or a plan stored
	// before it was kept): apply refuses a topic deleted and created again since, whose offsets
	// hold other records than those the plan skips.
	TopicID    string          `json:"topic_id,omitempty"`
	To         Target          `json:"to"`
	Partitions []Move          `json:"partitions"`
	Skipped    int64           `json:"skipped"`
	CopyTo     string          `json:"copy_to"`   // "" copies nothing
	CopyFrom   map[int32]int64 `json:"copy_from"` // CopyTo's end offsets when planned
	Warnings   []string        `json:"warnings"`
	Members    []string        `json:"members"` // members when planned (apply needs none)
	CreatedBy  string          `json:"-"`
	CreatedAt  time.Time       `json:"-"`
	AppliedAt  *time.Time      `json:"-"`
	AppliedBy  string          `json:"-"`
	ApprovedBy string          `json:"-"`
	FourEyes   bool            `json:"four_eyes"` // apply needs a second person's approval first
	// Person is who planned it, as the two-person rule counts people; kept in the plan's body.
	// "" for a plan kept before it was: CreatedBy is the person then.
	Person string `json:"person,omitempty"`
}

// plannedBy is the person who planned p.
func (p Plan) plannedBy() string {
	if p.Person != "" {
		return p.Person
	}
	return p.CreatedBy
}

// moveSource names a group's offsets in the two-person rule's ledger.
func moveSource(cluster, group string) string { return "kafka " + cluster + " group " + group }

// Options configure a Mover.
type Options struct {
	Clusters []Cluster // required, by Name
	Store    Store     // required
	// FourEyes is the replay two-person rule, applied to the number of skipped records: a plan
	// whose skipped records, with what its planner moved from the group within the window, pass
	// Threshold needs another person's approval before apply.
	FourEyes foureyes.Settings
	// Moves is the two-person rule's ledger (ops/store); nil counts each plan alone.
	Moves  foureyes.Moves
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger     // where audit rows that cannot be written are reported; nil: slog.Default
}

// Mover plans and applies offset moves. It is safe for concurrent use.
type Mover struct {
	o      Options
	byName map[string]Cluster
	audit  *audit.Writer // Store's audit log, with the one audit policy
	rule   foureyes.Rule // replay.four_eyes over o.Moves
	// beforeCommit runs after the copies and before the commit; tests stop an apply there to
	// prove that a second apply recognises the copies. nil does nothing.
	beforeCommit func(Plan) error
}

// New checks opts.
func New(o Options) (*Mover, error) {
	if o.Store == nil {
		return nil, fmt.Errorf("offsets: %w", ops.Invalid("store", "required"))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m := &Mover{o: o, byName: map[string]Cluster{}, audit: audit.New(o.Store, o.Logger),
		rule: foureyes.Rule{Settings: o.FourEyes, Moves: o.Moves, Now: o.Now}}
	for _, c := range o.Clusters {
		m.byName[c.Name()] = c
	}
	return m, nil
}

func (m *Mover) cluster(name string) (Cluster, error) {
	c, ok := m.byName[name]
	if !ok {
		return nil, ops.NotFound("kafka cluster %q is not configured", name)
	}
	return c, nil
}

// Plan computes and stores a move. Errors: ops.ErrInvalid (bad target, partition or copy
// destination, naming the valid range), ops.ErrNotFound (cluster, topic), ops.ErrUnavailable.
func (m *Mover) Plan(ctx context.Context, r PlanRequest) (Plan, error) {
	c, err := m.cluster(r.Cluster)
	if err != nil {
		return Plan{}, err
	}
	if r.Group == "" {
		return Plan{}, ops.Invalid("group", "required")
	}
	if r.Topic == "" {
		return Plan{}, ops.Invalid("topic", "required")
	}
	to, err := checkTarget(r.To)
	if err != nil {
		return Plan{}, err
	}
	mem, memErr := c.GroupMembership(ctx, r.Group)
	if memErr == nil && mem.Type == kafkamodel.GroupShare {
		return Plan{}, shareRefusal(r.Group)
	}
	offs, err := c.GroupTopicOffsets(ctx, r.Group, r.Topic)
	if err != nil {
		return Plan{}, err
	}
	topicID, err := c.TopicID(ctx, r.Topic)
	if err != nil {
		return Plan{}, err
	}
	selected := offs.Partitions
	if r.Partitions != nil {
		if len(r.Partitions) == 0 {
			return Plan{}, ops.Invalid("partitions", `list at least one partition, or "all"`)
		}
		selected = nil
		for _, p := range r.Partitions {
			i := slices.IndexFunc(offs.Partitions, func(po kafkamodel.PartitionOffsets) bool { return po.Partition == p })
			if i < 0 {
				return Plan{}, ops.Invalid("partitions", fmt.Sprintf("%s has partitions 0 to %d, not %d", r.Topic, len(offs.Partitions)-1, p))
			}
			if !slices.ContainsFunc(selected, func(po kafkamodel.PartitionOffsets) bool { return po.Partition == p }) {
				selected = append(selected, offs.Partitions[i])
			}
		}
	}
	var after map[int32]int64
	if to.Kind == KindTimestamp {
		if after, err = c.OffsetsAfter(ctx, r.Topic, *to.At); err != nil {
			return Plan{}, err
		}
	}
	p := Plan{ID: "offplan_" + randomID(8), Cluster: r.Cluster, Group: r.Group, Topic: r.Topic, TopicID: topicID, To: to,
		Partitions: []Move{}, Warnings: []string{}, Members: []string{}, CreatedBy: r.Actor, Person: cmp.Or(r.Person, r.Actor)}
	var never, again []string
	var reread int64
	for _, po := range selected {
		pos := po.Committed
		if pos < po.Start {
			if po.Committed < 0 {
				never = append(never, fmt.Sprint(po.Partition))
			}
			pos = po.Start
		}
		if pos > po.End {
			pos = po.End
		}
		var nw int64
		switch to.Kind {
		case KindShift:
			nw = shift(pos, to.By, po.Start, po.End)
		case KindOffset:
			if *to.Offset < po.Start || *to.Offset > po.End {
				return Plan{}, ops.Invalid("to.offset", fmt.Sprintf("%s[%d] holds offsets %d to %d (the end, %d, means caught up); %d is outside",
					r.Topic, po.Partition, po.Start, po.End-1, po.End, *to.Offset))
			}
			nw = *to.Offset
		case KindTimestamp:
			nw = after[po.Partition]
			if nw < po.Start || nw > po.End {
				nw = po.End
			}
		case KindEarliest:
			nw = po.Start
		case KindLatest:
			nw = po.End
		}
		mv := Move{Partition: po.Partition, Current: po.Committed, New: nw, SkipFrom: pos}
		if nw > pos {
			mv.Skipped = nw - pos
		} else if nw < pos {
			reread += pos - nw
			again = append(again, fmt.Sprint(po.Partition))
		}
		p.Skipped += mv.Skipped
		p.Partitions = append(p.Partitions, mv)
	}
	slices.SortFunc(p.Partitions, func(a, b Move) int { return int(a.Partition - b.Partition) })
	if err := countSkipped(ctx, c, &p); err != nil {
		return Plan{}, err
	}
	if len(never) > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("never committed (or committed below the log start) on %s %s: "+
			"counted from the log start, where the consumer resumes with auto.offset.reset=earliest",
			ops.PluralWord(int64(len(never)), "partition"), strings.Join(never, ", ")))
	}
	if reread > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s on %s %s will be consumed again: the consumer must be idempotent",
			ops.Plural(reread, "record"), ops.PluralWord(int64(len(again)), "partition"), strings.Join(again, ", ")))
	}

	if err := m.planCopy(ctx, c, r, &p); err != nil {
		return Plan{}, err
	}
	err = memErr
	switch {
	case errors.Is(err, ops.ErrNotFound), err == nil && mem.State == "Dead" && len(mem.Members) == 0 && len(never) == len(selected):
		// Committing offsets for a group Kafka does not know creates it: a typo in the group's
		// name would make a new group, not move the one meant. Said first, as the plan's most
		// important news. (Brokers before DescribeGroups v6 answer an unknown group as Dead.)
		p.Warnings = append([]string{fmt.Sprintf("group %s does not exist in cluster %s: applying creates it with these offsets",
			r.Group, r.Cluster)}, p.Warnings...)
	case err != nil:
		return Plan{}, err
	case len(mem.Members) > 0:
		p.Members = mem.Members
		p.Warnings = append(p.Warnings, fmt.Sprintf("the group has %s (%s): Kafka moves offsets only for an empty group; "+
			"stop its consumers before applying", ops.Plural(int64(len(mem.Members)), "member"), strings.Join(mem.Members, ", ")))
	}
	d, err := m.rule.Check(ctx, p.Person, moveSource(p.Cluster, p.Group), p.Skipped, "")
	if err != nil {
		return Plan{}, err
	}
	if d.Needed {
		p.FourEyes = true
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s: a second, different person must approve it before apply", strings.Replace(d.Why, "moves", "skips", 1)))
	}
	body, err := json.Marshal(p)
	if err != nil {
		return Plan{}, fmt.Errorf("offset plan: %w", err)
	}
	if err := m.o.Store.CreateOffsetPlan(ctx, StoredPlan{ID: p.ID, Cluster: p.Cluster, Group: p.Group, Topic: p.Topic,
		CreatedBy: r.Actor, Body: body}); err != nil {
		return Plan{}, err
	}
	// Recorded as a replay plan is: what the plan says would move, and what it warned of.
	m.audit.Record(ctx, audit.Entry{Actor: r.Actor, Action: "kafka.offsets.plan", Target: groupTarget(p.Cluster, p.Group),
		Count: new(p.Skipped), Outcome: audit.OutcomeOK,
		Detail: map[string]any{"plan_id": p.ID, "topic": p.Topic, "partitions": p.Partitions, "to": p.To, "copy_to": p.CopyTo,
			"warnings": p.Warnings}})
	p.CreatedAt = m.o.Now()
	return p, nil
}

func (m *Mover) planCopy(ctx context.Context, c Cluster, r PlanRequest, p *Plan) error {
	switch {
	case r.CopySkippedTo == nil:
		dlt, ok, err := c.DeadLetterTopicOf(ctx, r.Topic)
		if err != nil {
			return err
		}
		if ok {
			p.CopyTo = dlt
		} else if p.Skipped > 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("the %d skipped records are not copied: no dead-letter topic is configured for %s "+
				"(set copy_skipped_to to keep them)", p.Skipped, r.Topic))
		}
	case *r.CopySkippedTo == "":
		if p.Skipped > 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("the %d skipped records are not copied (copy_skipped_to is empty): they are lost to this group", p.Skipped))
		}
	default:
		if *r.CopySkippedTo == r.Topic {
			return ops.Invalid("copy_skipped_to", "must not be the topic the offsets move on")
		}
		if _, err := c.PartitionCount(ctx, *r.CopySkippedTo); err != nil {
			if errors.Is(err, ops.ErrNotFound) {
				return ops.Invalid("copy_skipped_to", fmt.Sprintf("topic %q does not exist", *r.CopySkippedTo))
			}
			return err
		}
		p.CopyTo = *r.CopySkippedTo
	}
	if p.CopyTo != "" && p.Skipped > 0 {
		ends, err := c.EndOffsets(ctx, p.CopyTo)
		if err != nil {
			return err
		}
		p.CopyFrom = ends
	}
	return nil
}

// countSkipped counts the records each move skips: the offsets between the position and the new
// one hold transaction markers and records of aborted transactions too, which no consumer gets —
// a topic written in transactions of one record has two offsets a record, and the plan, its audit
// and the four-eyes threshold counted both. Counting is bounded (countBudget); past it, the
// offsets not read count as records and the plan says so.
func countSkipped(ctx context.Context, c Cluster, p *Plan) error {
	ranges := map[int32][2]int64{}
	for _, mv := range p.Partitions {
		if mv.Skipped > 0 {
			ranges[mv.Partition] = [2]int64{mv.SkipFrom, mv.New}
		}
	}
	if len(ranges) == 0 {
		return nil
	}
	counts, exact, err := c.CountRecords(ctx, p.Topic, ranges, countBudget)
	if err != nil {
		return err
	}
	p.Skipped = 0
	for i := range p.Partitions {
		mv := &p.Partitions[i]
		if _, ok := ranges[mv.Partition]; ok {
			mv.Skipped = min(counts[mv.Partition], mv.Skipped)
		}
		p.Skipped += mv.Skipped
	}
	if !exact {
		p.Warnings = append(p.Warnings, fmt.Sprintf("the skipped records were counted for %s and the offsets not read yet counted "+
			"as records: at most %s are skipped", countBudget, ops.Plural(p.Skipped, "record")))
	}
	return nil
}

// countBudget bounds the count of the records a plan skips.
const countBudget = 5 * time.Second

// shift is pos moved by records within [start, end], saturating: pos+by overflowed int64 for a
// shift near its bounds (by 2^63-10 from 10 wrapped negative and landed on the log start). pos is
// within [start, end], so end-pos and start-pos cannot overflow.
func shift(pos, by, start, end int64) int64 {
	switch {
	case by >= end-pos:
		return end
	case by <= start-pos:
		return start
	}
	return pos + by
}

func checkTarget(t Target) (Target, error) {
	switch t.Kind {
	case KindShift:
		if t.By == 0 {
			return t, ops.Invalid("to.by", "required: the number of records to move by (negative moves back)")
		}
		return Target{Kind: t.Kind, By: t.By}, nil
	case KindOffset:
		if t.Offset == nil || *t.Offset < 0 {
			return t, ops.Invalid("to.offset", "required: a non-negative offset")
		}
		return Target{Kind: t.Kind, Offset: t.Offset}, nil
	case KindTimestamp:
		if t.At == nil {
			return t, ops.Invalid("to.at", "required: an RFC 3339 time")
		}
		// Refused rather than read as the log start (as a browse or a trace reads it): no record
		// is older than 1970, so moving a group's offsets to such a time is a typo in the year,
		// and the move it would plan (to the start) is the earliest kind, said plainly.
		if t.At.Before(time.Unix(0, 0)) {
			return t, ops.Invalid("to.at", fmt.Sprintf("%s is before 1970, older than any Kafka record: check the year, or use kind earliest to move to the log start",
				t.At.UTC().Format(time.RFC3339Nano)))
		}
		return Target{Kind: t.Kind, At: t.At}, nil
	case KindEarliest, KindLatest:
		return Target{Kind: t.Kind}, nil
	}
	return t, ops.Invalid("to.kind", "must be shift, offset, timestamp, earliest or latest")
}

// shareRefusal says why a share group's offsets are not moved: it has none.
func shareRefusal(group string) error {
	return ops.Invalid("group", fmt.Sprintf("%s is a share group: it commits no offsets to move; its records are "+
		"acknowledged one by one and the broker keeps a share-partition start offset (reset it with "+
		"kafka-share-groups.sh --reset-offsets while the group has no members)", group))
}

// Members lists group's members in cluster now (an apply needs none): none for a group the
// cluster does not have. Errors: ops.ErrNotFound (cluster), ops.ErrUnavailable.
func (m *Mover) Members(ctx context.Context, cluster, group string) ([]string, error) {
	c, err := m.cluster(cluster)
	if err != nil {
		return nil, err
	}
	mem, err := c.GroupMembership(ctx, group)
	if err != nil && !errors.Is(err, ops.ErrNotFound) {
		return nil, err
	}
	return mem.Members, nil
}

// Get reads a stored plan. Unknown → ops.ErrNotFound.
func (m *Mover) Get(ctx context.Context, id string) (Plan, error) {
	sp, err := m.o.Store.OffsetPlan(ctx, id)
	if err != nil {
		return Plan{}, err
	}
	var p Plan
	if err := json.Unmarshal(sp.Body, &p); err != nil {
		return Plan{}, fmt.Errorf("offset plan %q: decode: %w", id, err)
	}
	p.CreatedBy, p.CreatedAt, p.AppliedAt, p.AppliedBy, p.ApprovedBy = sp.CreatedBy, sp.CreatedAt, sp.AppliedAt, sp.AppliedBy, sp.ApprovedBy
	return p, nil
}

// ApplyRequest applies a plan.
type ApplyRequest struct {
	PlanID string // required
	Actor  access.Actor
	Reason string // required: written to the audit log and to the copies' exception message
	// Cluster and Group, when set, must be the plan's (the API names them in its path).
	Cluster, Group string
}

// Result is an applied plan.
type Result struct {
	Plan
	Copied        int  // skipped records copied by this apply
	AlreadyCopied int  // copies an earlier, interrupted apply of the plan had made
	Moved         bool // the offsets are now the plan's
}

// Apply copies the skipped records (when the plan has a destination), then commits the new
// offsets, then marks the plan applied. Errors: ops.ErrInvalid (no reason), ops.ErrNotFound,
// ops.ErrConflict (the group has members — the message names them —, the offsets moved since the
// plan, the plan was applied already, it awaits approval, or another apply for the group is still
// running), ops.ErrUnavailable. After a failure the offsets are unmoved and the plan can be
// applied again: copies made are recognised. Every refusal is audited (outcome denied).
//
// Applies for one cluster and group take turns, across the console's replicas, on a PostgreSQL
// advisory lock (Store.Lock) held from the re-check of the committed offsets through the copies
// and the commit: two different plans for a group, applied at once, both saw the offsets they
// were planned from, both copied their skipped records and both committed, the last commit
// winning. Now the second re-checks after the first has committed, finds the offsets moved, and
// is refused having copied nothing.
func (m *Mover) Apply(ctx context.Context, r ApplyRequest) (Result, error) {
	if r.PlanID == "" {
		return Result{}, ops.Invalid("plan_id", "required: the plan_id a plan answer gave")
	}
	// The rule for a reason (what counts as empty, how long it may be) is the handlers' one
	// requiredReason, as for every other mutation; this only keeps a direct caller from moving
	// offsets with nothing written in the audit log.
	if strings.TrimSpace(r.Reason) == "" {
		return Result{}, ops.Invalid("reason", "required: why the offsets move (kept in the audit log and on the copies)")
	}
	if utf8.RuneCountInString(r.Reason) > maxReason {
		return Result{}, ops.Invalid("reason", fmt.Sprintf("at most %d characters", maxReason))
	}
	p, err := m.Get(ctx, r.PlanID)
	if err != nil {
		return Result{}, err
	}
	res := Result{Plan: p}
	deny := func(err error) (Result, error) {
		m.audit.Record(ctx, audit.Entry{Actor: r.Actor.Name, Role: r.Actor.Role.String(), Action: "kafka.offsets.apply", Target: groupTarget(p.Cluster, p.Group),
			Count: new(p.Skipped), Reason: r.Reason, Outcome: audit.OutcomeDenied,
			Detail: map[string]any{"plan_id": p.ID, "topic": p.Topic, "error": ops.Message(err)}})
		return res, err
	}
	if (r.Cluster != "" && r.Cluster != p.Cluster) || (r.Group != "" && r.Group != p.Group) {
		return deny(ops.NotFound("offset plan %q is for group %s of cluster %s", p.ID, p.Group, p.Cluster))
	}
	c, err := m.cluster(p.Cluster)
	if err != nil {
		return Result{}, err
	}
	unlock, err := m.o.Store.Lock(ctx, "kafka.offsets.apply/"+p.Cluster+"/"+p.Group)
	if errors.Is(err, ops.ErrConflict) {
		return deny(fmt.Errorf("%w: another apply of an offset plan for group %s is still running; when it ends, look at the group's offsets and plan again",
			ops.ErrConflict, p.Group))
	}
	if err != nil {
		return res, err
	}
	defer unlock()
	// Read again under the lock: another replica may have applied or approved it meanwhile.
	if p, err = m.Get(ctx, r.PlanID); err != nil {
		return res, err
	}
	res.Plan = p
	if err := p.ApplyRefused(); err != nil {
		res.Moved = p.AppliedAt != nil
		return deny(err)
	}
	// A plan that needed nobody when it was made may need someone now: what the person applying
	// it moved from the group since counts (five small plans applied one after another).
	if !p.FourEyes {
		d, err := m.rule.Check(ctx, r.Actor.Person(), moveSource(p.Cluster, p.Group), p.Skipped, "")
		if err != nil {
			return res, err
		}
		if d.Needed {
			return deny(ops.Conflict("offset plan %q %s: plan it again, and a second, different person must approve it before apply",
				p.ID, strings.Replace(d.Why, "moves", "skips", 1)))
		}
	}
	// The topic the plan was made on: one deleted and created again since holds other records at
	// the planned offsets, and the apply copied and skipped those, never seen by anyone (the
	// group's new commits can match the planned ones, or both be none).
	if p.TopicID != "" {
		id, err := c.TopicID(ctx, p.Topic)
		switch {
		case errors.Is(err, ops.ErrNotFound):
			return deny(ops.Conflict("topic %s was deleted since the plan was made; plan again", p.Topic))
		case err != nil:
			return res, err
		case id != p.TopicID:
			return deny(ops.Conflict("topic %s was deleted and created again since the plan was made: its offsets now hold "+
				"other records than those the plan skips; plan again", p.Topic))
		}
	}
	target := groupTarget(p.Cluster, p.Group)
	mem, err := c.GroupMembership(ctx, p.Group)
	if err != nil && !errors.Is(err, ops.ErrNotFound) {
		return res, err
	}
	if mem.Type == kafkamodel.GroupShare {
		return deny(shareRefusal(p.Group))
	}
	if len(mem.Members) > 0 {
		return deny(ops.Conflict("group %s has %s (%s); Kafka moves a group's offsets only while it is empty: "+
			"stop its consumers, then apply again", p.Group, ops.Plural(int64(len(mem.Members)), "member"), strings.Join(mem.Members, ", ")))
	}
	now, err := c.GroupTopicOffsets(ctx, p.Group, p.Topic)
	if err != nil {
		return res, err
	}
	committed := map[int32]int64{}
	for _, po := range now.Partitions {
		committed[po.Partition] = po.Committed
	}
	atNew := true
	for _, mv := range p.Partitions {
		cur, ok := committed[mv.Partition]
		if !ok {
			cur = -1
		}
		if cur != mv.New {
			atNew = false
		}
		if cur != mv.Current && cur != mv.New {
			return deny(fmt.Errorf("%w: the offsets moved since the plan (partition %d: %s when planned, %s now); plan again",
				ops.ErrConflict, mv.Partition, committedText(mv.Current), committedText(cur)))
		}
	}
	done, err := m.audit.Intend(ctx, audit.Entry{Actor: r.Actor.Name, Role: r.Actor.Role.String(), Action: "kafka.offsets.apply", Target: target,
		Count: new(p.Skipped), Reason: r.Reason,
		Detail: map[string]any{"plan_id": p.ID, "topic": p.Topic, "partitions": p.Partitions, "to": p.To, "copy_to": p.CopyTo}})
	if err != nil {
		return res, err
	}
	// The outcome row says what moved, as the intent does: from where to where on which
	// partitions, and what was copied where.
	outcome := func() map[string]any {
		return map[string]any{"plan_id": p.ID, "topic": p.Topic, "partitions": p.Partitions, "to": p.To, "copy_to": p.CopyTo,
			"copied": res.Copied, "already_copied": res.AlreadyCopied}
	}
	fail := func(err error) (Result, error) {
		done(err, outcome())
		return res, err
	}
	if !atNew && p.CopyTo != "" && p.Skipped > 0 {
		ranges := map[int32][2]int64{}
		for _, mv := range p.Partitions {
			if mv.Skipped > 0 {
				ranges[mv.Partition] = [2]int64{mv.SkipFrom, mv.New}
			}
		}
		for _, po := range now.Partitions { // retention may have deleted some since the plan
			if rg, ok := ranges[po.Partition]; ok && rg[0] < po.Start {
				rg[0] = min(po.Start, rg[1])
				ranges[po.Partition] = rg
			}
		}
		cr, err := c.CopySkipped(ctx, kafkamodel.CopyRequest{PlanID: p.ID, Group: p.Group, Topic: p.Topic, Ranges: ranges,
			Dest: p.CopyTo, DestFrom: p.CopyFrom,
			Exception: fmt.Sprintf("skipped by %s with Redrive offset plan %s: %s", r.Actor.Name, p.ID, r.Reason)})
		res.Copied, res.AlreadyCopied = cr.Copied, cr.Already
		if err != nil {
			return fail(err)
		}
	}
	if m.beforeCommit != nil {
		if err := m.beforeCommit(p); err != nil {
			return fail(err)
		}
	}
	if !atNew {
		offsets := map[int32]int64{}
		for _, mv := range p.Partitions {
			offsets[mv.Partition] = mv.New
		}
		if err := c.CommitGroupOffsets(ctx, p.Group, p.Topic, offsets); err != nil {
			return fail(err)
		}
	}
	res.Moved = true
	if err := m.o.Store.MarkOffsetPlanApplied(ctx, p.ID, r.Actor.Name); err != nil && !errors.Is(err, ops.ErrConflict) {
		return fail(err)
	}
	if err := m.rule.Record(ctx, foureyes.Move{Person: r.Actor.Person(), Source: moveSource(p.Cluster, p.Group),
		Action: "kafka.offsets.apply", Ref: p.ID, N: p.Skipped}); err != nil {
		m.o.Logger.Error("four-eyes: the offset move was not recorded", "plan", p.ID, "err", err)
	}
	done(nil, outcome())
	t := m.o.Now()
	res.AppliedAt, res.AppliedBy = &t, r.Actor.Name
	return res, nil
}

// maxReason bounds a reason in characters, as the handlers' requiredReason does.
const maxReason = 1000

// groupTarget is the audit target of a change to a group's offsets.
func groupTarget(cluster, group string) string { return "kafka/" + cluster + "/groups/" + group }

// committedText says a committed offset as a person reads it: -1 is "not committed".
func committedText(off int64) string {
	if off < 0 {
		return "not committed"
	}
	return fmt.Sprintf("committed %d", off)
}

// ApplyRefused says why the plan may not be applied, as Apply refuses it (ops.ErrConflict): it
// was applied already, or it skips enough records to need a second person's approval and has
// none yet. nil when the plan allows it; the group's members and offsets are the broker's to
// say when it applies. The plan page offers Apply only then.
func (p Plan) ApplyRefused() error {
	if p.AppliedAt != nil {
		return fmt.Errorf("offset plan %q was applied at %s by %s: %w",
			p.ID, p.AppliedAt.UTC().Format(time.RFC3339), p.AppliedBy, ops.ErrConflict)
	}
	if p.FourEyes && p.ApprovedBy == "" {
		return ops.Conflict("offset plan %q skips %d records and awaits a second, different person's approval", p.ID, p.Skipped)
	}
	return nil
}

// ApproveRefused says why by may not approve the plan, as Approve refuses it: ops.ErrConflict
// for a plan that needs no approval or was approved or applied already, ops.ErrForbidden for its
// author. nil when Approve would go ahead; the plan page offers Approve only then.
func (p Plan) ApproveRefused(by access.Actor) error {
	if !p.FourEyes {
		return ops.Conflict("offset plan %q needs no approval", p.ID)
	}
	if err := foureyes.ApproveRefused(p.plannedBy(), by, "planned this offset move"); err != nil {
		return err
	}
	if p.AppliedAt != nil || p.ApprovedBy != "" {
		return ops.Conflict("offset plan %q was already approved or applied", p.ID)
	}
	return nil
}

// Approve is a second operator's yes to a four-eyes plan: not its author. Errors: ops.ErrInvalid
// (no id), ops.ErrNotFound, ops.ErrForbidden (the author), ops.ErrConflict (approved or applied
// already, or not a four-eyes plan).
func (m *Mover) Approve(ctx context.Context, id string, by access.Actor) (Plan, error) {
	if id == "" { // as Apply says it, not 'offset plan "" not found'
		return Plan{}, ops.Invalid("plan_id", "required: the plan_id a plan answer gave")
	}
	p, err := m.Get(ctx, id)
	if err != nil {
		return Plan{}, err
	}
	if err := p.ApproveRefused(by); err != nil {
		return p, err
	}
	done, err := m.audit.Intend(ctx, audit.Entry{Actor: by.Name, Role: by.Role.String(), Action: "kafka.offsets.approve",
		Target: groupTarget(p.Cluster, p.Group), Count: new(p.Skipped), Detail: map[string]any{"plan_id": id}})
	if err != nil {
		return p, err
	}
	err = m.o.Store.ApproveOffsetPlan(ctx, id, by.Name)
	done(err, nil)
	if err != nil {
		return p, err
	}
	p.ApprovedBy = by.Name
	return p, nil
}

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
