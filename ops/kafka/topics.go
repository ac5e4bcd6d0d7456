package kafka

import (
	"context"
	"path"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// newestReadBudget bounds how long DeadLetterTopics waits for the last record of every partition;
// a partition that does not answer in time just has no NewestAt.
const newestReadBudget = 3 * time.Second

// DeadLetterTopics lists the topics matching the cluster's dead-letter patterns (path.Match
// globs), sorted by name, with their records (counted as a read_committed consumer gets them,
// reading what arrived since the last listing: countRecords) and newest record time. The last
// records are read with one direct consumer for all partitions, bounded to a few seconds. A topic that does not exist
// (any more) is left out. Concurrent listings share one (sharedPage), and so do not change the
// topics they return. It returns ops.ErrUnavailable when the cluster cannot be reached.
func (c *Cluster) DeadLetterTopics(ctx context.Context) ([]DLTopic, error) {
	return sharedPage(ctx, c, "dead-letter topics", "dead-letter topics", c.deadLetterTopics)
}

func (c *Cluster) deadLetterTopics(ctx context.Context) ([]DLTopic, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	details, err := c.adm.ListTopics(ctx)
	if err != nil {
		return nil, c.fail("list topics", err)
	}
	// A topic the metadata answers with an error is left out, and so is one deleted before its
	// offsets are read: the client's cached listing holds for a few seconds a topic somebody just
	// looked up and found missing, or just deleted, and its "not found" failed the whole list.
	var names []string
	for _, d := range details.Sorted() {
		if d.Err == nil && c.isDeadLetterTopic(d.Topic) {
			names = append(names, d.Topic)
		}
	}
	out := make([]DLTopic, 0, len(names))
	if len(names) == 0 {
		return out, nil
	}
	bounds, err := c.existingBounds(ctx, names...)
	if err != nil {
		return nil, c.fail("dead-letter topic offsets", err)
	}
	names = slices.DeleteFunc(names, func(t string) bool { _, ok := bounds[t]; return !ok })
	lastOf := map[string]map[int32]kgo.Offset{}
	for t, ps := range bounds {
		for p, b := range ps {
			// The last record a read_committed consumer can get: the one before the last stable
			// offset (a marker, or a record of an aborted transaction, as often as not).
			if b.stable > b.start {
				if lastOf[t] == nil {
					lastOf[t] = map[int32]kgo.Offset{}
				}
				lastOf[t][p] = kgo.NewOffset().At(b.stable - 1)
			}
		}
	}
	newest, err := c.newestTimes(ctx, lastOf)
	if err != nil {
		return nil, c.fail("dead-letter newest records", err)
	}
	// The IDs are read after the offsets: a topic created again in between then pairs its new ID
	// with the old offsets, whose marks it does not count (too many open, never too few).
	ids, err := c.topicIDs(ctx, names...)
	if err != nil {
		return nil, c.fail("dead-letter topic ids", err)
	}
	names = slices.DeleteFunc(names, func(t string) bool { _, ok := ids[t]; return !ok })
	counted := c.countRecords(ctx, bounds, ids, true)
	for _, t := range names {
		dl := DLTopic{Topic: t, TopicID: ids[t], Retry: isRetryTopic(t), NewestAt: newest[t], Counted: true, ArrivalsCounted: true}
		for p, b := range bounds[t] {
			n := counted[t][p]
			dl.Partitions = append(dl.Partitions, DLPartition{Partition: p, Start: b.start, End: b.end, Stable: b.stable,
				Records: n.n, Counted: n.exact, Arrived: n.arrived})
			dl.Records += n.n
			dl.Arrived += n.arrived
			dl.Counted = dl.Counted && n.exact
		}
		sort.Slice(dl.Partitions, func(i, j int) bool { return dl.Partitions[i].Partition < dl.Partitions[j].Partition })
		out = append(out, dl)
	}
	return out, nil
}

func (c *Cluster) isDeadLetterTopic(t string) bool {
	for _, p := range c.patterns {
		if ok, _ := path.Match(p, t); ok {
			return true
		}
	}
	return false
}

// newestTimes reads the record at each given offset (the last of its partition) and returns, per
// topic, the newest timestamp seen. It stops when every partition answered or the budget ran out.
func (c *Cluster) newestTimes(ctx context.Context, lastOf map[string]map[int32]kgo.Offset) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	want := 0
	for _, ps := range lastOf {
		want += len(ps)
	}
	if want == 0 {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, min(newestReadBudget, c.timeout))
	defer cancel()
	cl, err := c.consumer(lastOf, 64<<10)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	type tp struct {
		t string
		p int32
	}
	seen := map[tp]bool{}
	left := func() map[topicPartition]readLeft {
		out := map[topicPartition]readLeft{}
		for t, ps := range lastOf {
			for p, o := range ps {
				if !seen[tp{t, p}] {
					at := o.EpochOffset().Offset
					out[topicPartition{t, p}] = readLeft{at, at + 1}
				}
			}
		}
		return out
	}
	for len(seen) < want {
		fs, rest := c.pollMany(ctx, cl, idleProbe, left)
		for _, k := range rest {
			seen[tp{k.topic, k.partition}] = true // the last record is an aborted one: no time from it
		}
		if ctx.Err() != nil {
			// Out of budget: what we have is the answer; the rest stay unknown.
			return out, nil //nolint:nilerr // a bounded best-effort read
		}
		var fatal error
		fs.EachError(func(t string, p int32, err error) {
			// A partition that fails (its records deleted since listing) just has no time; a
			// client-level failure (partition −1) ends the read.
			if p < 0 && fatal == nil {
				fatal = err
			}
			seen[tp{t, p}] = true
		})
		if fatal != nil {
			return nil, fatal
		}
		fs.EachRecord(func(r *kgo.Record) {
			// The last offset may be a transaction marker: a commit's time is when the last dead
			// letters became visible; an abort's is no arrival of one.
			if !isAbortMarker(r) && r.Timestamp.After(out[r.Topic]) {
				out[r.Topic] = r.Timestamp
			}
			seen[tp{r.Topic, r.Partition}] = true
		})
	}
	return out, nil
}

// isAbortMarker reports whether r is the marker that ends an aborted transaction: a control
// record whose key (int16 version, int16 type) has type 0.
func isAbortMarker(r *kgo.Record) bool {
	return r.Attrs.IsControl() && len(r.Key) >= 4 && r.Key[2] == 0 && r.Key[3] == 0
}
