package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// CountRecords counts, per partition of topic, the records a read_committed consumer gets from
// ranges[p] = [from, to): no transaction marker, no record of an aborted transaction — what an
// offset move over that range skips. It reads for at most budget; a partition it did not finish
// counts what it read plus the offsets it did not (an upper bound) and exact is false then.
func (c *Cluster) CountRecords(ctx context.Context, topic string, ranges map[int32][2]int64, budget time.Duration) (counts map[int32]int64, exact bool, err error) {
	counts = make(map[int32]int64, len(ranges))
	pos := map[int32]int64{}
	starts := map[int32]kgo.Offset{}
	for p, r := range ranges {
		if r[0] < r[1] {
			pos[p], starts[p] = r[0], kgo.NewOffset().At(r[0])
		}
	}
	if len(pos) == 0 {
		return counts, true, nil
	}
	cl, err := c.consumer(map[string]map[int32]kgo.Offset{topic: starts}, 1<<20)
	if err != nil {
		return nil, false, c.fail("count records of "+named(topic), err)
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	left := func() map[int32]readLeft {
		out := make(map[int32]readLeft, len(pos))
		for p, at := range pos {
			out[p] = readLeft{at, ranges[p][1]}
		}
		return out
	}
	for len(pos) > 0 && rctx.Err() == nil {
		fs, finished := c.pollWithin(rctx, cl, topic, scanIdleProbe, left)
		for _, p := range finished { // the rest of its range holds no record it gets
			delete(pos, p)
		}
		if err := fetchErr(fs); err != nil {
			if rctx.Err() != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				break // out of budget: an upper bound below
			}
			return nil, false, c.fail("count records of "+named(topic), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			at, ok := pos[r.Partition]
			if !ok || r.Offset < at {
				return
			}
			if end := ranges[r.Partition][1]; r.Offset >= end {
				delete(pos, r.Partition)
				return
			}
			if !r.Attrs.IsControl() {
				counts[r.Partition]++
			}
			if pos[r.Partition] = r.Offset + 1; r.Offset+1 >= ranges[r.Partition][1] {
				delete(pos, r.Partition)
			}
		})
	}
	for p, at := range pos { // not finished in time: what is left counts as records
		counts[p] += ranges[p][1] - at
	}
	return counts, len(pos) == 0, ctx.Err()
}
