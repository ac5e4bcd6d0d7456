package kafka

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/redrive/redrive/ops"
)

// GroupOffsetsNow reads one group's committed offsets and the end offsets of topics, side by side:
// one OffsetFetch to the group's coordinator and one ListOffsets per partition leader — what a
// group page needs to show a commit made a moment ago, without the sample of every group
// (Groups). It does not describe the group, its members or its time lag. A group that committed
// nothing answers an empty Committed. Errors: ops.ErrInvalid (no group), ops.ErrUnavailable.
func (c *Cluster) GroupOffsetsNow(ctx context.Context, group string, topics []string) (GroupOffsets, error) {
	if group == "" {
		return GroupOffsets{}, ops.Invalid("group", "required")
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var (
		committed  kadm.OffsetResponses
		ends       kadm.ListedOffsets
		cerr, eerr error
		wg         sync.WaitGroup
	)
	wg.Go(func() { committed, cerr = c.adm.FetchOffsets(ctx, group) })
	if len(topics) > 0 { // none would list every topic
		wg.Go(func() { ends, eerr = c.adm.ListEndOffsets(ctx, topics...) })
	}
	wg.Wait()
	if cerr != nil {
		return GroupOffsets{}, c.fail("offsets of group "+named(group), cerr)
	}
	if eerr != nil {
		return GroupOffsets{}, c.fail("end offsets of group "+named(group)+"'s topics", eerr)
	}
	out := GroupOffsets{At: time.Now(), Committed: map[string]map[int32]int64{}, End: map[string]map[int32]int64{}}
	committed.Each(func(r kadm.OffsetResponse) {
		if r.Err != nil || r.At < 0 {
			return
		}
		if out.Committed[r.Topic] == nil {
			out.Committed[r.Topic] = map[int32]int64{}
		}
		out.Committed[r.Topic][r.Partition] = r.At
	})
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset < 0 {
			return
		}
		if out.End[o.Topic] == nil {
			out.End[o.Topic] = map[int32]int64{}
		}
		out.End[o.Topic][o.Partition] = o.Offset
	})
	return out, nil
}
