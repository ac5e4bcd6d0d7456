package kafkamodel

import (
	"time"

	"github.com/redrive/redrive/ops"
)

// Scan limits for an error-group scan (ops/kafka's Cluster.ErrorGroups).
const (
	DefaultMaxScan = 10_000
	MaxMaxScan     = 1_000_000
)

// ErrorGroup is every scanned dead letter with the same exception type and cause: one bug, one row.
type ErrorGroup struct {
	// ExceptionType is the group's type (DeadLetter.GroupType): the exception class, or — when the
	// records carry a stack trace — its fingerprint, "com.acme.StockException at
	// com.acme.orders.Reserve.apply" (ops.ErrorFingerprint); empty when they carry no exception header.
	ExceptionType  string
	ExceptionCause string
	Count          int64
	FirstAt        time.Time // oldest record timestamp in the group (among those scanned)
	LastAt         time.Time // newest
	OriginalTopics []string  // sorted, distinct
	// SampleMessage is the exception message of the newest record in the group, which is at
	// SamplePartition/SampleOffset.
	SampleMessage   string
	SamplePartition int32
	SampleOffset    int64
	// Sample is that newest record (its value cut at MaxValueBytes), so that whoever shows
	// SampleMessage can mask it as the record's content is masked (a message quoting a masked
	// payload value or header); nil when the group was not built from a scan.
	Sample *Record
	// Settled is how many of Count are no longer open (filled by ops/triage; zero until then).
	Settled int64
	// ReplayCopies is how many of Count are dead letters of Redrive's own replay copies (they
	// carry x-redrive-replay-id): messages that failed again after a replay, not new failures.
	ReplayCopies int64
}

// GroupType is the type a dead letter's error group is keyed by: ops.ErrorFingerprint of its
// exception class and stack trace headers (one bug, one row, however many places throw the class),
// its exception type header as it is when no trace names an application frame.
func (d *DeadLetter) GroupType() string {
	if fp := ops.ErrorFingerprint(d.ExceptionType, d.Stacktrace); ops.ErrorGroupClass(fp) != fp {
		return fp
	}
	return d.ExceptionType
}

// InGroup reports whether the dead letter is of the error group exceptionType names
// (ops.InErrorGroupTraced): its type, its fingerprint, or the class of either.
func (d *DeadLetter) InGroup(exceptionType string) bool {
	return ops.InErrorGroupTraced(d.ExceptionType, d.Stacktrace, exceptionType)
}

// Open is how many of the group's scanned records are still open.
func (g ErrorGroup) Open() int64 { return max(0, g.Count-g.Settled) }

// ErrorScan is the result of an error-group scan (Cluster.ErrorGroups).
type ErrorScan struct {
	Topic  string
	Groups []ErrorGroup // by Count, descending; ties by LastAt, newest first
	// Scanned is how many data records were read and grouped: records a read_committed consumer
	// gets, never a transaction marker nor a record of an aborted transaction.
	Scanned int64
	// Total is how many such records the topic holds (up to its last stable offset): exact when
	// TotalExact, otherwise an upper bound (a large topic still being counted, see
	// DLTopic.Counted).
	Total      int64
	TotalExact bool
	Capped     bool // true when maxScan stopped the scan before the oldest records
	// Ranges are the offsets read per partition, [Start, End): what counts of the groups cover.
	Ranges []PartitionRange
}
