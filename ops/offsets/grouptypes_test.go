package offsets_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/offsets"
	"github.com/redrive/redrive/ops/waittest"
)

// A KIP-848 group's live member is invisible to DescribeGroups: its offsets must not be moved
// under it. The plan names the member and the apply is refused, as for a classic group; once
// the member leaves, the same plan applies.
func TestKIP848GroupMovesOnlyWhenEmpty(t *testing.T) {
	e, _ := newEnv(t, foureyes.Settings{})
	ctx := ctxT(t)
	member := kfaketest.Client(t, e.broker, kgo.ClientID("worker-848"), kgo.ConsumerGroup("g848"), kgo.ConsumeTopics("orders"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	waittest.Until(t, 20*time.Second, "the KIP-848 member joined", func() bool {
		member.PollRecords(ctx, 1)
		m, err := e.c.GroupMembership(ctx, "g848")
		return err == nil && m.Type == kafka.GroupConsumer && len(m.Members) == 1
	})
	p, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "g848", Topic: "orders", Partitions: []int32{0},
		To: offsets.Target{Kind: offsets.KindShift, By: 1}, CopySkippedTo: new(""), Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Members) != 1 || !strings.Contains(p.Members[0], "worker-848") {
		t.Errorf("plan members %v, want worker-848", p.Members)
	}
	_, err = e.m.Apply(ctx, offsets.ApplyRequest{PlanID: p.ID, Actor: access.Actor{Name: "alice"}, Reason: "skip poison"})
	if !errors.Is(err, ops.ErrConflict) || !strings.Contains(err.Error(), "worker-848") {
		t.Fatalf("apply under a live KIP-848 member: %v, want ErrConflict naming it", err)
	}
	member.Close() // leaves the group (ConsumerGroupHeartbeat with epoch -1)
	waittest.Until(t, 20*time.Second, "the member left", func() bool {
		m, err := e.c.GroupMembership(ctx, "g848")
		return err == nil && len(m.Members) == 0
	})
	if _, err := e.m.Apply(ctx, offsets.ApplyRequest{PlanID: p.ID, Actor: access.Actor{Name: "alice"}, Reason: "skip poison"}); err != nil {
		t.Fatalf("apply to the empty KIP-848 group: %v", err)
	}
	if got := e.committed(t, "g848")[0]; got != p.Partitions[0].New {
		t.Errorf("committed %d, planned %d", got, p.Partitions[0].New)
	}
}

// A share group commits no offsets: a plan for it is a 400 saying so, before anything is read.
func TestShareGroupOffsetsAreNotMoved(t *testing.T) {
	e, _ := newEnv(t, foureyes.Settings{})
	ctx := ctxT(t)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "mailer"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	if _, err := req.RequestWith(ctx, e.prod); err != nil {
		t.Fatal(err)
	}
	member := kfaketest.Client(t, e.broker, kgo.ClientID("share-worker"), kgo.ShareGroup("mailer"), kgo.ConsumeTopics("orders"))
	waittest.Until(t, 20*time.Second, "the share member joined", func() bool {
		member.PollRecords(ctx, 1)
		m, err := e.c.GroupMembership(ctx, "mailer")
		return err == nil && m.Type == kafka.GroupShare && len(m.Members) == 1
	})
	_, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "mailer", Topic: "orders", Partitions: []int32{0},
		To: offsets.Target{Kind: offsets.KindShift, By: 1}, CopySkippedTo: new(""), Actor: "alice"})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "share group") {
		t.Fatalf("plan for a share group: %v, want ErrInvalid saying it is a share group", err)
	}
}
