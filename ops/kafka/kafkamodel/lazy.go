package kafkamodel

import "context"

// LazyRecord is one record of a scan, decoded only as far as asked (ops/kafka's Lazy); it and the
// Records it points at are valid only during the call it is handed to.
type LazyRecord interface {
	// Plain is the record as fetched: the value capped, Size set, nothing decoded.
	Plain() *Record
	// Decoded is the record as shown, in place: Plain with its schemas and dead-letter headers decoded.
	Decoded() *Record
	// Record is the record as shown, copied: a caller may keep it.
	Record() Record
	// DeadLetterText reads one dead-letter text field from its header alone; false for the other fields.
	DeadLetterText(field string) ([]byte, bool)
	// ValueSchema is the value read through its schema (nil when it is not for one), decoding nothing else.
	ValueSchema() *Decoded
}

// Scanner reads ranges of one topic's partitions for a scan or an export (ops/kafka's Scanner).
type Scanner interface {
	// Forward hands the records of [from, to) as shown, in ascending order, until fn returns
	// false; it returns the offset to go on from.
	Forward(ctx context.Context, partition int32, from, to int64, fn func(Record) bool) (int64, error)
	// Backward is Forward in descending order; it returns the offset of the next record going on
	// backwards.
	Backward(ctx context.Context, partition int32, from, to int64, fn func(Record) bool) (int64, error)
	// ForwardLazy is Forward handing each record undecoded: fn decodes what it needs.
	ForwardLazy(ctx context.Context, partition int32, from, to int64, fn func(LazyRecord) bool) (int64, error)
	// BackwardLazy is Backward handing each record undecoded.
	BackwardLazy(ctx context.Context, partition int32, from, to int64, fn func(LazyRecord) bool) (int64, error)
	// Close ends the fetch session.
	Close()
}
