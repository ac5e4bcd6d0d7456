package kafka

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
)

// dlRecord is a Spring-style dead letter from original topic orig.
func dlRecord(topic string, partition int32, at time.Time, orig, typ, cause, msg string) *kgo.Record {
	r := &kgo.Record{Topic: topic, Partition: partition, Timestamp: at, Value: []byte("{}")}
	if typ != "" {
		r.Headers = []kgo.RecordHeader{
			hdr("kafka_dlt-original-topic", []byte(orig)),
			hdr("kafka_dlt-exception-fqcn", []byte(typ)),
			hdr("kafka_dlt-exception-message", []byte(msg)),
		}
		if cause != "" {
			r.Headers = append(r.Headers, hdr("kafka_dlt-exception-cause-fqcn", []byte(cause)))
		}
	}
	return r
}

const (
	listenerFailed = "org.springframework.kafka.listener.ListenerExecutionFailedException"
	illegalState   = "java.lang.IllegalStateException"
	timeout        = "java.net.SocketTimeoutException"
)

func errorFixture(t *testing.T) *fake {
	f := newFake(t)
	f.topic(t, "all.DLT", 3)
	var recs []*kgo.Record
	at := func(i int) time.Time { return recBase.Add(time.Duration(i) * time.Minute) }
	// 30 × ListenerExecutionFailed/IllegalState from orders and payments, 10 per partition.
	for i := range 30 {
		orig := "orders"
		if i%3 == 0 {
			orig = "payments"
		}
		recs = append(recs, dlRecord("all.DLT", int32(i%3), at(i), orig, listenerFailed, illegalState, "order has no customer"))
	}
	// 12 × SocketTimeout without a cause, in partition 0, the newest of them last.
	for i := range 12 {
		recs = append(recs, dlRecord("all.DLT", 0, at(100+i), "shipments", timeout, "", "read timed out"))
	}
	// The same exception type with a different cause is a different group.
	recs = append(recs, dlRecord("all.DLT", 2, at(200), "orders", listenerFailed, timeout, "wrapped timeout"))
	// 4 records without any dead-letter header.
	for i := range 4 {
		recs = append(recs, dlRecord("all.DLT", 1, at(300+i), "", "", "", ""))
	}
	f.produce(t, recs...)
	return f
}

func TestErrorGroups(t *testing.T) {
	f := errorFixture(t)
	ctx := ctxT(t)

	scan, err := f.c.ErrorGroups(ctx, "all.DLT", 0)
	if err != nil {
		t.Fatal(err)
	}
	if scan.Total != 47 || scan.Scanned != 47 || scan.Capped {
		t.Errorf("total %d scanned %d capped %v, want 47 47 false", scan.Total, scan.Scanned, scan.Capped)
	}
	type row struct {
		typ, cause string
		count      int64
		topics     []string
	}
	var got []row
	for _, g := range scan.Groups {
		got = append(got, row{g.ExceptionType, g.ExceptionCause, g.Count, g.OriginalTopics})
	}
	want := []row{
		{listenerFailed, illegalState, 30, []string{"orders", "payments"}},
		{timeout, "", 12, []string{"shipments"}},
		{"", "", 4, []string{}},
		{listenerFailed, timeout, 1, []string{"orders"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("groups\n got %+v\nwant %+v", got, want)
	}
	to := scan.Groups[1]
	if !to.FirstAt.Equal(recBase.Add(100*time.Minute)) || !to.LastAt.Equal(recBase.Add(111*time.Minute)) {
		t.Errorf("timeout group first %v last %v", to.FirstAt, to.LastAt)
	}
	if to.SampleMessage != "read timed out" || to.SamplePartition != 0 || to.SampleOffset != 21 {
		t.Errorf("sample = %q at %d/%d, want the newest: partition 0 offset 21", to.SampleMessage, to.SamplePartition, to.SampleOffset)
	}

	t.Run("Capped", func(t *testing.T) {
		scan, err := f.c.ErrorGroups(ctx, "all.DLT", 9)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, g := range scan.Groups {
			sum += g.Count
		}
		if !scan.Capped || scan.Scanned != 9 || sum != 9 {
			t.Fatalf("capped %v scanned %d counted %d, want true 9 9", scan.Capped, scan.Scanned, sum)
		}
		// 3 newest per partition: p0 → 3 timeouts, p1 → 3 without headers, p2 → 1 wrapped timeout + 2 illegal state.
		counts := map[string]int64{}
		for _, g := range scan.Groups {
			counts[g.ExceptionType+"/"+g.ExceptionCause] = g.Count
		}
		want := map[string]int64{timeout + "/": 3, "/": 3, listenerFailed + "/" + timeout: 1, listenerFailed + "/" + illegalState: 2}
		if !reflect.DeepEqual(counts, want) {
			t.Errorf("counts %v, want %v", counts, want)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		if _, err := f.c.ErrorGroups(ctx, "nope", 10); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("BadMaxScan", func(t *testing.T) {
		if _, err := f.c.ErrorGroups(ctx, "all.DLT", -1); !errors.Is(err, ops.ErrInvalid) {
			t.Fatalf("err = %v, want ErrInvalid", err)
		}
	})
}

func TestAllocate(t *testing.T) {
	for _, tc := range []struct {
		sizes  []int64
		budget int64
		want   []int64
	}{
		{[]int64{10, 10, 10}, 9, []int64{3, 3, 3}},
		{[]int64{1, 100, 100}, 21, []int64{1, 10, 10}},
		{[]int64{5, 5}, 100, []int64{5, 5}},
		{[]int64{0, 7, 3}, 10, []int64{0, 7, 3}},
		{[]int64{100, 100, 100}, 10, []int64{4, 3, 3}},
		{nil, 10, []int64{}},
	} {
		got := allocate(tc.sizes, tc.budget)
		var sum, want int64
		for i := range got {
			sum += got[i]
			want += tc.want[i]
		}
		if sum != want || len(got) != len(tc.want) {
			t.Errorf("allocate(%v, %d) = %v, want %v", tc.sizes, tc.budget, got, tc.want)
		}
		for i := range got {
			if d := got[i] - tc.want[i]; d > 1 || d < -1 {
				t.Errorf("allocate(%v, %d) = %v, want about %v", tc.sizes, tc.budget, got, tc.want)
			}
		}
	}
}

func TestDeadLetterTopics(t *testing.T) {
	f := newFake(t, func(c *configs.KafkaCluster) {
		c.DeadLetterTopics = []string{"*.DLT", "*.retry*", "*-retry-*"}
	})
	ctx := ctxT(t)
	f.topic(t, "orders", 1)
	f.topic(t, "orders.DLT", 2)
	f.topic(t, "orders.retry-0", 1)
	f.topic(t, "payments-retry-1", 1)
	f.topic(t, "empty.DLT", 1)
	f.fill(t, "orders", 0, 3)
	newest := recBase.Add(time.Hour)
	f.produce(t,
		&kgo.Record{Topic: "orders.DLT", Partition: 0, Timestamp: recBase},
		&kgo.Record{Topic: "orders.DLT", Partition: 0, Timestamp: recBase.Add(time.Minute)},
		&kgo.Record{Topic: "orders.DLT", Partition: 1, Timestamp: newest},
		&kgo.Record{Topic: "orders.retry-0", Partition: 0, Timestamp: recBase},
	)
	f.deleteRecords(t, "orders.DLT", 0, 1)

	topics, err := f.c.DeadLetterTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range topics {
		names = append(names, tp.Topic)
	}
	if want := []string{"empty.DLT", "orders.DLT", "orders.retry-0", "payments-retry-1"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("topics %v, want %v", names, want)
	}
	empty, dlt, retry, retry2 := topics[0], topics[1], topics[2], topics[3]
	if empty.Records != 0 || !empty.NewestAt.IsZero() || empty.Retry {
		t.Errorf("empty.DLT = %+v", empty)
	}
	wantParts := []DLPartition{{Partition: 0, Start: 1, End: 2, Stable: 2, Records: 1, Counted: true}, {Partition: 1, Start: 0, End: 1, Stable: 1, Records: 1, Counted: true}}
	if dlt.Records != 2 || !reflect.DeepEqual(dlt.Partitions, wantParts) || !dlt.NewestAt.Equal(newest) || dlt.Retry {
		t.Errorf("orders.DLT = %+v, want 2 records, newest %v", dlt, newest)
	}
	if !retry.Retry || retry.Records != 1 || !retry.NewestAt.Equal(recBase) {
		t.Errorf("orders.retry-0 = %+v", retry)
	}
	if !retry2.Retry {
		t.Errorf("payments-retry-1 = %+v, want Retry", retry2)
	}
}

// One dead-letter-named topic that does not exist took the list down for everyone: after a look
// at it (a 404), the client's cached listing held it with its error for 5 s, and the offsets of
// every listed topic failed with its "not found"; likewise a topic deleted between the listing
// and the offsets. Such a topic is now left out and the others are listed.
func TestDeadLetterTopicsLeaveOutATopicThatIsNotThere(t *testing.T) {
	f := newFake(t)
	ctx := ctxT(t)
	f.topic(t, "orders.DLT", 1)
	f.topic(t, "payments.DLT", 1)
	f.fill(t, "orders.DLT", 0, 2)
	listed := func(what string, want ...string) {
		t.Helper()
		topics, err := f.c.DeadLetterTopics(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var names []string
		for _, tp := range topics {
			names = append(names, tp.Topic)
		}
		if !reflect.DeepEqual(names, want) {
			t.Fatalf("%s: %v, want %v", what, names, want)
		}
		if topics[0].Records != 2 {
			t.Errorf("%s: orders.DLT holds %d records, want 2", what, topics[0].Records)
		}
	}
	listed("before", "orders.DLT", "payments.DLT")
	if _, err := f.c.Partitions(ctx, "missing.DLT"); !errors.Is(err, ops.ErrNotFound) {
		t.Fatalf("a topic that is not there: %v, want not found", err)
	}
	listed("after a look at a topic that is not there", "orders.DLT", "payments.DLT")
	// The listing is cached (5 s): the deleted topic is still in it when the offsets are asked.
	if resp, err := f.adm.DeleteTopics(ctx, "payments.DLT"); err != nil || resp.Error() != nil {
		t.Fatalf("delete payments.DLT: %v %v", err, resp.Error())
	}
	listed("a topic deleted since the listing", "orders.DLT")
}

// TestErrorGroupsSince: the cursor reads only what arrived since the last call; more than
// maxScan new records are read newest first and Capped; a cursor past a partition's end (the
// topic was recreated) reads the partition anew.
func TestErrorGroupsSince(t *testing.T) {
	f := errorFixture(t)
	ctx := ctxT(t)
	first, next, err := f.c.ErrorGroupsSince(ctx, "all.DLT", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if first.Scanned != 47 || len(first.Groups) != 4 || next[0]+next[1]+next[2] != 47 {
		t.Fatalf("first call: scanned %d, %d groups, cursor %v", first.Scanned, len(first.Groups), next)
	}
	again, next2, err := f.c.ErrorGroupsSince(ctx, "all.DLT", next, 0)
	if err != nil || again.Scanned != 0 || len(again.Groups) != 0 || !reflect.DeepEqual(next, next2) {
		t.Fatalf("nothing new: %+v %v %v", again, next2, err)
	}
	at := recBase.Add(time.Hour)
	f.produce(t, dlRecord("all.DLT", 1, at, "orders", "com.acme.PoisonException", "", "bad"),
		dlRecord("all.DLT", 2, at, "orders", "com.acme.PoisonException", "", "bad"),
		dlRecord("all.DLT", 0, at, "shipments", timeout, "", "read timed out"))
	fresh, next3, err := f.c.ErrorGroupsSince(ctx, "all.DLT", next, 0)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, g := range fresh.Groups {
		counts[g.ExceptionType] = g.Count
	}
	if fresh.Scanned != 3 || !reflect.DeepEqual(counts, map[string]int64{"com.acme.PoisonException": 2, timeout: 1}) {
		t.Fatalf("the new records: scanned %d, %v", fresh.Scanned, counts)
	}
	capped, _, err := f.c.ErrorGroupsSince(ctx, "all.DLT", map[int32]int64{0: 0, 1: 0, 2: 0}, 5)
	if err != nil || capped.Scanned != 5 || !capped.Capped || capped.Total != 50 {
		t.Fatalf("capped: %+v %v", capped, err)
	}
	recreated, _, err := f.c.ErrorGroupsSince(ctx, "all.DLT", map[int32]int64{0: next3[0] + 1000, 1: next3[1], 2: next3[2]}, 0)
	if err != nil || recreated.Scanned != next3[0] {
		t.Fatalf("a cursor past the end: scanned %d, want partition 0 anew (%d): %v", recreated.Scanned, next3[0], err)
	}
}
