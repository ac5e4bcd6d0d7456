package kafka

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/kafka/schema"
)

// Scan streams the records of one partition with offsets in [from, to), ascending, as a
// read_committed consumer gets them (no record of an aborted transaction: a plan never replays
// what its producer rolled back; to should be at most the last stable offset), to fn, one at a
// time, uncapped and uncopied (a replay moves whole records; franz-go does not reuse its buffers),
// with their dead-letter metadata and schemas decoded (Value stays the original bytes; message
// ids are read from the decoded value). It stops at offset to−1, or when fn returns an
// error, which Scan returns. Offsets below the log start → ops.ErrInvalid.
func (c *Cluster) Scan(ctx context.Context, topic string, partition int32, from, to int64, fn func(Record) error) error {
	if from >= to {
		return nil
	}
	cl, err := c.consumer(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}}, 1<<20)
	if err != nil {
		return c.fail("scan "+named(topic), err)
	}
	defer cl.Close()
	// A plan reads every value's message id: it waits for a slow registry, as no page does.
	dctx := schema.WaitForRegistry(ctx)
	pos := from
	left := func() map[int32]readLeft { return map[int32]readLeft{partition: {pos, to}} }
	for {
		fs, finished := c.pollWithin(ctx, cl, topic, scanIdleProbe, left)
		if len(finished) > 0 {
			return nil // the rest are records of aborted transactions
		}
		if err := fetchErr(fs); err != nil {
			if errors.Is(err, kerr.OffsetOutOfRange) {
				return ops.Invalid("offset", fmt.Sprintf("records from %d of %s[%d] no longer exist", from, topic, partition))
			}
			return c.fail("scan "+named(topic), err)
		}
		var stop error
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if done || stop != nil || r.Offset < from {
				return
			}
			if r.Offset >= to {
				done = true
				return
			}
			done = r.Offset == to-1
			pos = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			rec := rawRecord(r)
			rec.KeySchema, rec.ValueSchema = c.decodeSchemas(dctx, r.Topic, r.Key, r.Value)
			rec.DeadLetter = c.index.decode(rec.Headers, idSource(r.Value, rec.ValueSchema), c.ids)
			stop = fn(rec)
		})
		if stop != nil {
			return stop
		}
		if done {
			return nil
		}
	}
}

// replayPartitioner honours a record's Partition when the caller set one (≥ 0 and below the
// topic's partition count) and otherwise partitions by key like Java's default partitioner.
func replayPartitioner() kgo.Partitioner {
	return kgo.BasicConsistentPartitioner(func(topic string) func(*kgo.Record, int) int {
		byKey := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
		return func(r *kgo.Record, n int) int {
			if r.Partition >= 0 && int(r.Partition) < n {
				return int(r.Partition)
			}
			if r.Key == nil {
				return rand.IntN(n)
			}
			return byKey.Partition(r, n)
		}
	})
}

// KeyPartition is the partition Java's default partitioner (murmur2) picks for key among n
// partitions; -1 for a nil key (any partition) or no partitions.
func KeyPartition(topic string, key []byte, n int) int32 {
	if key == nil || n < 1 {
		return -1
	}
	return int32(keyHash.Partition(&kgo.Record{Key: key}, n))
}

// KeyPartition is KeyPartition as a method of the cluster, so that the domain asks the port it
// holds (which partition a producer puts a key in) rather than import the partitioner.
func (c *Cluster) KeyPartition(topic string, key []byte, n int) int32 {
	return KeyPartition(topic, key, n)
}

// keyHash hashes keys as Java's default partitioner does. Made once: ForTopic seeds a random
// source for keyless records (half the CPU of a plan of 100,000 when made per record), and the
// keyed path it takes here keeps no state, so one serves every goroutine.
var keyHash = kgo.StickyKeyPartitioner(nil).ForTopic("")

// TopicID is the topic's ID as the broker reports it now ("" when it does not support IDs): a
// topic deleted and created again under the same name is a new topic with new records at old
// offsets. It asks the broker every time: kadm's listing answers from the client's metadata cache
// (up to MetadataMinAge, 5 s), so a job started within seconds of a recreation passed the check
// with the old ID and moved the new topic's records. The answer refreshes that cache too.
// Unknown topic → ops.ErrNotFound.
func (c *Cluster) TopicID(ctx context.Context, topic string) (string, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	ids, err := c.topicIDs(ctx, topic)
	if err != nil {
		return "", c.fail("topic id of "+named(topic), err)
	}
	id, ok := ids[topic]
	if !ok {
		return "", c.fail("topic id of "+named(topic), ops.NotFound("topic %s not found", named(topic)))
	}
	return id, nil
}

// topicIDs asks the broker (never the metadata cache, see TopicID) for the IDs of topics, hex
// encoded ("" when the broker has none); a topic that does not exist is missing from the answer.
func (c *Cluster) topicIDs(ctx context.Context, topics ...string) (map[string]string, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	req.AllowAutoTopicCreation = false // asking must not bring a deleted topic back
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(topics))
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
				continue
			}
			return nil, fmt.Errorf("topic %s: %w", named(*t.Topic), err)
		}
		if t.TopicID == ([16]byte{}) {
			out[*t.Topic] = ""
		} else {
			out[*t.Topic] = hex.EncodeToString(t.TopicID[:])
		}
	}
	return out, nil
}

// DeadLetterOf decodes a record a Reader read (undecoded: DeadLetter is nil) as Scan decodes it
// for a plan, message id included, so that a job can check that the record at a planned offset
// is still the planned one. The value is read through its schema only when the headers name no id.
func (c *Cluster) DeadLetterOf(ctx context.Context, r Record) *DeadLetter {
	dl := c.index.decode(r.Headers, idBody{}, c.ids)
	if dl == nil || dl.MessageID != "" {
		return dl
	}
	var value *schema.Decoded
	if c.schemas.Active() {
		value = c.schemas.Decode(schema.WaitForRegistry(ctx), r.Topic, false, r.Value)
	}
	dl.MessageID = messageID(r.Headers, idSource(r.Value, value), c.ids, c.index.messageID)
	return dl
}

// useProducer is the cluster's idempotent producer, made on first use and again after
// dropProducer or retireProducer, counted as used by the caller until releaseProducer.
func (c *Cluster) useProducer() (*kgo.Client, error) {
	c.prodMu.Lock()
	defer c.prodMu.Unlock()
	if c.prod == nil {
		opts := append([]kgo.Opt{}, c.base...)
		// Idempotence is kgo's default, and requires acks=all: a retried batch is written once.
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.RecordPartitioner(replayPartitioner()),
			kgo.RecordDeliveryTimeout(2*c.timeout))
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, err
		}
		c.prod = cl
	}
	if c.prodCalls == nil {
		c.prodCalls, c.prodRetired = map[*kgo.Client]int{}, map[*kgo.Client]bool{}
	}
	c.prodCalls[c.prod]++
	return c.prod, nil
}

// releaseProducer ends a call's use of cl; the last call of a retired producer closes it.
func (c *Cluster) releaseProducer(cl *kgo.Client) {
	c.prodMu.Lock()
	c.prodCalls[cl]--
	closing := c.prodCalls[cl] == 0 && c.prodRetired[cl]
	if c.prodCalls[cl] == 0 {
		delete(c.prodCalls, cl)
		delete(c.prodRetired, cl)
	}
	c.prodMu.Unlock()
	if closing {
		cl.Close()
	}
}

// retireProducer makes the next call build a new producer and closes cl once the calls using it
// return: their records to other topics are acknowledged as usual, not failed by a close.
func (c *Cluster) retireProducer(cl *kgo.Client) {
	c.prodMu.Lock()
	defer c.prodMu.Unlock()
	if c.prod == cl {
		c.prod = nil
	}
	c.prodRetired[cl] = true
}

// dropProducer closes cl now, failing every record still buffered in it, and makes the next
// Produce build a new producer (unless another call already did).
func (c *Cluster) dropProducer(cl *kgo.Client) {
	c.prodMu.Lock()
	if c.prod == cl {
		c.prod = nil
	}
	delete(c.prodRetired, cl) // closed here, not again by its last call
	c.prodMu.Unlock()
	cl.Close()
}

// produceWaitFactor times the request timeout is how long Produce waits for its acknowledgements.
// The idempotent producer retries a retriable answer (NOT_ENOUGH_REPLICAS: acks=all with the ISR
// below min.insync.replicas) for ever once a batch was sent, since failing it could reorder or
// duplicate, and RecordDeliveryTimeout does not apply then.
const produceWaitFactor = 3

// Produce writes the records with acks=all through the idempotent producer and waits for every
// acknowledgement. errs[i] is nil exactly when records[i] is acknowledged by the broker: only then
// may a caller treat it as delivered. When the acknowledgements do not all come within
// produceWaitFactor request timeouts, or ctx ends first, what was written is unknown: every
// errs[i] is then an ErrNotAcknowledged (an ops.ErrUnavailable), for the caller to retry the
// whole call, and the producer is closed so that none of the records is written later behind the
// caller's back.
//
// A topic deleted and created again under the same name fails its records with UNKNOWN_TOPIC_ID
// (or UNKNOWN_TOPIC_OR_PARTITION while the broker catches up) for as long as the producer lives:
// franz-go keeps the first topic's ID and does not adopt the new one. Those records are sent once
// more, within the same wait, through a new producer (fresh metadata, a new producer ID), and the
// old one is retired. None is written twice: each was refused by the broker or failed by the
// client unacknowledged, and since Kafka 4.0 (produce v13) a batch names its topic by ID, so one
// still in flight for the old topic cannot land in the new one. (An older broker, addressed by
// name, could have taken a batch in flight at the moment of the recreation: that one may be sent
// twice, and the consumer's inbox absorbs it.) Within a partition the resent records follow the
// acknowledged ones in their order: the producer fails a partition's records from the first
// failed one on.
func (c *Cluster) Produce(ctx context.Context, records []Outgoing) []error {
	errs := make([]error, len(records))
	deadline := time.Now().Add(produceWaitFactor * c.timeout)
	todo := make([]int, len(records))
	for i := range todo {
		todo[i] = i
	}
	for retried := false; ; retried = true {
		cl, err := c.useProducer()
		if err != nil {
			for _, i := range todo {
				errs[i] = c.fail("produce", err)
			}
			return errs
		}
		raw, acked := c.send(ctx, cl, records, todo, deadline)
		if !acked {
			c.dropProducer(cl)
			c.releaseProducer(cl)
			unknown := c.notAcknowledged(len(records))
			for i := range errs {
				errs[i] = unknown
			}
			return errs
		}
		var again []int
		for j, i := range todo {
			switch err := raw[j]; {
			case err == nil:
			case !retried && (errors.Is(err, kerr.UnknownTopicID) || errors.Is(err, kerr.UnknownTopicOrPartition)):
				again = append(again, i)
			default:
				errs[i] = c.produceErr(records[i].Topic, err)
			}
		}
		if len(again) > 0 {
			c.retireProducer(cl)
		}
		c.releaseProducer(cl)
		if len(again) == 0 {
			return errs
		}
		todo = again
	}
}

// send produces records[i] for each i in todo through cl and waits for their acknowledgements
// until deadline: raw[j] is the client's answer for records[todo[j]]; false when they did not all
// come in time or ctx ended first.
func (c *Cluster) send(ctx context.Context, cl *kgo.Client, records []Outgoing, todo []int, deadline time.Time) (raw []error, acked bool) {
	raw = make([]error, len(todo))
	var (
		mu       sync.Mutex // guards raw against a callback after the wait gave up
		returned bool
		wg       sync.WaitGroup
	)
	wg.Add(len(todo))
	for j, i := range todo {
		o := records[i]
		r := &kgo.Record{Topic: o.Topic, Key: o.Key, Value: o.Value, Partition: -1}
		if o.Partition != nil {
			r.Partition = *o.Partition
		}
		for _, h := range o.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if !returned {
				raw[j] = err
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	select {
	case <-done:
		return raw, true
	case <-wait.C:
	case <-ctx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	returned = true
	return nil, false
}

// produceErr is a record's failure as a person reads it, once.
func (c *Cluster) produceErr(topic string, err error) error {
	// Another call dropped the producer, kgo gave up retrying, or the call's context ended first:
	// a broker that did not take the record now, to be tried again as a whole, not a record
	// that failed.
	if errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, kgo.ErrRecordTimeout) || errors.Is(err, kgo.ErrRecordRetries) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return c.notAcknowledged(1)
	}
	// Said once, not as c.fail's message and its cause. UNKNOWN_TOPIC_ID through a new producer:
	// the topic was deleted while the records were sent.
	if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
		return &ops.Error{Kind: ops.ErrNotFound, Message: fmt.Sprintf("topic %s does not exist", topic),
			Err: fmt.Errorf("kafka %s: produce to %s: %w", c.name, topic, err)}
	}
	return c.fail("produce to "+topic, err)
}

func (c *Cluster) notAcknowledged(n int) error {
	return ops.Unavailable(fmt.Errorf("kafka %s: produce %d record(s): %w", c.name, n, ErrNotAcknowledged),
		"kafka cluster %q did not acknowledge the records within %s; whether they were written is unknown, so they are sent again when it answers",
		c.name, produceWaitFactor*c.timeout)
}

// Partitions lists a topic's partitions with their offsets. Unknown topic → ops.ErrNotFound.
func (c *Cluster) Partitions(ctx context.Context, topic string) ([]PartitionRange, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	all, err := c.partitionBounds(ctx, topic)
	if err != nil {
		return nil, c.fail("partitions of "+named(topic), err)
	}
	out := make([]PartitionRange, 0, len(all[topic]))
	for p, b := range all[topic] {
		out = append(out, PartitionRange{Partition: p, Start: b.start, End: b.end, Stable: b.stable})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out, nil
}

// Reader reads one partition forward across calls, keeping one fetch session: a replay that
// walks a dead-letter topic batch by batch does not pay for a new consumer each time.
type Reader struct {
	c         *Cluster
	topic     string
	partition int32
	cl        *kgo.Client
	next      int64         // the offset the client will fetch next
	pending   []*kgo.Record // fetched past the last call's end
}

// NewReader prepares a reader; it connects on the first Read. It answers the model's interface so
// that *Cluster is the port the replay engine declares (a method's result type must match).
func (c *Cluster) NewReader(topic string, partition int32) kafkamodel.PartitionReader {
	return &Reader{c: c, topic: topic, partition: partition, next: -1}
}

// rawRecord is a record for moving, not showing: the whole value, headers as they are, no
// dead-letter decoding (the plan already did it). It shares the fetched buffers, which franz-go
// does not reuse, so the record may be kept.
func rawRecord(r *kgo.Record) Record {
	out := Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key,
		Value: r.Value, OriginalSize: len(r.Value), Size: len(r.Key) + len(r.Value)}
	if len(r.Headers) > 0 {
		out.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			out.Headers[i] = Header{Key: h.Key, Value: h.Value}
		}
	}
	return out
}

// Read streams the records with offsets in [from, to) to fn, as a read_committed consumer gets
// them, uncapped and undecoded (DeadLetter is nil), for moving them. Reading forward
// from where the last call stopped reuses the fetch session; going back starts a new one.
func (r *Reader) Read(ctx context.Context, from, to int64, fn func(Record) error) error {
	if from >= to {
		return nil
	}
	if r.cl == nil || from < r.next {
		r.Close()
		// Retention (or DeleteRecords) may have moved the log's start past from since the range
		// was planned: the records before it are gone — the caller settles those it wanted as
		// gone — and the rest are read from the start. A fetch below the start would answer
		// OFFSET_OUT_OF_RANGE, which kgo does not always surface before the read's bound.
		start, err := r.logStart(ctx)
		if err != nil {
			return r.c.fail("read "+r.topic, err)
		}
		if from = max(from, start); from >= to {
			return nil
		}
		cl, err := r.c.consumer(map[string]map[int32]kgo.Offset{r.topic: {r.partition: kgo.NewOffset().At(from)}}, 1<<20)
		if err != nil {
			return r.c.fail("read "+r.topic, err)
		}
		r.cl, r.next = cl, from
	}
	emit := func(rec *kgo.Record) (done bool, err error) {
		if rec.Offset >= to {
			r.pending = append(r.pending, rec)
			return true, nil
		}
		if rec.Offset < from || rec.Attrs.IsControl() {
			return rec.Offset == to-1, nil
		}
		return rec.Offset == to-1, fn(rawRecord(rec))
	}
	held := r.pending
	r.pending = nil
	for i, rec := range held {
		done, err := emit(rec)
		if err != nil {
			return err
		}
		if done {
			r.pending = append(r.pending, held[i+1:]...)
			return nil
		}
	}
	// Each wait for records is bounded by the request timeout: kgo retries a broker that cuts or
	// refuses fetches without surfacing an error, and an unbounded poll would leave the job
	// running with no progress and no reason; this way it pauses, says why, and can be
	// cancelled. The bound starts again when records come.
	pctx, cancel := r.c.bound(ctx)
	defer func() { cancel() }()
	for {
		pos := max(r.next, from)
		fs, rest := r.c.poll(pctx, r.cl, r.topic, func() map[int32]readLeft { return map[int32]readLeft{r.partition: {pos, to}} })
		if fs.NumRecords() > 0 {
			cancel()
			pctx, cancel = r.c.bound(ctx)
		}
		if len(rest) > 0 {
			// The rest of the range are records of aborted transactions: none was planned. Where
			// the session stands is unknown, so the next read opens anew.
			r.Close()
			return nil
		}
		if err := fetchErr(fs); err != nil {
			r.Close()
			if errors.Is(err, kerr.OffsetOutOfRange) {
				// Retention moved the log's start past where this session stands: read on from it.
				if start, serr := r.logStart(ctx); serr == nil && start > max(r.next, from) {
					return r.Read(ctx, start, to, fn)
				}
				return ops.Invalid("offset", fmt.Sprintf("records from %d of %s[%d] no longer exist", from, r.topic, r.partition))
			}
			return r.c.fail("read "+r.topic, err)
		}
		var stop error
		finished := false
		fs.EachRecord(func(rec *kgo.Record) {
			r.next = max(r.next, rec.Offset+1)
			if finished || stop != nil {
				if rec.Offset >= to {
					r.pending = append(r.pending, rec)
				}
				return
			}
			finished, stop = emit(rec)
		})
		if stop != nil {
			return stop
		}
		if finished {
			return nil
		}
	}
}

var _ kafkamodel.PartitionReader = (*Reader)(nil)

// logStart is the partition's log start offset now.
func (r *Reader) logStart(ctx context.Context) (int64, error) {
	l, err := r.c.adm.ListStartOffsets(ctx, r.topic)
	if err != nil {
		return 0, err
	}
	o, ok := l.Lookup(r.topic, r.partition)
	if !ok || o.Err != nil {
		return 0, fmt.Errorf("log start of %s[%d] unknown: %v", r.topic, r.partition, o.Err)
	}
	return o.Offset, nil
}

// Close ends the fetch session.
func (r *Reader) Close() {
	if r.cl != nil {
		r.cl.Close()
		r.cl, r.next, r.pending = nil, -1, nil
	}
}
