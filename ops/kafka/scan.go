package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/schema"
)

// Scan fetch sizes. A scan reads many records, so its fetches are large; a read backwards sizes
// each chunk's fetch by the bytes per record read so far, so a chunk of small records does not
// pull megabytes of neighbours and a chunk of large ones needs no extra round trips.
const (
	scanFetchBytes    = 4 << 20
	minChunkFetch     = 64 << 10
	firstChunkRecords = 500
	maxChunkRecords   = 20_000
	maxChunkBytes     = 8 << 20
)

// Scanner reads ranges of one topic's partitions for a scan or an export. A forward read keeps
// its client while the next read goes on where the last one stopped (one fetch session for a
// whole scan of a partition); only a jump (another partition, a read backwards) makes a new one.
// Records are shown records (values capped at MaxValueBytes, schemas and dead-letter headers
// decoded) that share the fetched buffers, which franz-go does not reuse. Not safe for
// concurrent use; Close it when done.
type Scanner struct {
	c     *Cluster
	topic string

	cl        *kgo.Client
	partition int32
	next      int64         // the offset after the last record handed out (or skipped)
	pending   []*kgo.Record // fetched past where the last read stopped

	bytes, records int64 // read so far, for sizing backward chunks
}

// NewScanner prepares a scanner of topic; it connects on the first read.
func (c *Cluster) NewScanner(topic string) *Scanner {
	return &Scanner{c: c, topic: topic, next: -1}
}

// Close ends the fetch session.
func (s *Scanner) Close() {
	if s.cl != nil {
		s.cl.Close()
	}
	s.cl, s.next, s.pending = nil, -1, nil
}

// Forward hands the records of partition with offsets in [from, to) to fn in ascending order
// until fn returns false or the range is read. It returns the offset to go on from: the offset
// after the last record fn was given (to when the range was read whole). Errors: records deleted
// under the read → ops.ErrInvalid; the cluster unreachable or ctx done → a wrapped error.
func (s *Scanner) Forward(ctx context.Context, partition int32, from, to int64, fn func(Record) bool) (int64, error) {
	return s.ForwardLazy(ctx, partition, from, to, func(l *Lazy) bool { return fn(l.Record()) })
}

// Lazy is one record of a scan, decoded for showing only when asked: Plain is the record as
// fetched (the value capped, Size set; no schema or dead-letter decoding), Record the record as
// shown. A scan whose filter reads the key decodes only the records it keeps. A Lazy is valid
// during the call it is handed to; the Records it gives stay valid.
type Lazy struct {
	Plain Record

	ctx          context.Context
	c            *Cluster
	value        []byte // the whole value: schemas and message ids are read from it, not the capped one
	decoded      bool   // Record's decoding is done
	valueDecoded bool   // ValueSchema's is
}

// Record is the record as shown: Plain with its schemas and dead-letter headers decoded (once).
func (l *Lazy) Record() Record {
	if !l.decoded {
		l.decoded = true
		if l.c.schemas.Active() {
			l.Plain.KeySchema = l.c.schemas.Decode(l.ctx, l.Plain.Topic, true, l.Plain.Key)
		}
		l.Plain.DeadLetter = l.c.index.decode(l.Plain.Headers, idSource(l.value, l.ValueSchema()), l.c.ids)
	}
	return l.Plain
}

// ValueSchema is the value read through its schema, as Record has it (nil when the value is not
// for a schema), without decoding the rest.
func (l *Lazy) ValueSchema() *schema.Decoded {
	if !l.valueDecoded {
		l.valueDecoded = true
		if l.c.schemas.Active() {
			l.Plain.ValueSchema = l.c.schemas.Decode(l.ctx, l.Plain.Topic, false, l.value)
		}
	}
	return l.Plain.ValueSchema
}

// ForwardLazy is Forward handing each record undecoded; fn decodes what it needs.
func (s *Scanner) ForwardLazy(ctx context.Context, partition int32, from, to int64, fn func(*Lazy) bool) (int64, error) {
	if from >= to {
		return to, nil
	}
	if s.cl == nil || s.partition != partition || s.next != from {
		if err := s.open(partition, from, scanFetchBytes); err != nil {
			return from, err
		}
	}
	pos := from
	// One Lazy for the whole read: what fn keeps is the Records it takes, which copy it.
	l := &Lazy{ctx: ctx, c: s.c}
	handle := func(r *kgo.Record) (stop bool) {
		if r.Offset < pos {
			return false
		}
		if r.Offset >= to {
			return true
		}
		pos = r.Offset + 1
		s.next = pos
		if r.Attrs.IsControl() {
			return pos >= to
		}
		s.bytes += int64(len(r.Key) + len(r.Value))
		s.records++
		s.c.lazy(l, r)
		return !fn(l) || pos >= to
	}
	held := s.pending
	s.pending = nil
	for i, r := range held {
		if handle(r) {
			s.keep(held[i:], pos)
			return pos, nil
		}
	}
	for pos < to {
		fs := s.cl.PollFetches(ctx)
		if err := fetchErr(fs); err != nil {
			s.Close()
			if errors.Is(err, kerr.OffsetOutOfRange) {
				return pos, ops.Invalid("offset", fmt.Sprintf("records from %d of %s[%d] no longer exist", pos, s.topic, partition))
			}
			return pos, s.c.fail("scan "+s.topic, err)
		}
		var batch []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { batch = append(batch, r) })
		for i, r := range batch {
			if handle(r) {
				s.keep(batch[i:], pos)
				return pos, nil
			}
		}
	}
	return to, nil
}

// keep holds the records fetched past a stop that a following read going on from pos can use.
func (s *Scanner) keep(rest []*kgo.Record, pos int64) {
	for _, r := range rest {
		if r.Offset >= pos {
			s.pending = append(s.pending, r)
		}
	}
}

// Backward hands the records of partition with offsets in [from, to) to fn in descending order
// until fn returns false or the range is read, reading chunks backwards from to. It returns the
// offset of the next record to read going on backwards (the last record fn was given, minus
// one), from−1 when the range was read whole. Errors as Forward.
func (s *Scanner) Backward(ctx context.Context, partition int32, from, to int64, fn func(Record) bool) (int64, error) {
	return s.BackwardLazy(ctx, partition, from, to, func(l *Lazy) bool { return fn(l.Record()) })
}

// BackwardLazy is Backward handing each record undecoded, as ForwardLazy.
func (s *Scanner) BackwardLazy(ctx context.Context, partition int32, from, to int64, fn func(*Lazy) bool) (int64, error) {
	hi := to // the chunk is [lo, hi)
	n := int64(firstChunkRecords)
	for hi > from {
		lo := max(from, hi-n)
		perRecord := int64(1 << 10)
		if s.records > 0 {
			perRecord = max(s.bytes/s.records, 64)
		}
		fetch := int32(min(max((hi-lo)*perRecord*5/4, minChunkFetch), maxChunkBytes))
		if err := s.open(partition, lo, fetch); err != nil {
			return hi - 1, err
		}
		var chunk []Lazy
		if _, err := s.ForwardLazy(ctx, partition, lo, hi, func(l *Lazy) bool { chunk = append(chunk, *l); return true }); err != nil {
			return hi - 1, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if !fn(&chunk[i]) {
				return chunk[i].Plain.Offset - 1, nil
			}
		}
		hi = lo
		n = min(n*4, maxChunkRecords, max(int64(maxChunkBytes)/perRecord, firstChunkRecords))
	}
	s.Close() // the session sits at a chunk's end: no read goes on from there
	return from - 1, nil
}

// open starts a new fetch session at partition/from.
func (s *Scanner) open(partition int32, from int64, fetchBytes int32) error {
	s.Close()
	cl, err := s.c.consumer(map[string]map[int32]kgo.Offset{s.topic: {partition: kgo.NewOffset().At(from)}}, fetchBytes)
	if err != nil {
		return s.c.fail("scan "+s.topic, err)
	}
	s.cl, s.partition, s.next = cl, partition, from
	return nil
}

// lazy sets l to a fetched record without copying its buffers or decoding it: the value capped
// at MaxValueBytes, Size counted.
func (c *Cluster) lazy(l *Lazy, r *kgo.Record) {
	rec := rawRecord(r)
	if len(rec.Value) > MaxValueBytes {
		rec.Value, rec.Truncated = rec.Value[:MaxValueBytes], true
	}
	for _, h := range rec.Headers {
		rec.Size += len(h.Key) + len(h.Value)
	}
	l.Plain, l.value, l.decoded, l.valueDecoded = rec, r.Value, false, false
}
