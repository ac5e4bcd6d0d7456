package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkGroupTypes is the group list (Cluster.Groups, what the sampler reads) at 200 groups ×
// 50 partitions on two clusters side by side in one run: "all-classic", every group classic (as
// BenchmarkGroups), and "mixed", the same groups and offsets with a third of them KIP-848 consumer
// groups (described with ConsumerGroupDescribe) and a tenth share groups (ShareGroupDescribe and
// DescribeShareGroupOffsets, their start offsets on all 50 partitions). Their members have left, as
// most groups' members have at any moment; each group keeps its type. Reproduce with:
//
//	go test ./ops/kafka/ -run '^$' -bench GroupTypes -benchtime 20x -count 5
func BenchmarkGroupTypes(b *testing.B) {
	const consumers, shares = benchGroups / 3, benchGroups / 10
	ctx := context.Background()
	build := func(b *testing.B, mixed bool) *fake {
		f := newFake(b)
		for t := range benchTopics {
			topic := fmt.Sprintf("bench-%d", t)
			f.topic(b, topic, benchPartitions)
			for p := range int32(benchPartitions) {
				f.fill(b, topic, p, 20)
			}
		}
		topics := make([]string, benchTopics)
		for t := range topics {
			topics[t] = fmt.Sprintf("bench-%d", t)
		}
		for g := range benchGroups {
			name := fmt.Sprintf("group-%03d", g)
			if mixed && g < shares {
				shareGroupOn(b, f, name, topics)
				continue
			}
			os := kadm.Offsets{}
			for _, topic := range topics {
				for p := range int32(benchPartitions) {
					os.AddOffset(topic, p, int64((g+int(p))%20), -1)
				}
			}
			if err := f.adm.CommitAllOffsets(ctx, name, os); err != nil {
				b.Fatal(err)
			}
			if mixed && g < shares+consumers {
				// A KIP-848 member's first heartbeat makes the group a consumer group; it then
				// leaves, and the group keeps its type and offsets.
				cl, err := kgo.NewClient(kgo.SeedBrokers(f.broker.ListenAddrs()...), kgo.ConsumerGroup(name), kgo.ConsumeTopics(topics...),
					kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit())
				if err != nil {
					b.Fatal(err)
				}
				pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				cl.PollRecords(pctx, 1)
				cancel()
				cl.Close()
			}
		}
		gs, err := f.c.Groups(ctx)
		if err != nil {
			b.Fatal(err)
		}
		count := map[string]int{}
		for _, g := range gs {
			count[g.Kind()]++
			if g.Error != "" || len(g.Topics) != benchTopics {
				b.Fatalf("%s %s: %d topics, error %q", g.Kind(), g.Name, len(g.Topics), g.Error)
			}
		}
		want := map[string]int{GroupClassic: benchGroups}
		if mixed {
			want = map[string]int{GroupClassic: benchGroups - consumers - shares, GroupConsumer: consumers, GroupShare: shares}
		}
		if fmt.Sprint(count) != fmt.Sprint(want) {
			b.Fatalf("group types %v, want %v", count, want)
		}
		return f
	}
	classic, mixed := build(b, false), build(b, true)
	for _, c := range []struct {
		name string
		f    *fake
	}{{"all-classic", classic}, {"mixed", mixed}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				gs, err := c.f.c.Groups(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if len(gs) != benchGroups {
					b.Fatalf("%d groups", len(gs))
				}
			}
		})
	}
}

// shareGroupOn makes name a share group of topics with state on every partition: a member reads
// them from the start (share.auto.offset.reset=earliest), acknowledging what it reads, until every
// partition has a start offset; then it leaves.
func shareGroupOn(b *testing.B, f *fake, name string, topics []string) {
	b.Helper()
	shareEarliest(b, f, name)
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.broker.ListenAddrs()...), kgo.ShareGroup(name), kgo.ConsumeTopics(topics...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seen := 0
	for seen < benchTopics*benchPartitions*20 && ctx.Err() == nil {
		seen += cl.PollFetches(ctx).NumRecords()
	}
	if err := cl.FlushAcks(ctx); err != nil {
		b.Fatal(err)
	}
	for ctx.Err() == nil {
		o, err := f.adm.DescribeShareGroupOffsets(ctx, name)
		if err == nil {
			n := 0
			o[name].Offsets.Each(func(so kadm.ShareOffset) {
				if so.StartOffset >= 0 {
					n++
				}
			})
			if n == benchTopics*benchPartitions {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("share group %s: not every partition has a start offset", name)
}
