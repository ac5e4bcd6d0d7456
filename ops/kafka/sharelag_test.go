package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/waittest"
)

// A share group on a broker that reports no lag of its own (DescribeShareGroupOffsets v0: Kafka
// before 4.2, KIP-1226) has the records from its start offset to the end as its lag, said to be
// an upper bound; on one that does (v1), the broker's lag, exact. Records 0–3 and 6–7 of 10
// acknowledged: start offset 4, 4 records not done (4, 5, 8, 9), at most 6. Before, v0's lag was
// unknown (-1): a share group stuck for an hour while its log grew read OK everywhere.
func TestShareGroupLagWithoutTheBrokers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int16
		lag     int64
		atMost  bool
	}{{"v0", 0, 6, true}, {"v1", 1, 4, false}} {
		t.Run(tc.name, func(t *testing.T) {
			v := kversion.Stable()
			v.SetMaxKeyVersion(90, tc.version) // DescribeShareGroupOffsets
			f := newFakeOf(t, kfaketest.Cluster(t, kfake.MaxVersions(v)))
			f.filledTopic(t, "jobs", 10)
			shareEarliest(t, f, "mailer")
			cl := kfaketest.Client(t, f.broker, kgo.ClientID("share-worker"), kgo.ShareGroup("mailer"), kgo.ConsumeTopics("jobs"))
			ctx := ctxT(t)
			for got := map[int64]bool{}; len(got) < 10; {
				fs := cl.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					t.Fatalf("records polled %d: %v", len(got), err)
				}
				for _, r := range fs.Records() {
					got[r.Offset] = true
					if r.Offset < 4 || r.Offset == 6 || r.Offset == 7 {
						r.Ack(kgo.AckAccept)
					}
				}
			}
			if err := cl.FlushAcks(ctx); err != nil {
				t.Fatalf("flush acks: %v", err)
			}
			var g Group
			waittest.Until(t, 20*time.Second, "the share group's start offset moved to 4", func() bool {
				gs, err := f.c.Groups(ctxT(t))
				if err != nil {
					t.Fatal(err)
				}
				g = findGroup(t, gs, "mailer")
				return len(g.Topics) == 1 && g.Topics[0].Partitions[0].ShareStart == 4
			})
			p := g.Topics[0].Partitions[0]
			if p.Lag != tc.lag || p.LagAtMost != tc.atMost || g.TotalLag != tc.lag {
				t.Fatalf("partition %+v, total %d; want lag %d (at most: %v)", p, g.TotalLag, tc.lag, tc.atMost)
			}
		})
	}
}
