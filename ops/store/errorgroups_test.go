package store_test

import (
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
