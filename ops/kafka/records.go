package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/schema"
	"github.com/redrive/redrive/ops/payload"
)

// pageQuery checks what a page of a topic asks for, the same for one partition (Records) and
// across them (RecordsAcross), and fills in the defaults: the limit and order to read with.
func pageQuery(topic string, limit int, order string) (int, string, error) {
	if topic == "" {
		return 0, "", ops.Invalid("topic", "required")
	}
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return 0, "", ops.Invalid("limit", fmt.Sprintf("must be in [1, %d]", MaxLimit))
	}
	switch order {
	case "":
		order = "newest"
	case "newest", "oldest":
	default:
		return 0, "", ops.Invalid("order", `must be "newest" or "oldest"`)
	}
	return limit, order, nil
}

// Records reads one page of a partition with a short-lived direct consumer that starts at the
// exact first offset of the page and stops as soon as it reached the page's last offset, so the
// cost does not depend on how deep the page is. Concurrent reads of the same page share one read
// (sharedPage). Errors: unknown topic → ops.ErrNotFound; bad partition, offset, limit or order →
// ops.ErrInvalid naming the valid range.
func (c *Cluster) Records(ctx context.Context, q RecordQuery) (Page, error) {
	op := fmt.Sprintf("records %s[%d]", named(q.Topic), q.Partition)
	var err error
	if q.Limit, q.Order, err = pageQuery(q.Topic, q.Limit, q.Order); err != nil {
		return Page{}, err
	}
	if q.Offset != nil && q.At != nil {
		return Page{}, ops.Invalid("at", "give either offset or at, not both")
	}
	key := fmt.Sprintf("one %q %d %s %s %d %s %d", q.Topic, q.Partition, offsetKey(q.Offset),
		atKey(q.At), q.Limit, q.Order, q.Isolation)
	return sharedPage(ctx, c, key, op, func(ctx context.Context) (Page, error) { return c.records(ctx, q, op) })
}

// sharedPage runs read once for all concurrent reads of the same page (key): twenty people
// opening a dead-letter topic at the same instant cost the cluster one consumer and one fetch, not
// twenty (each read makes a client of its own). What is shared is only a read in flight — a
// reader who joins it gets what it read, which began at most one read's time before they asked —
// and nothing is kept. The records are shared too: callers mask and filter copies
// (redact.Rules.Record), never in place. Keys quote the topic (%q), so that no name, NUL bytes
// and all, can pass for another page's key.
func sharedPage[P any](ctx context.Context, c *Cluster, key, op string, read func(context.Context) (P, error)) (P, error) {
	return ops.Shared(ctx, &c.pages, key, c.timeout, fmt.Sprintf("kafka %s: %s", c.name, op), read)
}

func offsetKey(o *int64) string {
	if o == nil {
		return "-"
	}
	return strconv.FormatInt(*o, 10)
}

func atKey(at *time.Time) string {
	if at == nil {
		return "-"
	}
	return strconv.FormatInt(at.UnixNano(), 10)
}

func (c *Cluster) records(ctx context.Context, q RecordQuery, op string) (Page, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()

	all, err := c.partitionBounds(ctx, q.Topic)
	if err != nil {
		return Page{}, c.fail(op, err)
	}
	b, ok := all[q.Topic][q.Partition]
	if !ok {
		return Page{}, ops.Invalid("partition", fmt.Sprintf("must be in [0, %d) for topic %s", len(all[q.Topic]), payload.Clip(q.Topic, EchoLimit)))
	}
	var at offsetsAt
	page, from, to, err := c.pageRange(ctx, q, b, &at)
	if err != nil || from >= to {
		return page, err
	}
	recs, err := c.readRange(ctx, q.Topic, q.Partition, from, to, q.Isolation)
	if err == nil && q.Isolation == ReadUncommitted {
		err = c.markAborted(ctx, q.Topic, q.Partition, recs, page.Stable)
	}
	if err != nil {
		return Page{}, c.fail(op, err)
	}
	finishPage(&page, recs, from, to, int64(q.Limit), b.readable(q.Isolation))
	return page, nil
}

// offsetsAt lists, once for all the partitions of a read, the first offsets at or after a time.
type offsetsAt struct {
	listed kadm.ListedOffsets
	err    error
	done   bool
}

func (o *offsetsAt) lookup(ctx context.Context, c *Cluster, topic string, partition int32, at time.Time) (kadm.ListedOffset, error) {
	if !o.done {
		o.done = true
		o.listed, o.err = c.adm.ListOffsetsAfterMilli(ctx, listMillis(at), topic)
	}
	if o.err != nil {
		return kadm.ListedOffset{}, o.err
	}
	lo, ok := o.listed.Lookup(topic, partition)
	if !ok || lo.Err != nil {
		return kadm.ListedOffset{}, errOr(lo.Err, "partition missing from the listing")
	}
	return lo, nil
}

// pageRange checks q (its limit and order already filled in) against its partition's bounds b
// and says which offsets its page holds, [from, to) (empty: the page is), and the page without its
// records. at lists the offsets for q.At (shared by the partitions of a read across them).
func (c *Cluster) pageRange(ctx context.Context, q RecordQuery, b bounds, at *offsetsAt) (page Page, from, to int64, err error) {
	op := fmt.Sprintf("records %s[%d]", named(q.Topic), q.Partition)
	page = Page{Topic: q.Topic, Partition: q.Partition, Order: q.Order, Start: b.start, End: b.end, Stable: b.stable,
		Isolation: q.Isolation, Records: []Record{}}
	// A committed page ends at the last stable offset: what lies past it no read_committed
	// consumer sees yet. Paging, anchors and the valid offsets all stop there.
	b.end = b.readable(q.Isolation)

	var anchor int64
	switch {
	case q.Offset != nil:
		if b.start >= page.End {
			return Page{}, 0, 0, ops.Invalid("offset", fmt.Sprintf("partition %d is empty (start = end = %d)", q.Partition, page.End))
		}
		if q.Isolation == ReadCommitted && *q.Offset >= b.end && *q.Offset < page.End {
			return Page{}, 0, 0, ops.Invalid("offset", fmt.Sprintf("offsets from %d of partition %d are past its last stable offset: "+
				"a transaction opened there is still open, and read_committed consumers see nothing past it until it ends", b.end, q.Partition))
		}
		if *q.Offset < b.start || *q.Offset >= b.end {
			return Page{}, 0, 0, ops.Invalid("offset", fmt.Sprintf("must be in [%d, %d) for partition %d", b.start, b.end, q.Partition))
		}
		anchor = *q.Offset
	case b.start >= b.end:
		return page, 0, 0, nil
	case q.At != nil:
		lo, err := at.lookup(ctx, c, q.Topic, q.Partition, *q.At)
		if err != nil {
			return Page{}, 0, 0, c.fail(op+": offset for time", err)
		}
		// The first record at or after At; none (Kafka answers the end, or -1) anchors the page
		// past the end: "oldest" from there is empty, with the page before it as Prev, and
		// "newest" from there is the newest page. Clamped to end−1, an oldest page showed a
		// record from before At.
		anchor = max(lo.Offset, b.start)
		if lo.Offset < 0 || lo.Offset >= b.end {
			anchor = b.end
		}
		if q.Order == "newest" {
			anchor = min(anchor, b.end-1)
		}
	case q.Order == "newest":
		anchor = b.end - 1
	default:
		anchor = b.start
	}

	limit := int64(q.Limit)
	from, to = anchor, min(b.end, anchor+limit) // oldest: [anchor, anchor+limit)
	if q.Order == "newest" {
		from, to = max(b.start, anchor-limit+1), anchor+1
	}
	if from >= to {
		finishPage(&page, nil, from, to, limit, b.end)
	}
	return page, from, to, nil
}

// finishPage puts the records read of [from, to) (ascending) on the page in its order and sets where
// the pages before and after it start; end is where the page's reads stop (readable).
func finishPage(page *Page, recs []Record, from, to, limit, end int64) {
	if recs == nil {
		recs = []Record{}
	}
	if page.Order == "newest" {
		for i, j := 0, len(recs)-1; i < j; i, j = i+1, j-1 {
			recs[i], recs[j] = recs[j], recs[i]
		}
	}
	page.Records = recs

	older, newer := from-1, to // the nearest offsets outside the page
	if page.Order == "newest" {
		if older >= page.Start {
			page.Next = &older
		}
		if newer < end {
			n := min(newer+limit-1, end-1)
			page.Prev = &n
		}
	} else {
		if newer < end {
			page.Next = &newer
		}
		if older >= page.Start {
			p := max(page.Start, from-limit)
			page.Prev = &p
		}
	}
}

// readRange returns the records with offsets in [from, to) of one partition, ascending, as a
// read of isolation iso sees them. It stops as soon as it saw offset to−1 (or anything past it),
// so it never waits at the end of a log whose end it knows; a committed read also stops when the
// broker says nothing more is to be handed out before to (poll).
func (c *Cluster) readRange(ctx context.Context, topic string, partition int32, from, to int64, iso Isolation) ([]Record, error) {
	if from >= to {
		return []Record{}, nil
	}
	var extra []kgo.Opt
	if iso == ReadUncommitted {
		extra = append(extra, uncommitted())
	}
	cl, err := c.consumer(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}}, fetchBytesFor(to-from), extra...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	out := make([]Record, 0, to-from)
	pos := from
	left := func() map[int32]readLeft { return map[int32]readLeft{partition: {pos, to}} }
	for {
		var fs kgo.Fetches
		if iso == ReadUncommitted {
			fs = cl.PollFetches(ctx) // every offset below the end comes: nothing to probe
		} else {
			var done []int32
			if fs, done = c.poll(ctx, cl, topic, left); len(done) > 0 {
				return out, nil
			}
		}
		if err := fetchErr(fs); err != nil {
			if errors.Is(err, kerr.OffsetOutOfRange) {
				return nil, ops.Invalid("offset", fmt.Sprintf("records from %d were deleted while reading partition %d; reload", from, partition))
			}
			return nil, err
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if done || r.Offset < from {
				return
			}
			if r.Offset >= to {
				done = true
				return
			}
			pos = r.Offset + 1
			if r.Offset == to-1 {
				done = true
			}
			if r.Attrs.IsControl() {
				return
			}
			out = append(out, c.record(ctx, r))
		})
		if done {
			return out, nil
		}
	}
}

// markAborted marks, in an uncommitted read's records of one partition, those a read_committed
// consumer never gets: below the last stable offset stable, a record the committed read of the
// same offsets does not hand out belongs to an aborted transaction (Aborted); at or past it, a
// record is not decided yet (Unstable). The two reads are compared by offset, which is what
// identifies a record; records of no transaction are never aborted and need no second read.
func (c *Cluster) markAborted(ctx context.Context, topic string, partition int32, recs []Record, stable int64) error {
	lo, hi := int64(-1), int64(-1)
	for i := range recs {
		r := &recs[i]
		if r.Offset >= stable {
			r.Unstable = true
			continue
		}
		if lo < 0 || r.Offset < lo {
			lo = r.Offset
		}
		hi = max(hi, r.Offset+1)
	}
	if lo < 0 {
		return nil
	}
	committed, err := c.committedOffsets(ctx, topic, partition, lo, hi)
	if err != nil {
		return err
	}
	for i := range recs {
		if r := &recs[i]; r.Offset < stable && !committed[r.Offset] {
			r.Aborted = true
		}
	}
	return nil
}

// committedOffsets is the set of offsets of the data records in [from, to) that a read_committed
// consumer hands out (to at most the last stable offset).
func (c *Cluster) committedOffsets(ctx context.Context, topic string, partition int32, from, to int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	if from >= to {
		return out, nil
	}
	cl, err := c.consumer(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}}, fetchBytesFor(to-from))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	pos := from
	left := func() map[int32]readLeft { return map[int32]readLeft{partition: {pos, to}} }
	for pos < to {
		fs, done := c.poll(ctx, cl, topic, left)
		if len(done) > 0 {
			return out, nil
		}
		if err := fetchErr(fs); err != nil {
			return nil, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < from || pos >= to {
				return
			}
			pos = r.Offset + 1
			if r.Offset < to && !r.Attrs.IsControl() {
				out[r.Offset] = true
			}
		})
	}
	return out, nil
}

// fetchBytesFor sizes fetches for a page: enough for the expected records at a few KiB each
// (Kafka always returns at least one whole batch, however large), so a 50-record page does not
// pull a megabyte of neighbours.
func fetchBytesFor(records int64) int32 {
	return int32(min(max(records*4<<10, 64<<10), 4<<20))
}

// fetchErr returns the first error of a poll. kgo reports a done context or a closed client as a
// fetch error too (partition −1), so this also ends a read whose time ran out.
func fetchErr(fs kgo.Fetches) error {
	var first error
	fs.EachError(func(t string, p int32, err error) {
		if first == nil {
			first = fmt.Errorf("fetch %s[%d]: %w", t, p, err)
		}
	})
	return first
}

// record converts a fetched record, capping the value, decoding key and value through their
// schemas and the dead-letter headers (from the whole value, before the cap).
func (c *Cluster) record(ctx context.Context, r *kgo.Record) Record {
	out := Record{
		Topic:        r.Topic,
		Partition:    r.Partition,
		Offset:       r.Offset,
		Timestamp:    r.Timestamp,
		Key:          append([]byte(nil), r.Key...),
		OriginalSize: len(r.Value),
		Size:         len(r.Key) + len(r.Value),
	}
	if r.Key == nil {
		out.Key = nil
	}
	v := r.Value
	if len(v) > MaxValueBytes {
		v, out.Truncated = v[:MaxValueBytes], true
	}
	if r.Value != nil {
		out.Value = append(make([]byte, 0, len(v)), v...)
	}
	if len(r.Headers) > 0 {
		out.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			out.Headers[i] = Header{Key: h.Key, Value: append([]byte(nil), h.Value...)}
			out.Size += len(h.Key) + len(h.Value)
		}
	}
	out.KeySchema, out.ValueSchema = c.decodeSchemas(ctx, r.Topic, r.Key, r.Value)
	out.DeadLetter = c.index.decode(out.Headers, idSource(r.Value, out.ValueSchema), c.ids)
	return out
}

// decodeSchemas reads a record's key and value through their schemas.
func (c *Cluster) decodeSchemas(ctx context.Context, topic string, key, value []byte) (k, v *schema.Decoded) {
	if !c.schemas.Active() {
		return nil, nil
	}
	return c.schemas.Decode(ctx, topic, true, key), c.schemas.Decode(ctx, topic, false, value)
}

// idBody is what message_id.json_paths read: the decoded value when there is one (JSON the
// decoder wrote, so not checked again), else the value's bytes.
type idBody struct {
	b       []byte
	decoded bool
}

func idSource(value []byte, d *schema.Decoded) idBody {
	if d != nil && d.JSON != nil {
		return idBody{b: d.JSON, decoded: true}
	}
	return idBody{b: value}
}
