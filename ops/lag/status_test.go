package lag

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var (
	t0    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rules = Rules{
		Window:     5 * time.Minute,
		StopAfter:  15 * time.Minute,
		WarnMinLag: 100,
	}
)

// series builds one sample per minute ending at t0: committed[i], lag[i].
func series(committed, lag []int64) []Sample {
	out := make([]Sample, len(committed))
	for i := range committed {
		at := t0.Add(time.Duration(i-len(committed)+1) * time.Minute)
		out[i] = Sample{At: at, Committed: committed[i], End: committed[i] + lag[i], Lag: lag[i]}
	}
	return out
}

func same(n int, v int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// consumed builds committed offsets that advance by perMinute at each one-minute sample.
func consumed(n int, perMinute int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = 1000 + int64(i)*perMinute
	}
	return out
}

func TestEvaluate(t *testing.T) {
	noisy := rules
	noisy.WarnMinLag = 1 // the default: any growth counts
	for _, tc := range []struct {
		name    string
		rules   *Rules // nil means rules
		state   string
		members int
		samples []Sample
		now     time.Time
		code    StatusCode
		reason  string
	}{
		{
			name: "OK/CaughtUp", state: "Stable", members: 2,
			samples: series([]int64{100, 200, 300, 400, 500, 600, 700}, same(7, 0)),
			code:    StatusOK,
		},
		{
			name: "OK/LagShrinking", state: "Stable", members: 2,
			samples: series([]int64{100, 900, 1700, 2500, 3300, 4100, 4900}, []int64{5000, 4500, 4000, 3500, 3000, 2500, 2000}),
			code:    StatusOK,
		},
		{
			name: "OK/NoSamples", state: "Stable", members: 1,
			code: StatusOK,
		},
		{
			name: "OK/GrowthBelowNoise", state: "Stable", members: 1,
			samples: series([]int64{10, 20, 30, 40, 50, 60, 70}, []int64{10, 20, 30, 40, 50, 60, 70}),
			code:    StatusOK,
		},
		{
			// Lag 9 while consuming 5 msg/s: the lag wobbles with the producer's bursts but does not
			// rise at every sample. It was WARN ("lag grew 2 → 5") when any growth across the
			// window counted.
			name: "OK/SmallLagBeingConsumed", rules: &noisy, state: "Stable", members: 1,
			samples: series(consumed(7, 300), []int64{3, 2, 5, 3, 6, 4, 9}),
			code:    StatusOK,
		},
		{
			name: "OK/SteadyLagBeingConsumed", rules: &noisy, state: "Stable", members: 1,
			samples: series(consumed(7, 300), same(7, 9)),
			code:    StatusOK,
		},
		{
			// Burrow's rule 1: a lag of zero at any sample of the window means it keeps up.
			name: "OK/RisingButTouchedZeroInWindow", state: "Stable", members: 1,
			samples: series(consumed(6, 300), []int64{0, 100, 300, 600, 1000, 1500}),
			code:    StatusOK,
		},
		{
			name: "OK/RoseThenDipped", state: "Stable", members: 1,
			samples: series(consumed(6, 300), []int64{100, 300, 500, 450, 700, 900}),
			code:    StatusOK,
		},
		{
			// One increase between two samples is not "rose at every sample".
			name: "OK/TwoSamplesOnly", state: "Stable", members: 1,
			samples: series(consumed(2, 300), []int64{200, 900}),
			code:    StatusOK,
		},
		{
			// The consumer was idle (nothing to commit), then a message arrived: its commit being
			// 20 minutes old is no STOP while the lag was zero within the window.
			name: "OK/IdleThenNewMessage", state: "Stable", members: 1,
			samples: series(same(21, 812), append(same(20, 0), 3)),
			code:    StatusOK,
		},
		{
			name: "WARN/RoseAtEverySample", state: "Stable", members: 3,
			samples: series([]int64{100, 200, 300, 400, 500, 600, 700}, []int64{900, 1000, 1200, 2000, 3000, 4000, 4800}),
			code:    StatusWarn, reason: "lag rose at every sample: 1,000 → 1,200 → … → 4,000 → 4,800 over 5 min",
		},
		{
			name: "WARN/WindowLongerThanHistory", state: "Stable", members: 1,
			samples: series([]int64{100, 200, 300}, []int64{100, 400, 900}),
			code:    StatusWarn, reason: "lag rose at every sample: 100 → 400 → 900 over 2 min",
		},
		{
			name: "WARN/SmallButRisingEverySample", rules: &noisy, state: "Stable", members: 1,
			samples: series(consumed(3, 300), []int64{2, 5, 9}),
			code:    StatusWarn, reason: "lag rose at every sample: 2 → 5 → 9 over 2 min",
		},
		{
			name: "STALL/CommitStuckWithMembers", state: "Stable", members: 3,
			samples: series([]int64{700, 812, 812, 812, 812, 812, 812, 812}, same(8, 50)),
			code:    StatusStall, reason: "committed offset stuck at 812 for 6 min with 3 members, lag 50",
		},
		{
			name: "STALL/OutranksWarn", state: "Stable", members: 1,
			samples: series(same(7, 812), []int64{100, 500, 1000, 2000, 3000, 4000, 5000}),
			code:    StatusStall, reason: "committed offset stuck at 812 for 6 min with 1 member, lag 5,000",
		},
		{
			name: "STALL/NeverCommitted", state: "Stable", members: 2,
			samples: series(same(8, -1), same(8, 300)),
			code:    StatusStall, reason: "never committed (no commit seen in 7 min) with 2 members, lag 300",
		},
		{
			name: "OK/StuckButShorterThanWindow", state: "Stable", members: 3,
			samples: series([]int64{100, 200, 300, 400, 812, 812, 812}, same(7, 50)),
			code:    StatusOK,
		},
		{
			name: "OK/StuckWithoutLag", state: "Stable", members: 3,
			samples: series(same(30, 812), same(30, 0)),
			code:    StatusOK,
		},
		{
			name: "STOP/NoCommitLongerThanStopAfter", state: "Stable", members: 2,
			samples: series(same(21, 812), same(21, 4800)),
			code:    StatusStop, reason: "no commit for 20 min (committed offset 812), lag 4,800",
		},
		{
			name: "STOP/EvenWithoutMembersInRebalance", state: "PreparingRebalance", members: 0,
			samples: series(same(17, 5), same(17, 7)),
			code:    StatusStop, reason: "no commit for 16 min (committed offset 5), lag 7",
		},
		{
			name: "STOP/NeverCommitted", state: "Stable", members: 1,
			samples: series(same(20, -1), same(20, 300)),
			code:    StatusStop, reason: "never committed (no commit seen in 19 min), lag 300",
		},
		{
			name: "STOP/SamplesOld", state: "Stable", members: 1,
			samples: series(same(3, 40), same(3, 10)),
			now:     t0.Add(30 * time.Minute),
			code:    StatusStop, reason: "no commit for 32 min (committed offset 40), lag 10",
		},
		{
			name: "EMPTY/WithLag", state: "Empty", members: 0,
			samples: series(same(30, 812), same(30, 4800)),
			code:    StatusEmpty, reason: "no members; lag 4,800 left unconsumed",
		},
		{
			name: "EMPTY/NeverCommitted", state: "Empty", members: 0,
			samples: series(same(3, -1), same(3, 40)),
			code:    StatusEmpty, reason: "no members; never committed, lag 40 left unconsumed",
		},
		{
			name: "EMPTY/CaughtUp", state: "Empty", members: 0,
			samples: series(same(3, 812), same(3, 0)),
			code:    StatusEmpty, reason: "no members",
		},
		{
			name: "DEAD", state: "Dead", members: 0,
			samples: series(same(3, 812), same(3, 10)),
			code:    StatusDead, reason: "group is dead: no members and no state on the coordinator",
		},
		{
			name: "OK/UnknownLagIgnored", state: "Stable", members: 1,
			samples: append(series([]int64{1, 2, 3}, same(3, 0)), Sample{At: t0.Add(-30 * time.Second), Committed: 2, Lag: -1}),
			code:    StatusOK,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			r := rules
			if tc.rules != nil {
				r = *tc.rules
			}
			got := Evaluate(r, time.Minute, tc.state, tc.members, tc.samples, now)
			if got.Code != tc.code || got.Reason != tc.reason {
				t.Fatalf("Evaluate = %s %q, want %s %q", got.Code, got.Reason, tc.code, tc.reason)
			}
		})
	}
}

func TestEvaluateGroup(t *testing.T) {
	parts := []PartitionSamples{
		{Topic: "orders", Partition: 0, Samples: series([]int64{1, 2, 3, 4, 5, 6, 7}, same(7, 0))},
		{Topic: "orders", Partition: 1, Samples: series([]int64{1, 2, 3, 4, 5, 6, 7}, []int64{0, 200, 400, 600, 800, 1000, 1200})},
		{Topic: "orders", Partition: 2, Samples: series(same(8, 812), same(8, 40))},
		{Topic: "orders", Partition: 3, Samples: series(same(8, 900), same(8, 90))},
	}
	gs := EvaluateGroup(rules, time.Minute, "Stable", 3, parts, t0)
	if gs.Status.Code != StatusStall || gs.Worst == nil || gs.Worst.Partition != 3 {
		t.Fatalf("group = %+v (worst %+v), want STALL from partition 3 (the larger lag)", gs.Status, gs.Worst)
	}
	if want := "committed offsets stuck for 7 min on partitions 2, 3 with 3 members, lag 130"; gs.Status.Reason != want {
		t.Errorf("group reason %q, want %q", gs.Status.Reason, want)
	}
	wantCodes := []StatusCode{StatusOK, StatusWarn, StatusStall, StatusStall}
	for i, p := range gs.Partitions {
		if p.Status.Code != wantCodes[i] {
			t.Errorf("partition %d = %s, want %s", p.Partition, p.Status.Code, wantCodes[i])
		}
	}
	if gs := EvaluateGroup(rules, time.Minute, "Empty", 0, nil, t0); gs.Status.Code != StatusEmpty || gs.Status.Reason != "no members" {
		t.Errorf("empty group with no partitions = %+v, want EMPTY, no members", gs.Status)
	}
	if gs := EvaluateGroup(rules, time.Minute, "Stable", 1, nil, t0); gs.Status.Code != StatusOK || gs.Worst != nil {
		t.Errorf("group with no partitions = %+v, want OK", gs)
	}
}

func TestTimeLagThresholds(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	rules := Rules{Window: 5 * time.Minute, StopAfter: 15 * time.Minute,
		WarnMinLag: 1, WarnAfter: 600 * time.Second, ErrorAfter: 1800 * time.Second}
	moving := func(timeLag time.Duration) []Sample {
		return []Sample{
			{At: now.Add(-2 * time.Minute), Committed: 100, End: 150, Lag: 50, TimeLag: timeLag},
			{At: now.Add(-time.Minute), Committed: 120, End: 160, Lag: 40, TimeLag: timeLag},
			{At: now, Committed: 140, End: 180, Lag: 40, TimeLag: timeLag},
		}
	}
	for _, tc := range []struct {
		name    string
		rules   Rules
		state   string
		samples []Sample
		want    StatusCode
		reason  string
	}{
		{"Off", Rules{}, "Stable", moving(time.Hour), StatusOK, ""},
		{"Below", rules, "Stable", moving(5 * time.Minute), StatusOK, ""},
		{"Warn", rules, "Stable", moving(14 * time.Minute), StatusWarn, "14 min behind (warn after 10 min), lag 40"},
		{"Err", rules, "Stable", moving(45 * time.Minute), StatusErr, "45 min behind (error after 30 min), lag 40"},
		{"CaughtUp", rules, "Stable", []Sample{{At: now, Committed: 10, End: 10, Lag: 0}}, StatusOK, ""},
		{"EmptyStaysEmpty", rules, "Empty", moving(time.Hour), StatusEmpty, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Evaluate(tc.rules, time.Minute, tc.state, 2, tc.samples, now)
			if got.Code != tc.want || (tc.reason != "" && got.Reason != tc.reason) {
				t.Errorf("got %s %q, want %s %q", got.Code, got.Reason, tc.want, tc.reason)
			}
		})
	}
	t.Run("Group", func(t *testing.T) {
		gs := EvaluateGroup(rules, time.Minute, "Stable", 2, []PartitionSamples{
			{Topic: "orders", Partition: 0, Samples: moving(40 * time.Minute)},
			{Topic: "orders", Partition: 1, Samples: moving(35 * time.Minute)},
			{Topic: "orders", Partition: 2, Samples: moving(time.Minute)},
		}, now)
		if gs.Status.Code != StatusErr || !strings.Contains(gs.Status.Reason, "40 min behind on partitions 0, 1 (error after 30 min)") {
			t.Errorf("group status %s %q", gs.Status.Code, gs.Status.Reason)
		}
	})
}

// A group's reason names every partition of its status and shows no sentinel offset.
func TestGroupReason(t *testing.T) {
	noisy := rules
	noisy.WarnMinLag = 1
	p := func(topic string, partition int32, s []Sample) PartitionSamples {
		return PartitionSamples{Topic: topic, Partition: partition, Samples: s}
	}
	many := func(n, step int) []PartitionSamples {
		var out []PartitionSamples
		for i := range n {
			out = append(out, p("orders", int32(i*step), series(same(3, 10), same(3, 1))))
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		state   string
		members int
		parts   []PartitionSamples
		code    StatusCode
		reason  string
	}{
		{
			// Lag 9 in all, consumed at 5 msg/s (300 per one-minute sample).
			name: "OK/SmallLagBeingConsumed", state: "Stable", members: 2,
			parts: []PartitionSamples{
				p("orders", 0, series(consumed(5, 150), []int64{1, 4, 2, 5, 5})),
				p("orders", 1, series(consumed(5, 150), []int64{2, 1, 2, 1, 4})),
			},
			code: StatusOK,
		},
		{
			name: "WARN/NamesPartitions", state: "Stable", members: 2,
			parts: []PartitionSamples{
				p("orders", 0, series(consumed(3, 300), same(3, 0))),
				p("orders", 1, series(consumed(3, 300), []int64{1, 2, 4})),
				p("orders", 2, series(consumed(3, 300), []int64{1, 3, 5})),
			},
			code: StatusWarn, reason: "lag rose at every sample on partitions 1, 2: 2 → 5 → 9 over 2 min",
		},
		{
			name: "WARN/NamesTopicsWhenMoreThanOne", state: "Stable", members: 2,
			parts: []PartitionSamples{
				p("orders", 1, series(consumed(3, 300), []int64{1, 2, 4})),
				p("refunds", 0, series(consumed(3, 300), []int64{1, 3, 5})),
				p("refunds", 1, series(consumed(3, 300), same(3, 0))),
			},
			code: StatusWarn, reason: "lag rose at every sample on orders partition 1 and refunds partition 0: 2 → 5 → 9 over 2 min",
		},
		{
			name: "STOP/NeverCommitted", state: "Stable", members: 1,
			parts: []PartitionSamples{
				p("orders", 0, series(consumed(20, 300), same(20, 5))),
				p("orders", 1, series(same(20, -1), same(20, 100))),
				p("orders", 2, series(same(20, -1), same(20, 200))),
			},
			code: StatusStop, reason: "never committed on partitions 1, 2 (no commit seen in 19 min), lag 300",
		},
		{
			name: "STOP/StoppedAndNeverCommitted", state: "Stable", members: 1,
			parts: []PartitionSamples{
				p("orders", 0, series(same(21, 812), same(21, 4800))),
				p("orders", 1, series(same(21, -1), same(21, 300))),
			},
			code: StatusStop, reason: "no commit for 20 min on partition 0 (committed offset 812), lag 4,800; never committed on partition 1 (no commit seen in 20 min), lag 300",
		},
		{
			name: "STOP/DifferentDurations", state: "Stable", members: 1,
			parts: []PartitionSamples{
				p("orders", 0, series(same(21, 812), same(21, 10))),
				p("orders", 1, series(same(17, 90), same(17, 20))),
			},
			code: StatusStop, reason: "no commit for 16 min or more on partitions 0, 1, lag 30",
		},
		{
			name: "STALL/NeverCommitted", state: "Stable", members: 2,
			parts: []PartitionSamples{
				p("orders", 3, series(same(8, -1), same(8, 30))),
			},
			code: StatusStall, reason: "never committed on partition 3 (no commit seen in 7 min) with 2 members, lag 30",
		},
		{
			// Was "no members; lag 7 left unconsumed" for a group with lag 11: the worst
			// partition's number without its name.
			name: "EMPTY/NamesEveryPartitionWithLag", state: "Empty",
			parts: []PartitionSamples{
				p("orders", 0, series(same(3, 6), same(3, 4))),
				p("orders", 1, series(same(3, 9), same(3, 0))),
				p("orders", 2, series(same(3, -1), same(3, 7))),
			},
			code: StatusEmpty, reason: "no members; never committed on partition 2, lag 7 left unconsumed; lag 4 left unconsumed on partition 0",
		},
		{
			name: "EMPTY/Idle", state: "Empty",
			parts: []PartitionSamples{p("orders", 0, series(same(3, 6), same(3, 0)))},
			code:  StatusEmpty, reason: "no members",
		},
		{
			name: "EMPTY/RunsOfPartitions", state: "Empty", parts: many(12, 1),
			code: StatusEmpty, reason: "no members; lag 12 left unconsumed on partitions 0–11",
		},
		{
			name: "EMPTY/ManyPartitions", state: "Empty", parts: many(11, 2),
			code: StatusEmpty, reason: "no members; lag 11 left unconsumed on partitions 0, 2, 4, 6, 8, 10, 12, 14 and 3 more",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := EvaluateGroup(noisy, time.Minute, tc.state, tc.members, tc.parts, t0)
			if gs.Status.Code != tc.code || gs.Status.Reason != tc.reason {
				t.Fatalf("EvaluateGroup = %s %q\n                      want %s %q", gs.Status.Code, gs.Status.Reason, tc.code, tc.reason)
			}
			for _, s := range append([]string{gs.Status.Reason}, partitionReasons(gs)...) {
				if strings.Contains(s, "-1") {
					t.Errorf("reason %q shows a sentinel", s)
				}
			}
		})
	}
}

func partitionReasons(gs GroupStatus) []string {
	var out []string
	for _, p := range gs.Partitions {
		out = append(out, fmt.Sprintf("%s/%d: %s", p.Topic, p.Partition, p.Status.Reason))
	}
	return out
}

func TestRate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []Sample
		rate    float64
		catchUp time.Duration
		ok      bool
	}{
		{name: "TooFew", samples: series([]int64{5}, []int64{5})},
		{name: "NoTimeSpan", samples: []Sample{{At: t0, Committed: 1, Lag: 1}, {At: t0, Committed: 2, Lag: 1}}},
		{
			// 600 msgs/min consumed, lag shrinks by 60/min from 600 → 10 minutes to go.
			name:    "CatchingUp",
			samples: series([]int64{0, 600, 1200, 1800}, []int64{780, 720, 660, 600}),
			rate:    10, catchUp: 10 * time.Minute, ok: true,
		},
		{
			name:    "FallingBehind",
			samples: series([]int64{0, 60, 120}, []int64{10, 20, 30}),
			rate:    1, catchUp: -1, ok: true,
		},
		{
			name:    "NoLag",
			samples: series([]int64{0, 60, 120}, []int64{0, 0, 0}),
			rate:    1, catchUp: 0, ok: true,
		},
		{
			// The rewind at the third sample starts a new series.
			name:    "AfterReset",
			samples: series([]int64{5000, 5060, 0, 120, 240}, []int64{0, 0, 480, 420, 360}),
			rate:    2, catchUp: 6 * time.Minute, ok: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rate, catchUp, ok := Rate(tc.samples)
			if ok != tc.ok || !near(rate, tc.rate) || (catchUp-tc.catchUp).Abs() > time.Second {
				t.Fatalf("Rate = %v, %v, %v; want %v, %v, %v", rate, catchUp, ok, tc.rate, tc.catchUp, tc.ok)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// A group's catch-up time is its slowest partition's. The case that matters: one partition
// stalled (its lag creeping up) while another drains fast, so that the total lag falls and its
// slope promises minutes — the group is not catching up.
func TestGroupCatchUp(t *testing.T) {
	part := func(p int32, committed, lag []int64) PartitionSamples {
		return PartitionSamples{Topic: "orders", Partition: p, Samples: series(committed, lag)}
	}
	total := func(ps ...PartitionSamples) []Sample {
		out := make([]Sample, len(ps[0].Samples))
		for i := range out {
			out[i] = Sample{At: ps[0].Samples[i].At, End: -1}
			for _, p := range ps {
				out[i].Committed += p.Samples[i].Committed
				out[i].Lag += p.Samples[i].Lag
			}
		}
		return out
	}
	// 600 msgs/min consumed, lag down 60/min from 600: 10 minutes to go.
	draining := part(0, []int64{0, 600, 1200, 1800}, []int64{780, 720, 660, 600})
	// Never committed, 2 new records a minute: the lag only grows.
	stalled := part(1, []int64{-1, -1, -1, -1}, []int64{100, 102, 104, 106})
	// The same rate, 120/min down from 600: 5 minutes to go.
	faster := part(2, []int64{0, 600, 1200, 1800}, []int64{960, 840, 720, 600})
	// Consumed as fast as written: 0 to 3 behind at 10 msgs/s — live, whatever the slope says.
	live := part(3, []int64{0, 600, 1200, 1800}, []int64{0, 1, 2, 3})
	caughtUp := part(4, []int64{0, 60, 120, 180}, []int64{0, 0, 0, 0})
	// Sampled every 5 s at about 1.7 msgs/s, the lag jittering between 0 and 4: its slope alone
	// reads as tens of minutes or as "never" by turns. It keeps up.
	jitter := func(p int32, lags ...int64) PartitionSamples {
		ps := PartitionSamples{Topic: "orders", Partition: p}
		for i, l := range lags {
			at := t0.Add(time.Duration(i-len(lags)+1) * 5 * time.Second)
			c := int64(i) * 17 / 2
			ps.Samples = append(ps.Samples, Sample{At: at, Committed: c, End: c + l, Lag: l})
		}
		return ps
	}
	steady1, steady2 := jitter(5, 0, 4, 1, 3, 2, 4), jitter(6, 3, 0, 2, 0, 1, 3)
	// Caught up, then a burst it does not keep up with: zero once is not enough.
	burst := jitter(7, 0, 0, 0, 0, 490, 780)

	for _, tc := range []struct {
		name    string
		parts   []PartitionSamples
		total   []Sample
		catchUp time.Duration
		ok      bool
	}{
		{name: "StalledUnderFastDrain", parts: []PartitionSamples{draining, stalled}, total: total(draining, stalled), catchUp: -1, ok: true},
		{name: "SlowestPartition", parts: []PartitionSamples{draining, faster}, total: total(draining, faster), catchUp: 10 * time.Minute, ok: true},
		{name: "LivePartitionJitters", parts: []PartitionSamples{faster, live}, total: total(faster, live), catchUp: 5 * time.Minute, ok: true},
		{name: "SteadyStateJitter", parts: []PartitionSamples{steady1, steady2}, total: total(steady1, steady2), catchUp: 0, ok: true},
		{name: "BurstAfterCatchingUp", parts: []PartitionSamples{steady1, burst}, total: total(steady1, burst), catchUp: -1, ok: true},
		{name: "NoLag", parts: []PartitionSamples{caughtUp}, total: total(caughtUp), catchUp: 0, ok: true},
		{
			// A partition with one sample has no rate: the total's slope answers for it, but never
			// for less than the known partition needs.
			name:  "NewPartitionUsesTheTotal",
			parts: []PartitionSamples{faster, {Topic: "orders", Partition: 9, Samples: series([]int64{0}, []int64{50})}},
			total: total(faster), catchUp: 5 * time.Minute, ok: true,
		},
		{name: "TooFewSamples", parts: []PartitionSamples{part(0, []int64{5}, []int64{5})}, total: series([]int64{5}, []int64{5})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The old answer — the total lag over its own slope — for the record of what changed.
			_, byTotal, _ := Rate(tc.total)
			got, ok := GroupCatchUp(tc.parts, tc.total)
			if ok != tc.ok || (got-tc.catchUp).Abs() > time.Second {
				t.Fatalf("GroupCatchUp = %v, %v; want %v, %v (the total's slope says %v)", got, ok, tc.catchUp, tc.ok, byTotal)
			}
		})
	}
}

func TestFormatting(t *testing.T) {
	for in, want := range map[time.Duration]string{
		45 * time.Second: "45 s", 6 * time.Minute: "6 min", 80 * time.Minute: "1 h 20 min", 2 * time.Hour: "2 h", 76 * time.Hour: "3 d 4 h",
	} {
		if got := dur(in); got != want {
			t.Errorf("dur(%v) = %q, want %q", in, got, want)
		}
	}
}

// withViews builds samples every 15 s (the sampler's interval) ending at t0, lag[i] at the i-th,
// and after each scheduled sample listed in views a refresh-on-view sample the given fraction of
// a second later, with the same lag: what the sampler records while people look at the group.
func withViews(lag []int64, views map[int]float64) []Sample {
	var out []Sample
	for i, l := range lag {
		at := t0.Add(time.Duration(i-len(lag)+1) * 15 * time.Second)
		out = append(out, Sample{At: at, Committed: 1000 + int64(i), End: 1000 + int64(i) + l, Lag: l})
		if d, ok := views[i]; ok && i < len(lag)-1 {
			out = append(out, Sample{At: at.Add(time.Duration(d * float64(time.Second))), Committed: 1000 + int64(i), End: 1000 + int64(i) + l, Lag: l})
		}
	}
	return out
}

// rise is n lags from first to last, rising by the same step at each sample.
func rise(n int, first, last int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = first + (last-first)*int64(i)/int64(n-1)
	}
	return out
}

// A lag that rises steadily for the whole window is WARN however many refresh-on-view samples land
// a fraction of a second after the scheduled ones with the same lag (seen: total lag 142 → 442
// over 5 m and a partition 7 → 1,009, both OK); a lag flat over an interval, or one that fell,
// still breaks the rise.
func TestRisingWithRefreshSamples(t *testing.T) {
	const every = 15 * time.Second
	noisy := rules
	noisy.WarnMinLag = 1
	views := map[int]float64{0: 0.2, 3: 0.5, 4: 0.7, 9: 0.3, 12: 0.6, 17: 0.4, 19: 0.2}
	plateau := rise(21, 7, 1009)
	plateau[10] = plateau[9] // flat from one scheduled sample to the next
	fell := rise(21, 7, 1009)
	fell[10] = fell[9] - 1
	for _, tc := range []struct {
		name    string
		samples []Sample
		code    StatusCode
		reason  string
	}{
		{"WARN/Total", withViews(rise(21, 142, 442), views), StatusWarn, "lag rose at every sample: 142 → 157 → … → 427 → 442 over 5 min"},
		{"WARN/Partition", withViews(rise(21, 7, 1009), views), StatusWarn, "lag rose at every sample: 7 → 57 → … → 958 → 1,009 over 5 min"},
		{"WARN/ViewAfterEverySample", withViews(rise(21, 7, 1009), func() map[int]float64 {
			all := map[int]float64{}
			for i := range 21 {
				all[i] = 0.5
			}
			return all
		}()), StatusWarn, "lag rose at every sample: 7 → 57 → … → 958 → 1,009 over 5 min"},
		{"WARN/NoViews", withViews(rise(21, 142, 442), nil), StatusWarn, "lag rose at every sample: 142 → 157 → … → 427 → 442 over 5 min"},
		{"OK/Plateau", withViews(plateau, views), StatusOK, ""},
		{"OK/PlateauNoViews", withViews(plateau, nil), StatusOK, ""},
		{"OK/Fell", withViews(fell, views), StatusOK, ""},
		{"OK/TwoMoments", withViews([]int64{100, 200}, map[int]float64{0: 0.5}), StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Evaluate(noisy, every, "Stable", 2, tc.samples, t0)
			if got.Code != tc.code || got.Reason != tc.reason {
				t.Fatalf("Evaluate = %s %q, want %s %q", got.Code, got.Reason, tc.code, tc.reason)
			}
		})
	}
	t.Run("Group", func(t *testing.T) {
		gs := EvaluateGroup(noisy, every, "Stable", 2, []PartitionSamples{
			{Topic: "orders", Partition: 0, Samples: withViews(rise(21, 100, 300), views)},
			{Topic: "orders", Partition: 1, Samples: withViews(rise(21, 42, 142), views)},
		}, t0)
		if want := "lag rose at every sample on partitions 0, 1: 142 → 157 → … → 427 → 442 over 5 min"; gs.Status.Code != StatusWarn || gs.Status.Reason != want {
			t.Fatalf("group = %s %q, want WARN %q", gs.Status.Code, gs.Status.Reason, want)
		}
	})
}

// Issue 37 item 8: a group whose member stays while its committed offset does not move and records
// keep arriving (0 msg/s consumed) was WARN ("lag rose at every sample") for a whole window before
// it became STALL. Burrow checks a stalled offset before a rising lag, and its WARN is a consumer
// that moves but falls behind: such a group is STALL from the first evaluation that shows the rise,
// never WARN on the way, and a group with one such partition is STALL however large the lag of a
// WARN partition beside it.
func TestStalledIsNeverWarnFirst(t *testing.T) {
	const every = 15 * time.Second
	noisy := rules
	noisy.WarnMinLag = 1
	var samples []Sample
	for i := range 21 { // 5 minutes of samples, 40 new records a sample, nothing committed
		at := t0.Add(time.Duration(i-20) * every)
		samples = append(samples, Sample{At: at, Committed: 812, End: 852 + int64(i)*40, Lag: 40 + int64(i)*40})
	}
	for n := 1; n <= len(samples); n++ {
		now := samples[n-1].At
		got := Evaluate(noisy, every, "Stable", 1, samples[:n], now)
		want := StatusOK
		if n >= minRisingSamples {
			want = StatusStall
		}
		if got.Code != want {
			t.Fatalf("after %d samples (%s): %s %q, want %s", n, dur(now.Sub(samples[0].At)), got.Code, got.Reason, want)
		}
	}
	if got := Evaluate(noisy, every, "Stable", 1, samples[:3], samples[2].At); got.Reason != "committed offset stuck at 812 for 30 s with 1 member, lag 120" {
		t.Errorf("reason %q", got.Reason)
	}

	for _, tc := range []struct {
		name    string
		members int
		samples []Sample
		code    StatusCode
		reason  string
	}{
		{"STALL/RisingWhileStuck", 1, series(same(3, 812), []int64{100, 400, 900}),
			StatusStall, "committed offset stuck at 812 for 2 min with 1 member, lag 900"},
		{"STALL/RisingNeverCommitted", 2, series(same(3, -1), []int64{100, 400, 900}),
			StatusStall, "never committed (no commit seen in 2 min) with 2 members, lag 900"},
		// The committed offset moved inside the window: a consumer that falls behind, WARN.
		{"WARN/RisingWhileMoving", 1, series([]int64{700, 812, 812}, []int64{100, 400, 900}),
			StatusWarn, "lag rose at every sample: 100 → 400 → 900 over 2 min"},
		// No member to be stuck: the records pile up while the group rebalances.
		{"WARN/RisingWithoutMembers", 0, series(same(3, 812), []int64{100, 400, 900}),
			StatusWarn, "lag rose at every sample: 100 → 400 → 900 over 2 min"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Evaluate(rules, time.Minute, "Stable", tc.members, tc.samples, t0)
			if got.Code != tc.code || got.Reason != tc.reason {
				t.Fatalf("Evaluate = %s %q, want %s %q", got.Code, got.Reason, tc.code, tc.reason)
			}
		})
	}

	t.Run("GroupRanksStallAboveWarn", func(t *testing.T) {
		gs := EvaluateGroup(rules, time.Minute, "Stable", 1, []PartitionSamples{
			{Topic: "orders", Partition: 0, Samples: series([]int64{100, 200, 300}, []int64{10_000, 40_000, 90_000})},
			{Topic: "orders", Partition: 1, Samples: series(same(3, 812), []int64{100, 400, 900})},
		}, t0)
		if gs.Status.Code != StatusStall || gs.Worst == nil || gs.Worst.Partition != 1 {
			t.Fatalf("group = %s %q (worst %+v), want STALL from partition 1", gs.Status.Code, gs.Status.Reason, gs.Worst)
		}
		if want := "committed offset stuck at 812 for 2 min on partition 1 with 1 member, lag 900"; gs.Status.Reason != want {
			t.Errorf("reason %q, want %q", gs.Status.Reason, want)
		}
		if !(StatusWarn.Severity() < StatusStall.Severity() && StatusWarn.Severity() < StatusErr.Severity() &&
			StatusStall.Severity() <= StatusStop.Severity()) {
			t.Error("WARN must rank below ERR, STALL and STOP")
		}
	})
}

// A status says since when as far as the samples show, and nothing where they do not: the
// overview and the notifications show it as when the problem began.
func TestStatusSince(t *testing.T) {
	at := func(minutesAgo int) time.Time { return t0.Add(-time.Duration(minutesAgo) * time.Minute) }
	parts := []PartitionSamples{
		// Rising for 7 min: the rise shown is the window's, from 5 min ago.
		{Topic: "orders", Partition: 1, Samples: series([]int64{1, 2, 3, 4, 5, 6, 7}, []int64{0, 200, 400, 600, 800, 1000, 1200})},
		// Stuck at 812 for the 8 samples kept (7 min): since the oldest, as "stuck for 7 min" says.
		{Topic: "orders", Partition: 2, Samples: series(same(8, 812), same(8, 40))},
		// Moved to 900 five minutes ago and stuck there: the worst (the larger lag), the later start.
		{Topic: "orders", Partition: 3, Samples: series([]int64{880, 890, 895, 900, 900, 900, 900, 900, 900}, same(9, 90))},
	}
	gs := EvaluateGroup(rules, time.Minute, "Stable", 3, parts, t0)
	if gs.Status.Code != StatusStall || gs.Worst.Partition != 3 {
		t.Fatalf("group %+v, worst %+v: want STALL from partition 3", gs.Status, gs.Worst)
	}
	for i, want := range []time.Time{at(5), at(7), at(5)} {
		if got := gs.Partitions[i].Status.Since; !got.Equal(want) {
			t.Errorf("partition %d (%s) since %v, want %v", gs.Partitions[i].Partition, gs.Partitions[i].Status.Code, got, want)
		}
	}
	// The group's: its earliest STALL partition's, not its worst's, and not the WARN one's.
	if !gs.Status.Since.Equal(at(7)) {
		t.Errorf("group since %v, want %v (partition 2)", gs.Status.Since, at(7))
	}

	if st := Evaluate(rules, time.Minute, "Stable", 1, series(same(20, 500), same(20, 50)), t0); st.Code != StatusStop || !st.Since.Equal(at(19)) {
		t.Errorf("stop: %s since %v, want STOP since %v", st.Code, st.Since, at(19))
	}
	timeRules := rules
	timeRules.ErrorAfter = 30 * time.Minute
	behind := series(consumed(7, 100), same(7, 40))
	for i := range behind {
		behind[i].TimeLag = 45 * time.Minute
	}
	for name, st := range map[string]Status{
		"OK":    Evaluate(rules, time.Minute, "Stable", 1, series(consumed(7, 100), same(7, 0)), t0),
		"EMPTY": Evaluate(rules, time.Minute, "Empty", 0, series(same(7, 500), same(7, 50)), t0),
		"DEAD":  Evaluate(rules, time.Minute, "Dead", 0, nil, t0),
		"ERR":   Evaluate(timeRules, time.Minute, "Stable", 1, behind, t0),
	} {
		if string(st.Code) != name || !st.Since.IsZero() {
			t.Errorf("%s: %s since %v, want no since (the samples do not say)", name, st.Code, st.Since)
		}
	}
}
