package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/history"
)

// A sighting within the window extends the group's episode; one after a quiet window starts a
// new episode with its own count; a sighting read twice (a new leader's first round) or out of
// order does not move the episode back.
func TestErrorGroupEpisodes(t *testing.T) {
	ctx, s := leaseStore(t)
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	const window = time.Hour
	see := func(at time.Time, n int64, msg string) {
		t.Helper()
		err := s.RecordErrorGroups(ctx, window, []history.ErrorGroupSighting{{Source: "kafka/main/orders.DLT", Key: "X|",
			ExceptionType: "X", FirstAt: at, LastAt: at.Add(time.Minute), Count: n, SampleMessage: msg + "\x00\xff"}})
		if err != nil {
			t.Fatal(err)
		}
	}
	episode := func() history.ErrorGroupEpisode {
		t.Helper()
		eps, err := s.ErrorGroupEpisodes(ctx, t0.Add(-24*time.Hour), 10)
		if err != nil || len(eps) != 1 {
			t.Fatalf("%v %v", eps, err)
		}
		return eps[0]
	}
	see(t0, 3, "first")
	see(t0.Add(30*time.Minute), 2, "second") // within the window
	if e := episode(); !e.EpisodeStart.Equal(t0) || e.Count != 5 || e.SampleMessage != "second\uFFFD" && e.SampleMessage != "second" {
		t.Fatalf("extended: %+v", e)
	}
	see(t0, 3, "first") // read again: the episode stays
	if e := episode(); !e.EpisodeStart.Equal(t0) || e.SampleMessage[:6] != "second" {
		t.Fatalf("re-read: %+v", e)
	}
	back := t0.Add(3 * time.Hour)
	see(back, 4, "back") // after a quiet window: a new episode
	if e := episode(); !e.EpisodeStart.Equal(back) || e.Count != 4 {
		t.Fatalf("new episode: %+v", e)
	}
	if eps, err := s.ErrorGroupEpisodes(ctx, back.Add(time.Second), 10); err != nil || len(eps) != 0 {
		t.Fatalf("since after the episode's start: %v %v", eps, err)
	}
}

// Two samplers recording the same groups at once (a leader and the replica taking over from it),
// each in an order of its own, both succeed: the groups are written in their key's order, so
// neither holds a group the other waits for. The counts add up.
func TestErrorGroupsRecordedConcurrently(t *testing.T) {
	ctx, s := leaseStore(t)
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var sightings []history.ErrorGroupSighting
	for i := range 50 {
		sightings = append(sightings, history.ErrorGroupSighting{Source: "kafka/main/orders.DLT", Key: fmt.Sprintf("X%02d|", i),
			ExceptionType: fmt.Sprintf("X%02d", i), FirstAt: t0, LastAt: t0.Add(time.Minute), Count: 1})
	}
	const writers = 20
	err := atOnce(writers, func(w int) error {
		mine := slices.Clone(sightings)
		if w%2 == 1 {
			slices.Reverse(mine)
		}
		return s.RecordErrorGroups(ctx, time.Hour, mine)
	})
	if err != nil {
		t.Fatalf("concurrent recordings: %v", err)
	}
	eps, err := s.ErrorGroupEpisodes(ctx, t0.Add(-time.Hour), 100)
	if err != nil || len(eps) != len(sightings) {
		t.Fatalf("%d groups, %v; want %d", len(eps), err, len(sightings))
	}
	for _, e := range eps {
		if e.Count != writers {
			t.Errorf("group %s counted %d, want %d", e.Key, e.Count, writers)
		}
	}
}
