package sampler

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka"
)

// trim keeps what the rules read: a partition stuck since long before the window is still judged
// STOP with the same "stuck for" as with every sample kept, and one that moved in the window
// keeps only the window and the sample before it.
func TestTrimKeepsWhatRulesRead(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	rules := configs.LagRules{Window: configs.Duration(5 * time.Minute), StopAfter: configs.Duration(15 * time.Minute)}
	keep := 15*time.Minute + 30*time.Second
	var all, trimmed []kafka.Sample
	for i := range 80 { // 20 minutes at 15 s; committed stuck at 7 from sample 3 on
		at := t0.Add(time.Duration(i) * 15 * time.Second)
		committed := int64(7)
		if i < 3 {
			committed = int64(i)
		}
		x := kafka.Sample{At: at, Committed: committed, End: 100, Lag: 100 - committed}
		all = append(all, x)
		trimmed = append(trim(trimmed, at.Add(-keep), at.Add(-5*time.Minute)), x)
		full := all
		for len(full) > 0 && full[0].At.Before(at.Add(-keep)) {
			full = full[1:]
		}
		want, got := kafka.Evaluate(rules, "Stable", 1, full, at), kafka.Evaluate(rules, "Stable", 1, trimmed, at)
		// Until the horizon clips the full window (stuck since sample 3), they say the same; then the
		// trimmed one still knows since when.
		if want.Code != got.Code || (i < 3+62 && want != got) {
			t.Fatalf("sample %d: trimmed window says %+v, the full one %+v", i, got, want)
		}
	}
	if len(trimmed) > 23 {
		t.Errorf("%d samples kept, want about a window's (22)", len(trimmed))
	}
	if r := kafka.Evaluate(rules, "Stable", 1, trimmed, t0.Add(79*15*time.Second)).Reason; !strings.Contains(r, "no commit for 19m") {
		t.Errorf("the reason after the horizon: %q", r)
	}
	// Moving again: the old run's first sample is no longer needed.
	at := t0.Add(80 * 15 * time.Second)
	trimmed = append(trim(trimmed, at.Add(-keep), at.Add(-5*time.Minute)), kafka.Sample{At: at, Committed: 50, End: 100, Lag: 50})
	at = at.Add(15 * time.Second)
	trimmed = trim(trimmed, at.Add(-keep), at.Add(-5*time.Minute))
	if !trimmed[0].At.After(at.Add(-5*time.Minute - 15*time.Second)) {
		t.Errorf("the anchor of a broken run is kept: %v", trimmed[0].At)
	}
}
