package lag

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
)

func TestTimeLagThresholds(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	rules := configs.LagRules{Window: configs.Duration(5 * time.Minute), StopAfter: configs.Duration(15 * time.Minute),
		WarnMinLag: 1, WarnAfterSeconds: 600, ErrorAfterSeconds: 1800}
	moving := func(timeLag time.Duration) []Sample {
		return []Sample{
			{At: now.Add(-2 * time.Minute), Committed: 100, End: 150, Lag: 50, TimeLag: timeLag},
			{At: now.Add(-time.Minute), Committed: 120, End: 160, Lag: 40, TimeLag: timeLag},
			{At: now, Committed: 140, End: 180, Lag: 40, TimeLag: timeLag},
		}
	}
	for _, tc := range []struct {
		name    string
		rules   configs.LagRules
		state   string
		samples []Sample
		want    StatusCode
		reason  string
	}{
		{"Off", configs.LagRules{}, "Stable", moving(time.Hour), StatusOK, ""},
		{"Below", rules, "Stable", moving(5 * time.Minute), StatusOK, ""},
		{"Warn", rules, "Stable", moving(14 * time.Minute), StatusWarn, "14m behind (warn after 10m), lag 40"},
		{"Err", rules, "Stable", moving(45 * time.Minute), StatusErr, "45m behind (error after 30m), lag 40"},
		{"CaughtUp", rules, "Stable", []Sample{{At: now, Committed: 10, End: 10, Lag: 0}}, StatusOK, ""},
		{"EmptyStaysEmpty", rules, "Empty", moving(time.Hour), StatusEmpty, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Evaluate(tc.rules, tc.state, 2, tc.samples, now)
			if got.Code != tc.want || (tc.reason != "" && got.Reason != tc.reason) {
				t.Errorf("got %s %q, want %s %q", got.Code, got.Reason, tc.want, tc.reason)
			}
		})
	}
	t.Run("Group", func(t *testing.T) {
		gs := EvaluateGroup(rules, "Stable", 2, []PartitionSamples{
			{Topic: "orders", Partition: 0, Samples: moving(40 * time.Minute)},
			{Topic: "orders", Partition: 1, Samples: moving(35 * time.Minute)},
			{Topic: "orders", Partition: 2, Samples: moving(time.Minute)},
		}, now)
		if gs.Status.Code != StatusErr || !strings.Contains(gs.Status.Reason, "40m behind on partitions 0, 1 (error after 30m)") {
			t.Errorf("group status %s %q", gs.Status.Code, gs.Status.Reason)
		}
	})
}
