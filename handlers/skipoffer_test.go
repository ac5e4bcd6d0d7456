package handlers

import (
	"testing"

	"github.com/redrive/redrive/ops/lag"
	kafkapages "github.com/redrive/redrive/views/pages/kafka"
)

// A STALL group whose commit points at a transaction's marker or an aborted record is stuck on the
// next record a read_committed consumer gets, past them: the offer names that record and moves to
// the offset after it, not after the marker (which would skip nothing).
func TestSkipOfferNamesTheNextRecord(t *testing.T) {
	rows := []kafkapages.PartitionRow{
		{Topic: "payments", Partition: 0, Committed: 5, NoRecords: 2, Lag: 3, Status: string(lag.StatusStall)},
	}
	s := skipOffer(lag.StatusStall, rows)
	if s == nil || s.Offset != 7 || s.Partition != 0 || !s.Running {
		t.Fatalf("offer %+v; want the record at offset 7 (5 + 2 without records), consumers to stop first", s)
	}
	rows[0].NoRecords = 0
	if s := skipOffer(lag.StatusStall, rows); s == nil || s.Offset != 5 {
		t.Fatalf("offer %+v; want the record at the committed offset 5", s)
	}
}
