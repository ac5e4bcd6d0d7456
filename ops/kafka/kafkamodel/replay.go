package kafkamodel

import (
	"context"
	"errors"
)

// ErrNotAcknowledged marks a Produce whose records the broker did not acknowledge in time, or
// that was cancelled first: each of them may or may not be written. The adapter wraps it in an
// ops.ErrUnavailable. It lives here so that a replay can tell "unknown" from "failed" without
// importing the client.
var ErrNotAcknowledged = errors.New("not acknowledged in time: each record may or may not be written")

// PartitionReader reads one partition forward across calls, keeping one fetch session, for
// moving records (the adapter's Reader): a replay walks a dead-letter topic batch by batch with it.
type PartitionReader interface {
	// Read streams the records with offsets in [from, to) to fn, as a read_committed consumer
	// gets them, uncapped and undecoded (DeadLetter is nil); fn's error stops it and is returned.
	Read(ctx context.Context, from, to int64, fn func(Record) error) error
	// Close ends the fetch session.
	Close()
}
