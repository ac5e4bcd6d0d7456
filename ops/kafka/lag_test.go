package kafka

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kfaketest"
)

func partitionLag(t *testing.T, g Group, topic string, p int32) PartitionLag {
	t.Helper()
	for _, tl := range g.Topics {
		if tl.Topic != topic {
			continue
		}
		for _, pl := range tl.Partitions {
			if pl.Partition == p {
				return pl
			}
		}
	}
	t.Fatalf("group %s has no lag for %s[%d]: %+v", g.Name, topic, p, g.Topics)
	return PartitionLag{}
}

func TestGroupsLag(t *testing.T) {
	f := newFake(t)
	ctx := ctxT(t)
	f.filledTopic(t, "orders", 10, 20, 5)

	// committed: p0 behind by 3, p1 caught up, p2 never committed (counts from the log start).
	f.commit(t, "g-committed", "orders", map[int32]int64{0: 7, 1: 20})
	// reset: committed forward, then rewound to 0 (an operator's offset reset); p2 is committed
	// at 1 but records below 3 are then deleted, so only end − start can still be consumed.
	f.commit(t, "g-reset", "orders", map[int32]int64{0: 9, 2: 1})
	f.commit(t, "g-reset", "orders", map[int32]int64{0: 0})
	f.deleteRecords(t, "orders", 2, 3)

	groups, err := f.c.Groups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || groups[0].Name != "g-committed" || groups[1].Name != "g-reset" {
		t.Fatalf("groups = %+v", groups)
	}

	t.Run("Committed", func(t *testing.T) {
		g := groups[0]
		if g.State != "Empty" || g.Members != 0 {
			t.Errorf("state %q members %d, want Empty 0", g.State, g.Members)
		}
		want := []PartitionLag{
			{Partition: 0, Committed: 7, Start: 0, End: 10, Lag: 3},
			{Partition: 1, Committed: 20, Start: 0, End: 20, Lag: 0},
			{Partition: 2, Committed: -1, Start: 3, End: 5, Lag: 2}, // uncommitted: end − start
		}
		for _, w := range want {
			got := partitionLag(t, g, "orders", w.Partition)
			if (got.TimeLag > 0) != (w.Lag > 0) { // just written: milliseconds behind, 0 when caught up
				t.Errorf("partition %d time lag %s with lag %d", w.Partition, got.TimeLag, w.Lag)
			}
			got.TimeLag = 0
			if got != w {
				t.Errorf("partition %d = %+v, want %+v", w.Partition, got, w)
			}
		}
		if g.TotalLag != 5 || g.Topics[0].Lag != 5 {
			t.Errorf("total lag %d, topic lag %d; want 5", g.TotalLag, g.Topics[0].Lag)
		}
	})

	t.Run("Reset", func(t *testing.T) {
		g := groups[1]
		if got := partitionLag(t, g, "orders", 0); got.Committed != 0 || got.Lag != 10 {
			t.Errorf("rewound partition = %+v, want committed 0 lag 10", got)
		}
		if got := partitionLag(t, g, "orders", 2); got.Committed != 1 || got.Start != 3 || got.Lag != 2 {
			t.Errorf("partition committed below log start = %+v, want committed 1 start 3 lag 2", got)
		}
		if got := partitionLag(t, g, "orders", 1); got.Committed != -1 || got.Lag != 20 {
			t.Errorf("uncommitted partition = %+v, want committed -1 lag 20", got)
		}
		if g.TotalLag != 32 {
			t.Errorf("total lag %d, want 32", g.TotalLag)
		}
	})

	t.Run("One", func(t *testing.T) {
		g, err := f.c.Group(ctx, "g-committed")
		if err != nil {
			t.Fatal(err)
		}
		if g.TotalLag != 5 {
			t.Errorf("total lag %d, want 5", g.TotalLag)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		_, err := f.c.Group(ctx, "no-such-group")
		if !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
}

// A live member that has not committed: the assigned partitions lag from the log start and the
// member is reported.
func TestGroupWithMember(t *testing.T) {
	f := newFake(t)
	ctx := ctxT(t)
	f.filledTopic(t, "events", 4, 6)

	member := kfaketest.Client(t, f.broker,
		kgo.ClientID("worker-1"),
		kgo.ConsumerGroup("g-live"),
		kgo.ConsumeTopics("events"),
		kgo.DisableAutoCommit(),
	)
	// Poll until the member has joined and been assigned (it then receives records).
	got := 0
	for got < 10 {
		fs := member.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	g, err := f.c.Group(ctx, "g-live")
	if err != nil {
		t.Fatal(err)
	}
	if g.State != "Stable" || g.Members != 1 || g.ProtocolType != "consumer" {
		t.Fatalf("group = %+v, want Stable with 1 consumer member", g)
	}
	if g.TotalLag != 10 {
		t.Errorf("total lag %d, want 10 (nothing committed)", g.TotalLag)
	}
	if pl := partitionLag(t, g, "events", 1); pl.Committed != -1 || pl.Lag != 6 || pl.Member == "" {
		t.Errorf("partition 1 = %+v, want uncommitted lag 6 with a member", pl)
	}
}

// Groups costs the same admin requests for 2 groups as for 40: ListGroups, DescribeGroups,
// OffsetFetch and two ListOffsets (start, end), on a one-broker cluster.
func TestGroupsRequestCountIsFixed(t *testing.T) {
	f := newFake(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	counts := map[string]int{}
	f.broker.Control(func(r kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		counts[kmsg.NameForKey(r.Key())]++
		mu.Unlock()
		return nil, nil, false // observe only
	})
	measure := func() map[string]int {
		mu.Lock()
		clear(counts)
		mu.Unlock()
		if _, err := f.c.Groups(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for _, k := range []string{"ListGroups", "DescribeGroups", "OffsetFetch", "ListOffsets"} {
			out[k] = counts[k]
		}
		return out
	}
	addGroups := func(from, to int) {
		for i := from; i < to; i++ {
			topic := fmt.Sprintf("t%d", i%4)
			f.commit(t, fmt.Sprintf("g%03d", i), topic, map[int32]int64{0: 1, 1: 2})
		}
	}
	for i := range 4 {
		f.topic(t, fmt.Sprintf("t%d", i), 2)
	}
	addGroups(0, 2)
	few := measure()
	addGroups(2, 40)
	many := measure()
	if few["ListGroups"] != 1 || few["DescribeGroups"] != 1 || few["OffsetFetch"] != 1 || few["ListOffsets"] != 2 {
		t.Errorf("requests for 2 groups: %v", few)
	}
	if fmt.Sprint(few) != fmt.Sprint(many) {
		t.Errorf("requests grow with groups: 2 groups %v, 40 groups %v", few, many)
	}
}
