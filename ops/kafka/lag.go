package kafka

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/redrive/redrive/ops"
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
}

// Groups returns every group the cluster lists — classic, KIP-848 consumer and share groups,
// each with its Type — with its lag, sorted by name. The number of admin requests does not depend
// on the number of groups: ListGroups, then side by side the classic groups' DescribeGroups,
// batched OffsetFetch and offset listings (kadm's Lag) and the other types' (newGenGroups), then
// the time lags. It returns ops.ErrUnavailable when a broker cannot be reached.
func (c *Cluster) Groups(ctx context.Context) ([]Group, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	listed, err := c.adm.ListGroups(ctx)
	if err != nil {
		// A partial listing would silently hide groups; report the panel as unavailable instead.
		return nil, c.fail("list groups", err)
	}
	classic, consumer, share := groupsByType(listed)
	if len(classic)+len(consumer)+len(share) == 0 {
		return []Group{}, nil
	}
	var (
		next    []Group
		nextErr error
		wg      sync.WaitGroup
	)
	if len(consumer)+len(share) > 0 {
		wg.Go(func() { next, nextErr = c.newGenGroups(ctx, consumer, share) })
	}
	var lags kadm.DescribedGroupLags
	if len(classic) > 0 {
		lags, err = c.adm.Lag(ctx, classic...)
	}
	wg.Wait()
	if err != nil {
		return nil, c.fail("group lag", err)
	}
	if nextErr != nil {
		return nil, c.fail("describe consumer and share groups", nextErr)
	}
	out := make([]Group, 0, len(lags)+len(next))
	for _, l := range lags.Sorted() {
		g := groupFrom(l)
		g.Type = GroupClassic
		out = append(out, g)
	}
	if len(next) > 0 {
		out = append(out, next...)
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	}
	c.fillTimeLags(ctx, out, time.Now())
	return out, nil
}

// Group returns one group of any type with its lag. An unknown group is ops.ErrNotFound.
func (c *Cluster) Group(ctx context.Context, name string) (Group, error) {
	if name == "" {
		return Group{}, ops.Invalid("group", "required")
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	typ, err := c.groupType(ctx, name)
	if err != nil {
		return Group{}, c.fail("group "+named(name), err)
	}
	if typ != GroupClassic {
		var consumer, share []string
		if typ == GroupConsumer {
			consumer = []string{name}
		} else {
			share = []string{name}
		}
		gs, err := c.newGenGroups(ctx, consumer, share)
		if err != nil {
			return Group{}, c.fail("group "+named(name), err)
		}
		if len(gs) != 1 {
			return Group{}, c.groupNotFound(name)
		}
		c.fillTimeLags(ctx, gs, time.Now())
		return gs[0], nil
	}
	lags, err := c.adm.Lag(ctx, name)
	if err != nil {
		return Group{}, c.fail("group "+named(name), err)
	}
	l, ok := lags[name]
	if err := c.groupAnswer("group "+named(name), name, ok, l.Error()); err != nil {
		return Group{}, err
	}
	// Brokers before DescribeGroups v6 answer an unknown group as Dead with no members.
	if l.State == "Dead" && len(l.Members) == 0 && len(l.Lag) == 0 {
		return Group{}, c.groupNotFound(name)
	}
	g := []Group{groupFrom(l)}
	g[0].Type = GroupClassic
	c.fillTimeLags(ctx, g, time.Now())
	return g[0], nil
}

func groupFrom(l kadm.DescribedGroupLag) Group {
	g := Group{
		Name:         l.Group,
		State:        l.State,
		ProtocolType: l.ProtocolType,
		Protocol:     l.Protocol,
		Members:      len(l.Members),
		Topics:       []TopicLag{},
	}
	if len(l.Members) > 0 {
		g.MemberList = classicMembers(l.Members)
	}
	if err := l.Error(); err != nil {
		g.Error = err.Error()
		return g
	}
	for topic, ps := range l.Lag {
		tl := TopicLag{Topic: topic, Partitions: make([]PartitionLag, 0, len(ps))}
		for _, m := range ps {
			pl := PartitionLag{
				Partition: m.Partition,
				Committed: m.Commit.At,
				Start:     -1,
				End:       -1,
				Lag:       m.Lag,
			}
			if pl.Committed < 0 {
				pl.Committed = -1
			}
			if m.Start.Err == nil {
				pl.Start = m.Start.Offset
			}
			if m.End.Err == nil {
				pl.End = m.End.Offset
			}
			// A commit below the log start points at records retention already deleted; the
			// consumer will reset and can at most read what still exists.
			if pl.Lag > 0 && pl.Committed >= 0 && pl.Start > pl.Committed && pl.End >= pl.Start {
				pl.Lag = pl.End - pl.Start
			}
			if m.Member != nil {
				pl.Member = m.Member.ClientID + "@" + m.Member.ClientHost
			}
			if m.Err != nil {
				pl.Error = m.Err.Error()
			}
			if pl.Lag > 0 {
				tl.Lag += pl.Lag
			}
			tl.Partitions = append(tl.Partitions, pl)
		}
		sort.Slice(tl.Partitions, func(i, j int) bool { return tl.Partitions[i].Partition < tl.Partitions[j].Partition })
		g.TotalLag += tl.Lag
		g.Topics = append(g.Topics, tl)
	}
	sort.Slice(g.Topics, func(i, j int) bool { return g.Topics[i].Topic < g.Topics[j].Topic })
	return g
}

// classicMembers lists a classic group's members with the partitions each was assigned.
func classicMembers(ms []kadm.DescribedGroupMember) []Member {
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		mm := Member{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			mm.InstanceID = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				ps := append([]int32(nil), t.Partitions...)
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
				mm.Assigned = append(mm.Assigned, TopicPartitions{Topic: t.Topic, Partitions: ps})
			}
			sort.Slice(mm.Assigned, func(i, j int) bool { return mm.Assigned[i].Topic < mm.Assigned[j].Topic })
		}
		out = append(out, mm)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
