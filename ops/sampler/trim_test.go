package sampler

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/lag"
)

// trim keeps what the rules read: a partition stuck since long before the window is still judged
// STOP with the same "stuck for" as with every sample kept, and one that moved in the window
// keeps only the window and the sample before it.
func TestTrimKeepsWhatRulesRead(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	rules := lag.Rules{Window: 5 * time.Minute, StopAfter: 15 * time.Minute}
	keep := 15*time.Minute + 30*time.Second
	var all, trimmed []lag.Sample
	for i := range 80 { // 20 minutes at 15 s; committed stuck at 7 from sample 3 on
		at := t0.Add(time.Duration(i) * 15 * time.Second)
		committed := int64(7)
		if i < 3 {
			committed = int64(i)
		}
		x := lag.Sample{At: at, Committed: committed, End: 100, Lag: 100 - committed}
		all = append(all, x)
		trimmed = append(trim(trimmed, at.Add(-keep), at.Add(-5*time.Minute)), x)
		full := all
		for len(full) > 0 && full[0].At.Before(at.Add(-keep)) {
			full = full[1:]
		}
		want, got := lag.Evaluate(rules, 15*time.Second, "Stable", 1, full, at), lag.Evaluate(rules, 15*time.Second, "Stable", 1, trimmed, at)
		// Until the horizon clips the full window (stuck since sample 3), they say the same; then the
		// trimmed one still knows since when.
		if want.Code != got.Code || (i < 3+62 && want != got) {
			t.Fatalf("sample %d: trimmed window says %+v, the full one %+v", i, got, want)
		}
	}
	if len(trimmed) > 23 {
		t.Errorf("%d samples kept, want about a window's (22)", len(trimmed))
	}
	if r := lag.Evaluate(rules, 15*time.Second, "Stable", 1, trimmed, t0.Add(79*15*time.Second)).Reason; !strings.Contains(r, "no commit for 19 min") {
		t.Errorf("the reason after the horizon: %q", r)
	}
	// Moving again: the old run's first sample is no longer needed.
	at := t0.Add(80 * 15 * time.Second)
	trimmed = append(trim(trimmed, at.Add(-keep), at.Add(-5*time.Minute)), lag.Sample{At: at, Committed: 50, End: 100, Lag: 50})
	at = at.Add(15 * time.Second)
	trimmed = trim(trimmed, at.Add(-keep), at.Add(-5*time.Minute))
	if !trimmed[0].At.After(at.Add(-5*time.Minute - 15*time.Second)) {
		t.Errorf("the anchor of a broken run is kept: %v", trimmed[0].At)
	}
}

// A packed window gives back exactly what was packed.
func TestSeriesRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 123_456_000, time.UTC)
	cases := [][]lag.Sample{
		nil,
		{{At: at, Committed: -1, End: -1, Lag: -1, TimeLag: -1}},
		{{}, {At: at, Committed: math.MaxInt64, End: math.MinInt64, Lag: 0}, {}}, // zero times and extremes
		{{At: at, Committed: 10, End: 100, Lag: 90, TimeLag: 14 * time.Minute},
			{At: at.Add(time.Second), Committed: 5, End: 120, Lag: 115, TimeLag: 0}}, // an offset reset
	}
	r := rand.New(rand.NewPCG(1, 2))
	var long []lag.Sample
	for i := range 1000 {
		long = append(long, lag.Sample{At: at.Add(time.Duration(i) * 15 * time.Second), Committed: r.Int64N(1 << 40),
			End: r.Int64() - r.Int64(), Lag: r.Int64N(1000) - 1, TimeLag: time.Duration(r.Int64N(int64(time.Hour)))})
	}
	cases = append(cases, long)
	var buf series
	for i, c := range cases {
		buf = pack(buf, c)
		got := buf.unpack(nil)
		if len(got) != len(c) {
			t.Fatalf("case %d: %d samples back, want %d", i, len(got), len(c))
		}
		for j := range c {
			w, g := c[j], got[j]
			if !w.At.Equal(g.At) || w.At.IsZero() != g.At.IsZero() || w.Committed != g.Committed || w.End != g.End ||
				w.Lag != g.Lag || w.TimeLag != g.TimeLag {
				t.Fatalf("case %d sample %d: got %+v, want %+v", i, j, g, w)
			}
		}
	}
	// A window a second apart with offsets that move a little packs small: the point of it.
	var win []lag.Sample
	for i := range 22 {
		win = append(win, lag.Sample{At: at.Add(time.Duration(i) * time.Second), Committed: 1_000_000 + int64(i*3),
			End: 1_000_500 + int64(i*4), Lag: 500 + int64(i), TimeLag: 90*time.Second + time.Duration(i)*time.Second})
	}
	if n := len(pack(nil, win)); n > 22*14+20 {
		t.Fatalf("22 samples pack into %d bytes; want about 13 a sample", n)
	}
}
