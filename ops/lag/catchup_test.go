package lag

import (
	"testing"
	"time"
)

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
