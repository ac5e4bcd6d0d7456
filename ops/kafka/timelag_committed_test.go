package kafka

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
)

// Time lag is the age of the next record a read_committed consumer gets: a commit pointing at an
// aborted record two hours old, before a committed one written now, lags about nothing, and says
// so again from the cache; a commit with nothing committed after it up to the last stable offset
// (an aborted transaction, an open one) has no time lag, and gets one once a record commits.
func TestTimeLagReadsCommitted(t *testing.T) {
	f := newFake(t)
	ctx := ctxT(t)
	f.topic(t, "invoices", 2)
	old := time.Now().Add(-2 * time.Hour)
	rec := func(p int32, v string, ts time.Time) *kgo.Record {
		return &kgo.Record{Topic: "invoices", Partition: p, Value: []byte(v), Timestamp: ts}
	}
	// invoices[0]: 0 aborted (two hours old), the marker at 1, 2 committed now.
	kfaketest.Transaction(t, f.broker, "tx", false, rec(0, "a", old))
	f.produce(t, rec(0, "c", time.Now()))
	// invoices[1]: 0 aborted, the marker at 1, 2 in a transaction still open (two hours old).
	kfaketest.Transaction(t, f.broker, "tx", false, rec(1, "a", old))
	end := kfaketest.OpenTransaction(t, f.broker, "open", rec(1, "o", old))
	f.commit(t, "g-invoices", "invoices", map[int32]int64{0: 0, 1: 0})
	f.commit(t, "g-marker", "invoices", map[int32]int64{0: 1})

	sample := func(group string, p int32) PartitionLag {
		t.Helper()
		g, err := f.c.Group(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		return partitionLag(t, g, "invoices", p)
	}
	for i := range 2 { // the second from the cache
		if p := sample("g-invoices", 0); p.Lag != 1 || p.NoRecords != 2 || p.TimeLag < 0 || p.TimeLag > time.Minute {
			t.Errorf("sample %d: committed at an aborted record: lag %d (%d without records), time lag %s; want 1 (the committed "+
				"record; the aborted one and the marker are none), and about 0 (not ~2h)", i, p.Lag, p.NoRecords, p.TimeLag)
		}
	}
	if p := sample("g-marker", 0); p.TimeLag < 0 || p.TimeLag > time.Minute {
		t.Errorf("committed at an abort marker: time lag %s; want about 0", p.TimeLag)
	}
	if p := sample("g-invoices", 1); p.Lag != 1 || p.TimeLag != 0 {
		t.Errorf("nothing committed past the commit: lag %d, time lag %s; want 1 (the open transaction's record) and 0", p.Lag, p.TimeLag)
	}
	end(true) // the open transaction's record, two hours old, is now the next to consume
	if p := sample("g-invoices", 1); p.TimeLag < 2*time.Hour-time.Minute || p.TimeLag > 2*time.Hour+time.Minute {
		t.Errorf("once the open transaction committed: time lag %s; want about 2h", p.TimeLag)
	}

	// Aborted transactions larger than one partition's fetch (timeLagPartitionBytes) are read past.
	f.topic(t, "bulky", 1)
	var big []*kgo.Record
	for range 3 {
		big = append(big, &kgo.Record{Topic: "bulky", Value: incompressible(timeLagPartitionBytes), Timestamp: old})
	}
	kfaketest.Transaction(t, f.broker, "tx", false, big...)       // 0–2, marker 3
	kfaketest.Transaction(t, f.broker, "tx", false, big...)       // 4–6, marker 7
	f.produce(t, &kgo.Record{Topic: "bulky", Value: []byte("c")}) // 8, now
	f.commit(t, "g-bulky", "bulky", map[int32]int64{0: 0})
	g, err := f.c.Group(ctx, "g-bulky")
	if err != nil {
		t.Fatal(err)
	}
	if p := partitionLag(t, g, "bulky", 0); p.Lag != 1 || p.NoRecords != 8 || p.TimeLag < 0 || p.TimeLag > time.Minute {
		t.Errorf("past %d bytes of aborted records: lag %d (%d without records), time lag %s; want 1 (8) and about 0",
			6*timeLagPartitionBytes, p.Lag, p.NoRecords, p.TimeLag)
	}
}

// incompressible is n bytes no producer's compression shrinks, the same each run.
func incompressible(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{}).Read(b)
	return b
}

// A transactional consumer that read everything commits the last record's offset + 1 — its
// transaction's marker: Kafka's tools show lag 1 for ever, and the console judged such a group,
// members present and the commit not moving, STALL and then STOP, and offered to skip "the record"
// at the marker. The marker is no record: the group is caught up, in the sample and in the live
// read of the group alike, and its totals say so.
func TestAnIdleTransactionalConsumerIsCaughtUp(t *testing.T) {
	f := newFake(t)
	ctx := ctxT(t)
	f.topic(t, "payments", 2)
	rec := func(p int32, v string) *kgo.Record {
		return &kgo.Record{Topic: "payments", Partition: p, Value: []byte(v)}
	}
	kfaketest.Transaction(t, f.broker, "tx", true, rec(0, "a"), rec(1, "b")) // 0 on each, markers at 1
	kfaketest.Transaction(t, f.broker, "tx", true, rec(1, "c"))              // 2 on [1], its marker at 3
	f.commit(t, "billing", "payments", map[int32]int64{0: 1, 1: 3})          // each last record + 1
	g, err := f.c.Group(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if pl := partitionLag(t, g, "payments", p); pl.Lag != 0 || pl.NoRecords != 1 || pl.TimeLag != 0 {
			t.Errorf("payments[%d]: lag %d (%d without records), time lag %s; want caught up (0, 1 marker, 0)", p, pl.Lag, pl.NoRecords, pl.TimeLag)
		}
	}
	if g.TotalLag != 0 {
		t.Errorf("the group's total lag %d; want 0", g.TotalLag)
	}
	// A record produced since is lag again, the marker still not.
	f.produce(t, rec(0, "d")) // 2 on [0]
	if g, err = f.c.Group(ctx, "billing"); err != nil {
		t.Fatal(err)
	}
	if pl := partitionLag(t, g, "payments", 0); pl.Lag != 1 || g.TotalLag != 1 {
		t.Errorf("after a new record: lag %d, total %d; want 1 and 1", pl.Lag, g.TotalLag)
	}
}
