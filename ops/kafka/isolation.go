package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// uncommitted is the consumer option of a read that sees every record (consumer reads committed).
func uncommitted() kgo.Opt { return kgo.FetchIsolationLevel(kgo.ReadUncommitted()) }

// idleProbe is how long a committed read waits for records before it asks the broker whether any
// are left to hand out (visibleAt).
//
// A read_committed consumer skips the records of an aborted transaction only when it meets the
// transaction's abort marker, or the broker's list of aborted transactions of the range; both lie
// before the last stable offset, except when another producer opened a transaction before this
// one's marker was written. Then the offsets up to the last stable offset may all be aborted
// records, which the client drops without a word: a read waiting to see its last offset would wait
// until its time ran out. kgo does not say where a consumer stands, so the read asks the broker.
const idleProbe = 400 * time.Millisecond

// scanIdleProbe is idleProbe for Scan, the read of plans and replays, which runs in the
// background: no one waits on it as on a page, and it reads whole fetches of 4 MB. A fresh client
// dials, asks for metadata and decodes its first fetch before it hands out a record, which on a
// loaded machine took longer than idleProbe: every partition of a plan then began with a probe,
// which decodes up to a megabyte again (1.7 s under -race, a quarter of a plan of 100,000 over 2
// partitions). Its cost: a scan whose last records are all of aborted transactions ends this much
// later.
const scanIdleProbe = 2 * time.Second

// probeBytes bounds one probing fetch: the broker returns at least one whole batch beyond it.
const probeBytes = 1 << 20

// visibleAt is the offset of the first record (data or marker) in [from, to) of a partition that
// a read_committed consumer hands out, read with fetches of the partition's leader that say
// exactly how far they went; to when there is none before to or before the last stable offset.
func (c *Cluster) visibleAt(ctx context.Context, topic string, partition int32, from, to int64) (int64, error) {
	md, err := c.adm.Metadata(ctx, topic)
	if err != nil {
		return from, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return from, fmt.Errorf("metadata of %s: %w", named(topic), errOr(td.Err, "topic missing"))
	}
	pd, ok := td.Partitions[partition]
	if !ok || pd.Err != nil || pd.Leader < 0 {
		return from, fmt.Errorf("metadata of %s[%d]: %w", named(topic), partition, errOr(pd.Err, "no leader"))
	}
	dec := kgo.DefaultDecompressor()
	pos := from
	for pos < to {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 0
		req.MinBytes = 1
		req.MaxBytes = probeBytes
		req.IsolationLevel = 1
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, td.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset = partition, pos
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
		rp.PartitionMaxBytes = probeBytes
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := c.cl.Broker(int(pd.Leader)).Request(ctx, req)
		if err != nil {
			return pos, err
		}
		resp := kresp.(*kmsg.FetchResponse)
		var got *kmsg.FetchResponseTopicPartition
		for i := range resp.Topics {
			t := &resp.Topics[i]
			if t.Topic != topic && t.TopicID != td.ID {
				continue
			}
			for j := range t.Partitions {
				if t.Partitions[j].Partition == partition {
					got = &t.Partitions[j]
				}
			}
		}
		if got == nil {
			return pos, errors.New("the probing fetch did not answer for the partition")
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{KeepControlRecords: true, Offset: pos,
			IsolationLevel: kgo.ReadCommitted(), Topic: topic, Partition: partition}, got, dec, nil)
		if fp.Err != nil {
			return pos, fp.Err
		}
		for _, r := range fp.Records {
			if r.Offset >= pos {
				return min(r.Offset, to), nil
			}
		}
		if next <= pos {
			return to, nil // nothing more to fetch: the read is at the last stable offset
		}
		pos = next
	}
	return to, nil
}

// readLeft is what a committed read of one partition still waits for: the records in [pos, to).
type readLeft struct{ pos, to int64 }

// topicPartition names one partition of one topic.
type topicPartition struct {
	topic     string
	partition int32
}

// poll is cl.PollFetches for a committed read of topic, which after idleProbe without records asks
// the broker (visibleAt) whether the partitions left (left(): partition → what it waits for) have
// anything more to hand out. It returns the partitions that have not: their reads are done.
// Errors are the poll's (fetchErr); a probe that fails is not one (the read waits on).
func (c *Cluster) poll(ctx context.Context, cl *kgo.Client, topic string, left func() map[int32]readLeft) (kgo.Fetches, []int32) {
	return c.pollWithin(ctx, cl, topic, idleProbe, left)
}

// pollWithin is poll with an idle window of its own.
func (c *Cluster) pollWithin(ctx context.Context, cl *kgo.Client, topic string, idle time.Duration, left func() map[int32]readLeft) (kgo.Fetches, []int32) {
	fs, done := c.pollMany(ctx, cl, idle, func() map[topicPartition]readLeft {
		out := map[topicPartition]readLeft{}
		for p, l := range left() {
			out[topicPartition{topic, p}] = l
		}
		return out
	})
	ps := make([]int32, len(done))
	for i, tp := range done {
		ps[i] = tp.partition
	}
	return fs, ps
}

// pollMany is poll for a read of several topics' partitions, probing after idle without records.
func (c *Cluster) pollMany(ctx context.Context, cl *kgo.Client, idle time.Duration, left func() map[topicPartition]readLeft) (kgo.Fetches, []topicPartition) {
	pctx, cancel := context.WithTimeout(ctx, idle)
	fs := cl.PollFetches(pctx)
	cancel()
	if ctx.Err() != nil || pctx.Err() == nil || fs.NumRecords() > 0 {
		return fs, nil
	}
	var done []topicPartition
	for tp, l := range left() {
		if l.pos >= l.to {
			done = append(done, tp)
			continue
		}
		at, err := c.visibleAt(ctx, tp.topic, tp.partition, l.pos, l.to)
		if err == nil && at >= l.to {
			done = append(done, tp)
		}
	}
	if err := ctx.Err(); err != nil && len(done) == 0 {
		// The read's time ran out while probing: it ends as a poll that ran out would.
		return kgo.NewErrFetch(err), nil
	}
	return kgo.Fetches{}, done
}
