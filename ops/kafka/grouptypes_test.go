package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/waittest"
)

// kip848Member joins group as a KIP-848 member (the broker assigns, ConsumerGroupHeartbeat) of
// topic, reads until it owns partitions and has records, and commits offsets: it stays a live
// member until the test ends.
func kip848Member(t *testing.T, f *fake, group, topic, clientID string, commits map[int32]int64) *kgo.Client {
	t.Helper()
	cl := kfaketest.Client(t, f.broker, kgo.ClientID(clientID), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxT(t)
	for got := 0; got == 0; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no records polled: %v", err)
		}
		got += fs.NumRecords()
	}
	offs := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for p, o := range commits {
		offs[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var cerr error
	cl.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cerr = err
		if err == nil {
			for _, tp := range resp.Topics {
				for _, p := range tp.Partitions {
					if p.ErrorCode != 0 && cerr == nil {
						cerr = kerr.ErrorForCode(p.ErrorCode)
					}
				}
			}
		}
	})
	if cerr != nil {
		t.Fatalf("commit %s: %v", group, cerr)
	}
	return cl
}

// shareEarliest sets the share group's share.auto.offset.reset to earliest (a GROUP config
// resource), so that it reads the records already in its topics.
func shareEarliest(t testing.TB, f *fake, group string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctxT(t), f.prod)
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range resp.Resources {
		if rr.ErrorCode != 0 {
			t.Fatalf("alter group config %s: code %d", group, rr.ErrorCode)
		}
	}
}

// shareMember joins group as a share consumer of topic, polls once and accepts the records below
// ackBelow, holding the others (acquired, not acknowledged: they stay in the broker's lag). It is
// not polled again, so nothing else is acknowledged.
func shareMember(t *testing.T, f *fake, group, topic, clientID string, ackBelow int64) *kgo.Client {
	t.Helper()
	shareEarliest(t, f, group)
	cl := kfaketest.Client(t, f.broker, kgo.ClientID(clientID), kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	ctx := ctxT(t)
	var recs []*kgo.Record
	for len(recs) == 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no records polled: %v", err)
		}
		recs = fs.Records()
	}
	for _, r := range recs {
		if r.Offset < ackBelow {
			r.Ack(kgo.AckAccept)
		}
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatalf("flush acks: %v", err)
	}
	return cl
}

func findGroup(t *testing.T, gs []Group, name string) Group {
	t.Helper()
	for _, g := range gs {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("group %s not listed among %d", name, len(gs))
	return Group{}
}

// TestEveryGroupType: a classic offset-only group, a KIP-848 group with a live member and known
// commits, and a share group with a live member are all listed with their types; the KIP-848
// group's member, epochs, assignment and lag are right, and the share group is told by its
// share-partition start offsets and the broker's lag, never by a committed offset.
func TestEveryGroupType(t *testing.T) {
	f := newFake(t)
	f.filledTopic(t, "orders", 10, 10, 10)
	f.filledTopic(t, "jobs", 10)
	f.commit(t, "billing", "orders", map[int32]int64{0: 2, 1: 2, 2: 2})
	kip848Member(t, f, "shipping", "orders", "worker-848", map[int32]int64{0: 4, 1: 7, 2: 10})
	shareMember(t, f, "mailer", "jobs", "share-worker", 4)

	var gs []Group
	waittest.Until(t, 20*time.Second, "the share group's start offset moved to 4", func() bool {
		var err error
		if gs, err = f.c.Groups(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			if g.Name == "mailer" && len(g.Topics) == 1 && g.Topics[0].Partitions[0].ShareStart == 4 {
				return true
			}
		}
		return false
	})
	if len(gs) != 3 {
		t.Fatalf("%d groups, want 3: %+v", len(gs), gs)
	}

	classic := findGroup(t, gs, "billing")
	if classic.Type != GroupClassic || classic.TotalLag != 24 || classic.Members != 0 {
		t.Errorf("classic: type %q lag %d members %d", classic.Type, classic.TotalLag, classic.Members)
	}

	c := findGroup(t, gs, "shipping")
	if c.Type != GroupConsumer || c.Members != 1 || len(c.MemberList) != 1 || c.State != "Stable" {
		t.Fatalf("consumer group: type %q members %d %+v state %q err %q", c.Type, c.Members, c.MemberList, c.State, c.Error)
	}
	m := c.MemberList[0]
	if m.ClientID != "worker-848" || m.Epoch <= 0 || c.Epoch <= 0 || len(m.Assigned) != 1 || m.Assigned[0].Topic != "orders" ||
		len(m.Assigned[0].Partitions) != 3 {
		t.Errorf("member %+v, group epoch %d", m, c.Epoch)
	}
	if c.TotalLag != 6+3+0 || len(c.Topics) != 1 {
		t.Fatalf("consumer group lag %d topics %+v", c.TotalLag, c.Topics)
	}
	for i, want := range []struct{ committed, lag int64 }{{4, 6}, {7, 3}, {10, 0}} {
		p := c.Topics[0].Partitions[i]
		if p.Committed != want.committed || p.Lag != want.lag || p.End != 10 || p.Member != "worker-848@"+m.Host {
			t.Errorf("orders/%d: %+v, want committed %d lag %d", i, p, want.committed, want.lag)
		}
	}
	if c.Topics[0].Partitions[0].TimeLag <= 0 {
		t.Errorf("time lag of orders/0: %v", c.Topics[0].Partitions[0].TimeLag)
	}

	s := findGroup(t, gs, "mailer")
	if s.Type != GroupShare || s.Members != 1 || s.State != "Stable" || len(s.MemberList) != 1 || s.MemberList[0].ClientID != "share-worker" {
		t.Fatalf("share group: %+v", s)
	}
	sp := s.Topics[0].Partitions[0]
	if sp.ShareStart != 4 || sp.Lag != 6 || sp.Committed != -1 || sp.End != 10 || s.TotalLag != 6 || sp.Member == "" {
		t.Errorf("share partition %+v, total %d", sp, s.TotalLag)
	}
	if s.DeliveryLimit != 5 || s.DeliveryLimitFrom != "broker" {
		t.Errorf("delivery limit %d from %q", s.DeliveryLimit, s.DeliveryLimitFrom)
	}
	if sp.TimeLag <= 0 {
		t.Errorf("share time lag (age of the oldest unacknowledged record) %v", sp.TimeLag)
	}

	// One group read through: the same answers by type.
	for _, want := range []Group{classic, c, s} {
		g, err := f.c.Group(ctxT(t), want.Name)
		if err != nil {
			t.Fatalf("Group(%s): %v", want.Name, err)
		}
		if g.Type != want.Type || g.Members != want.Members || g.TotalLag != want.TotalLag {
			t.Errorf("Group(%s): type %q members %d lag %d; listed %q %d %d", want.Name, g.Type, g.Members, g.TotalLag, want.Type, want.Members, want.TotalLag)
		}
	}
	if _, err := f.c.Group(context.Background(), "nobody"); err == nil {
		t.Error("an unknown group was found")
	}
}
