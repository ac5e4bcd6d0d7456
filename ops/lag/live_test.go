package lag

import (
	"testing"
	"time"

	"github.com/redrive/redrive/ops/kafka"
)

// WithOffsets puts offsets read now over a sampled group: lags and totals again, the verdict the
// sample's; partitions the read did not list keep the sample's numbers; the snapshot's group is
// not touched (readers share it); a share group is left as it is.
func TestWithOffsets(t *testing.T) {
	sampled := Group{Group: kafka.Group{Name: "billing", TotalLag: 24, MaxTimeLag: 30 * time.Second, Topics: []kafka.TopicLag{{
		Topic: "orders", Lag: 24, MaxTimeLag: 30 * time.Second, Partitions: []kafka.PartitionLag{
			{Partition: 0, Committed: 2, Start: 0, End: 10, Lag: 8, TimeLag: 30 * time.Second},
			{Partition: 1, Committed: -1, Start: 3, End: 10, Lag: 7, TimeLag: 20 * time.Second},
			{Partition: 2, Committed: 1, Start: 0, End: 10, Lag: 9, TimeLag: 25 * time.Second},
		}}}}, Status: Status{Code: StatusStall, Reason: "stuck"}}
	now := kafka.GroupOffsets{At: t0,
		Committed: map[string]map[int32]int64{"orders": {0: 12}},
		End:       map[string]map[int32]int64{"orders": {0: 12, 1: 15}}} // partition 2 not listed
	g := sampled.WithOffsets(now)
	want := []kafka.PartitionLag{
		{Partition: 0, Committed: 12, Start: 0, End: 12, Lag: 0, TimeLag: 0},
		{Partition: 1, Committed: -1, Start: 3, End: 15, Lag: 12, TimeLag: 20 * time.Second},
		{Partition: 2, Committed: 1, Start: 0, End: 10, Lag: 9, TimeLag: 25 * time.Second},
	}
	for i, p := range g.Topics[0].Partitions {
		if p != want[i] {
			t.Errorf("partition %d = %+v, want %+v", i, p, want[i])
		}
	}
	if g.TotalLag != 21 || g.Topics[0].Lag != 21 || g.Status.Code != StatusStall || g.MaxTimeLag != 30*time.Second {
		t.Errorf("group: lag %d, topic lag %d, status %s, time lag %v", g.TotalLag, g.Topics[0].Lag, g.Status.Code, g.MaxTimeLag)
	}
	if sampled.TotalLag != 24 || sampled.Topics[0].Partitions[0].Committed != 2 {
		t.Error("the sampled group was modified")
	}
	caughtUp := sampled.WithOffsets(kafka.GroupOffsets{
		Committed: map[string]map[int32]int64{"orders": {0: 10, 1: 10, 2: 10}},
		End:       map[string]map[int32]int64{"orders": {0: 10, 1: 10, 2: 10}}})
	if caughtUp.TotalLag != 0 || caughtUp.MaxTimeLag != 0 || caughtUp.Topics[0].MaxTimeLag != 0 {
		t.Errorf("caught up: lag %d, time lag %v", caughtUp.TotalLag, caughtUp.MaxTimeLag)
	}
	share := sampled
	share.Type = kafka.GroupShare
	if got := share.WithOffsets(now); got.TotalLag != 24 {
		t.Errorf("a share group's lag became %d", got.TotalLag)
	}
}
