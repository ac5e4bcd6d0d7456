package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kfaketest"
)

var recBase = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// browseFixture: topic "orders.DLT" with 2 partitions. Partition 0 holds offsets 0..119 (record
// i has key k-i and timestamp recBase+i s) with 0..19 deleted, so [20, 120). Partition 1 is empty.
func browseFixture(t *testing.T) *fake {
	f := newFake(t)
	f.topic(t, "orders.DLT", 2)
	recs := make([]*kgo.Record, 120)
	for i := range recs {
		recs[i] = &kgo.Record{
			Topic: "orders.DLT", Partition: 0,
			Key:       []byte(fmt.Sprintf("k-%d", i)),
			Value:     []byte(fmt.Sprintf(`{"messageId":"m-%d"}`, i)),
			Timestamp: recBase.Add(time.Duration(i) * time.Second),
			Headers: []kgo.RecordHeader{
				hdr("kafka_dlt-original-topic", []byte("orders")),
				hdr("kafka_dlt-original-offset", be64(int64(i))),
			},
		}
	}
	f.produce(t, recs...)
	f.deleteRecords(t, "orders.DLT", 0, 20)
	return f
}

func offsets(p Page) []int64 {
	out := make([]int64, len(p.Records))
	for i, r := range p.Records {
		out[i] = r.Offset
	}
	return out
}

func span(from, to int64, step int64) []int64 {
	var out []int64
	for o := from; (step > 0 && o <= to) || (step < 0 && o >= to); o += step {
		out = append(out, o)
	}
	return out
}

func eqOffsets(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func eqPtr(p *int64, want int64) bool {
	if want < 0 {
		return p == nil
	}
	return p != nil && *p == want
}

func TestRecordsPaging(t *testing.T) {
	f := browseFixture(t)
	ctx := ctxT(t)
	for _, tc := range []struct {
		name       string
		q          RecordQuery
		want       []int64
		next, prev int64 // -1: nil
	}{
		{name: "NewestFirstPage", q: RecordQuery{}, want: span(119, 70, -1), next: 69, prev: -1},
		{name: "NewestNextPage", q: RecordQuery{Offset: new(int64(69))}, want: span(69, 20, -1), next: -1, prev: 119},
		{name: "NewestLastPagePartial", q: RecordQuery{Offset: new(int64(30)), Limit: 50}, want: span(30, 20, -1), next: -1, prev: 80},
		{name: "OldestFirstPage", q: RecordQuery{Order: "oldest"}, want: span(20, 69, 1), next: 70, prev: -1},
		{name: "OldestLastPagePartial", q: RecordQuery{Order: "oldest", Offset: new(int64(100))}, want: span(100, 119, 1), next: -1, prev: 50},
		{name: "OldestSmallLimit", q: RecordQuery{Order: "oldest", Offset: new(int64(119)), Limit: 1}, want: []int64{119}, next: -1, prev: 118},
		{name: "NewestAtStart", q: RecordQuery{Offset: new(int64(20)), Limit: 5}, want: []int64{20}, next: -1, prev: 25},
		// The first record at or after recBase+50.5s is offset 51.
		{name: "AtTimeOldest", q: RecordQuery{Order: "oldest", At: new(recBase.Add(50500 * time.Millisecond)), Limit: 3}, want: []int64{51, 52, 53}, next: 54, prev: 48},
		{name: "AtTimeNewest", q: RecordQuery{At: new(recBase.Add(50500 * time.Millisecond)), Limit: 3}, want: []int64{51, 50, 49}, next: 48, prev: 54},
		{name: "AtTimeAfterAll", q: RecordQuery{At: new(recBase.Add(time.Hour)), Limit: 2}, want: []int64{119, 118}, next: 117, prev: -1},
		{name: "AtTimeBeforeAll", q: RecordQuery{Order: "oldest", At: new(recBase.Add(-time.Hour)), Limit: 2}, want: []int64{20, 21}, next: 22, prev: -1},
		// Nothing is at or after the time: the oldest page from there is empty, the page before
		// it one click away (it was the last record, from before the time).
		{name: "AtTimeAfterAllOldest", q: RecordQuery{Order: "oldest", At: new(recBase.Add(time.Hour)), Limit: 2}, want: []int64{}, next: -1, prev: 118},
		{name: "AtTimeAfterLastOldest", q: RecordQuery{Order: "oldest", At: new(recBase.Add(119*time.Second + time.Millisecond)), Limit: 3}, want: []int64{}, next: -1, prev: 117},
		{name: "AtLastRecordOldest", q: RecordQuery{Order: "oldest", At: new(recBase.Add(119 * time.Second)), Limit: 3}, want: []int64{119}, next: -1, prev: 116},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.Topic = "orders.DLT"
			p, err := f.c.Records(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := offsets(p); !eqOffsets(got, tc.want) {
				t.Fatalf("offsets %v, want %v", got, tc.want)
			}
			if !eqPtr(p.Next, tc.next) || !eqPtr(p.Prev, tc.prev) {
				t.Errorf("next %v prev %v, want %d %d", deref(p.Next), deref(p.Prev), tc.next, tc.prev)
			}
			if p.Start != 20 || p.End != 120 {
				t.Errorf("start %d end %d, want 20 120", p.Start, p.End)
			}
		})
	}

	t.Run("RecordContent", func(t *testing.T) {
		p, err := f.c.Records(ctx, RecordQuery{Topic: "orders.DLT", Offset: new(int64(42)), Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := p.Records[0]
		if string(r.Key) != "k-42" || string(r.Value) != `{"messageId":"m-42"}` || !r.Timestamp.Equal(recBase.Add(42*time.Second)) {
			t.Errorf("record = %+v", r)
		}
		if r.DeadLetter == nil || r.DeadLetter.OriginalTopic != "orders" || *r.DeadLetter.OriginalOffset != 42 || r.DeadLetter.MessageID != "m-42" {
			t.Errorf("dead letter = %v", r.DeadLetter)
		}
		if len(r.Headers) != 2 || r.Size != len(r.Key)+len(r.Value)+len("kafka_dlt-original-topic")+6+len("kafka_dlt-original-offset")+8 {
			t.Errorf("headers %v size %d", r.Headers, r.Size)
		}
	})

	t.Run("EmptyPartition", func(t *testing.T) {
		p, err := f.c.Records(ctx, RecordQuery{Topic: "orders.DLT", Partition: 1})
		if err != nil || len(p.Records) != 0 || p.Next != nil || p.Prev != nil {
			t.Fatalf("page %+v err %v, want an empty page", p, err)
		}
	})

	for _, tc := range []struct {
		name string
		q    RecordQuery
		kind error
		msg  string
	}{
		{"OffsetBelowStart", RecordQuery{Offset: new(int64(5))}, ops.ErrInvalid, "offset: must be in [20, 120) for partition 0"},
		{"OffsetAtEnd", RecordQuery{Offset: new(int64(120))}, ops.ErrInvalid, "offset: must be in [20, 120) for partition 0"},
		{"OffsetInEmptyPartition", RecordQuery{Partition: 1, Offset: new(int64(0))}, ops.ErrInvalid, "offset: partition 1 is empty (start = end = 0)"},
		{"BadPartition", RecordQuery{Partition: 2}, ops.ErrInvalid, "partition: must be in [0, 2) for topic orders.DLT"},
		{"NegativePartition", RecordQuery{Partition: -1}, ops.ErrInvalid, "partition: must be in [0, 2) for topic orders.DLT"},
		{"BadLimit", RecordQuery{Limit: 501}, ops.ErrInvalid, "limit: must be in [1, 500]"},
		{"BadOrder", RecordQuery{Order: "random"}, ops.ErrInvalid, `order: must be "newest" or "oldest"`},
		{"OffsetAndAt", RecordQuery{Offset: new(int64(30)), At: new(recBase)}, ops.ErrInvalid, "at: give either offset or at, not both"},
		{"UnknownTopic", RecordQuery{Topic: "nope"}, ops.ErrNotFound, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.q.Topic == "" {
				tc.q.Topic = "orders.DLT"
			}
			_, err := f.c.Records(ctx, tc.q)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.kind, tc.msg)
			}
		})
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestRecordsTruncatesLargeValue(t *testing.T) {
	f := newFake(t)
	f.topic(t, "big", 1)
	big := bytes.Repeat([]byte("x"), 300<<10)
	f.produce(t, &kgo.Record{Topic: "big", Value: big}, &kgo.Record{Topic: "big", Value: []byte("small")})
	p, err := f.c.Records(ctxT(t), RecordQuery{Topic: "big", Order: "oldest"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) != 2 {
		t.Fatalf("%d records, want 2", len(p.Records))
	}
	r := p.Records[0]
	if !r.Truncated || len(r.Value) != MaxValueBytes || r.OriginalSize != len(big) || r.Size != len(big) {
		t.Errorf("truncated %v len %d original %d size %d", r.Truncated, len(r.Value), r.OriginalSize, r.Size)
	}
	if r := p.Records[1]; r.Truncated || string(r.Value) != "small" || r.OriginalSize != 5 {
		t.Errorf("small record = %+v", r)
	}
}

// A committed transaction ends the log with a control record: the reader must not wait for a data
// record at end−1 that never comes.
func TestRecordsEndsAtTransactionMarker(t *testing.T) {
	f := newFake(t)
	f.topic(t, "txn.DLT", 1)
	tx := kfaketest.Client(t, f.broker, kgo.TransactionalID("redrive-test"))
	ctx := ctxT(t)
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "txn.DLT", Value: []byte{byte('a' + i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	quick, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	p, err := f.c.Records(quick, RecordQuery{Topic: "txn.DLT"})
	if err != nil {
		t.Fatal(err)
	}
	if p.End != 6 || !eqOffsets(offsets(p), []int64{4, 3, 2, 1, 0}) {
		t.Fatalf("end %d offsets %v, want end 6 (marker at 5) and 4..0", p.End, offsets(p))
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("took %v: waited at the marker", d)
	}
}

// A time before 1970 is a negative Kafka timestamp, which ListOffsets reads as a query (-1 the
// newest record, -2 the oldest; others UNSUPPORTED_VERSION): 1969-12-31T23:59:59.999Z showed the
// newest record and 1969-12-31 or 1900-01-01 were a 503. The first record at or after such a time
// is the log's first.
func TestRecordsAtBefore1970(t *testing.T) {
	f := browseFixture(t)
	ctx := ctxT(t)
	for _, at := range []time.Time{
		time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC), // -1: latest
		time.Date(1969, 12, 31, 23, 59, 59, 998e6, time.UTC), // -2: earliest
		time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
		{},
	} {
		p, err := f.c.Records(ctx, RecordQuery{Topic: "orders.DLT", Order: "oldest", At: &at, Limit: 2})
		if err != nil || !eqOffsets(offsets(p), []int64{20, 21}) {
			t.Errorf("oldest at %v: %v, %v; want [20 21]", at, offsets(p), err)
		}
		p, err = f.c.Records(ctx, RecordQuery{Topic: "orders.DLT", At: &at, Limit: 2})
		if err != nil || !eqOffsets(offsets(p), []int64{20}) {
			t.Errorf("newest at %v: %v, %v; want [20]", at, offsets(p), err)
		}
		after, err := f.c.OffsetsAfter(ctx, "orders.DLT", at)
		if err != nil || after[0] != 20 || after[1] != 0 {
			t.Errorf("offsets after %v: %v, %v; want the log starts 20 and 0", at, after, err)
		}
	}
}
