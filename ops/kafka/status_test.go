package kafka

import (
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
)

var (
	t0    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rules = configs.LagRules{
		Window:     configs.Duration(5 * time.Minute),
		StopAfter:  configs.Duration(15 * time.Minute),
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

func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		name    string
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
			name: "WARN/LagGrows", state: "Stable", members: 3,
			samples: series([]int64{100, 200, 300, 400, 500, 600, 700}, []int64{900, 1000, 1200, 2000, 3000, 4000, 4800}),
			code:    StatusWarn, reason: "lag grew 1,000 → 4,800 over 5m",
		},
		{
			name: "WARN/WindowLongerThanHistory", state: "Stable", members: 1,
			samples: series([]int64{100, 200, 300}, []int64{100, 400, 900}),
			code:    StatusWarn, reason: "lag grew 100 → 900 over 2m",
		},
		{
			name: "STALL/CommitStuckWithMembers", state: "Stable", members: 3,
			samples: series([]int64{700, 812, 812, 812, 812, 812, 812, 812}, same(8, 50)),
			code:    StatusStall, reason: "committed offset stuck at 812 for 6m with 3 members",
		},
		{
			name: "STALL/OutranksWarn", state: "Stable", members: 1,
			samples: series(same(7, 812), []int64{100, 500, 1000, 2000, 3000, 4000, 5000}),
			code:    StatusStall, reason: "committed offset stuck at 812 for 6m with 1 member",
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
			code:    StatusStop, reason: "no commit for 20m (committed offset 812), lag 4,800",
		},
		{
			name: "STOP/EvenWithoutMembersInRebalance", state: "PreparingRebalance", members: 0,
			samples: series(same(17, 5), same(17, 7)),
			code:    StatusStop, reason: "no commit for 16m (committed offset 5), lag 7",
		},
		{
			name: "STOP/NeverCommitted", state: "Stable", members: 1,
			samples: series(same(20, -1), same(20, 300)),
			code:    StatusStop, reason: "nothing committed for 19m, lag 300",
		},
		{
			name: "STOP/SamplesOld", state: "Stable", members: 1,
			samples: series(same(3, 40), same(3, 10)),
			now:     t0.Add(30 * time.Minute),
			code:    StatusStop, reason: "no commit for 32m (committed offset 40), lag 10",
		},
		{
			name: "EMPTY/WithLag", state: "Empty", members: 0,
			samples: series(same(30, 812), same(30, 4800)),
			code:    StatusEmpty, reason: "no members; lag 4,800 left unconsumed",
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
			got := Evaluate(rules, tc.state, tc.members, tc.samples, now)
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
	gs := EvaluateGroup(rules, "Stable", 3, parts, t0)
	if gs.Status.Code != StatusStall || gs.Worst == nil || gs.Worst.Partition != 3 {
		t.Fatalf("group = %+v (worst %+v), want STALL from partition 3 (the larger lag)", gs.Status, gs.Worst)
	}
	wantCodes := []StatusCode{StatusOK, StatusWarn, StatusStall, StatusStall}
	for i, p := range gs.Partitions {
		if p.Status.Code != wantCodes[i] {
			t.Errorf("partition %d = %s, want %s", p.Partition, p.Status.Code, wantCodes[i])
		}
	}
	if gs := EvaluateGroup(rules, "Empty", 0, nil, t0); gs.Status.Code != StatusEmpty {
		t.Errorf("empty group with no partitions = %s, want EMPTY", gs.Status.Code)
	}
	if gs := EvaluateGroup(rules, "Stable", 1, nil, t0); gs.Status.Code != StatusOK || gs.Worst != nil {
		t.Errorf("group with no partitions = %+v, want OK", gs)
	}
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

func TestFormatting(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 4800: "4,800", 1234567: "1,234,567", -1200: "-1,200"} {
		if got := num(in); got != want {
			t.Errorf("num(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[time.Duration]string{
		45 * time.Second: "45s", 6 * time.Minute: "6m", 80 * time.Minute: "1h20m", 2 * time.Hour: "2h", 76 * time.Hour: "3d4h",
	} {
		if got := dur(in); got != want {
			t.Errorf("dur(%v) = %q, want %q", in, got, want)
		}
	}
}
