package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/kafka/schema"
)

// Scan fetch sizes. A scan reads many records, so its fetches are large, though not so large that
// the fetch decoded ahead (the client keeps one) holds much: 1 MiB of compressed records is about
// ten decoded, as librdkafka's default. A read backwards sizes each chunk's fetch by the bytes per
// record read so far, so a chunk of small records does not pull megabytes of neighbours and a
// chunk of large ones needs no extra round trips.
const (
	scanFetchBytes    = 1 << 20
	minChunkFetch     = 64 << 10
	firstChunkRecords = 500
	maxChunkRecords   = 20_000
	maxChunkBytes     = 8 << 20
)

// Scanner reads ranges of one topic's partitions for a scan or an export, as a read_committed
// consumer does (no aborted record; callers read up to the last stable offset, PartitionRange.
// Stable). A forward read keeps
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
	batch     []*kgo.Record // one poll's records, reused
	headers   []Header      // the headers of the record being handed out, reused
	// holding keeps the records a read hands out from being recycled: BackwardLazy hands a
	// chunk out after reading it whole, and recycles it then.
	holding bool

	bytes, records int64 // read so far, for sizing backward chunks
}

// The domain reads scans through kafkamodel's interfaces.
var (
	_ kafkamodel.Scanner    = (*Scanner)(nil)
	_ kafkamodel.LazyRecord = (*Lazy)(nil)
)

// NewScanner prepares a scanner of topic; it connects on the first read. It is the domain's
// kafkamodel.Scanner, so that *Cluster provides the ports that read scans (search.KafkaSource).
func (c *Cluster) NewScanner(topic string) kafkamodel.Scanner {
	return &Scanner{c: c, topic: topic, next: -1}
}

// Close ends the fetch session.
func (s *Scanner) Close() {
	if s.cl != nil {
		s.cl.Close()
	}
	for _, r := range s.pending {
		r.Recycle()
	}
	s.cl, s.next, s.pending = nil, -1, nil
}

// Forward hands the records of partition with offsets in [from, to) to fn in ascending order
// until fn returns false or the range is read. It returns the offset to go on from: the offset
// after the last record fn was given (to when the range was read whole). Errors: records deleted
// under the read → ops.ErrInvalid; the cluster unreachable or ctx done → a wrapped error.
func (s *Scanner) Forward(ctx context.Context, partition int32, from, to int64, fn func(Record) bool) (int64, error) {
	return s.ForwardLazy(ctx, partition, from, to, func(l kafkamodel.LazyRecord) bool { return fn(l.Record()) })
}

// Lazy is one record of a scan, decoded for showing only when asked: Plain is the record as
// fetched (the value capped, Size set; no schema or dead-letter decoding), Record the record as
// shown. A scan whose filter reads the key decodes only the records it keeps. A Lazy and its
// Plain are valid only during the call they are handed to: their bytes are the fetch's, which
// the scanner lends to the next fetch after the call (see scanPools). The Records that Record
// gives are copies, and stay valid. It is the kafkamodel.LazyRecord the domain's scans read.
type Lazy struct {
	plain Record

	ctx          context.Context
	c            *Cluster
	raw          *kgo.Record
	value        []byte // the whole value: schemas and message ids are read from it, not the capped one
	decoded      bool   // Record's decoding is done
	valueDecoded bool   // ValueSchema's is
}

// Plain is the record as fetched, in place: the value capped, Size set, nothing decoded.
func (l *Lazy) Plain() *Record { return &l.plain }

// Decoded is the record as shown, in place: Plain with its schemas and dead-letter headers
// decoded (once). It shares the fetch's buffers, and is valid as Plain is.
func (l *Lazy) Decoded() *Record {
	if !l.decoded {
		l.decoded = true
		if l.c.schemas.Active() {
			l.plain.KeySchema = l.c.schemas.Decode(l.ctx, l.plain.Topic, true, l.plain.Key)
		}
		l.plain.DeadLetter = l.c.index.decode(l.plain.Headers, idSource(l.value, l.ValueSchema()), l.c.ids)
	}
	return &l.plain
}

// Record is the record as shown, copied out of the fetch's buffers: a caller may keep it.
func (l *Lazy) Record() Record { return l.Decoded().Clone() }

// textFields are the dead-letter fields that are a header's bytes as they are, as text
// (DeadLetter's string fields but the message id, which has rules of its own, and the trace id,
// which alone does not make a dead letter).
var textFields = map[string]dlField{
	"original_topic": fOriginalTopic, "consumer_group": fConsumerGroup, "exception_type": fExceptionType,
	"exception_cause": fExceptionCause, "exception_message": fExceptionMessage, "stacktrace": fStacktrace,
}

// DeadLetterText reads one dead-letter field that is a header's text (original_topic,
// consumer_group, exception_type, exception_cause, exception_message, stacktrace) from Plain's
// headers, without decoding the rest: the bytes of the header Decoded's DeadLetter takes that field
// from, valid UTF-8 as DeadLetter's text (nil or empty where DeadLetter says ""), and true. It is false for the other fields
// and once the record is decoded: read those from Decoded. A filter on the exception type of a
// million records reads one header of each, not thirteen fields.
func (l *Lazy) DeadLetterText(field string) ([]byte, bool) {
	f, ok := textFields[field]
	if !ok || l.decoded {
		return nil, false
	}
	var value []byte
	rank := -1
	for _, h := range l.plain.Headers {
		for _, nf := range l.c.index.byName[strings.ToLower(h.Key)] {
			// As headerIndex.decode: the lower rank wins, and the later of equal ranks.
			if nf.field == f && (rank < 0 || nf.rank <= rank) {
				value, rank = h.Value, nf.rank
			}
		}
	}
	if !utf8.Valid(value) {
		return []byte(kafkamodel.Text(value)), true // as DeadLetter has it: invalid bytes replaced
	}
	return value, true
}

// ValueSchema is the value read through its schema, as Record has it (nil when the value is not
// for a schema), without decoding the rest. Valid as Plain is.
func (l *Lazy) ValueSchema() *schema.Decoded {
	if !l.valueDecoded {
		l.valueDecoded = true
		if l.c.schemas.Active() {
			l.plain.ValueSchema = l.c.schemas.Decode(l.ctx, l.plain.Topic, false, l.value)
		}
	}
	return l.plain.ValueSchema
}

// scanPools lends the scanners' clients their decompression buffers and record slices
// (kgo.WithPools): a scan recycles each record once it has handed it on, so reading a million
// records does not allocate (and collect) a million records' worth of memory. What a caller keeps
// is copied (Lazy.Record, Record.Clone).
type scanPools struct{ bufs, recs sync.Pool }

var scanBuffers = &scanPools{}

func (p *scanPools) GetDecompressBytes(compressed []byte, codec kgo.CompressionCodecType) []byte {
	want := decodedSize(compressed, codec)
	if b, ok := p.bufs.Get().(*[]byte); ok {
		if cap(*b) >= want {
			return *b
		}
		// Too short: snappy would decode into a slice of its own, and this one go to waste.
	}
	// A quarter more, so that the next batches, a little larger, decode into it too.
	return make([]byte, 0, want+want/4)
}

// xerialMagic starts a snappy batch in xerial framing (what the Java client writes): a 16-byte
// header, then chunks, each a 4-byte big-endian size and a snappy block.
var xerialMagic = []byte{130, 83, 78, 65, 80, 80, 89, 0}

// decodedSize is how large a batch decompresses: exact for snappy (each block starts with its
// decoded length), which decodes into the buffer only when it has the room; four times the
// compressed size for the codecs that grow their buffer as they go.
func decodedSize(compressed []byte, codec kgo.CompressionCodecType) int {
	guess := 4 * len(compressed)
	if codec != kgo.CodecSnappy {
		return guess
	}
	if !bytes.HasPrefix(compressed, xerialMagic) {
		if n, used := binary.Uvarint(compressed); used > 0 && n <= 1<<30 {
			return int(n)
		}
		return guess
	}
	total := 0
	for rem := compressed[min(16, len(compressed)):]; len(rem) >= 4; {
		size := int(binary.BigEndian.Uint32(rem))
		rem = rem[4:]
		if size > len(rem) {
			return guess
		}
		n, used := binary.Uvarint(rem[:size])
		if used <= 0 || n > 1<<30 {
			return guess
		}
		total += int(n)
		rem = rem[size:]
	}
	if total == 0 {
		return guess
	}
	return total
}

func (p *scanPools) PutDecompressBytes(b []byte) { p.bufs.Put(&b) }

func (p *scanPools) GetRecords(n int) []kgo.Record {
	if rs, ok := p.recs.Get().(*[]kgo.Record); ok && cap(*rs) >= n {
		return (*rs)[:0]
	}
	// Room for a larger batch, so that batches of varying sizes reuse the slices.
	return make([]kgo.Record, 0, n*5/4)
}

func (p *scanPools) PutRecords(rs []kgo.Record) { p.recs.Put(&rs) }

// recycle gives a record's memory back to the pools unless a BackwardLazy holds it; r must not be
// read after.
func (s *Scanner) recycle(r *kgo.Record) {
	if !s.holding {
		r.Recycle()
	}
}

// ForwardLazy is Forward handing each record undecoded; fn decodes what it needs.
func (s *Scanner) ForwardLazy(ctx context.Context, partition int32, from, to int64, fn func(kafkamodel.LazyRecord) bool) (int64, error) {
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
	// handle hands r on and reports whether the read stops, and whether r is done with (handed
	// on or skipped, and so recycled) or is left for a following read.
	handle := func(r *kgo.Record) (stop, done bool) {
		if r.Offset < pos {
			s.recycle(r)
			return false, true
		}
		if r.Offset >= to {
			// What lay between was nothing a read_committed consumer gets (aborted records,
			// markers, a compaction gap): the range is read, and a read from to goes on here.
			pos = to
			s.next = to
			return true, false
		}
		pos = r.Offset + 1
		s.next = pos
		if r.Attrs.IsControl() {
			s.recycle(r)
			return pos >= to, true
		}
		s.bytes += int64(len(r.Key) + len(r.Value))
		s.records++
		s.headers = s.c.lazy(l, r, s.headers[:0])
		more := fn(l)
		s.recycle(r)
		return !more || pos >= to, true
	}
	// each hands on rs until a stop, and keeps the records not done with.
	each := func(rs []*kgo.Record) bool {
		for i, r := range rs {
			if stop, done := handle(r); stop {
				if done {
					i++
				}
				s.pending = append(s.pending, rs[i:]...)
				return true
			}
		}
		return false
	}
	held := s.pending
	s.pending = nil
	if each(held) {
		return pos, nil
	}
	left := func() map[int32]readLeft { return map[int32]readLeft{partition: {pos, to}} }
	for pos < to {
		fs, done := s.c.poll(ctx, s.cl, s.topic, left)
		if len(done) > 0 {
			// Nothing more up to to for a read_committed consumer (aborted records past pos): the
			// range is read. Where the session stands is unknown, so the next read opens anew.
			s.Close()
			return to, nil
		}
		if err := fetchErr(fs); err != nil {
			s.Close()
			if errors.Is(err, kerr.OffsetOutOfRange) {
				return pos, ops.Invalid("offset", fmt.Sprintf("records from %d of %s[%d] no longer exist", pos, s.topic, partition))
			}
			return pos, s.c.fail("scan "+s.topic, err)
		}
		s.batch = s.batch[:0]
		fs.EachRecord(func(r *kgo.Record) { s.batch = append(s.batch, r) })
		if each(s.batch) {
			return pos, nil
		}
	}
	return to, nil
}

// Backward hands the records of partition with offsets in [from, to) to fn in descending order
// until fn returns false or the range is read, reading chunks backwards from to. It returns the
// offset of the next record to read going on backwards (the last record fn was given, minus
// one), from−1 when the range was read whole. Errors as Forward.
func (s *Scanner) Backward(ctx context.Context, partition int32, from, to int64, fn func(Record) bool) (int64, error) {
	return s.BackwardLazy(ctx, partition, from, to, func(l kafkamodel.LazyRecord) bool { return fn(l.Record()) })
}

// BackwardLazy is Backward handing each record undecoded, as ForwardLazy.
func (s *Scanner) BackwardLazy(ctx context.Context, partition int32, from, to int64, fn func(kafkamodel.LazyRecord) bool) (int64, error) {
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
		// The chunk's records are held until it is handed out: each keeps its own headers, as
		// the scratch of a read is the next record's.
		var chunk []Lazy
		s.holding = true
		_, err := s.ForwardLazy(ctx, partition, lo, hi, func(lr kafkamodel.LazyRecord) bool {
			c := *lr.(*Lazy) // ForwardLazy hands out its own *Lazy
			c.plain.Headers = slices.Clone(c.plain.Headers)
			chunk = append(chunk, c)
			return true
		})
		s.holding = false
		stopped, next := false, int64(0)
		for i := len(chunk) - 1; i >= 0 && err == nil; i-- {
			if !fn(&chunk[i]) {
				stopped, next = true, chunk[i].plain.Offset-1
				break
			}
		}
		for i := range chunk {
			chunk[i].raw.Recycle()
		}
		if err != nil {
			return hi - 1, err
		}
		if stopped {
			return next, nil
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
	cl, err := s.c.consumer(map[string]map[int32]kgo.Offset{s.topic: {partition: kgo.NewOffset().At(from)}}, fetchBytes,
		kgo.WithPools(scanBuffers))
	if err != nil {
		return s.c.fail("scan "+s.topic, err)
	}
	s.cl, s.partition, s.next = cl, partition, from
	return nil
}

// lazy sets l to a fetched record without copying its buffers or decoding it: the value capped
// at MaxValueBytes, Size counted, the headers in hs (returned for reuse).
// It writes the fields of l.plain in place: a copy of a whole Record once a record is a bulk write
// of every pointer in it while the collector runs.
func (c *Cluster) lazy(l *Lazy, r *kgo.Record, hs []Header) []Header {
	rec := &l.plain
	if rec.DeadLetter != nil || rec.KeySchema != nil || rec.ValueSchema != nil || rec.Aborted || rec.Unstable {
		*rec = Record{} // a record decoded before this one
	}
	rec.Topic, rec.Partition, rec.Offset, rec.Timestamp, rec.Key = r.Topic, r.Partition, r.Offset, r.Timestamp, r.Key
	rec.Value, rec.Truncated, rec.OriginalSize, rec.Size = r.Value, false, len(r.Value), len(r.Key)+len(r.Value)
	if len(rec.Value) > MaxValueBytes {
		rec.Value, rec.Truncated = rec.Value[:MaxValueBytes], true
	}
	for _, h := range r.Headers {
		hs = append(hs, Header{Key: h.Key, Value: h.Value})
		rec.Size += len(h.Key) + len(h.Value)
	}
	rec.Headers = nil
	if len(hs) > 0 {
		rec.Headers = hs
	}
	l.raw, l.value, l.decoded, l.valueDecoded = r, r.Value, false, false
	return hs
}
