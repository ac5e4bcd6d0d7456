package kafka

import (
	"context"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/redrive/redrive/ops"
)

// Group is one consumer group and its lag.
type Group struct {
	Name         string
	State        string // Kafka's group state: Stable, PreparingRebalance, CompletingRebalance, Empty, Dead
	ProtocolType string // "consumer" for consumer groups, "connect" for Kafka Connect; empty for offset-only groups
	Protocol     string // the partition assignor in use, e.g. "cooperative-sticky"; empty unless Stable
	Members      int
	TotalLag     int64 // sum of the partitions' known (non-negative) lag
	// MaxTimeLag is the largest of its topics' MaxTimeLag: how far behind in time the group's
	// furthest-behind partition is; 0 when caught up, -1 when only unknown time lags lag.
	MaxTimeLag time.Duration
	Topics     []TopicLag
	// Error is set when the group could not be described or its offsets fetched (for example its
	// coordinator is loading); Topics is then empty. Other groups are unaffected.
	Error string
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
	Member  string // "client-id@host" of the member assigned this partition; empty if none
	Error   string // why Lag is unknown, e.g. the topic was deleted
}

// Groups returns every classic consumer group with its lag, sorted by name. The number of admin
// requests does not depend on the number of groups: ListGroups, one DescribeGroups, one batched
// OffsetFetch, and one start- and one end-offset listing for all topics involved (each sharded per
// broker). It returns ops.ErrUnavailable when a broker cannot be reached.
func (c *Cluster) Groups(ctx context.Context) ([]Group, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	listed, err := c.adm.ListGroups(ctx)
	if err != nil {
		// A partial listing would silently hide groups; report the panel as unavailable instead.
		return nil, c.fail("list groups", err)
	}
	var names []string
	for _, g := range listed {
		// KIP-848 ("consumer") and share groups cannot be described with DescribeGroups.
		if g.GroupType == "" || g.GroupType == "classic" {
			names = append(names, g.Group)
		}
	}
	if len(names) == 0 {
		return []Group{}, nil
	}
	lags, err := c.adm.Lag(ctx, names...)
	if err != nil {
		return nil, c.fail("group lag", err)
	}
	out := make([]Group, 0, len(lags))
	for _, l := range lags.Sorted() {
		out = append(out, groupFrom(l))
	}
	c.fillTimeLags(ctx, out, time.Now())
	return out, nil
}

// Group returns one consumer group with its lag. An unknown group is ops.ErrNotFound.
func (c *Cluster) Group(ctx context.Context, name string) (Group, error) {
	if name == "" {
		return Group{}, ops.Invalid("group", "required")
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
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
