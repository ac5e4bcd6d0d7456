package kafka

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// countBudget bounds how long one listing reads records to count them. What it did not get to is
// counted by the next listing, from where this one stopped (the sampler lists every round).
const countBudget = 3 * time.Second

// recordCounts remembers, per partition, how many data records a read_committed consumer gets
// from the log start up to some offset, so that counting a topic reads only what arrived since.
//
// Offsets are not records: a transaction's commit or abort marker takes an offset, and so does
// every record of an aborted transaction. A dead-letter topic written by a transactional producer
// (Spring's KafkaTransactionManager) with 6 committed and 6 aborted single-record transactions
// ends at offset 24 and holds 6 dead letters.
type recordCounts struct {
	mu sync.Mutex // held for a whole counting read: two listings at once count once
	m  map[topicPartition]partCount
}

// partCount is one partition's count: n data records in [start, upTo) of the topic with ID id.
// arrived counts the data records at or past seenTo when counted, seenTo being the furthest any
// count of the topic reached (the last stable offset when it was first seen): the records that
// arrived while the console watched, which a count begun again from a moved start does not
// count twice.
type partCount struct {
	id              string
	start, upTo, n  int64
	seenTo, arrived int64
}

// recordCount is a partition's records as counted: n is exact when the count reached the last
// stable offset, and otherwise an upper bound (the records counted plus the offsets not read yet);
// arrived is partCount's.
type recordCount struct {
	n, arrived int64
	exact      bool
}

// countRecords counts the data records a read_committed consumer gets from each partition of bs
// (per topic, with its ID from ids: a topic created again is counted anew), from the log start to
// the last stable offset, reading only what the last count did not, for at most countBudget.
// prune forgets the partitions of topics not in bs. A read that fails leaves the counts where
// they were; the answer is then the upper bound, as for a count out of time.
func (c *Cluster) countRecords(ctx context.Context, bs map[string]map[int32]bounds, ids map[string]string, prune bool) map[string]map[int32]recordCount {
	c.counts.mu.Lock()
	defer c.counts.mu.Unlock()
	if c.counts.m == nil {
		c.counts.m = map[topicPartition]partCount{}
	}
	todo := map[string]map[int32]kgo.Offset{}
	for t, ps := range bs {
		for p, b := range ps {
			k := topicPartition{t, p}
			pc, ok := c.counts.m[k]
			// Records deleted from the start (retention, DeleteRecords) took an unknown number of
			// records with them; a topic created again, or a log cut below what was counted,
			// holds other records: count from the start again.
			switch {
			case !ok || pc.id != ids[t]:
				pc = partCount{id: ids[t], start: b.start, upTo: b.start, seenTo: b.stable}
			case pc.start != b.start || pc.upTo > b.stable:
				pc = partCount{id: ids[t], start: b.start, upTo: b.start, seenTo: min(pc.seenTo, b.stable), arrived: pc.arrived}
			}
			c.counts.m[k] = pc
			if pc.upTo < b.stable {
				if todo[t] == nil {
					todo[t] = map[int32]kgo.Offset{}
				}
				todo[t][p] = kgo.NewOffset().At(pc.upTo)
			}
		}
	}
	if prune {
		for k := range c.counts.m {
			if _, ok := bs[k.topic][k.partition]; !ok {
				delete(c.counts.m, k)
			}
		}
	}
	if len(todo) > 0 {
		c.countRead(ctx, bs, todo)
	}
	out := make(map[string]map[int32]recordCount, len(bs))
	for t, ps := range bs {
		out[t] = make(map[int32]recordCount, len(ps))
		for p, b := range ps {
			pc := c.counts.m[topicPartition{t, p}]
			out[t][p] = recordCount{n: pc.n + (b.stable - pc.upTo), arrived: pc.arrived, exact: pc.upTo >= b.stable}
		}
	}
	return out
}

// countRead reads the partitions of todo from their offsets to their last stable offsets (bs),
// adding the data records to c.counts.m as it goes; c.counts.mu is held.
func (c *Cluster) countRead(ctx context.Context, bs map[string]map[int32]bounds, todo map[string]map[int32]kgo.Offset) {
	ctx, cancel := context.WithTimeout(ctx, min(countBudget, c.timeout))
	defer cancel()
	cl, err := c.consumer(todo, 1<<20)
	if err != nil {
		return
	}
	defer cl.Close()
	open := map[topicPartition]bool{}
	for t, ps := range todo {
		for p := range ps {
			open[topicPartition{t, p}] = true
		}
	}
	left := func() map[topicPartition]readLeft {
		out := make(map[topicPartition]readLeft, len(open))
		for k := range open {
			out[k] = readLeft{c.counts.m[k].upTo, bs[k.topic][k.partition].stable}
		}
		return out
	}
	finish := func(done []topicPartition) {
		pause := map[string][]int32{}
		for _, k := range done {
			if !open[k] {
				continue
			}
			delete(open, k)
			pc := c.counts.m[k]
			pc.upTo = bs[k.topic][k.partition].stable
			pc.seenTo = max(pc.seenTo, pc.upTo)
			c.counts.m[k] = pc
			pause[k.topic] = append(pause[k.topic], k.partition)
		}
		if len(pause) > 0 {
			cl.PauseFetchPartitions(pause)
		}
	}
	for len(open) > 0 {
		fs, done := c.pollMany(ctx, cl, idleProbe, left)
		finish(done)
		if ctx.Err() != nil || fetchErr(fs) != nil {
			return // out of time, or the read failed: what was counted stays counted
		}
		var reached []topicPartition
		fs.EachRecord(func(r *kgo.Record) {
			k := topicPartition{r.Topic, r.Partition}
			if !open[k] {
				return
			}
			pc := c.counts.m[k]
			stable := bs[k.topic][k.partition].stable
			if r.Offset < pc.upTo || r.Offset >= stable {
				if r.Offset >= stable {
					reached = append(reached, k)
				}
				return
			}
			if !r.Attrs.IsControl() {
				pc.n++
				if r.Offset >= pc.seenTo {
					pc.arrived++
				}
			}
			pc.upTo = r.Offset + 1
			pc.seenTo = max(pc.seenTo, pc.upTo)
			c.counts.m[k] = pc
			if pc.upTo >= stable {
				reached = append(reached, k)
			}
		})
		finish(reached)
	}
}
