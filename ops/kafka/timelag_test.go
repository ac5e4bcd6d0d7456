package kafka

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// The record at an offset does not change while its topic lives: a sample whose commits have not
// moved reads its time lags from the last sample's timestamps without a fetch, and a topic deleted
// and created again under the same name (new topic ID, other records at the same offsets) is read
// afresh.
func TestTimeLagCachedPerTopicID(t *testing.T) {
	f := newFake(t)
	ctx := ctxT(t)
	write := func(base time.Time) {
		f.topic(t, "refunds", 1)
		var recs []*kgo.Record
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: "refunds", Value: []byte("v"), Timestamp: base.Add(time.Duration(i) * time.Minute)})
		}
		f.produce(t, recs...)
		f.commit(t, "g-refunds", "refunds", map[int32]int64{0: 4})
	}
	var fetches atomic.Int64
	f.broker.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		fetches.Add(1)
		f.broker.KeepControl()
		return nil, nil, false
	})
	timeLag := func() time.Duration {
		t.Helper()
		g, err := f.c.Group(ctx, "g-refunds")
		if err != nil {
			t.Fatal(err)
		}
		return partitionLag(t, g, "refunds", 0).TimeLag
	}
	now := time.Now()
	write(now.Add(-time.Hour)) // offset 4 written 56 minutes ago
	if got := timeLag(); got < 55*time.Minute || got > 57*time.Minute {
		t.Fatalf("time lag %s, want about 56m", got)
	}
	first := fetches.Load()
	if first == 0 {
		t.Fatal("the first sample fetched nothing")
	}
	if got := timeLag(); got < 55*time.Minute || got > 57*time.Minute {
		t.Fatalf("time lag from the cache %s, want about 56m", got)
	}
	if n := fetches.Load() - first; n != 0 {
		t.Fatalf("a sample with unmoved commits sent %d fetches, want 0", n)
	}

	if _, err := f.adm.DeleteTopic(ctx, "refunds"); err != nil {
		t.Fatal(err)
	}
	f.prod.PurgeTopicsFromClient("refunds") // the producer's metadata still names the old topic ID
	write(now.Add(-10 * time.Minute))       // the same offset 4 now written 6 minutes ago
	if got := timeLag(); got < 5*time.Minute || got > 7*time.Minute {
		t.Fatalf("time lag after the topic was recreated %s, want about 6m (not the old topic's 56m)", got)
	}
}
