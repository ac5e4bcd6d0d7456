package kafka

import (
	"fmt"
	"testing"
	"time"
)

func TestMergeAcross(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	rec := func(p int32, off int64, sec int) Record {
		return Record{Partition: p, Offset: off, Timestamp: t0.Add(time.Duration(sec) * time.Second)}
	}
	names := func(rs []Record) string {
		s := ""
		for _, r := range rs {
			s += fmt.Sprintf("%d:%d ", r.Partition, r.Offset)
		}
		return s
	}
	off := func(n int64) *int64 { return &n }

	t.Run("NewestFirst", func(t *testing.T) {
		lists := map[int32][]Record{
			0: {rec(0, 9, 90), rec(0, 8, 40)},
			1: {rec(1, 5, 80), rec(1, 4, 70), rec(1, 3, 10)},
			2: {rec(2, 1, 85)},
		}
		got, next := mergeAcross(lists, map[int32]*int64{1: off(2)}, 4, "newest")
		if want := "0:9 2:1 1:5 1:4 "; names(got) != want {
			t.Errorf("page %q, want %q", names(got), want)
		}
		if len(next) != 2 || next[0] != 8 || next[1] != 3 {
			t.Errorf("next %v, want partition 0 from 8 and 1 from 3 (2 is done)", next)
		}
	})
	t.Run("OldestFirst", func(t *testing.T) {
		lists := map[int32][]Record{0: {rec(0, 0, 5), rec(0, 1, 30)}, 1: {rec(1, 0, 10)}}
		got, next := mergeAcross(lists, map[int32]*int64{}, 10, "oldest")
		if want := "0:0 1:0 0:1 "; names(got) != want || next != nil {
			t.Errorf("page %q next %v, want %q and no next", names(got), next, want)
		}
	})
	t.Run("StopsWhereAPartitionHasMoreUnread", func(t *testing.T) {
		// Partition 1 read only one record but has more: records after it may be newer than
		// partition 0's older ones, so the page ends there.
		lists := map[int32][]Record{0: {rec(0, 9, 90), rec(0, 8, 10)}, 1: {rec(1, 5, 50)}}
		got, next := mergeAcross(lists, map[int32]*int64{1: off(4)}, 10, "newest")
		if want := "0:9 1:5 "; names(got) != want || next[0] != 8 || next[1] != 4 {
			t.Errorf("page %q next %v", names(got), next)
		}
	})
	t.Run("TiesGoToTheLowerPartition", func(t *testing.T) {
		lists := map[int32][]Record{2: {rec(2, 0, 1)}, 0: {rec(0, 0, 1)}, 1: {rec(1, 0, 1)}}
		got, _ := mergeAcross(lists, nil, 3, "newest")
		if want := "0:0 1:0 2:0 "; names(got) != want {
			t.Errorf("page %q, want %q", names(got), want)
		}
	})
}
