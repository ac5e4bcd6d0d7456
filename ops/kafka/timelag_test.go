package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Time lag is now minus the timestamp of the record at the committed offset: 0 when caught up,
// from the log start when nothing is committed, and the maximum per topic and group.
func TestTimeLag(t *testing.T) {
	f := newFake(t)
	ctx := ctxT(t)
	f.topic(t, "payments", 3)
	now := time.Now()
	// Each partition's record i was written (i+1) minutes after base.
	base := now.Add(-time.Hour)
	for p := range int32(3) {
		var recs []*kgo.Record
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: "payments", Partition: p, Value: []byte("v"),
				Timestamp: base.Add(time.Duration(i+1) * time.Minute)})
		}
		f.produce(t, recs...)
	}
	// p0 caught up, p1 committed at offset 4 (written at base+5m, 55m ago), p2 never committed
	// (log start: offset 0, written at base+1m, 59m ago). A second group reads p1 at another
	// offset, so the partition is fetched at two offsets in one sample.
	f.commit(t, "g-time", "payments", map[int32]int64{0: 10, 1: 4})
	f.commit(t, "g-other", "payments", map[int32]int64{0: 10, 1: 8, 2: 10})

	groups, err := f.c.Groups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	near := func(t *testing.T, got, want time.Duration) {
		t.Helper()
		if got < want-5*time.Second || got > want+5*time.Second {
			t.Errorf("time lag %s, want about %s", got, want)
		}
	}
	var g, other Group
	for _, x := range groups {
		switch x.Name {
		case "g-time":
			g = x
		case "g-other":
			other = x
		}
	}
	t.Run("CaughtUp", func(t *testing.T) {
		if got := partitionLag(t, g, "payments", 0).TimeLag; got != 0 {
			t.Errorf("caught-up partition time lag %s, want 0", got)
		}
		if got := partitionLag(t, other, "payments", 2).TimeLag; got != 0 {
			t.Errorf("caught-up partition time lag %s, want 0", got)
		}
	})
	t.Run("Lagging", func(t *testing.T) {
		near(t, partitionLag(t, g, "payments", 1).TimeLag, 55*time.Minute)
		near(t, partitionLag(t, other, "payments", 1).TimeLag, 51*time.Minute)
		near(t, other.MaxTimeLag, 51*time.Minute)
	})
	t.Run("NeverCommitted", func(t *testing.T) {
		near(t, partitionLag(t, g, "payments", 2).TimeLag, 59*time.Minute)
		near(t, g.Topics[0].MaxTimeLag, 59*time.Minute)
		near(t, g.MaxTimeLag, 59*time.Minute)
	})
	t.Run("OneGroup", func(t *testing.T) {
		one, err := f.c.Group(ctx, "g-time")
		if err != nil {
			t.Fatal(err)
		}
		near(t, partitionLag(t, one, "payments", 1).TimeLag, 55*time.Minute)
	})
	t.Run("AfterRetention", func(t *testing.T) {
		// Records below 6 deleted: the committed 4 is gone, the consumer resumes at the log start.
		f.deleteRecords(t, "payments", 1, 6)
		one, err := f.c.Group(ctx, "g-time")
		if err != nil {
			t.Fatal(err)
		}
		near(t, partitionLag(t, one, "payments", 1).TimeLag, 53*time.Minute)
	})
}
