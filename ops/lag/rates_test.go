package lag

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// slopeByDefinition is the least-squares slope as the textbook writes it, over time.Time
// arithmetic: the reference fitOf is checked against and the naive way BenchmarkRates measures.
func slopeByDefinition(s []Sample, y func(Sample) float64) float64 {
	n := float64(len(s))
	var sx, sy float64
	for _, v := range s {
		sx += v.At.Sub(s[0].At).Seconds()
		sy += y(v)
	}
	mx, my := sx/n, sy/n
	var num, den float64
	for _, v := range s {
		dx := v.At.Sub(s[0].At).Seconds() - mx
		num += dx * (y(v) - my)
		den += dx * dx
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// randomWindow is a window as the sampler holds one: n samples about every interval, offsets that
// move by up to step, with what happens to real partitions now and then (a reset of the committed
// offset, a recreated topic, an end offset that could not be listed, an unknown lag).
func randomWindow(r *rand.Rand, n int, every time.Duration, step int64, accidents bool) []Sample {
	s := make([]Sample, n)
	at, committed, end := t0, r.Int64N(1e12), int64(0)
	end = committed + r.Int64N(1e6)
	for i := range s {
		at = at.Add(every + time.Duration(r.Int64N(int64(every/4))))
		committed += r.Int64N(step)
		end = max(end+r.Int64N(step), committed)
		x := Sample{At: at, Committed: committed, End: end, Lag: end - committed}
		if accidents {
			switch r.IntN(20) {
			case 0:
				committed = r.Int64N(10)
				x.Committed, x.Lag = committed, end-committed
			case 1:
				end, committed = r.Int64N(10), 0
				x.End, x.Committed, x.Lag = end, committed, end
			case 2:
				x.End = -1
			case 3:
				x.Lag = -1
			}
		}
		s[i] = x
	}
	return s
}

// fitOf's three slopes are the textbook's, whatever the offsets' size (up to 10¹² here, where
// float64 keeps 4 decimal places of the mean) and however the samples are spaced.
func TestFitIsTheLeastSquaresSlope(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		s := randomWindow(r, 2+r.IntN(70), time.Duration(1+r.IntN(60))*time.Second, 1+r.Int64N(1e6), false)
		f := fitOf(s)
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"committed", f.committed, slopeByDefinition(s, committedOf)},
			{"lag", f.lag, slopeByDefinition(s, lagOf)},
			{"end", f.end, slopeByDefinition(s, endOf)},
		} {
			if math.Abs(c.got-c.want) > 1e-6*math.Max(1, math.Abs(c.want)) {
				t.Fatalf("window %d (%d samples): %s slope %v, by definition %v", i, len(s), c.name, c.got, c.want)
			}
		}
	}
}

func committedOf(s Sample) float64 { return float64(s.Committed) }
func lagOf(s Sample) float64       { return float64(s.Lag) }
func endOf(s Sample) float64       { return float64(s.End) }

// RatesOf answers what Rate and ProducedRate answer for the same window, to the bit, on windows
// with resets, recreated topics, unknown end offsets and lags — where the two read different
// samples and RatesOf cannot share one pass.
func TestRatesOfIsRateAndProducedRate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	windows := [][]Sample{nil, series([]int64{5}, []int64{5}),
		{{At: t0, Committed: 1, End: 2, Lag: 1}, {At: t0, Committed: 2, End: 3, Lag: 1}}}
	for range 3000 {
		windows = append(windows, randomWindow(r, 1+r.IntN(40), 15*time.Second, 1+r.Int64N(5000), r.IntN(2) == 0))
	}
	shared := 0
	for i, s := range windows {
		got := RatesOf(s)
		var want Rates
		want.Consumed, want.CatchUp, want.Known = Rate(s)
		want.Produced, want.ProducedKnown = ProducedRate(s)
		if got != want {
			t.Fatalf("window %d %+v:\nRatesOf %+v\nRate, ProducedRate %+v", i, s, got, want)
		}
		if c, p := consumedSamples(s), producedSamples(s); len(c) > 1 && len(c) == len(p) && &c[0] == &p[0] {
			shared++
		}
	}
	if shared < 1000 || shared > len(windows)-1000 {
		t.Fatalf("%d of %d windows read the same samples for both rates: the test should hold many of either", shared, len(windows))
	}
}

// The group's catch-up from rates computed once is the one GroupCatchUp computes.
func TestGroupCatchUpOfComputedRates(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 500 {
		parts := make([]PartitionSamples, 1+r.IntN(8))
		rates := make([]Rates, len(parts))
		var total []Sample
		for p := range parts {
			parts[p] = PartitionSamples{Topic: "orders", Partition: int32(p), Samples: randomWindow(r, 1+r.IntN(25), 15*time.Second, 1+r.Int64N(50), true)}
			rates[p] = RatesOf(parts[p].Samples)
			total = parts[p].Samples
		}
		cu, ok := GroupCatchUpOf(parts, rates, total)
		wantCU, wantOK := GroupCatchUp(parts, total)
		if cu != wantCU || ok != wantOK {
			t.Fatalf("group %d: GroupCatchUpOf %v %v, GroupCatchUp %v %v", i, cu, ok, wantCU, wantOK)
		}
	}
}

// Telling a rise counts the window's moments without building a list of them: every partition is
// judged every round, and building it was three quarters of what a round of 10,000 allocated.
func TestRoseAllocatesNothing(t *testing.T) {
	win := series(same(6, 1000), []int64{100, 300, 600, 900, 1300, 1800})
	if !rose(win, time.Minute, 100) {
		t.Fatal("the lag rises at every sample")
	}
	if n := testing.AllocsPerRun(100, func() { rose(win, time.Minute, 100) }); n != 0 {
		t.Fatalf("rose allocated %v times", n)
	}
}

// BenchmarkRates is the rates of one partition's window of 22 samples (the sampler's at the
// defaults) as the sampler computes them — RatesOf, one pass pair for three slopes — against the
// naive way: Rate and ProducedRate, three slopes by definition over time.Time.
//
//	go test ./ops/lag -run '^$' -bench Rates -benchmem
func BenchmarkRates(b *testing.B) {
	s := randomWindow(rand.New(rand.NewPCG(7, 8)), 22, 15*time.Second, 500, false)
	b.Run("RatesOf", func(b *testing.B) {
		for b.Loop() {
			RatesOf(s)
		}
	})
	b.Run("naive", func(b *testing.B) {
		for b.Loop() {
			slopeByDefinition(s, committedOf)
			slopeByDefinition(s, lagOf)
			slopeByDefinition(s, endOf)
		}
	})
}
