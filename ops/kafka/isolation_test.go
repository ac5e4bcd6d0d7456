package kafka

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kfaketest"
)

// txnDLT writes the dead-letter topic: 12 single-record transactions of a transactional
// producer into partition 0 of topic, committed and aborted in turn (c-0, a-1, c-2, …), each
// record a Spring dead letter. The partition ends at offset 24: 12 records, 12 markers.
func txnDLT(t *testing.T, f *fake, topic string) {
	t.Helper()
	for i := range 12 {
		commit := i%2 == 0
		name := fmt.Sprintf("a-%d", i)
		if commit {
			name = fmt.Sprintf("c-%d", i)
		}
		r := dlRecord(topic, 0, recBase.Add(time.Duration(i)*time.Minute), "orders", illegalState, "", "out of stock "+name)
		r.Value = []byte(name)
		kfaketest.Transaction(t, f.broker, "listener-tx", commit, r)
	}
}

func values(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

var committedValues = []string{"c-0", "c-2", "c-4", "c-6", "c-8", "c-10"}

// The measurement: a DLT of 6 committed and 6 aborted transactional records showed 12 in
// its table and error groups and said 16 records on the list (markers counted). Every read now
// sees the 6 a read_committed consumer gets, and so does kcat.
func TestReadCommittedDeadLetterTopic(t *testing.T) {
	f := newFake(t)
	f.topic(t, "orders.DLT", 1)
	txnDLT(t, f, "orders.DLT")
	ctx := ctxT(t)

	page, err := f.c.Records(ctx, RecordQuery{Topic: "orders.DLT", Partition: 0, Order: "oldest"})
	if err != nil {
		t.Fatal(err)
	}
	if got := values(page.Records); !slices.Equal(got, committedValues) || page.End != 24 || page.Stable != 24 {
		t.Errorf("committed page %v (end %d, stable %d); want %v, end 24", got, page.End, page.Stable, committedValues)
	}
	newest, err := f.c.Records(ctx, RecordQuery{Topic: "orders.DLT", Partition: 0})
	if err != nil || len(newest.Records) != 6 || string(newest.Records[0].Value) != "c-10" {
		t.Errorf("newest page %v, %v; want the 6 committed, c-10 first", values(newest.Records), err)
	}
	across, err := f.c.RecordsAcross(ctx, AcrossQuery{Topic: "orders.DLT"})
	if err != nil || len(across.Records) != 6 {
		t.Errorf("across %v, %v; want 6", values(across.Records), err)
	}

	topics, err := f.c.DeadLetterTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(topics) != 1 || topics[0].Records != 6 || !topics[0].Counted || topics[0].Partitions[0].Offsets() != 24 {
		t.Errorf("dead-letter topics %+v; want orders.DLT with 6 records, counted, of 24 offsets", topics)
	}
	// A second listing reads nothing new and says the same.
	if again, err := f.c.DeadLetterTopics(ctx); err != nil || again[0].Records != 6 || !again[0].Counted {
		t.Errorf("second listing %+v, %v", again, err)
	}

	groups, err := f.c.ErrorGroups(ctx, "orders.DLT", 0)
	if err != nil {
		t.Fatal(err)
	}
	if groups.Scanned != 6 || groups.Total != 6 || !groups.TotalExact || groups.Capped || len(groups.Groups) != 1 || groups.Groups[0].Count != 6 {
		t.Errorf("error groups %+v; want one group of 6, 6 scanned of 6", groups)
	}
	capped, err := f.c.ErrorGroups(ctx, "orders.DLT", 8) // the newest 8 offsets: c-8, c-10 and markers
	if err != nil || capped.Scanned != 2 || capped.Total != 6 || !capped.TotalExact || !capped.Capped {
		t.Errorf("capped error groups %+v, %v; want 2 scanned of 6", capped, err)
	}
	since, cursor, err := f.c.ErrorGroupsSince(ctx, "orders.DLT", nil, 0)
	if err != nil || since.Scanned != 6 || cursor[0] != 24 {
		t.Errorf("error groups since %+v %v, %v; want 6 read, cursor at 24", since, cursor, err)
	}

	sc := f.c.NewScanner("orders.DLT")
	defer sc.Close()
	var fwd, back []Record
	if _, err := sc.Forward(ctx, 0, 0, 24, func(r Record) bool { fwd = append(fwd, r); return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Backward(ctx, 0, 0, 24, func(r Record) bool { back = append(back, r); return true }); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(back)
	if !slices.Equal(values(fwd), committedValues) || !slices.Equal(values(back), committedValues) {
		t.Errorf("scanner forward %v backward %v; want %v", values(fwd), values(back), committedValues)
	}
	var planned []Record
	if err := f.c.Scan(ctx, "orders.DLT", 0, 0, 24, func(r Record) error { planned = append(planned, r); return nil }); err != nil {
		t.Fatal(err)
	}
	rd := f.c.NewReader("orders.DLT", 0)
	defer rd.Close()
	var moved []Record
	if err := rd.Read(ctx, 0, 24, func(r Record) error { moved = append(moved, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(values(planned), committedValues) || !slices.Equal(values(moved), committedValues) {
		t.Errorf("plan read %v, job read %v; want %v", values(planned), values(moved), committedValues)
	}

	// An admin's forensic read: all 12, the aborted ones marked.
	all, err := f.c.Records(ctx, RecordQuery{Topic: "orders.DLT", Partition: 0, Order: "oldest", Isolation: ReadUncommitted})
	if err != nil {
		t.Fatal(err)
	}
	var aborted, kept []string
	for _, r := range all.Records {
		if r.Unstable {
			t.Errorf("%s is unstable with no transaction open", r.Value)
		}
		if r.Aborted {
			aborted = append(aborted, string(r.Value))
		} else {
			kept = append(kept, string(r.Value))
		}
	}
	if len(all.Records) != 12 || !slices.Equal(kept, committedValues) || len(aborted) != 6 || aborted[0] != "a-1" {
		t.Errorf("uncommitted page: %d records, kept %v, aborted %v; want 12, 6 and 6", len(all.Records), kept, aborted)
	}

	// kcat, reading as a read_committed consumer, agrees.
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (apt-get install kcat)")
	}
	out, err := exec.Command(kcat, "-C", "-b", f.broker.ListenAddrs()[0], "-X", "isolation.level=read_committed",
		"-t", "orders.DLT", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%s\n").Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	if got := strings.Fields(string(out)); !slices.Equal(got, committedValues) {
		t.Errorf("kcat read_committed: %v; want %v", got, committedValues)
	}
	out, err = exec.Command(kcat, "-C", "-b", f.broker.ListenAddrs()[0], "-X", "isolation.level=read_uncommitted",
		"-t", "orders.DLT", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%s\n").Output()
	if err != nil || bytes.Count(out, []byte("\n")) != 12 {
		t.Errorf("kcat read_uncommitted printed %q, %v; want 12 records", out, err)
	}
}

// A transaction left open holds the last stable offset. Another producer's aborted transaction
// that began before it leaves aborted records below the last stable offset and its abort marker
// past it: a read_committed client drops the records and never sees the marker, so a read waiting
// to reach its last offset waited until its time ran out. Every read ends at once instead.
func TestReadsEndBeforeAnOpenTransaction(t *testing.T) {
	f := newFake(t)
	f.topic(t, "held.DLT", 1)
	rec := func(v string) *kgo.Record {
		r := dlRecord("held.DLT", 0, recBase, "orders", illegalState, "", "x")
		r.Value = []byte(v)
		return r
	}
	kfaketest.Transaction(t, f.broker, "early", true, rec("c-0")) // 0, marker 1
	abortLater := kfaketest.OpenTransaction(t, f.broker, "aborts", rec("a-2"), rec("a-3"))
	closeLater := kfaketest.OpenTransaction(t, f.broker, "open", rec("o-4")) // the open one: the last stable offset
	abortLater(false)                                                        // marker 5, past the last stable offset
	defer closeLater(true)
	ctx := ctxT(t)
	start := time.Now()

	page, err := f.c.Records(ctx, RecordQuery{Topic: "held.DLT", Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	if got := values(page.Records); !slices.Equal(got, []string{"c-0"}) || page.Stable != 4 || page.End != 6 {
		t.Errorf("page %v stable %d end %d; want [c-0], stable 4, end 6", got, page.Stable, page.End)
	}
	topics, err := f.c.DeadLetterTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(topics) != 1 || topics[0].Records != 1 || !topics[0].Counted || topics[0].Partitions[0].Stable != 4 {
		t.Errorf("dead-letter topics %+v; want 1 record, counted, stable 4", topics)
	}
	groups, err := f.c.ErrorGroups(ctx, "held.DLT", 0)
	if err != nil || groups.Scanned != 1 {
		t.Errorf("error groups %+v, %v; want 1 scanned", groups, err)
	}
	sc := f.c.NewScanner("held.DLT")
	defer sc.Close()
	var seen []Record
	if _, err := sc.Forward(ctx, 0, 0, 4, func(r Record) bool { seen = append(seen, r); return true }); err != nil || len(seen) != 1 {
		t.Errorf("scan %v, %v; want c-0", values(seen), err)
	}
	if err := f.c.Scan(ctx, "held.DLT", 0, 2, 4, func(r Record) error { t.Errorf("planned %s", r.Value); return nil }); err != nil {
		t.Error(err)
	}
	// Reading the aborted records alone: nothing, at once.
	if got, err := f.c.readRange(ctx, "held.DLT", 0, 2, 4, ReadCommitted); err != nil || len(got) != 0 {
		t.Errorf("aborted range %v, %v; want nothing", values(got), err)
	}
	// Past the last stable offset a committed page does not go; an admin's read does, marked.
	if _, err := f.c.Records(ctx, RecordQuery{Topic: "held.DLT", Partition: 0, Offset: new(int64(4))}); err == nil ||
		!strings.Contains(err.Error(), "last stable offset") {
		t.Errorf("a committed page at offset 4: %v; want a 400 naming the last stable offset", err)
	}
	all, err := f.c.Records(ctx, RecordQuery{Topic: "held.DLT", Partition: 0, Order: "oldest", Isolation: ReadUncommitted})
	if err != nil {
		t.Fatal(err)
	}
	marks := []string{}
	for _, r := range all.Records {
		marks = append(marks, fmt.Sprintf("%s:%v:%v", r.Value, r.Aborted, r.Unstable))
	}
	if want := []string{"c-0:false:false", "a-2:true:false", "a-3:true:false", "o-4:false:true"}; !slices.Equal(marks, want) {
		t.Errorf("uncommitted page %v; want %v", marks, want)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("the reads took %v; each should end within a probe (%v), not at its timeout", took, idleProbe)
	}
}

// A transaction left open is listed with its partition, producer, transactional id and start
// offset (what holds the last stable offset), open since about when it began; ended, it is gone.
func TestOpenTransactions(t *testing.T) {
	f := newFake(t, func(c *configs.KafkaCluster) { c.HangingTransactionAfter = configs.Duration(time.Second) })
	f.topic(t, "orders", 2)
	f.fill(t, "orders", 1, 3)
	ctx := ctxT(t)
	if got, err := f.c.OpenTransactions(ctx); err != nil || len(got) != 0 {
		t.Fatalf("before any transaction: %+v, %v", got, err)
	}
	kfaketest.Transaction(t, f.broker, "done-tx", true, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte("x")})
	began := time.Now()
	end := kfaketest.OpenTransaction(t, f.broker, "stuck-tx", &kgo.Record{Topic: "orders", Partition: 1, Value: []byte("y")})
	f.fill(t, "orders", 1, 2) // written after it: held back too

	got, err := f.c.OpenTransactions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("open transactions %+v; want stuck-tx alone", got)
	}
	o := got[0]
	if o.Topic != "orders" || o.Partition != 1 || o.TransactionalID != "stuck-tx" || o.StartOffset != 5 || o.End != 8 ||
		o.Held() != 3 || o.Hanging || o.State != "Ongoing" || !o.SinceKnown || o.ProducerID < 0 || o.After != time.Second {
		t.Errorf("open transaction %+v; want orders[1] of stuck-tx from offset 5 holding 3, ongoing, not hanging", o)
	}
	if d := o.Since.Sub(began); d < -2*time.Second || d > 2*time.Second {
		t.Errorf("since %v, began about %v", o.Since, began)
	}
	if o.Overdue(o.Since.Add(500*time.Millisecond)) || !o.Overdue(o.Since.Add(2*time.Second)) {
		t.Errorf("overdue after hanging_transaction_after (1s) only")
	}
	if cmd := o.AbortCommand("b:9092"); cmd != "kafka-transactions.sh --bootstrap-server b:9092 abort --topic orders --partition 1 --start-offset 5" {
		t.Errorf("abort command %q", cmd)
	}
	end(true)
	if got, err := f.c.OpenTransactions(ctx); err != nil || len(got) != 0 {
		t.Errorf("after it committed: %+v, %v; want none", got, err)
	}
}

// What arrived is counted in records, not offsets: after the first listing (which counts the 6
// committed records there as already there), two committed and two aborted transactions add 8
// offsets and 2 arrivals; records deleted from the start are counted again, not as arrivals.
func TestArrivalsAreRecords(t *testing.T) {
	f := newFake(t)
	f.topic(t, "orders.DLT", 1)
	txnDLT(t, f, "orders.DLT")
	ctx := ctxT(t)
	first, err := f.c.DeadLetterTopics(ctx)
	if err != nil || first[0].Arrived != 0 || !first[0].ArrivalsCounted {
		t.Fatalf("first listing %+v, %v; want nothing arrived yet", first, err)
	}
	for i, commit := range []bool{true, false, true, false} {
		r := dlRecord("orders.DLT", 0, recBase, "orders", illegalState, "", "x")
		r.Value = fmt.Appendf(nil, "n-%d", i)
		kfaketest.Transaction(t, f.broker, "listener-tx", commit, r)
	}
	next, err := f.c.DeadLetterTopics(ctx)
	if err != nil || next[0].Arrived != 2 || next[0].Records != 8 || next[0].Partitions[0].End != 32 {
		t.Fatalf("after 2 committed and 2 aborted: %+v, %v; want 2 arrived, 8 records, end 32", next, err)
	}
	f.deleteRecords(t, "orders.DLT", 0, 10) // c-0, c-2, c-4 and their neighbours go
	after, err := f.c.DeadLetterTopics(ctx)
	if err != nil || after[0].Arrived != 2 || after[0].Records != 5 || !after[0].Counted {
		t.Errorf("after deleting offsets below 10: %+v, %v; want 5 records, still 2 arrived", after, err)
	}
}

// An offset move's copy of the skipped records reads them committed (an aborted record is not
// copied) and refuses (409) a range reaching past the last stable offset: what an open
// transaction holds cannot be copied, and skipping it uncopied would lose it once it commits.
func TestCopySkippedStopsAtOpenTransactions(t *testing.T) {
	f := newFake(t)
	f.topic(t, "orders", 1)
	f.topic(t, "orders.DLT", 1)
	f.fill(t, "orders", 0, 2)                                                                         // 0, 1
	kfaketest.Transaction(t, f.broker, "tx", false, &kgo.Record{Topic: "orders", Value: []byte("a")}) // 2, marker 3
	f.fill(t, "orders", 0, 1)                                                                         // 4
	ctx := ctxT(t)
	res, err := f.c.CopySkipped(ctx, CopyRequest{PlanID: "p1", Group: "g", Topic: "orders", Ranges: map[int32][2]int64{0: {0, 5}}, Dest: "orders.DLT"})
	if err != nil || res.Copied != 3 {
		t.Fatalf("copy of 0..4: %+v, %v; want the 3 committed records copied, not the aborted one", res, err)
	}
	end := kfaketest.OpenTransaction(t, f.broker, "open-tx", &kgo.Record{Topic: "orders", Value: []byte("o")}) // 5
	defer end(true)
	_, err = f.c.CopySkipped(ctx, CopyRequest{PlanID: "p2", Group: "g", Topic: "orders", Ranges: map[int32][2]int64{0: {4, 6}}, Dest: "orders.DLT"})
	if !errors.Is(err, ops.ErrConflict) || !strings.Contains(err.Error(), "held by a transaction still open (the last stable offset is 5)") {
		t.Errorf("a copy past the open transaction: %v; want a 409", err)
	}
}
