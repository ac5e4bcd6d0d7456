package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
)

// Offset moves: what ops/offsets needs of a cluster to move a group's committed offsets and to
// copy the records it skips to a dead-letter topic first.

// HeaderOffsetPlan is the header a skipped record's copy carries with the offset-move plan that
// made it: with the original partition and offset headers it makes the copy recognisable, so a
// plan applied again after a crash between the copies and the commit copies nothing twice.
const HeaderOffsetPlan = "redrive-offset-plan"

// SkippedExceptionType is the kafka_dlt-exception-fqcn of a skipped record's copy.
const SkippedExceptionType = "io.redrive.SkippedByOffsetMove"

// groupAnswer is one group's part of an admin answer as an error: a group the answer leaves out
// (answered false), or one the coordinator does not know, is ops.ErrNotFound; any other error is
// failed as op.
func (c *Cluster) groupAnswer(op, group string, answered bool, err error) error {
	switch {
	case !answered, errors.Is(err, kerr.GroupIDNotFound):
		return c.groupNotFound(group)
	case err != nil:
		return c.fail(op, err)
	}
	return nil
}

// groupNotFound says that group is not known to the cluster, in the words the console's
// snapshot uses for it.
func (c *Cluster) groupNotFound(group string) error {
	return ops.NotFound("consumer group %s not found in kafka cluster %q", named(group), c.name)
}

// GroupMembership describes one group of any type: a KIP-848 group with ConsumerGroupDescribe (its
// members are invisible to DescribeGroups), a share group with ShareGroupDescribe. An unknown
// group is ops.ErrNotFound.
func (c *Cluster) GroupMembership(ctx context.Context, group string) (Membership, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	typ, err := c.groupType(ctx, group)
	if err != nil {
		return Membership{}, c.fail("describe group "+named(group), err)
	}
	label := func(client, host, id string) string { return fmt.Sprintf("%s@%s (%s)", client, host, id) }
	switch typ {
	case GroupConsumer:
		described, err := c.describeConsumerGroups(ctx, []string{group})
		d, ok := described[group]
		if err != nil && !ok {
			return Membership{}, c.fail("describe group "+named(group), err)
		}
		if err := c.groupAnswer("describe group "+named(group), group, ok, d.Err); err != nil {
			return Membership{}, err
		}
		m := Membership{Type: typ, State: d.State}
		for _, mem := range d.Members {
			m.Members = append(m.Members, label(mem.ClientID, mem.Host, mem.ID))
		}
		sort.Strings(m.Members)
		return m, nil
	case GroupShare:
		described, err := c.describeShareGroups(ctx, []string{group})
		d, ok := described[group]
		if err != nil && !ok {
			return Membership{}, c.fail("describe group "+named(group), err)
		}
		if err := c.groupAnswer("describe group "+named(group), group, ok, d.Err); err != nil {
			return Membership{}, err
		}
		m := Membership{Type: typ, State: d.GroupState}
		for _, mem := range d.Members {
			m.Members = append(m.Members, label(mem.ClientID, mem.ClientHost, mem.MemberID))
		}
		sort.Strings(m.Members)
		return m, nil
	}
	described, err := c.adm.DescribeGroups(ctx, group)
	if err != nil {
		return Membership{}, c.fail("describe group "+named(group), err)
	}
	d, ok := described[group]
	if err := c.groupAnswer("describe group "+named(group), group, ok, d.Err); err != nil {
		return Membership{}, err
	}
	m := Membership{Type: GroupClassic, State: d.State}
	for _, mem := range d.Members {
		m.Members = append(m.Members, fmt.Sprintf("%s@%s (%s)", mem.ClientID, mem.ClientHost, mem.MemberID))
	}
	sort.Strings(m.Members)
	return m, nil
}

// GroupTopicOffsets lists topic's partitions with the group's committed offsets. An unknown
// topic is ops.ErrNotFound.
func (c *Cluster) GroupTopicOffsets(ctx context.Context, group, topic string) (TopicOffsets, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	b, err := c.partitionBounds(ctx, topic)
	if err != nil {
		return TopicOffsets{}, c.fail("offsets of "+named(topic), err)
	}
	fetched, err := c.adm.FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return TopicOffsets{}, c.fail("committed offsets of "+named(group), err)
	}
	out := TopicOffsets{Topic: topic}
	for p, pb := range b[topic] {
		po := PartitionOffsets{Partition: p, Start: pb.start, End: pb.end, Committed: -1}
		if o, ok := fetched.Lookup(topic, p); ok && o.Err == nil && o.At >= 0 {
			po.Committed = o.At
		}
		out.Partitions = append(out.Partitions, po)
	}
	sort.Slice(out.Partitions, func(i, j int) bool { return out.Partitions[i].Partition < out.Partitions[j].Partition })
	return out, nil
}

// OffsetsAfter returns, per partition of topic, the offset of the first record with a timestamp
// at or after at; the end offset when there is none. A time before 1970 finds the log start.
func (c *Cluster) OffsetsAfter(ctx context.Context, topic string, at time.Time) (map[int32]int64, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	l, err := c.adm.ListOffsetsAfterMilli(ctx, listMillis(at), topic)
	if err != nil {
		return nil, c.fail(fmt.Sprintf("offsets of %s at %s", named(topic), at.Format(time.RFC3339)), err)
	}
	if err := topicErr(l, topic); err != nil {
		return nil, c.fail("offsets of "+named(topic), err)
	}
	out := map[int32]int64{}
	for p, o := range l[topic] {
		if o.Err != nil {
			return nil, c.fail(fmt.Sprintf("offsets of %s partition %d", named(topic), p), o.Err)
		}
		out[p] = o.Offset
	}
	return out, nil
}

// listMillis is t as the timestamp of a ListOffsets request. Kafka reads a negative one as a
// query, not a time (-1 the end, -2 the start, -3 the newest timestamp), so a time before 1970
// asked the wrong question: the newest record, or UNSUPPORTED_VERSION. No record is older than
// 1970, so the first record at or after such a time is the log's first, which 0 finds. Every
// time that becomes a Kafka timestamp goes through here; a caller for whom so early a time means
// a typo refuses it before.
func listMillis(t time.Time) int64 { return max(t.UnixMilli(), 0) }

// DeadLetterTopicOf names the dead-letter topic configured for topic: the first existing topic
// that a final (not retry) dead_letter_topics pattern gives with topic for its "*" (orders →
// orders.DLT). ok is false when there is none.
func (c *Cluster) DeadLetterTopicOf(ctx context.Context, topic string) (string, bool, error) {
	var candidates []string
	for _, p := range c.patterns {
		if strings.Count(p, "*") != 1 || isRetryTopic(p) {
			continue
		}
		candidates = append(candidates, strings.Replace(p, "*", topic, 1))
	}
	if len(candidates) == 0 {
		return "", false, nil
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	topics, err := c.adm.ListTopics(ctx, candidates...)
	if err != nil {
		return "", false, c.fail("list topics", err)
	}
	for _, t := range candidates {
		if d, ok := topics[t]; ok && d.Err == nil {
			return t, true, nil
		}
	}
	return "", false, nil
}

// PartitionCount is the number of partitions of topic; an unknown topic is ops.ErrNotFound.
func (c *Cluster) PartitionCount(ctx context.Context, topic string) (int, error) {
	counts, err := c.PartitionCounts(ctx, topic)
	if err != nil {
		return 0, err
	}
	n, ok := counts[topic]
	if !ok {
		return 0, c.fail("topic "+named(topic), ops.ErrNotFound)
	}
	return n, nil
}

// PartitionCounts is the number of partitions of each of topics that exists, from one metadata
// request; a topic that does not exist is left out.
func (c *Cluster) PartitionCounts(ctx context.Context, topics ...string) (map[string]int, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	details, err := c.adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, c.fail("list topics", err)
	}
	out := make(map[string]int, len(topics))
	for _, t := range topics {
		d, ok := details[t]
		switch {
		case !ok, errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		case d.Err != nil:
			return nil, c.fail("topic "+named(t), d.Err)
		default:
			out[t] = len(d.Partitions)
		}
	}
	return out, nil
}

// EndOffsets lists each partition's end offset of topic.
func (c *Cluster) EndOffsets(ctx context.Context, topic string) (map[int32]int64, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	b, err := c.partitionBounds(ctx, topic)
	if err != nil {
		return nil, c.fail("offsets of "+named(topic), err)
	}
	out := map[int32]int64{}
	for p, pb := range b[topic] {
		out[p] = pb.end
	}
	return out, nil
}

// CopySkipped copies the records of req.Ranges to req.Dest with Spring's dead-letter headers
// (kafka_dlt-original-topic, -partition, -offset, -timestamp, -timestamp-type, -consumer-group,
// kafka_dlt-exception-fqcn and -message) and HeaderOffsetPlan, into the same partition number
// when the dead-letter topic has it (by key otherwise). Records an earlier apply of the plan
// copied are recognised and not copied again. It returns only after every copy is acknowledged
// (acks=all, idempotent producer); any failure is an error and the caller must not commit.
// Records are read as a read_committed consumer gets them (no record of an aborted transaction
// is copied); a range reaching past a partition's last stable offset is an ops.ErrConflict, since
// the records a transaction still open holds cannot be copied, and skipping them uncopied would
// lose them once it commits.
func (c *Cluster) CopySkipped(ctx context.Context, req CopyRequest) (CopyResult, error) {
	if req.PlanID == "" || req.Dest == "" {
		return CopyResult{}, ops.Invalid("copy", "a plan id and a destination are required")
	}
	if err := c.beforeOpenTransactions(ctx, req.Topic, req.Ranges); err != nil {
		return CopyResult{}, err
	}
	done, err := c.copiesOf(ctx, req.Dest, req.PlanID, req.Topic, req.DestFrom)
	if err != nil {
		return CopyResult{}, err
	}
	n, err := c.PartitionCount(ctx, req.Dest)
	if err != nil {
		return CopyResult{}, err
	}
	var res CopyResult
	parts := make([]int32, 0, len(req.Ranges))
	for p := range req.Ranges {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	const batch = 500
	var out []Outgoing
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		for _, err := range c.Produce(ctx, out) {
			if err != nil {
				return c.fail("copy skipped records to "+req.Dest, err)
			}
		}
		res.Copied += len(out)
		out = out[:0]
		return nil
	}
	for _, p := range parts {
		r := req.Ranges[p]
		err := c.Scan(ctx, req.Topic, p, r[0], r[1], func(rec Record) error {
			if done[[2]int64{int64(p), rec.Offset}] {
				res.Already++
				return nil
			}
			o := Outgoing{Topic: req.Dest, Key: rec.Key, Value: rec.Value}
			if int(p) < n {
				o.Partition = &p
			}
			o.Headers = append(append([]Header{}, rec.Headers...), skippedHeaders(req, rec)...)
			out = append(out, o)
			if len(out) >= batch {
				return flush()
			}
			return nil
		})
		if err != nil {
			return res, err
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	return res, nil
}

func skippedHeaders(req CopyRequest, rec Record) []Header {
	i32 := make([]byte, 4)
	binary.BigEndian.PutUint32(i32, uint32(rec.Partition))
	off := make([]byte, 8)
	binary.BigEndian.PutUint64(off, uint64(rec.Offset))
	ts := make([]byte, 8)
	binary.BigEndian.PutUint64(ts, uint64(rec.Timestamp.UnixMilli()))
	// Spring writes partition, offset and timestamp as big-endian binary; the decoder reads both
	// binary and text.
	return []Header{
		{Key: "kafka_dlt-original-topic", Value: []byte(rec.Topic)},
		{Key: "kafka_dlt-original-partition", Value: i32},
		{Key: "kafka_dlt-original-offset", Value: off},
		{Key: "kafka_dlt-original-timestamp", Value: ts},
		{Key: "kafka_dlt-original-timestamp-type", Value: []byte("CreateTime")},
		{Key: "kafka_dlt-original-consumer-group", Value: []byte(req.Group)},
		{Key: "kafka_dlt-exception-fqcn", Value: []byte(SkippedExceptionType)},
		{Key: "kafka_dlt-exception-message", Value: []byte(req.Exception)},
		{Key: HeaderOffsetPlan, Value: []byte(req.PlanID)},
	}
}

// copiesOf finds the copies of topic's records plan made in dest since from: (partition,
// offset) of each original. It reads every record written (read_uncommitted): the copies are not
// transactional, but a transaction open on dest — its own producer's, a transactional
// recoverer's — keeps a read_committed consumer before them, and they were copied again.
func (c *Cluster) copiesOf(ctx context.Context, dest, plan, topic string, from map[int32]int64) (map[[2]int64]bool, error) {
	ends, err := c.EndOffsets(ctx, dest)
	if err != nil {
		return nil, err
	}
	out := map[[2]int64]bool{}
	pos, starts := map[int32]int64{}, map[int32]kgo.Offset{}
	for p, end := range ends {
		if start := from[p]; start < end {
			pos[p], starts[p] = start, kgo.NewOffset().At(start)
		}
	}
	if len(pos) == 0 {
		return out, nil
	}
	cl, err := c.consumer(map[string]map[int32]kgo.Offset{dest: starts}, 1<<20, uncommitted())
	if err != nil {
		return nil, c.fail("read "+named(dest), err)
	}
	defer cl.Close()
	rctx, cancel := c.bound(ctx)
	defer cancel()
	for len(pos) > 0 {
		// Read uncommitted, a partition holds every offset up to its end but those compaction
		// removed: a poll that brings nothing for a while has read what is there.
		pctx, pcancel := context.WithTimeout(rctx, scanIdleProbe)
		fs := cl.PollFetches(pctx)
		idle := pctx.Err() != nil && rctx.Err() == nil
		pcancel()
		if err := fetchErr(fs); err != nil && !idle {
			return nil, c.fail("read "+named(dest), err)
		}
		if fs.NumRecords() == 0 && idle {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			at, ok := pos[r.Partition]
			if !ok || r.Offset < at {
				return
			}
			if pos[r.Partition] = r.Offset + 1; r.Offset+1 >= ends[r.Partition] {
				delete(pos, r.Partition)
			}
			if r.Attrs.IsControl() {
				return
			}
			rec := rawRecord(r)
			if last(rec.Headers, HeaderOffsetPlan) != plan {
				return
			}
			dl := c.index.decode(rec.Headers, idBody{}, c.ids) // the headers say what was copied
			if dl == nil || dl.OriginalTopic != topic || dl.OriginalPartition == nil || dl.OriginalOffset == nil {
				return
			}
			out[[2]int64{int64(*dl.OriginalPartition), *dl.OriginalOffset}] = true
		})
	}
	if len(pos) > 0 && rctx.Err() != nil {
		return nil, c.fail("read "+named(dest), rctx.Err())
	}
	return out, nil
}

func last(hs []Header, key string) string {
	v := ""
	for _, h := range hs {
		if h.Key == key {
			v = string(h.Value)
		}
	}
	return v
}

// CommitGroupOffsets sets the group's committed offsets on topic. Kafka accepts it only while the
// group has no members: otherwise it is ops.ErrConflict.
func (c *Cluster) CommitGroupOffsets(ctx context.Context, group, topic string, offsets map[int32]int64) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	os := kadm.Offsets{}
	for p, o := range offsets {
		os.AddOffset(topic, p, o, -1)
	}
	resp, err := c.adm.CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.IllegalGeneration), errors.Is(err, kerr.RebalanceInProgress):
		return c.fail("commit offsets of "+named(group), &ops.Error{Kind: ops.ErrConflict,
			Message: fmt.Sprintf("group %q has members: stop its consumers, then apply again", group), Err: err})
	}
	return c.fail("commit offsets of "+named(group), err)
}

// beforeOpenTransactions refuses (ops.ErrConflict) ranges of topic reaching past a partition's
// last stable offset: a transaction open there holds what follows until it ends.
func (c *Cluster) beforeOpenTransactions(ctx context.Context, topic string, ranges map[int32][2]int64) error {
	bctx, cancel := c.bound(ctx)
	defer cancel()
	all, err := c.partitionBounds(bctx, topic)
	if err != nil {
		return c.fail("offsets of "+named(topic), err)
	}
	parts := make([]int32, 0, len(ranges))
	for p := range ranges {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		if b, ok := all[topic][p]; ok && ranges[p][1] > b.stable {
			return ops.Conflict("offsets %d to %d of %s partition %d are held by a transaction still open "+
				"(the last stable offset is %d): they cannot be copied before it ends; skip to offset %d at most, or wait for the transaction",
				b.stable, ranges[p][1]-1, named(topic), p, b.stable, b.stable)
		}
	}
	return nil
}
