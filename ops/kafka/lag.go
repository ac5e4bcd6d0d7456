package kafka

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
)

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
		pls := make([]PartitionLag, 0, len(ps))
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
			if pl.Lag > 0 && pl.Committed >= 0 {
				pl.Lag = kafkamodel.CommittedLag(pl.Committed, pl.Start, pl.End)
			}
			if m.Member != nil {
				pl.Member = m.Member.ClientID + "@" + m.Member.ClientHost
			}
			if m.Err != nil {
				pl.Error = m.Err.Error()
			}
			pls = append(pls, pl)
		}
		addTopic(&g, topic, pls)
	}
	sortTopics(&g)
	return g
}

// addTopic adds topic's partitions to g, in order: the topic's lag and the group's total grow by
// each partition's known lag (a negative one is unknown and adds nothing).
func addTopic(g *Group, topic string, partitions []PartitionLag) {
	tl := TopicLag{Topic: topic, Partitions: partitions}
	for _, pl := range partitions {
		if pl.Lag > 0 {
			tl.Lag += pl.Lag
		}
	}
	sort.Slice(tl.Partitions, func(i, j int) bool { return tl.Partitions[i].Partition < tl.Partitions[j].Partition })
	g.TotalLag += tl.Lag
	g.Topics = append(g.Topics, tl)
}

// sortTopics orders g's topics by name, once every topic is added.
func sortTopics(g *Group) {
	sort.Slice(g.Topics, func(i, j int) bool { return g.Topics[i].Topic < g.Topics[j].Topic })
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
