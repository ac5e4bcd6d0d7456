package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
)

// ErrorGroups scans the newest records of a topic — at most maxScan offsets in total (0 →
// DefaultMaxScan), shared fairly across partitions, up to each one's last stable offset, as a
// read_committed consumer gets them — and groups them by (exception type, cause). Records are
// streamed through one direct consumer and folded into the groups as they arrive; none are kept.
// Concurrent scans of the same topic and size share one (sharedPage). Unknown topic →
// ops.ErrNotFound; maxScan outside [0, MaxMaxScan] → ops.ErrInvalid.
func (c *Cluster) ErrorGroups(ctx context.Context, topic string, maxScan int) (ErrorScan, error) {
	op := "error groups of " + named(topic)
	if topic == "" {
		return ErrorScan{}, ops.Invalid("topic", "required")
	}
	if maxScan == 0 {
		maxScan = DefaultMaxScan
	}
	if maxScan < 0 || maxScan > MaxMaxScan {
		return ErrorScan{}, ops.Invalid("max_scan", fmt.Sprintf("must be in [1, %d]", MaxMaxScan))
	}
	// A scan of up to 100,000 records: twenty people opening a topic's errors at once share one.
	return sharedPage(ctx, c, fmt.Sprintf("errors %q %d", topic, maxScan), op, func(ctx context.Context) (ErrorScan, error) {
		return c.errorGroups(ctx, topic, maxScan, op)
	})
}

func (c *Cluster) errorGroups(ctx context.Context, topic string, maxScan int, op string) (ErrorScan, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	all, err := c.partitionBounds(ctx, topic)
	if err != nil {
		return ErrorScan{}, c.fail(op, err)
	}
	ps := all[topic]
	parts := make([]int32, 0, len(ps))
	sizes := make([]int64, 0, len(ps))
	scan := ErrorScan{Topic: topic, Groups: []ErrorGroup{}}
	var offsets, read int64
	for p, b := range ps {
		parts = append(parts, p)
		sizes = append(sizes, b.stable-b.start)
		offsets += b.stable - b.start
	}
	quota := allocate(sizes, int64(maxScan))
	from := map[int32]int64{}
	for i, p := range parts {
		if quota[i] > 0 {
			from[p] = ps[p].stable - quota[i]
			scan.Ranges = append(scan.Ranges, PartitionRange{Partition: p, Start: from[p], End: ps[p].stable, Stable: ps[p].stable})
		}
		read += quota[i]
	}
	scan.Capped = read < offsets
	if scan, err = c.foldGroups(ctx, op, scan, ps, from); err != nil {
		return ErrorScan{}, err
	}
	scan.Total, scan.TotalExact = scan.Scanned, true
	if scan.Capped {
		// The records of the rest of the topic: counted as the dead-letter listing counts them.
		scan.Total, scan.TotalExact = c.topicRecords(ctx, topic, ps)
	}
	return scan, nil
}

// topicRecords is how many data records a read_committed consumer gets from a topic whose
// partitions are ps (countRecords), and whether that is exact; the offsets up to the last stable
// offsets when the topic's ID cannot be read.
func (c *Cluster) topicRecords(ctx context.Context, topic string, ps map[int32]bounds) (int64, bool) {
	ids, err := c.topicIDs(ctx, topic)
	if _, ok := ids[topic]; err != nil || !ok {
		var n int64
		for _, b := range ps {
			n += b.stable - b.start
		}
		return n, false
	}
	var n int64
	exact := true
	for _, rc := range c.countRecords(ctx, map[string]map[int32]bounds{topic: ps}, ids, false)[topic] {
		n += rc.n
		exact = exact && rc.exact
	}
	return n, exact
}

// ErrorGroupsSince groups the records of topic that arrived after next, a cursor this call
// returned before (nil: none; the newest maxScan records are read then), at most maxScan in all
// (0 → DefaultMaxScan): when more arrived, the newest are read and Capped says so. It returns the
// groups and the cursor to pass next time. The sampler calls it each round to see which errors
// are new.
func (c *Cluster) ErrorGroupsSince(ctx context.Context, topic string, next map[int32]int64, maxScan int) (ErrorScan, map[int32]int64, error) {
	op := "new error groups of " + named(topic)
	if maxScan <= 0 {
		maxScan = DefaultMaxScan
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	all, err := c.partitionBounds(ctx, topic)
	if err != nil {
		return ErrorScan{}, nil, c.fail(op, err)
	}
	ps := all[topic]
	parts := make([]int32, 0, len(ps))
	sizes := make([]int64, 0, len(ps))
	scan := ErrorScan{Topic: topic, Groups: []ErrorGroup{}}
	cursor := map[int32]int64{}
	var offsets, read int64
	for p, b := range ps {
		start := b.start
		if at, ok := next[p]; ok && at > start && at <= b.end {
			start = at // an offset past the end means the topic was recreated: read it anew
		}
		// Up to the last stable offset, and the cursor stays there: what an open transaction
		// holds is read once it commits (or never, when it aborts).
		start = min(start, b.stable)
		parts = append(parts, p)
		sizes = append(sizes, b.stable-start)
		offsets += b.stable - start
		cursor[p] = b.stable
	}
	quota := allocate(sizes, int64(maxScan))
	from := map[int32]int64{}
	for i, p := range parts {
		if quota[i] > 0 {
			from[p] = ps[p].stable - quota[i]
		}
		read += quota[i]
	}
	scan.Capped = read < offsets
	scan, err = c.foldGroups(ctx, op, scan, ps, from)
	if err != nil {
		return ErrorScan{}, nil, err
	}
	scan.Total, scan.TotalExact = scan.Scanned, !scan.Capped
	if scan.Capped {
		scan.Total = scan.Scanned + (offsets - read) // at most: the offsets not read
	}
	return scan, cursor, nil
}

// foldGroups reads each partition p of the topic from from[p] to its last stable offset as of ps
// and folds the data records into scan.Groups, counting them in scan.Scanned.
func (c *Cluster) foldGroups(ctx context.Context, op string, scan ErrorScan, ps map[int32]bounds, from map[int32]int64) (ErrorScan, error) {
	topic := scan.Topic
	offsets := map[int32]kgo.Offset{}
	for p, at := range from {
		offsets[p] = kgo.NewOffset().At(at)
	}
	if len(offsets) == 0 {
		return scan, nil
	}

	type key struct{ typ, cause string }
	type agg struct {
		g      ErrorGroup
		topics map[string]bool
		// newest is the group's newest record of the fetch being folded, made the group's Sample
		// once the fetch is (a record shares the fetch's buffers: one copy a group a fetch, not
		// one a record).
		newest *kgo.Record
	}
	groups := map[key]*agg{}
	var fresh []*agg                  // the groups whose newest record is from the fetch being folded
	noIDs := configs.MessageIDRules{} // the message id is not needed here; skip parsing values
	var hdrs []Header
	fold := func(r *kgo.Record) {
		hdrs = hdrs[:0]
		for _, h := range r.Headers {
			hdrs = append(hdrs, Header{Key: h.Key, Value: h.Value})
		}
		dl := c.index.decode(hdrs, idBody{}, noIDs)
		var k key
		if dl != nil {
			k = key{dl.GroupType(), dl.ExceptionCause}
		}
		a := groups[k]
		if a == nil {
			a = &agg{g: ErrorGroup{ExceptionType: k.typ, ExceptionCause: k.cause, FirstAt: r.Timestamp}, topics: map[string]bool{}}
			groups[k] = a
		}
		a.g.Count++
		for _, h := range r.Headers {
			if strings.EqualFold(h.Key, "x-redrive-replay-id") {
				a.g.ReplayCopies++
				break
			}
		}
		if r.Timestamp.Before(a.g.FirstAt) {
			a.g.FirstAt = r.Timestamp
		}
		if a.g.Count == 1 || !r.Timestamp.Before(a.g.LastAt) {
			a.g.LastAt = r.Timestamp
			a.g.SamplePartition, a.g.SampleOffset = r.Partition, r.Offset
			if dl != nil {
				a.g.SampleMessage = dl.ExceptionMessage
			}
			if a.newest == nil {
				fresh = append(fresh, a)
			}
			a.newest = r
		}
		if dl != nil && dl.OriginalTopic != "" {
			a.topics[dl.OriginalTopic] = true
		}
	}

	cl, err := c.consumer(map[string]map[int32]kgo.Offset{topic: offsets}, 1<<20)
	if err != nil {
		return ErrorScan{}, c.fail(op, err)
	}
	defer cl.Close()
	open := len(offsets)
	pos := map[int32]int64{}
	for p, at := range from {
		pos[p] = at
	}
	left := func() map[int32]readLeft {
		out := make(map[int32]readLeft, len(from))
		for p := range from {
			out[p] = readLeft{pos[p], ps[p].stable}
		}
		return out
	}
	for open > 0 {
		fs, rest := c.poll(ctx, cl, topic, left)
		if len(rest) > 0 {
			// The rest of these partitions are records of aborted transactions.
			for _, p := range rest {
				delete(from, p)
			}
			cl.PauseFetchPartitions(map[string][]int32{topic: rest})
			open -= len(rest)
			continue
		}
		if err := fetchErr(fs); err != nil {
			if errors.Is(err, kerr.OffsetOutOfRange) {
				err = ops.Conflict("records were deleted during the scan; retry")
			}
			return ErrorScan{}, c.fail(op, err)
		}
		var finished []int32
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			start, ok := from[fp.Partition]
			if !ok {
				return
			}
			end := ps[fp.Partition].stable
			for _, r := range fp.Records {
				if r.Offset < start || r.Offset >= end {
					continue
				}
				pos[fp.Partition] = r.Offset + 1
				if !r.Attrs.IsControl() {
					fold(r)
					scan.Scanned++
				}
				if r.Offset == end-1 {
					break
				}
			}
			if n := len(fp.Records); n > 0 && fp.Records[n-1].Offset >= end-1 {
				delete(from, fp.Partition)
				finished = append(finished, fp.Partition)
			}
		})
		for _, a := range fresh {
			rec := c.record(ctx, a.newest)
			a.g.Sample, a.newest = &rec, nil
		}
		fresh = fresh[:0]
		if len(finished) > 0 {
			// Stop fetching what arrives after the scan started.
			cl.PauseFetchPartitions(map[string][]int32{topic: finished})
			open -= len(finished)
		}
	}

	for _, a := range groups {
		for t := range a.topics {
			a.g.OriginalTopics = append(a.g.OriginalTopics, t)
		}
		sort.Strings(a.g.OriginalTopics)
		if a.g.OriginalTopics == nil {
			a.g.OriginalTopics = []string{}
		}
		scan.Groups = append(scan.Groups, a.g)
	}
	sort.Slice(scan.Groups, func(i, j int) bool {
		gi, gj := scan.Groups[i], scan.Groups[j]
		if gi.Count != gj.Count {
			return gi.Count > gj.Count
		}
		if !gi.LastAt.Equal(gj.LastAt) {
			return gi.LastAt.After(gj.LastAt)
		}
		if gi.ExceptionType != gj.ExceptionType {
			return gi.ExceptionType < gj.ExceptionType
		}
		return gi.ExceptionCause < gj.ExceptionCause
	})
	return scan, nil
}

// allocate shares budget across partitions of the given sizes: each gets an equal share, and what
// a small partition does not need goes to the larger ones. The result sums to min(budget, total).
func allocate(sizes []int64, budget int64) []int64 {
	out := make([]int64, len(sizes))
	idx := make([]int, len(sizes))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return sizes[idx[a]] < sizes[idx[b]] })
	for n, i := range idx {
		left := int64(len(idx) - n)
		share := budget / left
		if budget%left != 0 {
			share++ // round up so the remainder is not lost; later shares shrink to compensate
		}
		take := min(max(sizes[i], 0), share, budget)
		out[i] = take
		budget -= take
	}
	return out
}
