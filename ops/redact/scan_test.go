package redact

import (
	"testing"
	"time"

	"github.com/redrive/redrive/ops/kafka"
)

// TestRedactRecordKeepsWhatScansReadFirst: a filter scan reads key, partition, offset, timestamp
// and size from the record as fetched, before the view (search.Query.View), so the redaction
// must leave them as they are — even a key that quotes a masked header or JSON field. A rule
// that masks one of them has to change the scan too.
func TestRedactRecordKeepsWhatScansReadFirst(t *testing.T) {
	r := testRules(t)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := kafka.Record{Partition: 3, Offset: 42, Timestamp: at, Size: 77, Key: []byte("Bearer x"),
		Value:      []byte(`{"email":"Bearer x","id":1}`),
		Headers:    []kafka.Header{{Key: "Authorization", Value: []byte("Bearer x")}},
		DeadLetter: &kafka.DeadLetter{ExceptionMessage: "Bearer x"}}
	got, redacted := r.Record(rec)
	if !redacted {
		t.Fatal("nothing was masked")
	}
	if string(got.Key) != "Bearer x" || got.Partition != 3 || got.Offset != 42 || !got.Timestamp.Equal(at) || got.Size != 77 {
		t.Fatalf("the redaction changed what a scan reads before it: key %q partition %d offset %d timestamp %v size %d",
			got.Key, got.Partition, got.Offset, got.Timestamp, got.Size)
	}
}
