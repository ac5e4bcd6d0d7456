package kafkamodel

import (
	"time"
)

// Group types, as ListGroups (v5+, Kafka 3.8+) reports them.
const (
	// GroupClassic is a group of the JoinGroup/SyncGroup protocol, and every group of a broker
	// too old to say (including groups that only hold offsets).
	GroupClassic = "classic"
	// GroupConsumer is a KIP-848 consumer group: the broker assigns partitions (ConsumerGroupHeartbeat)
	// and describes it with ConsumerGroupDescribe.
	GroupConsumer = "consumer"
	// GroupShare is a KIP-932 share group: members share partitions, records are acknowledged one
	// by one, and there is no committed offset — the broker keeps a share-partition start offset.
	GroupShare = "share"
)

// Group is one consumer group and its lag.
type Group struct {
	Name string
	// Type is GroupClassic, GroupConsumer or GroupShare; "" reads as GroupClassic (a snapshot
	// written before types were kept). Kind gives it with that default.
	Type         string
	State        string // Kafka's group state: Stable, PreparingRebalance, CompletingRebalance, Empty, Dead; Assigning and Reconciling (consumer)
	ProtocolType string // "consumer" for consumer groups, "connect" for Kafka Connect, "share"; empty for offset-only groups
	Protocol     string // the partition assignor in use, e.g. "cooperative-sticky" (classic, only when Stable) or the broker's "uniform"/"range"
	Members      int
	// Epoch and AssignmentEpoch are the group epoch and the epoch of its target assignment
	// (consumer and share groups); 0 for classic groups, which count generations instead.
	Epoch, AssignmentEpoch int32
	// MemberList is every member with its assignment, by member ID.
	MemberList []Member
	// DeliveryLimit is, for a share group, how many times a record is delivered before the broker
	// archives it (share.delivery.count.limit of the group, else the brokers'
	// group.share.delivery.count.limit); 0 when it could not be read. DeliveryLimitFrom says
	// which ("group" or "broker").
	DeliveryLimit     int
	DeliveryLimitFrom string
	TotalLag          int64 // sum of the partitions' known (non-negative) lag
	// MaxTimeLag is the largest of its topics' MaxTimeLag: how far behind in time the group's
	// furthest-behind partition is; 0 when caught up, -1 when only unknown time lags lag.
	MaxTimeLag time.Duration
	Topics     []TopicLag
	// Error is set when the group could not be described or its offsets fetched (for example its
	// coordinator is loading); Topics is then empty. Other groups are unaffected.
	Error string
}

// Kind is the group's Type, GroupClassic when it is not set.
func (g Group) Kind() string {
	if g.Type == "" {
		return GroupClassic
	}
	return g.Type
}

// Member is one member of a group as its coordinator describes it.
type Member struct {
	ID         string
	InstanceID string // the static member's group.instance.id; "" for a dynamic member
	ClientID   string
	Host       string
	// Epoch is the member epoch (consumer and share groups): the group epoch the member has
	// caught up with; 0 for classic members.
	Epoch int32
	// Assigned is the partitions the member owns now.
	Assigned []TopicPartitions
	// Target is, in a consumer group, the assignment the broker is moving the member to, when it
	// differs from Assigned (the member is reconciling); nil otherwise.
	Target []TopicPartitions
	// Classic is a member of a consumer group that still speaks the classic protocol (an upgrade
	// in progress).
	Classic bool
}

// Label is how a partition names its member: "client-id@host".
func (m Member) Label() string { return m.ClientID + "@" + m.Host }

// TopicPartitions is a topic and some of its partitions, in order.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// TopicLag is a group's lag on one topic.
type TopicLag struct {
	Topic      string
	Lag        int64
	MaxTimeLag time.Duration // the largest of the partitions' TimeLag (-1 only if all lagging ones are unknown)
	Partitions []PartitionLag
}

// PartitionLag is a group's position on one partition.
//
// Kafka does not report when an offset was committed (OffsetFetch carries no timestamp), so the
// commit time is not here; the sampler's history (Sample) is what tells whether commits move.
type PartitionLag struct {
	Partition int32
	Committed int64 // the committed offset, or -1 if the group never committed here
	Start     int64 // log start offset, or -1 if it could not be listed
	End       int64 // log end offset (high watermark), or -1 if it could not be listed
	Lag       int64 // End − Committed; End − Start when nothing (still existing) is committed; -1 if unknown
	// TimeLag is now minus the timestamp of the next record to consume (the one at the committed
	// offset; at the log start when nothing is committed): 0 when caught up, -1 when unknown.
	TimeLag time.Duration
	Member  string // "client-id@host" of the member assigned this partition (share groups: of each, joined by ", "); empty if none
	Error   string // why Lag is unknown, e.g. the topic was deleted
	// ShareStart is, in a share group, the share-partition start offset: every record below it is
	// acknowledged, or archived after its last delivery. -1 when the group has no state on the
	// partition yet; unused in other groups, whose Committed it stands in for (a share group's
	// Committed is -1 and its Lag is the broker's: records at or above ShareStart not yet done).
	ShareStart int64
	// NoRecords is how many offsets from the group's position on hold no record a read_committed
	// consumer gets — transaction markers, records of aborted transactions — as the time-lag read
	// found them before the next committed record: Lag leaves them out. Kafka's own tools count
	// them, so a transactional consumer idle at the end shows lag 1 there (its last marker).
	NoRecords int64
	// LagAtMost says Lag is an upper bound: a share group on a broker that reports no lag of its
	// own (DescribeShareGroupOffsets v0, Kafka before 4.2 and KIP-1226), whose Lag is then every
	// record from ShareStart to End — some of them may be acknowledged already. The sampler still
	// sees a start offset that does not move while the log grows.
	LagAtMost bool
}

// GroupOffsets is one group's committed offsets and its topics' end offsets as the cluster had
// them at At.
type GroupOffsets struct {
	At time.Time
	// Committed is, by topic and partition, the group's committed offset; a partition the group
	// never committed is absent.
	Committed map[string]map[int32]int64
	// End is, by topic and partition, the log end offset (high watermark, as Groups lists it); a
	// partition that could not be listed is absent.
	End map[string]map[int32]int64
}

// Membership is a group's type, state and members as the coordinator reports them.
type Membership struct {
	Type    string // GroupClassic, GroupConsumer or GroupShare
	State   string
	Members []string // "client-id@host (member-id)"
}

// CommittedLag is what a group committed at committed still has to read of a log [start, end): a
// commit below the log start points at records retention deleted, and the consumer resets to
// what is left. start < 0 is unknown. The sampled lag and the live read both count it so.
func CommittedLag(committed, start, end int64) int64 {
	if start > committed && end >= start {
		return end - start
	}
	return max(end-committed, 0)
}
