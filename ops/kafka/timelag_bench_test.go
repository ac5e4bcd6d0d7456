package kafka

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/benchtest"
)

// TestGroupsStraightFromCluster times Cluster.Groups (the sampler's read: lag plus one bounded
// fetch per lagging partition for the time lag) at 200 groups × 50 partitions on kfake, every
// partition lagging. Run: REDRIVE_BENCH=1 go test ./ops/kafka -run TestGroupsStraightFromCluster -v
func TestGroupsStraightFromCluster(t *testing.T) {
	benchtest.Require(t)
	f := newFake(t)
	ctx := ctxT(t)
	const groups, parts = 200, 50
	var recs []*kgo.Record
	for g := range groups {
		topic := fmt.Sprintf("events-%03d", g)
		f.topic(t, topic, parts)
		for p := range int32(parts) {
			for range 3 {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v"), Timestamp: time.Now().Add(-time.Minute)})
			}
		}
	}
	f.produce(t, recs...)
	for g := range groups {
		os := kadm.Offsets{}
		for p := range int32(parts) {
			os.AddOffset(fmt.Sprintf("events-%03d", g), p, 1, -1)
		}
		if err := f.adm.CommitAllOffsets(ctx, fmt.Sprintf("g-%03d", g), os); err != nil {
			t.Fatal(err)
		}
	}
	var lat []time.Duration
	for range 7 {
		start := time.Now()
		gs, err := f.c.Groups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		if len(gs) != groups || gs[0].MaxTimeLag < 59*time.Second {
			t.Fatalf("%d groups, max time lag %s", len(gs), gs[0].MaxTimeLag)
		}
	}
	slices.Sort(lat)
	t.Logf("Cluster.Groups at %d × %d, all lagging: median %s, max %s (7 reads)", groups, parts, lat[3].Round(time.Millisecond), lat[6].Round(time.Millisecond))
}
