package kafkamodel

import (
	"time"
)

// Browsing limits.
const (
	// MaxValueBytes caps Record.Value; longer values are cut and marked Truncated.
	MaxValueBytes = 256 << 10
	// DefaultLimit is RecordQuery.Limit when zero; MaxLimit is the largest accepted.
	DefaultLimit = 50
	MaxLimit     = 500
)

// Header is one record header. Keys may repeat; order is preserved.
type Header struct {
	Key   string
	Value []byte
}

// Record is one Kafka record as the console shows it.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
	Key       []byte
	Value     []byte // at most MaxValueBytes; see Truncated
	// Truncated is true when Value was cut at MaxValueBytes; OriginalSize is then the full length.
	Truncated    bool
	OriginalSize int
	Headers      []Header
	// Size is the uncompressed size of key, value and headers as produced (before truncation).
	Size int
	// DeadLetter is the decoded failure metadata, nil when the record carries none.
	DeadLetter *DeadLetter
	// KeySchema and ValueSchema are the key and value read through their schema (the Schema
	// Registry id in the record, or a schema file configured for the topic), decoded from the
	// whole bytes; nil when the bytes are not for a schema. Key and Value stay the original bytes.
	KeySchema, ValueSchema *Decoded
	// Aborted is true for a record of an aborted transaction, which only an uncommitted read
	// (ReadUncommitted) shows: no consumer of the topic ever received it, so it is no dead
	// letter, and a plan refuses it.
	Aborted bool
	// Unstable is true for a record at or past the partition's last stable offset when read,
	// which only an uncommitted read shows: a transaction opened before it is still open, and
	// read_committed consumers see neither until it ends (its own records may yet be aborted).
	Unstable bool
}

// RecordQuery selects one page of one partition.
type RecordQuery struct {
	Topic     string // required
	Partition int32  // required; must exist
	// Offset anchors the page (nil: the newest page for Order "newest", the oldest for "oldest").
	// With Order "newest" the page holds Offset and the records before it; with "oldest", Offset
	// and the records after it. It must be in [start, end) of the partition.
	Offset *int64
	// At anchors the page at the first record whose timestamp is at or after At (the newest record
	// when none is). Give Offset or At, not both.
	At    *time.Time
	Limit int    // 1..MaxLimit; 0 means DefaultLimit
	Order string // "newest" (default: descending offsets) or "oldest" (ascending)
	// Isolation is what the page reads: ReadCommitted (the zero value) up to the last stable
	// offset, without aborted records; ReadUncommitted every record up to the end, aborted ones
	// marked (Record.Aborted, Record.Unstable).
	Isolation Isolation
}

// Page is one page of records and where to go from it.
type Page struct {
	Topic     string
	Partition int32
	Order     string
	Records   []Record // in Order: descending offsets for "newest", ascending for "oldest"
	Start     int64    // the partition's log start offset when read
	End       int64    // the partition's end offset (next offset to be written) when read
	// Stable is the partition's last stable offset when read: a committed page ends there.
	Stable    int64
	Isolation Isolation
	// Next is the Offset of the following page in the same Order (older records for "newest",
	// newer for "oldest"); Prev goes the other way. Nil when there is nothing more that way.
	Next *int64
	Prev *int64
}

// Clone is r with its own copy of every byte it may share (key, value, header values, decoded
// JSON): a record read in place (ops/kafka's Lazy.Decoded), or made from one, that a caller keeps. The key,
// value and header values are copied into one allocation (a scan clones every match), each with
// its capacity cut to its length so that an append to one cannot overwrite the next; nil stays nil.
func (r Record) Clone() Record {
	c := r
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Value)
	}
	buf := make([]byte, 0, n)
	take := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		at := len(buf)
		buf = append(buf, b...)
		return buf[at:len(buf):len(buf)]
	}
	c.Key, c.Value = take(r.Key), take(r.Value)
	if r.Headers != nil {
		c.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			c.Headers[i] = Header{Key: h.Key, Value: take(h.Value)}
		}
	}
	c.KeySchema, c.ValueSchema = cloneDecoded(r.KeySchema), cloneDecoded(r.ValueSchema)
	return c
}

// Isolation is how a read treats the records of transactions.
type Isolation int8

const (
	// ReadCommitted (the zero value, and every read of the console but an admin's forensics)
	// sees what a read_committed consumer sees: no record of an aborted transaction, nothing at
	// or past the partition's last stable offset. Transactional producers (Spring's
	// KafkaTransactionManager) write dead letters inside the listener's transaction, and a
	// rolled-back one leaves an aborted record that no consumer of the topic ever received.
	ReadCommitted Isolation = iota
	// ReadUncommitted sees every record written, aborted or not yet committed: for an admin
	// asking what a producer wrote and rolled back.
	ReadUncommitted
)

// String is the isolation as the API names it: "committed" or "uncommitted".
func (i Isolation) String() string {
	if i == ReadUncommitted {
		return "uncommitted"
	}
	return "committed"
}

// AcrossQuery asks for one page of a topic's records across all its partitions, merged by
// timestamp.
type AcrossQuery struct {
	Topic string // required
	// Cursor is where each partition's part of the page starts (an offset, inclusive), as given by
	// the previous page's Next. Nil: the first page, every partition from its newest record (or
	// oldest for Order "oldest", or At). A partition missing from a non-nil Cursor is done.
	Cursor map[int32]int64
	// At anchors a first page at the first record of each partition at or after At.
	At    *time.Time
	Limit int    // 1..MaxLimit; 0 means DefaultLimit
	Order string // "newest" (default) or "oldest"
	// Isolation is what each partition's part reads, as RecordQuery.Isolation.
	Isolation Isolation
}

// AcrossPage is one page across partitions.
type AcrossPage struct {
	Topic      string
	Order      string
	Partitions []PartitionRange // every partition of the topic, with its offsets when read
	// Records are newest first by timestamp for "newest" (oldest first for "oldest"); each
	// partition's records keep their offset order, so a page is a prefix of every partition.
	Records []Record
	// Next is the Cursor of the following page; nil when every partition is done.
	Next map[int32]int64
}

// Outgoing is one record to produce.
type Outgoing struct {
	Topic string
	// Partition is where the record goes: the partition the dead-letter headers name. Nil leaves it
	// to the key (murmur2, as Java's default partitioner), which lands in the original partition
	// only when the original producer partitioned by the same key the same way.
	Partition *int32
	Key       []byte // the original key
	Value     []byte
	Headers   []Header
}

// PartitionRange is one partition's offsets: records live in [Start, End).
type PartitionRange struct {
	Partition  int32
	Start, End int64
	// Stable is the last stable offset (Start ≤ Stable ≤ End): where a read_committed consumer,
	// and so every committed read of the console (scans, plans, exports), stops. Past it are the
	// records of a transaction still open and whatever was written after it began.
	Stable int64
}

// EchoLimit bounds, in bytes, how much of a topic or group name a message quotes: the name is the caller's
// input (a path segment), and a 100,000-character one came back whole in its 404.
const EchoLimit = 64
