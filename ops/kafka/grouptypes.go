package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-848 consumer groups and KIP-932 share groups. DescribeGroups knows neither (Kafka answers
// it for a consumer group with no members, or not at all), so each type is described with its
// own request — ConsumerGroupDescribe, ShareGroupDescribe — beside the classic groups' lag, and
// every type's offsets are listed with one start- and one end-offset listing for all topics.

// groupsByType splits a listing into the names of each type. Streams groups (KIP-1071) have no
// committed offsets a console reads the same way; they are left out.
func groupsByType(listed kadm.ListedGroups) (classic, consumer, share []string) {
	for _, g := range listed.Sorted() {
		switch g.GroupType {
		case "", GroupClassic:
			classic = append(classic, g.Group)
		case GroupConsumer:
			consumer = append(consumer, g.Group)
		case GroupShare:
			share = append(share, g.Group)
		}
	}
	return classic, consumer, share
}

// groupType is the type of one group: a single ListGroups asking only for consumer and share
// groups (a broker before Kafka 3.8 ignores the filter and has only classic groups). A group
// listed as neither is classic, as is one the cluster does not have (the classic path says so).
func (c *Cluster) groupType(ctx context.Context, name string) (string, error) {
	listed, err := c.adm.ListGroupsByType(ctx, []string{GroupConsumer, GroupShare})
	if err != nil {
		return "", err
	}
	if g, ok := listed[name]; ok && (g.GroupType == GroupConsumer || g.GroupType == GroupShare) {
		return g.GroupType, nil
	}
	return GroupClassic, nil
}

// newGenGroups describes consumer and share groups and computes their lag. The requests do not
// depend on the number of groups: ConsumerGroupDescribe, OffsetFetch, ShareGroupDescribe and
// DescribeShareGroupOffsets side by side (each sharded per coordinator), then one metadata
// request when a broker named assigned topics by ID only, one start- and one end-offset listing
// and, with share groups, one DescribeConfigs for their delivery limits. A group that cannot be
// described has Error set; an error of the whole (no broker answered) is returned.
func (c *Cluster) newGenGroups(ctx context.Context, consumer, share []string) ([]Group, error) {
	var (
		wg        sync.WaitGroup
		cons      map[string]consumerDescribed
		consErr   error
		fetched   kadm.FetchOffsetsResponses
		shares    kadm.DescribedShareGroups
		sharesErr error
		sOffs     kadm.DescribedShareGroupsOffsets
		sOffsErr  error
	)
	if len(consumer) > 0 {
		wg.Go(func() { cons, consErr = c.describeConsumerGroups(ctx, consumer) })
		wg.Go(func() { fetched = c.adm.FetchManyOffsets(ctx, consumer...) })
	}
	if len(share) > 0 {
		wg.Go(func() { shares, sharesErr = c.describeShareGroups(ctx, share) })
		wg.Go(func() { sOffs, sOffsErr = c.adm.DescribeShareGroupOffsets(ctx, share...) })
	}
	wg.Wait()
	if _, ok := errors.AsType[*kadm.AuthError](sOffsErr); ok {
		// A share group the principal may not describe (or one of whose topics): kadm gives up on
		// the whole answer; each share group says so, the other groups are read.
		sOffs = nil
	} else if sOffsErr != nil && !isShardErr(sOffsErr) {
		return nil, sOffsErr
	}
	for _, err := range []error{consErr, sharesErr} {
		if err != nil && !isShardErr(err) {
			return nil, err
		}
	}
	for _, r := range fetched {
		if _, ok := errors.AsType[*kadm.AuthError](r.Err); ok {
			return nil, r.Err
		}
	}

	// Topic IDs a broker gave without names (kfake does, for ConsumerGroupDescribe) are named
	// from the metadata.
	if unnamedTopicIDs(cons) > 0 {
		md, err := c.adm.Metadata(ctx)
		if err != nil {
			return nil, err
		}
		names := make(map[[16]byte]string, len(md.Topics))
		for t, d := range md.Topics {
			names[d.ID] = t
		}
		for g, d := range cons {
			d.name(names)
			cons[g] = d
		}
	}

	topics := kadm.TopicsSet{}
	for _, d := range cons {
		for _, m := range d.Members {
			for _, tp := range m.Assigned {
				topics.Add(tp.Topic, tp.Partitions...)
			}
			for _, t := range m.Subscribed {
				topics.Add(t)
			}
		}
	}
	topics.Merge(fetched.CommittedPartitions())
	for _, g := range shares {
		topics.Merge(g.AssignedPartitions())
	}
	for _, o := range sOffs {
		o.Offsets.Each(func(so kadm.ShareOffset) { topics.Add(so.Topic, so.Partition) })
	}
	var (
		starts, ends kadm.ListedOffsets
		limits       map[string]deliveryLimit
	)
	if ts := topics.Topics(); len(ts) > 0 {
		var serr, eerr error
		wg.Go(func() { starts, serr = c.adm.ListStartOffsets(ctx, ts...) })
		wg.Go(func() { ends, eerr = c.adm.ListEndOffsets(ctx, ts...) })
		if len(shares) > 0 {
			wg.Go(func() { limits = c.deliveryLimits(ctx, shares) })
		}
		wg.Wait()
		for _, err := range []error{serr, eerr} {
			// As kadm's Lag: a broker that did not answer leaves its partitions' lag unknown.
			if err != nil && !isShardErr(err) {
				return nil, err
			}
		}
	}

	out := make([]Group, 0, len(consumer)+len(share))
	for _, name := range consumer {
		out = append(out, consumerGroupFrom(name, cons, consErr, fetched, starts, ends))
	}
	for _, name := range share {
		out = append(out, shareGroupFrom(name, shares, sharesErr, sOffs, sOffsErr, starts, ends, limits[name]))
	}
	return out, nil
}

// isShardErr is whether err is a *kadm.ShardErrors of which some shards succeeded: the groups of
// the failed ones carry the error, the rest are answered.
func isShardErr(err error) bool {
	se, ok := errors.AsType[*kadm.ShardErrors](err)
	return ok && !se.AllFailed
}

// consumerDescribed is one ConsumerGroupDescribe answer, with topic IDs kept so that a broker that
// names assigned topics by ID only can be understood.
type consumerDescribed struct {
	State, Assignor        string
	Epoch, AssignmentEpoch int32
	Members                []consumerMember
	Err                    error
}

type consumerMember struct {
	Member
	Subscribed []string
	ids        map[string][16]byte // Assigned/Target topic "" placeholders → ID (unnamed only)
}

// describeConsumerGroups sends ConsumerGroupDescribe for the groups (sharded per coordinator). A
// shard that failed leaves its groups with that error; the returned error is a *kadm.ShardErrors
// then, or the failure of the whole.
func (c *Cluster) describeConsumerGroups(ctx context.Context, groups []string) (map[string]consumerDescribed, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = groups
	out := make(map[string]consumerDescribed, len(groups))
	var shardErrs []kadm.ShardError
	answered := 0
	for _, sh := range c.cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			shardErrs = append(shardErrs, kadm.ShardError{Req: sh.Req, Err: sh.Err})
			if r, ok := sh.Req.(*kmsg.ConsumerGroupDescribeRequest); ok {
				for _, g := range r.Groups {
					out[g] = consumerDescribed{Err: sh.Err}
				}
			}
			continue
		}
		answered++
		resp := sh.Resp.(*kmsg.ConsumerGroupDescribeResponse)
		for _, rg := range resp.Groups {
			d := consumerDescribed{State: rg.State, Assignor: rg.AssignorName, Epoch: rg.Epoch, AssignmentEpoch: rg.AssignmentEpoch,
				Err: kerr.ErrorForCode(rg.ErrorCode)}
			for _, rm := range rg.Members {
				m := consumerMember{Member: Member{ID: rm.MemberID, ClientID: rm.ClientID, Host: rm.ClientHost, Epoch: rm.MemberEpoch,
					Classic: rm.MemberType == 0}, Subscribed: rm.SubscribedTopics}
				if rm.InstanceID != nil {
					m.InstanceID = *rm.InstanceID
				}
				m.Assigned = m.assignment(rm.Assignment)
				if target := m.assignment(rm.TargetAssignment); !sameAssignment(m.Assigned, target) {
					m.Target = target
				}
				d.Members = append(d.Members, m)
			}
			sort.Slice(d.Members, func(i, j int) bool { return d.Members[i].ID < d.Members[j].ID })
			out[rg.Group] = d
		}
	}
	if len(shardErrs) > 0 {
		return out, &kadm.ShardErrors{Name: "ConsumerGroupDescribe", Errs: shardErrs, AllFailed: answered == 0}
	}
	return out, nil
}

// describeShareGroups sends ShareGroupDescribe for the groups (sharded per coordinator), keeping
// each group's own error: kadm's DescribeShareGroups drops the whole answer when one group is
// refused (a share group whose topics the principal may not describe is), which would cost every
// other group its lag. A shard that failed leaves its groups with that error.
func (c *Cluster) describeShareGroups(ctx context.Context, groups []string) (kadm.DescribedShareGroups, error) {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = groups
	out := make(kadm.DescribedShareGroups, len(groups))
	var shardErrs []kadm.ShardError
	answered := 0
	for _, sh := range c.cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			shardErrs = append(shardErrs, kadm.ShardError{Req: sh.Req, Err: sh.Err})
			if r, ok := sh.Req.(*kmsg.ShareGroupDescribeRequest); ok {
				for _, g := range r.GroupIDs {
					out[g] = kadm.DescribedShareGroup{GroupID: g, Err: sh.Err}
				}
			}
			continue
		}
		answered++
		resp := sh.Resp.(*kmsg.ShareGroupDescribeResponse)
		for _, rg := range resp.Groups {
			g := kadm.DescribedShareGroup{GroupID: rg.GroupID, Coordinator: sh.Meta, GroupState: rg.GroupState, GroupEpoch: rg.GroupEpoch,
				AssignmentEpoch: rg.AssignmentEpoch, Assignor: rg.Assignor, Err: kerr.ErrorForCode(rg.ErrorCode)}
			for _, rm := range rg.Members {
				m := kadm.ShareGroupMember{MemberID: rm.MemberID, RackID: rm.RackID, MemberEpoch: rm.MemberEpoch, ClientID: rm.ClientID,
					ClientHost: rm.ClientHost, SubscribedTopicNames: rm.SubscribedTopicNames, Assignment: kadm.TopicsSet{}}
				for _, tp := range rm.Assignment.TopicPartitions {
					m.Assignment.Add(tp.Topic, tp.Partitions...)
				}
				g.Members = append(g.Members, m)
			}
			sort.Slice(g.Members, func(i, j int) bool { return g.Members[i].MemberID < g.Members[j].MemberID })
			out[rg.GroupID] = g
		}
	}
	if len(shardErrs) > 0 {
		return out, &kadm.ShardErrors{Name: "ShareGroupDescribe", Errs: shardErrs, AllFailed: answered == 0}
	}
	return out, nil
}

// assignment reads an assignment; a topic given by ID only is kept under "#<hex id>" until
// name resolves it.
func (m *consumerMember) assignment(a kmsg.Assignment) []TopicPartitions {
	out := make([]TopicPartitions, 0, len(a.TopicPartitions))
	for _, tp := range a.TopicPartitions {
		t := tp.Topic
		if t == "" {
			t = fmt.Sprintf("#%x", tp.TopicID)
			if m.ids == nil {
				m.ids = map[string][16]byte{}
			}
			m.ids[t] = tp.TopicID
		}
		ps := append([]int32(nil), tp.Partitions...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		out = append(out, TopicPartitions{Topic: t, Partitions: ps})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

func sameAssignment(a, b []TopicPartitions) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Topic != b[i].Topic || len(a[i].Partitions) != len(b[i].Partitions) {
			return false
		}
		for j := range a[i].Partitions {
			if a[i].Partitions[j] != b[i].Partitions[j] {
				return false
			}
		}
	}
	return true
}

func unnamedTopicIDs(cons map[string]consumerDescribed) int {
	n := 0
	for _, d := range cons {
		for _, m := range d.Members {
			n += len(m.ids)
		}
	}
	return n
}

// name replaces topic-ID placeholders with the names the metadata gives (an ID the metadata does
// not know stays a placeholder: the topic was deleted).
func (d *consumerDescribed) name(names map[[16]byte]string) {
	for i := range d.Members {
		m := &d.Members[i]
		for _, as := range [][]TopicPartitions{m.Assigned, m.Target} {
			for j := range as {
				if id, ok := m.ids[as[j].Topic]; ok {
					if n, ok := names[id]; ok {
						as[j].Topic = n
					}
				}
			}
			sort.Slice(as, func(a, b int) bool { return as[a].Topic < as[b].Topic })
		}
		m.ids = nil
	}
}

// consumerGroupFrom computes a consumer group's lag exactly as kadm does for a classic one
// (CalculateGroupLagWithStartOffsets): every assigned partition with its member, every other
// committed partition without one, the subscribed topics primed; then the classic groupFrom.
func consumerGroupFrom(name string, cons map[string]consumerDescribed, consErr error, fetched kadm.FetchOffsetsResponses,
	starts, ends kadm.ListedOffsets) Group {
	d, ok := cons[name]
	if !ok {
		d.Err = errOr(consErr, "missing from the ConsumerGroupDescribe answer")
	}
	l := kadm.DescribedGroupLag{Group: name, State: d.State, ProtocolType: "consumer", Protocol: d.Assignor, DescribeErr: d.Err}
	f, fok := fetched[name]
	switch {
	case d.Err != nil:
	case !fok:
		l.FetchErr = errors.New("missing from the OffsetFetch answer")
	case f.Err != nil:
		l.FetchErr = f.Err
	}
	members := make([]kadm.DescribedGroupMember, len(d.Members))
	for i, m := range d.Members {
		members[i] = kadm.DescribedGroupMember{MemberID: m.ID, ClientID: m.ClientID, ClientHost: m.Host}
	}
	l.Members = members
	if l.Error() == nil {
		l.Lag = kadm.GroupLag{}
		lagAt := func(topic string, p int32, member *kadm.DescribedGroupMember) {
			lt := l.Lag[topic]
			if lt == nil {
				lt = map[int32]kadm.GroupMemberLag{}
				l.Lag[topic] = lt
			}
			if _, done := lt[p]; done {
				return
			}
			lt[p] = memberLag(topic, p, member, f.Fetched, starts, ends)
		}
		for i, m := range d.Members {
			for _, tp := range m.Assigned {
				for _, p := range tp.Partitions {
					lagAt(tp.Topic, p, &members[i])
				}
			}
			for _, t := range m.Subscribed {
				if _, ok := l.Lag[t]; !ok {
					l.Lag[t] = map[int32]kadm.GroupMemberLag{}
				}
			}
		}
		for t, ps := range f.Fetched {
			for p := range ps {
				lagAt(t, p, nil)
			}
		}
	}
	g := groupFrom(l)
	g.Type, g.Epoch, g.AssignmentEpoch, g.Members = GroupConsumer, d.Epoch, d.AssignmentEpoch, len(d.Members)
	g.MemberList = make([]Member, len(d.Members))
	for i, m := range d.Members {
		g.MemberList[i] = m.Member
	}
	return g
}

// memberLag is one partition's lag in kadm's terms (CalculateGroupLagWithStartOffsets): end minus
// the commit, or minus the log start without one, at least 0; -1 with the error when the commit
// or the end offset is not known.
func memberLag(topic string, p int32, member *kadm.DescribedGroupMember, commits kadm.OffsetResponses,
	starts, ends kadm.ListedOffsets) kadm.GroupMemberLag {
	missing := errors.New("missing from list offsets")
	commit := kadm.OffsetResponse{Offset: kadm.Offset{Topic: topic, Partition: p, At: -1}}
	if c, ok := commits.Lookup(topic, p); ok {
		commit = c
	}
	end := kadm.ListedOffset{Topic: topic, Partition: p, Err: missing}
	start := end
	var err error = missing
	if e, ok := ends.Lookup(topic, p); ok {
		end, err = e, nil
	} else if m, ok := ends[topic][-1]; ok && m.Err != nil {
		end.Err, err = m.Err, m.Err // the topic does not exist
	}
	if err == nil {
		if err = commit.Err; err == nil {
			err = end.Err
		}
	}
	if s, ok := starts.Lookup(topic, p); ok {
		start = s
	}
	lag := int64(-1)
	if err == nil {
		lag = end.Offset
		if start.Err == nil {
			lag = end.Offset - start.Offset
		}
		if commit.At >= 0 {
			lag = end.Offset - commit.At
		}
		lag = max(lag, 0)
	}
	return kadm.GroupMemberLag{Member: member, Topic: topic, Partition: p, Commit: commit.Offset, Start: start, End: end, Lag: lag, Err: err}
}

// shareGroupFrom is a share group in its own terms: per partition the share-partition start
// offset and the lag the broker reports (records at or above it not yet acknowledged or
// archived); no committed offset.
func shareGroupFrom(name string, shares kadm.DescribedShareGroups, sharesErr error, offs kadm.DescribedShareGroupsOffsets, offsErr error,
	starts, ends kadm.ListedOffsets, limit deliveryLimit) Group {
	g := Group{Name: name, Type: GroupShare, ProtocolType: "share", Topics: []TopicLag{}, DeliveryLimit: limit.n, DeliveryLimitFrom: limit.from}
	d, ok := shares[name]
	switch {
	case !ok:
		g.Error = errOr(sharesErr, "missing from the ShareGroupDescribe answer").Error()
		return g
	case d.Err != nil:
		g.Error = d.Err.Error()
		return g
	}
	g.State, g.Protocol, g.Epoch, g.AssignmentEpoch, g.Members = d.GroupState, d.Assignor, d.GroupEpoch, d.AssignmentEpoch, len(d.Members)
	owners := map[string]map[int32][]string{} // topic → partition → member labels
	for _, m := range d.Members {
		mm := Member{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Epoch: m.MemberEpoch}
		for _, t := range m.Assignment.Sorted() {
			mm.Assigned = append(mm.Assigned, TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
			if owners[t.Topic] == nil {
				owners[t.Topic] = map[int32][]string{}
			}
			for _, p := range t.Partitions {
				owners[t.Topic][p] = append(owners[t.Topic][p], mm.Label())
			}
		}
		g.MemberList = append(g.MemberList, mm)
	}
	o, ok := offs[name]
	switch {
	case !ok:
		g.Error = errOr(offsErr, "missing from the DescribeShareGroupOffsets answer").Error()
		return g
	case o.Err != nil:
		g.Error = o.Err.Error()
		return g
	}
	parts := map[string]map[int32]bool{}
	add := func(t string, p int32) {
		if parts[t] == nil {
			parts[t] = map[int32]bool{}
		}
		parts[t][p] = true
	}
	o.Offsets.Each(func(so kadm.ShareOffset) { add(so.Topic, so.Partition) })
	for t, ps := range owners {
		for p := range ps {
			add(t, p)
		}
	}
	for t, ps := range parts {
		pls := make([]PartitionLag, 0, len(ps))
		for p := range ps {
			pl := PartitionLag{Partition: p, Committed: -1, Start: -1, End: -1, Lag: -1, ShareStart: -1}
			if s, ok := starts.Lookup(t, p); ok && s.Err == nil {
				pl.Start = s.Offset
			}
			if e, ok := ends.Lookup(t, p); ok && e.Err == nil {
				pl.End = e.Offset
			}
			if so, ok := o.Offsets.Lookup(t, p); ok {
				if so.Err != nil {
					pl.Error = so.Err.Error()
				} else {
					pl.ShareStart, pl.Lag = max(so.StartOffset, -1), max(so.Lag, -1)
					if pl.Lag < 0 && pl.ShareStart >= 0 && pl.End >= 0 {
						// A broker without KIP-1226 (v0) reports no lag: at most the records from
						// the start offset on, which unknown would have hidden from every verdict.
						pl.Lag, pl.LagAtMost = max(pl.End-pl.ShareStart, 0), true
					}
				}
			}
			pl.Member = strings.Join(owners[t][p], ", ")
			pls = append(pls, pl)
		}
		addTopic(&g, t, pls)
	}
	sortTopics(&g)
	return g
}

// deliveryLimit is a share group's delivery limit and where it is set.
type deliveryLimit struct {
	n    int
	from string
}

// deliveryLimits reads, with one DescribeConfigs, each share group's share.delivery.count.limit
// and the brokers' group.share.delivery.count.limit that applies where a group sets none (asked of
// a coordinator, which has the static config too). A limit that cannot be read is left 0: it
// never costs the lag sample.
func (c *Cluster) deliveryLimits(ctx context.Context, shares kadm.DescribedShareGroups) map[string]deliveryLimit {
	req := kmsg.NewPtrDescribeConfigsRequest()
	broker := int32(-1)
	for _, g := range shares.Sorted() {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, g.GroupID, []string{"share.delivery.count.limit"}
		req.Resources = append(req.Resources, r)
		if broker < 0 && g.Err == nil {
			broker = g.Coordinator.NodeID
		}
	}
	if broker >= 0 {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(broker)), []string{"group.share.delivery.count.limit"}
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return nil
	}
	groups := map[string]int{}
	brokerLimit := 0
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			continue
		}
		for _, cfg := range r.Configs {
			if cfg.Value == nil {
				continue
			}
			n, err := strconv.Atoi(*cfg.Value)
			if err != nil || n <= 0 {
				continue
			}
			switch {
			case r.ResourceType == kmsg.ConfigResourceTypeBroker:
				brokerLimit = n
			case cfg.Source == kmsg.ConfigSourceGroupConfig:
				groups[r.ResourceName] = n // set on the group (DYNAMIC_GROUP_CONFIG)
			}
		}
	}
	out := make(map[string]deliveryLimit, len(shares))
	for name := range shares {
		switch {
		case groups[name] > 0:
			out[name] = deliveryLimit{groups[name], "group"}
		case brokerLimit > 0:
			out[name] = deliveryLimit{brokerLimit, "broker"}
		}
	}
	return out
}
