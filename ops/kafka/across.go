package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/payload"
)

// maxAcrossRead bounds the records one page across partitions reads in all: a topic with many
// partitions reads fewer from each, and the page may then hold fewer than its limit.
const maxAcrossRead = 5000

// RecordsAcross reads one page of a topic across its partitions: up to Limit records from each
// partition (fewer when the topic has many), merged so that the page is the newest (or oldest)
// Limit records of the topic by timestamp. Errors: ErrInvalid (limit, order, a cursor naming a
// partition the topic lacks or an offset past a partition's end), ErrNotFound (unknown topic),
// ErrUnavailable.
func (c *Cluster) RecordsAcross(ctx context.Context, q AcrossQuery) (AcrossPage, error) {
	var err error
	if q.Limit, q.Order, err = pageQuery(q.Topic, q.Limit, q.Order); err != nil {
		return AcrossPage{}, err
	}
	var key strings.Builder
	fmt.Fprintf(&key, "all %q %s %d %s %d ", q.Topic, atKey(q.At), q.Limit, q.Order, q.Isolation)
	if q.Cursor == nil {
		key.WriteString("-")
	}
	for _, p := range slices.Sorted(maps.Keys(q.Cursor)) {
		fmt.Fprintf(&key, "%d:%d,", p, q.Cursor[p])
	}
	return sharedPage(ctx, c, key.String(), "records of "+named(q.Topic), func(ctx context.Context) (AcrossPage, error) {
		return c.recordsAcross(ctx, q)
	})
}

func (c *Cluster) recordsAcross(ctx context.Context, q AcrossQuery) (AcrossPage, error) {
	var err error
	ctx, cancel := c.bound(ctx)
	defer cancel()
	// One listing of the partitions' offsets serves the whole page: each partition's part is
	// checked and placed against it, and all parts are read by one consumer in the same fetches.
	all, err := c.partitionBounds(ctx, q.Topic)
	if err != nil {
		return AcrossPage{}, c.fail("partitions of "+named(q.Topic), err)
	}
	bs := all[q.Topic]
	parts := make([]PartitionRange, 0, len(bs))
	for p, b := range bs {
		parts = append(parts, PartitionRange{Partition: p, Start: b.start, End: b.end, Stable: b.stable})
	}
	slices.SortFunc(parts, func(a, b PartitionRange) int { return int(a.Partition) - int(b.Partition) })
	if err := checkCursor(q.Topic, q.Cursor, parts); err != nil {
		return AcrossPage{}, err
	}
	page := AcrossPage{Topic: q.Topic, Order: q.Order, Partitions: parts, Records: []Record{}}

	type job struct {
		p      int32
		anchor *int64
	}
	var jobs []job
	for _, pr := range parts {
		end := pr.Stable // where a committed read stops
		if q.Isolation == ReadUncommitted {
			end = pr.End
		}
		if pr.Start >= end {
			continue
		}
		if q.Cursor == nil {
			jobs = append(jobs, job{p: pr.Partition})
			continue
		}
		off, ok := q.Cursor[pr.Partition]
		if !ok {
			continue
		}
		// Records deleted since the cursor was made: go on from what is left.
		if off < pr.Start {
			if q.Order == "newest" {
				continue
			}
			off = pr.Start
		}
		if off >= end {
			if q.Order == "oldest" {
				continue
			}
			off = end - 1
		}
		jobs = append(jobs, job{p: pr.Partition, anchor: &off})
	}
	if len(jobs) == 0 {
		return page, nil
	}
	each := min(q.Limit, max(maxAcrossRead/len(jobs), 1))
	read := make([]Page, len(jobs))
	ranges := map[int32]readLeft{}
	var at offsetsAt
	for i, j := range jobs {
		rq := RecordQuery{Topic: q.Topic, Partition: j.p, Offset: j.anchor, Limit: each, Order: q.Order, Isolation: q.Isolation}
		if j.anchor == nil {
			rq.At = q.At
		}
		var from, to int64
		if read[i], from, to, err = c.pageRange(ctx, rq, bs[j.p], &at); err != nil {
			return AcrossPage{}, err
		}
		if from < to {
			ranges[j.p] = readLeft{from, to}
		}
	}
	recs, err := c.readRanges(ctx, q.Topic, ranges, q.Isolation)
	if err != nil {
		return AcrossPage{}, c.fail("records of "+named(q.Topic), err)
	}
	lists := map[int32][]Record{}
	more := map[int32]*int64{}
	for i, j := range jobs {
		if r, ok := ranges[j.p]; ok {
			if q.Isolation == ReadUncommitted {
				if err := c.markAborted(ctx, q.Topic, j.p, recs[j.p], read[i].Stable); err != nil {
					return AcrossPage{}, c.fail(fmt.Sprintf("records %s[%d]", named(q.Topic), j.p), err)
				}
			}
			finishPage(&read[i], recs[j.p], r.pos, r.to, int64(each), bs[j.p].readable(q.Isolation))
		}
		lists[j.p] = read[i].Records
		more[j.p] = read[i].Next
	}
	page.Records, page.Next = mergeAcross(lists, more, q.Limit, q.Order)
	return page, nil
}

// readRanges is readRange for several partitions of a topic at once: one consumer reads every
// range, [pos, to) of each partition, in the same fetches, and each partition is paused as soon
// as its range is read, so that the read waits for no partition it is done with. It returns each
// partition's records, ascending.
func (c *Cluster) readRanges(ctx context.Context, topic string, ranges map[int32]readLeft, iso Isolation) (map[int32][]Record, error) {
	out := make(map[int32][]Record, len(ranges))
	if len(ranges) == 0 {
		return out, nil
	}
	if len(ranges) == 1 {
		for p, r := range ranges {
			recs, err := c.readRange(ctx, topic, p, r.pos, r.to, iso)
			out[p] = recs
			return out, err
		}
	}
	var extra []kgo.Opt
	if iso == ReadUncommitted {
		extra = append(extra, uncommitted())
	}
	starts := make(map[int32]kgo.Offset, len(ranges))
	widest := int64(0)
	left := make(map[int32]readLeft, len(ranges)) // what each partition still waits for
	for p, r := range ranges {
		starts[p] = kgo.NewOffset().At(r.pos)
		widest = max(widest, r.to-r.pos)
		left[p] = r
		out[p] = make([]Record, 0, r.to-r.pos)
	}
	cl, err := c.consumer(map[string]map[int32]kgo.Offset{topic: starts}, fetchBytesFor(widest), extra...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	finished := func(p int32) {
		delete(left, p)
		cl.PauseFetchPartitions(map[string][]int32{topic: {p}})
	}
	for len(left) > 0 {
		var fs kgo.Fetches
		if iso == ReadUncommitted {
			fs = cl.PollFetches(ctx) // every offset below the end comes: nothing to probe
		} else {
			var done []int32
			fs, done = c.poll(ctx, cl, topic, func() map[int32]readLeft { return maps.Clone(left) })
			for _, p := range done {
				finished(p)
			}
		}
		if err := fetchErr(fs); err != nil {
			if errors.Is(err, kerr.OffsetOutOfRange) {
				gone := int32(-1)
				fs.EachError(func(_ string, p int32, err error) {
					if gone < 0 && errors.Is(err, kerr.OffsetOutOfRange) {
						gone = p
					}
				})
				return nil, ops.Invalid("offset", fmt.Sprintf("records from %d were deleted while reading partition %d; reload",
					ranges[gone].pos, gone))
			}
			return nil, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			l, ok := left[r.Partition]
			if !ok || r.Offset < l.pos {
				return
			}
			if r.Offset >= l.to {
				finished(r.Partition)
				return
			}
			l.pos = r.Offset + 1
			left[r.Partition] = l
			if !r.Attrs.IsControl() {
				out[r.Partition] = append(out[r.Partition], c.record(ctx, r))
			}
			if l.pos >= l.to {
				finished(r.Partition)
			}
		})
	}
	return out, nil
}

// checkCursor refuses a cursor that cannot have come from this topic's pages: one naming a
// partition the topic does not have, or an offset past a partition's end (a page's Next is at
// most the end), as when the topic was deleted and created again since. Read on, either would
// be an empty page that looks like the end of the topic.
func checkCursor(topic string, cursor map[int32]int64, parts []PartitionRange) error {
	ends := make(map[int32]int64, len(parts))
	for _, pr := range parts {
		ends[pr.Partition] = pr.End
	}
	for _, p := range slices.Sorted(maps.Keys(cursor)) {
		off := cursor[p]
		end, ok := ends[p]
		if !ok {
			return ops.Invalid("cursor", fmt.Sprintf("partition %d is not in %s (%s); start again without a cursor",
				p, payload.Clip(topic, EchoLimit), partitionSpan(len(parts))))
		}
		if off > end {
			return ops.Invalid("cursor", fmt.Sprintf("the cursor is past the end of partition %d: the topic may have been recreated; start again without a cursor", p))
		}
	}
	return nil
}

// partitionSpan names the partitions of a topic of n: "partitions 0–2", "partition 0".
func partitionSpan(n int) string {
	if n == 1 {
		return "partition 0"
	}
	return fmt.Sprintf("partitions 0–%d", n-1)
}

// mergeAcross merges partitions' records, each list in its partition's read order, into the
// newest (or oldest) limit by timestamp; ties go to the lower partition. more[p] is where
// partition p goes on past its list (nil: nothing more). The merge stops early when a list runs
// out while its partition has more: what follows could be newer than anything left. next is
// the cursor of the following page, nil when nothing is left.
func mergeAcross(lists map[int32][]Record, more map[int32]*int64, limit int, order string) ([]Record, map[int32]int64) {
	taken := map[int32]int{}
	out := make([]Record, 0, limit)
	for len(out) < limit {
		best, found, blocked := int32(0), false, false
		for p, list := range lists {
			i := taken[p]
			if i >= len(list) {
				if more[p] != nil {
					blocked = true
				}
				continue
			}
			if !found || before(list[i], lists[best][taken[best]], order) {
				best, found = p, true
			}
		}
		if !found || blocked {
			break
		}
		out = append(out, lists[best][taken[best]])
		taken[best]++
	}
	var next map[int32]int64
	for p, list := range lists {
		switch i := taken[p]; {
		case i < len(list):
			if next == nil {
				next = map[int32]int64{}
			}
			next[p] = list[i].Offset
		case more[p] != nil:
			if next == nil {
				next = map[int32]int64{}
			}
			next[p] = *more[p]
		}
	}
	return out, next
}

// before says whether a comes first on a page in order.
func before(a, b Record, order string) bool {
	if !a.Timestamp.Equal(b.Timestamp) {
		if order == "oldest" {
			return a.Timestamp.Before(b.Timestamp)
		}
		return a.Timestamp.After(b.Timestamp)
	}
	return a.Partition < b.Partition
}
