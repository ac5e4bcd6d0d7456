package kafka

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Time lag: how long ago the next record a group will consume was written: the next committed data
// record, as a read_committed consumer gets it. It is read with one bounded Fetch per lagging
// partition per sample (none when the commit has not moved since the last sample: stampCache; a
// few more where aborted transactions lie in the way): a partition read by several groups at
// different offsets is fetched once per distinct offset, batched per partition leader into rounds
// (round i carries the i-th distinct offset of every partition), so the number of requests is
// rounds × leaders, not groups × partitions.

// timeLagPartitionBytes bounds what one partition's fetch may return: the first record is enough.
// A first batch larger than this comes back truncated and its time lag is reported unknown.
const timeLagPartitionBytes = 256 << 10

// timeLagRequestBytes bounds one Fetch response.
const timeLagRequestBytes = 16 << 20

// timeLagSkipFetches bounds the fetches of one sample's read of a partition: past that many of
// only aborted records and markers, its time lag is reported unknown.
const timeLagSkipFetches = 8

type tpo struct {
	topic     string
	partition int32
	offset    int64
}

// stampCache keeps the timestamps the last sample read, by topic ID, partition and offset. The
// record at an offset does not change while its topic lives, so a group whose commit has not moved
// since the last sample costs no fetch at all — and a stuck group is exactly the one with lag.
// Keying by topic ID makes a recreated topic (offsets from 0 again, other records) miss. Each
// sample keeps only what it used, so the cache never holds more than one sample's worth.
type stampCache struct {
	mu sync.Mutex
	m  map[stampKey]firstRecord
}

// firstRecord is what a read from an offset found: the first committed data record's timestamp
// and offset — or, when there is none up to the last stable offset, a zero time and that offset.
// The offsets from the read's start to first hold no record a read_committed consumer gets
// (transaction markers, aborted records): they are not lag.
type firstRecord struct {
	at    time.Time
	first int64
}

type stampKey struct {
	id  [16]byte
	key tpo
}

// fillTimeLags sets TimeLag on every partition of groups (and MaxTimeLag on their topics and
// groups): 0 for a partition with no lag, now − the timestamp of the first committed data record
// at or after the committed offset (the log start when nothing is committed or the commit was
// deleted by retention) for a lagging one, 0 when there is none up to the last stable offset (the
// lag is aborted records, markers or an open transaction), -1 when it could not be read. A failed
// fetch leaves those partitions at -1; it never fails the lag sample.
func (c *Cluster) fillTimeLags(ctx context.Context, groups []Group, now time.Time) {
	want := map[tpo]bool{}
	var topics []string
	seenTopic := map[string]bool{}
	for gi := range groups {
		for ti := range groups[gi].Topics {
			t := &groups[gi].Topics[ti]
			for pi := range t.Partitions {
				p := &t.Partitions[pi]
				if off, ok := nextOffset(groups[gi].Kind() == GroupShare, *p); ok {
					want[tpo{t.Topic, p.Partition, off}] = true
					if !seenTopic[t.Topic] {
						seenTopic[t.Topic] = true
						topics = append(topics, t.Topic)
					}
				}
			}
		}
	}
	var firsts map[tpo]firstRecord
	if len(want) > 0 {
		firsts = c.firstTimestamps(ctx, topics, want)
	}
	for gi := range groups {
		g := &groups[gi]
		g.MaxTimeLag = 0
		for ti := range g.Topics {
			t := &g.Topics[ti]
			t.MaxTimeLag = 0
			for pi := range t.Partitions {
				p := &t.Partitions[pi]
				switch off, ok := nextOffset(g.Kind() == GroupShare, *p); {
				case p.Lag == 0:
					p.TimeLag = 0
				case !ok:
					p.TimeLag = -1
				default:
					r, found := firsts[tpo{t.Topic, p.Partition, off}]
					switch {
					case !found:
						p.TimeLag = -1
					case r.at.IsZero():
						p.TimeLag = 0 // nothing committed waits to be consumed
					default:
						p.TimeLag = max(now.Sub(r.at), 0).Truncate(time.Millisecond)
					}
					// What lies before the next committed record is no lag: an idle transactional
					// consumer (Spring commits the last record's offset + 1, its marker's offset) is
					// caught up, not one behind and stalled. A share group's lag is the broker's.
					if found && r.first > off && g.Kind() != GroupShare {
						p.NoRecords = r.first - off
						p.Lag = max(p.Lag-p.NoRecords, 0)
					}
				}
				t.MaxTimeLag = max(t.MaxTimeLag, p.TimeLag)
			}
			g.MaxTimeLag = max(g.MaxTimeLag, t.MaxTimeLag)
		}
		retotal(g)
	}
}

// retotal sums g's partition lags into its topics' and its own (a negative lag is unknown and adds
// nothing), as addTopic did before the time-lag read corrected them.
func retotal(g *Group) {
	g.TotalLag = 0
	for ti := range g.Topics {
		t := &g.Topics[ti]
		t.Lag = 0
		for _, p := range t.Partitions {
			if p.Lag > 0 {
				t.Lag += p.Lag
			}
		}
		g.TotalLag += t.Lag
	}
}

// nextOffset is the offset of the next record the group will consume on p, when p lags. In a share
// group it is the share-partition start offset: the oldest record not yet done with, whose age is
// the group's time lag (how long the oldest unacknowledged record has waited).
func nextOffset(share bool, p PartitionLag) (int64, bool) {
	if p.Lag <= 0 {
		return 0, false
	}
	switch {
	case share && p.ShareStart >= 0 && (p.Start < 0 || p.ShareStart >= p.Start):
		return p.ShareStart, true
	case share && p.ShareStart < 0:
		return 0, false
	case p.Committed >= 0 && (p.Start < 0 || p.Committed >= p.Start):
		return p.Committed, true
	case p.Start >= 0:
		return p.Start, true
	}
	return 0, false
}

// firstTimestamps fetches, for each wanted (topic, partition, offset), the timestamp of the first
// committed data record at or after offset; a zero time when there is none up to the last stable
// offset. Missing entries could not be read.
func (c *Cluster) firstTimestamps(ctx context.Context, topics []string, want map[tpo]bool) map[tpo]firstRecord {
	md, err := c.adm.Metadata(ctx, topics...)
	if err != nil {
		return nil
	}
	type tp struct {
		topic     string
		partition int32
	}
	offsets := map[tp][]int64{}
	for k := range want {
		offsets[tp{k.topic, k.partition}] = append(offsets[tp{k.topic, k.partition}], k.offset)
	}
	// rounds[i][leader] lists the i-th distinct offset of each partition that leader leads.
	var rounds []map[int32][]tpo
	for k, offs := range offsets {
		td, ok := md.Topics[k.topic]
		if !ok || td.Err != nil {
			continue
		}
		pd, ok := td.Partitions[k.partition]
		if !ok || pd.Leader < 0 {
			continue
		}
		for i, off := range offs {
			for len(rounds) <= i {
				rounds = append(rounds, map[int32][]tpo{})
			}
			rounds[i][pd.Leader] = append(rounds[i][pd.Leader], tpo{k.topic, k.partition, off})
		}
	}
	ids := map[string][16]byte{}
	for t, td := range md.Topics {
		ids[t] = td.ID
	}
	var (
		mu  sync.Mutex
		out = make(map[tpo]firstRecord, len(want))
		wg  sync.WaitGroup
		sem = make(chan struct{}, 8) // requests in flight at once
	)
	c.stamps.mu.Lock()
	cached := c.stamps.m
	c.stamps.mu.Unlock()
	for i, round := range rounds {
		for leader, parts := range round {
			parts = slices.DeleteFunc(parts, func(k tpo) bool {
				ts, ok := cached[stampKey{ids[k.topic], k}]
				if ok {
					out[k] = ts
				}
				return ok
			})
			if len(parts) == 0 {
				delete(round, leader)
			} else {
				rounds[i][leader] = parts
			}
		}
	}
	for _, round := range rounds {
		for leader, parts := range round {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				got := c.fetchFirst(ctx, leader, parts, ids)
				mu.Lock()
				for k, v := range got {
					out[k] = v
				}
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	next := make(map[stampKey]firstRecord, len(out))
	for k, r := range out {
		if !r.at.IsZero() { // none yet: a commit of a transaction still open, or a later write, may add one
			next[stampKey{ids[k.topic], k}] = r
		}
	}
	c.stamps.mu.Lock()
	c.stamps.m = next
	c.stamps.mu.Unlock()
	return out
}

// fetchFirst fetches from leader, as a read_committed consumer, the timestamp of the first
// committed data record at or after each part's offset: one Fetch for all parts, and a few more
// (timeLagSkipFetches) only for those whose fetch held nothing but aborted records and markers.
// An aborted record was never consumed and a marker is no record: neither's age is a lag. A zero
// time says nothing committed lies from the offset up to the last stable offset.
func (c *Cluster) fetchFirst(ctx context.Context, leader int32, parts []tpo, ids map[string][16]byte) map[tpo]firstRecord {
	names := map[[16]byte]string{}
	for t, id := range ids {
		names[id] = t
	}
	want := make(map[topicPartition]tpo, len(parts))
	at := make(map[tpo]int64, len(parts)) // where each part's read stands
	for _, p := range parts {
		want[topicPartition{p.topic, p.partition}] = p
		at[p] = p.offset
	}
	out := map[tpo]firstRecord{}
	dec := kgo.DefaultDecompressor()
	for range timeLagSkipFetches {
		if len(at) == 0 {
			break
		}
		resp := c.fetchCommitted(ctx, leader, parts, at, ids)
		if resp == nil {
			break
		}
		next := map[tpo]int64{}
		for _, rt := range resp.Topics {
			topic := rt.Topic
			if topic == "" {
				topic = names[rt.TopicID]
			}
			for i := range rt.Partitions {
				rp := &rt.Partitions[i]
				k, ok := want[topicPartition{topic, rp.Partition}]
				from, pending := at[k]
				if !ok || !pending || rp.ErrorCode != 0 {
					continue
				}
				fp, end := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: from,
					IsolationLevel: kgo.ReadCommitted(), Topic: topic, Partition: rp.Partition}, rp, dec, nil)
				if i := slices.IndexFunc(fp.Records, func(r *kgo.Record) bool { return r.Offset >= from }); i >= 0 {
					out[k] = firstRecord{at: fp.Records[i].Timestamp, first: fp.Records[i].Offset}
					continue
				}
				stable := rp.LastStableOffset
				if stable < 0 {
					stable = rp.HighWatermark
				}
				switch {
				case fp.Err != nil:
				case max(end, from) >= stable:
					out[k] = firstRecord{first: max(stable, k.offset)}
				case end > from:
					next[k] = end // only aborted records and markers so far: read on
				}
			}
		}
		at = next
	}
	return out
}

// fetchCommitted sends leader one read_committed Fetch of the parts in at, each from its offset
// there; nil when it fails.
func (c *Cluster) fetchCommitted(ctx context.Context, leader int32, parts []tpo, at map[tpo]int64, ids map[string][16]byte) *kmsg.FetchResponse {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = timeLagRequestBytes
	req.IsolationLevel = 1
	req.SessionEpoch = -1
	byTopic := map[string]int{}
	for _, p := range parts {
		off, ok := at[p]
		if !ok {
			continue
		}
		i, ok := byTopic[p.topic]
		if !ok {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = p.topic
			rt.TopicID = ids[p.topic]
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			byTopic[p.topic] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.partition
		rp.FetchOffset = off
		rp.CurrentLeaderEpoch = -1
		rp.LastFetchedEpoch = -1
		rp.LogStartOffset = -1
		rp.PartitionMaxBytes = timeLagPartitionBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	kresp, err := c.cl.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		return nil
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return nil
	}
	return resp
}
