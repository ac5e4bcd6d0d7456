package sampler

import (
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/lag"
)

// BenchmarkObserve is the CPU a re-sample spends after the cluster answered: adding one sample
// of every partition to its window, judging every group and its rates, and encoding the snapshot
// it stores — at 200 groups × 50 partitions, without the cluster or the store, whose share
// BenchmarkSampleOnce measures. "busy" is a mix of the four kinds a cluster holds, keeping up (lag
// touching zero), falling behind (WARN), stuck with members (STALL, later STOP) and without
// members (EMPTY), with full windows (70 rounds at the default 15 s); "idle" is the cluster of the
// groups readers' benchmark (cmd/console TestGroupsReadersDuringResamples): groups without
// members whose offsets do not move, windows of 8 samples 2 s apart.
//
//	go test ./ops/sampler -run '^$' -bench Observe -benchmem
func BenchmarkObserve(b *testing.B) {
	for _, c := range []struct {
		name   string
		idle   bool
		rounds int
		every  time.Duration
		rules  lag.Rules
		kinds  int
	}{
		{"busy", false, 70, 15 * time.Second, lag.Rules{}, 4},
		// A window of 14 s keeps the windows at the 8 samples that benchmark's consoles hold.
		{"idle", true, 8, 2 * time.Second, lag.Rules{Window: 14 * time.Second, StopAfter: 14 * time.Second}, 1},
	} {
		st := &kafkaState{name: "main", groups: map[string]*groupWindow{}}
		st.setRules(c.rules, c.every)
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		round := 0
		observe := func(b *testing.B) []lag.Group {
			b.StopTimer() // the cluster's answer is not the re-sample's work
			groups := syntheticGroups(round, c.idle)
			b.StartTimer()
			out, _ := st.observe(groups, at)
			round++
			at = at.Add(c.every)
			return out
		}
		for range c.rounds {
			observe(b)
		}
		codes := map[lag.StatusCode]int{}
		for _, g := range observe(b) {
			codes[g.Status.Code]++
		}
		if len(codes) != c.kinds {
			b.Fatalf("%s: the groups should be of %d kinds, got %v", c.name, c.kinds, codes)
		}
		b.Run(c.name+"/judge", func(b *testing.B) {
			for b.Loop() {
				observe(b)
			}
		})
		b.Run(c.name+"/judge+encode", func(b *testing.B) {
			for b.Loop() {
				if _, err := encodeKafka(observe(b), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// syntheticGroups is round's sample of benchGroups groups × benchPartitions partitions, each
// group of one of four kinds by its number; idle, all of them without members on offsets that do
// not move, as cmd/console's fillGroups commits them.
func syntheticGroups(round int, idle bool) []kafkamodel.Group {
	groups := make([]kafkamodel.Group, benchGroups)
	for g := range groups {
		kind := g % 4
		if idle {
			kind = 3
		}
		grp := kafkamodel.Group{Name: fmt.Sprintf("group-%03d", g), Type: kafkamodel.GroupClassic,
			State: "Stable", Members: 3, ProtocolType: "consumer"}
		if kind == 3 {
			grp.State, grp.Members = "Empty", 0
		}
		t := kafkamodel.TopicLag{Topic: fmt.Sprintf("topic-%02d", g%benchTopics), Partitions: make([]kafkamodel.PartitionLag, benchPartitions)}
		for p := range t.Partitions {
			end := int64(round*100 + p)
			var committed int64
			switch {
			case idle:
				end, committed = 20, int64((g+p)%20)
			case kind == 0: // keeps up: caught up every third round
				committed = end - int64((round%3)*7)
			case kind == 1: // falls behind: consumes half of what arrives
				committed = int64(round*50 + p)
			default: // stuck, or without members
				committed = int64(p)
			}
			lagNow := end - committed
			t.Partitions[p] = kafkamodel.PartitionLag{Partition: int32(p), Committed: committed, Start: 0, End: end,
				Lag: lagNow, TimeLag: time.Duration(lagNow) * time.Millisecond, ShareStart: -1}
			t.Lag += lagNow
			grp.TotalLag += lagNow
		}
		grp.Topics = []kafkamodel.TopicLag{t}
		groups[g] = grp
	}
	return groups
}
