package replay_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

func kafkaSource(partition int32, from, to int64) replay.Source {
	return replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT", Partition: &partition, FromOffset: &from, ToOffset: &to}
}

func TestKafkaReplaySkipsProcessedAndPublishesTheRestOnce(t *testing.T) {
	w := newWorld(t)
	w.deadLetter(t, 0, "m-1", "k-1", "com.acme.StockException")
	w.deadLetter(t, 0, "m-2", "k-2", "com.acme.StockException")
	w.deadLetter(t, 0, "m-3", "k-3", "com.acme.PriceException")
	w.processed(t, "m-2")
	e := w.engine(t, "a")
	ctx := ctxT(t)

	plan, err := e.Plan(ctx, "alice", kafkaSource(0, 0, 99), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Total != 3 || plan.Counts[replay.Publish] != 2 || plan.Counts[replay.SkipProcessed] != 1 {
		t.Fatalf("plan counts %v (total %d)", plan.Counts, plan.Total)
	}
	for _, it := range plan.Items {
		if it.Destination.Topic != "orders" || it.Consumer != "inventory-service" {
			t.Fatalf("item %+v", it)
		}
	}
	if plan.ErrorGroups["com.acme.StockException"][replay.Publish] != 1 {
		t.Errorf("error groups %v", plan.ErrorGroups)
	}

	work(t, e)
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "fixed stock bug", RatePerSecond: 1000})
	if job.Status != replay.JobDone || job.Published != 2 || job.Skipped != 1 || job.Failed != 0 {
		t.Fatalf("job %+v", job)
	}
	got := w.originals(t)
	if len(got) != 2 {
		t.Fatalf("%d records on the original topic, want 2", len(got))
	}
	for _, r := range got {
		id, _ := header(r, "messageId")
		if id == "m-2" {
			t.Fatal("a processed message was republished")
		}
		if string(r.Key) != "k-"+id[2:] {
			t.Errorf("key %q for %s: the original key must be kept", r.Key, id)
		}
		if n, _ := header(r, replay.HeaderReplayCount); n != "1" {
			t.Errorf("replay count header %q", n)
		}
		if by, _ := header(r, replay.HeaderReplayedBy); by != "alice" {
			t.Errorf("replayed-by %q", by)
		}
		if src, _ := header(r, replay.HeaderSource); src == "" {
			t.Error("no source header")
		}
		if _, ok := header(r, "kafka_dlt-exception-message"); ok {
			t.Error("the DLT exception headers must be stripped")
		}
		if tr, _ := header(r, "traceId"); tr != "t-"+id {
			t.Errorf("other headers must be kept: traceId %q", tr)
		}
	}
	if !contains(w.audit.actions(), "replay.start") || !contains(w.audit.actions(), "replay.finish") {
		t.Errorf("audit: %v", w.audit.actions())
	}

	// The same selection again: everything is already replayed or processed; nothing moves.
	again, err := e.Plan(ctx, "alice", kafkaSource(0, 0, 99), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Counts[replay.SkipAlreadyReplayed] != 2 || again.Counts[replay.Publish] != 0 {
		t.Fatalf("second plan %v", again.Counts)
	}
}

func TestKafkaForcePublishesProcessedWithAReason(t *testing.T) {
	w := newWorldWith(t, "X", 0)
	w.processed(t, "m-1")
	e := w.engine(t, "a")
	work(t, e)
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "bob", kafkaSource(0, 0, 0), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "bob", Role: access.Admin}, Force: true}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("force without reason: %v", err)
	}
	if job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "bob", Role: access.Admin}, Force: true,
		Reason: "consumer lost its DB"}); job.Published != 1 {
		t.Fatalf("forced job %+v", job)
	}
	if n := len(w.originals(t)); n != 1 {
		t.Fatalf("%d records published, want 1", n)
	}
}

func TestKafkaFilterAndUnresolvable(t *testing.T) {
	w := newWorld(t)
	w.deadLetter(t, 1, "m-1", "k-1", "A")
	w.deadLetter(t, 1, "m-2", "k-2", "B")
	// A record with no dead-letter headers at all: no destination.
	if err := w.client.ProduceSync(ctxT(t), kgoRecord("orders.DLT", 1, "plain")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e := w.engine(t, "a")
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "a", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{ExceptionType: "B"})
	if err != nil || plan.Total != 1 || plan.Items[0].MessageID != "m-2" {
		t.Fatalf("filtered plan %+v, %v", plan, err)
	}
	plan, err = e.Plan(ctx, "a", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{})
	if err != nil || plan.Counts[replay.SkipUnresolvable] != 1 {
		t.Fatalf("plan %v, %v", plan.Counts, err)
	}
	bad := []struct {
		src  replay.Source
		want error
	}{
		{replay.Source{Kind: "kafka", Cluster: "nope", Topic: "orders.DLT"}, ops.ErrNotFound},
		{replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT", Partition: new(int32(9))}, ops.ErrInvalid},
		{replay.Source{Kind: "kafka", Cluster: "main"}, ops.ErrInvalid},
		{replay.Source{Kind: "sqs"}, ops.ErrInvalid},
	}
	for _, tc := range bad {
		if _, err := e.Plan(ctx, "a", tc.src, replay.Filter{}); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.src, err, tc.want)
		}
	}
}

// A to_offset of 2^63-1 means "to the end" (to+1 overflowed: "no messages"); an empty source
// name is 400 "required", not 404 for the cluster "".
func TestKafkaPlanBounds(t *testing.T) {
	w := newWorldWith(t, "com.acme.StockException", 0, 0)
	e := w.engine(t, "a")
	plan, err := e.Plan(ctxT(t), "alice", kafkaSource(0, 0, math.MaxInt64), replay.Filter{})
	if err != nil || plan.Total != 2 {
		t.Fatalf("to_offset MaxInt64: %v, %d items; want 2", err, plan.Total)
	}
	for _, src := range []replay.Source{
		{Kind: "kafka", Topic: "orders.DLT"},
		{Kind: "rabbitmq", Queue: "q"},
		{Kind: "outbox", IDs: []int64{1}},
	} {
		_, err := e.Plan(ctxT(t), "alice", src, replay.Filter{})
		var fe *ops.FieldError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "source.") || fe.Problem != "required" {
			t.Errorf("%s without a name: %v; want source.…: required", src.Kind, err)
		}
	}
}

// "records": [] is a client with nothing ticked: it selected the whole topic, as if records were
// left out. It is refused; absent (or null) still selects by offsets and filter.
func TestKafkaPlanEmptyRecordsIsRefused(t *testing.T) {
	w := newWorldWith(t, "com.acme.StockException", 0, 1)
	e := w.engine(t, "a")
	ctx := ctxT(t)
	for _, body := range []string{
		`{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":[]}`,
		`{"kind":"kafka","cluster":"main","topic":"orders.DLT","partition":0,"records":[]}`,
	} {
		var src replay.Source
		if err := json.Unmarshal([]byte(body), &src); err != nil {
			t.Fatal(err)
		}
		plan, err := e.Plan(ctx, "alice", src, replay.Filter{})
		want := "source.records: empty — tick at least one record, or leave records out to select by offsets/filter"
		if !errors.Is(err, ops.ErrInvalid) || err.Error() != want {
			t.Errorf("%s: plan of %d (%v), err %v; want %q", body, plan.Total, plan.Counts, err, want)
		}
	}
	for _, body := range []string{
		`{"kind":"kafka","cluster":"main","topic":"orders.DLT"}`,
		`{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":null}`,
	} {
		var src replay.Source
		if err := json.Unmarshal([]byte(body), &src); err != nil {
			t.Fatal(err)
		}
		if plan, err := e.Plan(ctx, "alice", src, replay.Filter{}); err != nil || plan.Total != 2 {
			t.Errorf("%s: plan of %d, err %v; want the whole topic (2)", body, plan.Total, err)
		}
	}
}

// Explicit records: exactly those are planned, in partition and offset order, whatever order and
// repetitions they came in; a record that does not exist, or records mixed with a range, is a 4xx.
func TestKafkaPlanOfExplicitRecords(t *testing.T) {
	w := newWorld(t)
	w.deadLetters(t, 2000, nil)
	e := w.engine(t, "a")
	ctx := ctxT(t)
	refs := []replay.RecordRef{{Partition: 1, Offset: 900}, {Partition: 0, Offset: 3}, {Partition: 1, Offset: 2},
		{Partition: 0, Offset: 3}, {Partition: 0, Offset: 4}, {Partition: 0, Offset: 999}}
	plan, err := e.Plan(ctx, "a", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT", Records: refs}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range plan.Items {
		got = append(got, it.Locator)
	}
	// The locator carries the topic's ID: a recreated topic is another topic.
	id := plan.Source.TopicID
	if len(id) != 32 {
		t.Fatalf("plan source topic id %q, want the topic's 16-byte id in hex", id)
	}
	want := strings.ReplaceAll("[kafka:main/T/0/3 kafka:main/T/0/4 kafka:main/T/0/999 kafka:main/T/1/2 kafka:main/T/1/900]", "T", "orders.DLT@"+id)
	if fmt.Sprint(got) != want || plan.Total != 5 {
		t.Fatalf("planned %v (total %d), want %s", got, plan.Total, want)
	}
	// Record 0:3 is the 7th benchmark record (partition 0 holds the even ones): its id is m-6.
	if plan.Items[0].MessageID != "m-6" || plan.Items[0].Destination.Topic != "orders" {
		t.Fatalf("first item %+v", plan.Items[0])
	}
	last := int64(10)
	for _, src := range []replay.Source{
		{Kind: "kafka", Cluster: "main", Topic: "orders.DLT", Records: []replay.RecordRef{{Partition: 0, Offset: 5000}}},
		{Kind: "kafka", Cluster: "main", Topic: "orders.DLT", Records: []replay.RecordRef{{Partition: 7, Offset: 0}}},
		{Kind: "kafka", Cluster: "main", Topic: "orders.DLT", Records: refs, ToOffset: &last},
		{Kind: "kafka", Cluster: "main", Topic: "orders.DLT", Records: make([]replay.RecordRef, replay.MaxRecords+1)},
	} {
		if _, err := e.Plan(ctx, "a", src, replay.Filter{}); !errors.Is(err, ops.ErrInvalid) {
			t.Errorf("%d records, to %v: %v, want invalid", len(src.Records), src.ToOffset, err)
		}
	}
}

// A dead letter whose original topic does not exist was planned "publish", to "(any partition:
// no key)" although it has a key, and its job failed with the driver's text twice over. The plan
// asks every destination topic of a chunk in one metadata request and skips such a message as
// unresolvable, saying so; a topic deleted between the plan and the job fails that message alone,
// in a person's words, once.
func TestKafkaPlanSkipsAMissingOriginalTopic(t *testing.T) {
	broker := kfaketest.Cluster(t)
	w := newWorldOn(t, broker.ListenAddrs()[0])
	ctx := ctxT(t)
	for topic, partitions := range map[string]int32{"orders": 1, "orders.DLT": 2, "gone-soon": 1} {
		if _, err := w.adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	originals := []string{"orders", "does-not-exist", "gone-soon", "does-not-exist"}
	w.deadLetters(t, len(originals), func(i int, r *kgo.Record) {
		r.Headers[0].Value = []byte(originals[i]) // kafka_dlt-original-topic
	})
	var mu sync.Mutex
	var asked [][]string // the metadata requests naming does-not-exist
	broker.ControlKey(int16(kmsg.Metadata), func(r kmsg.Request) (kmsg.Response, error, bool) {
		broker.KeepControl()
		var names []string
		for _, t := range r.(*kmsg.MetadataRequest).Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
			}
		}
		if slices.Contains(names, "does-not-exist") {
			mu.Lock()
			asked = append(asked, names)
			mu.Unlock()
		}
		return nil, nil, false
	})
	e := w.engine(t, "a")
	plan, err := e.Plan(ctx, "alice", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(asked) != 1 || !slices.Contains(asked[0], "gone-soon") || !slices.Contains(asked[0], "orders") {
		t.Errorf("metadata requests naming does-not-exist: %v; want one, naming the plan's other destinations too", asked)
	}
	mu.Unlock()
	if plan.Counts[replay.Publish] != 2 || plan.Counts[replay.SkipUnresolvable] != 2 {
		t.Fatalf("plan counts %v; want 2 to publish, 2 unresolvable", plan.Counts)
	}
	for _, it := range plan.Items {
		switch it.MessageID {
		case "m-1", "m-3":
			if it.Action != replay.SkipUnresolvable || it.Note != "original topic does-not-exist does not exist" || it.Destination.String() != "unresolved" {
				t.Errorf("%s: %s to %s, note %q; want skip_unresolvable: original topic does-not-exist does not exist", it.MessageID, it.Action, it.Destination, it.Note)
			}
		case "m-2":
			if it.Action != replay.Publish || it.Destination.String() != "kafka main → gone-soon partition 0 (from the key)" {
				t.Errorf("%s: %s to %s", it.MessageID, it.Action, it.Destination)
			}
		}
	}
	if resp, err := w.adm.DeleteTopics(ctx, "gone-soon"); err != nil || resp.Error() != nil {
		t.Fatalf("delete gone-soon: %v %v", err, resp.Error())
	}
	work(t, e)
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "r", RatePerSecond: 1000})
	if job.Published != 1 || job.Failed != 1 || job.Skipped != 2 {
		t.Fatalf("job %s published %d failed %d skipped %d; want 1, 1, 2", job.Status, job.Published, job.Failed, job.Skipped)
	}
	ledger, err := e.Ledger(ctx, job.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ledger, func(l replay.LedgerEntry) bool { return l.MessageID == "m-2" })
	if i < 0 || ledger[i].Outcome != replay.LedgerFailed || ledger[i].Detail != "topic gone-soon does not exist" {
		t.Errorf("ledger %+v; want m-2 failed: topic gone-soon does not exist", ledger)
	}
}

// The dead-letter headers name the original partition; the key hashes elsewhere. The replay lands
// where the header says, and the plan says why.
func TestKafkaReplayKeepsTheOriginalPartition(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	if _, err := w.adm.CreateTopic(ctx, 4, 1, nil, "payments"); err != nil {
		t.Fatal(err)
	}
	key := ""
	for i := 0; key == ""; i++ { // a key whose hash is not partition 2
		if k := fmt.Sprintf("k-%d", i); kafka.KeyPartition("payments", []byte(k), 4) != 2 {
			key = k
		}
	}
	keyPart := kafka.KeyPartition("payments", []byte(key), 4)
	part := make([]byte, 4)
	binary.BigEndian.PutUint32(part, 2)
	dlt := func(id string, header []byte) *kgo.Record {
		h := []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("payments")}, {Key: "messageId", Value: []byte(id)}}
		if header != nil {
			h = append(h, kgo.RecordHeader{Key: "kafka_dlt-original-partition", Value: header})
		}
		return &kgo.Record{Topic: "orders.DLT", Partition: 0, Key: []byte(key), Value: []byte(`{}`), Headers: h}
	}
	gone := make([]byte, 4)
	binary.BigEndian.PutUint32(gone, 9) // payments has no partition 9
	if err := w.client.ProduceSync(ctx, dlt("by-header", part), dlt("no-header", nil), dlt("gone", gone)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e := w.engine(t, "a")
	plan, err := e.Plan(ctx, "a", kafkaSource(0, 0, 10), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]replay.Destination{
		"by-header": {Partition: 2, PartitionSource: replay.PartitionFromHeader},
		"no-header": {Partition: keyPart, PartitionSource: replay.PartitionFromKey},
		"gone":      {Partition: keyPart, PartitionSource: replay.PartitionFromKey},
	}
	for _, it := range plan.Items {
		d, w := it.Destination, want[it.MessageID]
		if d.Partition != w.Partition || d.PartitionSource != w.PartitionSource {
			t.Errorf("%s: planned partition %d from %q, want %d from %q", it.MessageID, d.Partition, d.PartitionSource, w.Partition, w.PartitionSource)
		}
	}
	work(t, e)
	if job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "a"}}); job.Published != 3 {
		t.Fatalf("job %+v", job)
	}
	// An independent read of every partition of payments.
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.cfg.Kafka[0].Brokers...), kgo.ConsumeTopics("payments"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]int32{}
	for len(got) < 3 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			id, _ := header(r, "messageId")
			got[id] = r.Partition
		})
	}
	for id, d := range want {
		if got[id] != d.Partition {
			t.Errorf("%s landed in partition %d, want %d", id, got[id], d.Partition)
		}
	}
}

// A topic deleted and created again under the same name holds other records at the same offsets:
// they are new dead letters (not skip_already_replayed), and a plan of the old topic refuses to run.
func TestKafkaRecreatedTopicIsANewTopic(t *testing.T) {
	w := newWorld(t)
	ctx := ctxT(t)
	w.deadLetter(t, 0, "old-1", "k1", "TimeoutException")
	e := w.engine(t, "a")
	work(t, e)
	plan, err := e.Plan(ctx, "a", kafkaSource(0, 0, 10), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "a"}}); job.Published != 1 {
		t.Fatalf("first job %+v", job)
	}
	stale, err := e.Plan(ctx, "a", kafkaSource(0, 0, 10), replay.Filter{})
	if err != nil || stale.Counts[replay.SkipAlreadyReplayed] != 1 {
		t.Fatalf("the same record planned again: %v, %v", stale.Counts, err)
	}
	if _, err := w.adm.DeleteTopic(ctx, "orders.DLT"); err != nil {
		t.Fatal(err)
	}
	// The broker refuses the name while the deletion completes.
	waittest.For(t, 10*time.Second, "orders.DLT created again", func() (error, bool) {
		_, err := w.adm.CreateTopic(ctx, 2, 1, nil, "orders.DLT")
		return err, err == nil
	})
	// TopicID asks the broker, not the client's metadata cache: the new ID at once.
	if id, err := w.cluster.TopicID(ctx, "orders.DLT"); err != nil || id == stale.Source.TopicID {
		t.Fatalf("topic id after the recreation %q, %v; want a new one", id, err)
	}
	// A fresh producer: the test's own client still knows the old topic's ID.
	fresher := newWorldOn(t, w.cfg.Kafka[0].Brokers[0])
	fresher.deadLetter(t, 0, "new-1", "k1", "TimeoutException")
	fresh, err := e.Plan(ctx, "a", kafkaSource(0, 0, 10), replay.Filter{})
	if err != nil || fresh.Total != 1 || fresh.Counts[replay.Publish] != 1 || fresh.Items[0].MessageID != "new-1" {
		t.Fatalf("the recreated topic's record at offset 0: %v %+v, %v", fresh.Counts, fresh.Items, err)
	}
	if old := runJob(t, e, replay.StartRequest{PlanID: stale.ID, Actor: access.Actor{Name: "a"}}); old.Status != replay.JobFailed || !strings.Contains(old.Error, "created again") {
		t.Fatalf("a plan of the old topic ran: %+v", old)
	}
}

// replay.strip_headers decides which dead-letter headers a replay drops: [] keeps them all, a
// custom list drops those prefixes; Redrive's own headers are written anew either way.
func TestStripHeadersIsConfigurable(t *testing.T) {
	w := newWorldWith(t, "com.acme.StockException", 0)
	w.settings.StripHeaders = []string{"TRACEID"} // any case
	e := w.engine(t, "a")
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "alice", kafkaSource(0, 0, 0), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	work(t, e)
	if job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, RatePerSecond: 10}); job.Published != 1 {
		t.Fatalf("job %+v", job)
	}
	got := w.originals(t)
	if len(got) != 1 {
		t.Fatalf("%d records on the original topic", len(got))
	}
	if _, ok := header(got[0], "traceId"); ok {
		t.Error("traceId was configured to be stripped")
	}
	if v, ok := header(got[0], "kafka_dlt-exception-message"); !ok || v != "boom" {
		t.Errorf("the exception headers were not configured to be stripped: %q %v", v, ok)
	}
	if n, _ := header(got[0], replay.HeaderReplayCount); n != "1" {
		t.Errorf("replay count %q", n)
	}
}

// Twenty concurrent Kafka and outbox plans: none waits for a pooled connection while holding one.
func TestTwentyConcurrentPlans(t *testing.T) {
	w := newWorld(t)
	w.deadLetters(t, 300, nil)
	ke := w.engine(t, "a")
	oe, _ := outboxEngine(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, last_error, created_at)
		SELECT 'e'||i, 'Order', 'o'||i, 'OrderCreated', 1, '{}', 'DEAD', 10, now(), 'boom', now() FROM generate_series(1, 300) i`)
	cases := map[string]func() (replay.Plan, error){
		"kafka": func() (replay.Plan, error) { return ke.Plan(ctxT(t), "a", kafkaSource(0, 0, 10_000), replay.Filter{}) },
		"outbox": func() (replay.Plan, error) {
			return oe.Plan(ctxT(t), "a", replay.Source{Kind: "outbox", Outbox: "orders", Limit: 1000}, replay.Filter{})
		},
	}
	for name, plan := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			var wg sync.WaitGroup
			totals := make(chan int, 20)
			for range 20 {
				wg.Go(func() {
					p, err := plan()
					if err != nil {
						t.Error(err)
					}
					totals <- p.Total
				})
			}
			wg.Wait()
			close(totals)
			first := -1
			for n := range totals {
				if first < 0 {
					first = n
				}
				if n != first || n == 0 {
					t.Errorf("plans of %d and %d messages", first, n)
				}
			}
			t.Logf("20 concurrent %s plans in %v", name, time.Since(start))
		})
	}
}

// A plan larger than a chunk streams through in several: seqs stay contiguous, every count is the
// whole plan's (not the items shown), and the stored plan reads back the same.
func TestLargePlanStreamsInChunks(t *testing.T) {
	w := newWorld(t)
	const n = 12_345
	w.deadLetters(t, n, func(i int, r *kgo.Record) {
		if i%2 == 1 {
			r.Headers[2].Value = []byte("com.acme.PriceException") // kafka_dlt-exception-fqcn
		}
	})
	pgtest.Exec(t, w.inboxDSN, `INSERT INTO inbox_message SELECT 'm-' || g, 'inventory-service', now(), now()
		FROM generate_series(0, $1::int - 1, 10) g`, n) // every tenth processed: all of them even
	e := w.engine(t, "a")
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "a", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	processed := (n + 9) / 10
	if plan.Total != n || plan.Counts[replay.Publish] != n-processed || plan.Counts[replay.SkipProcessed] != processed ||
		len(plan.Items) != replay.MaxPlanItemsShown {
		t.Fatalf("plan total %d counts %v, %d items", plan.Total, plan.Counts, len(plan.Items))
	}
	stock, price := plan.ErrorGroups["com.acme.StockException"], plan.ErrorGroups["com.acme.PriceException"]
	if stock[replay.SkipProcessed] != processed || stock[replay.Publish] != (n+1)/2-processed || price[replay.Publish] != n/2 {
		t.Fatalf("error groups %v", plan.ErrorGroups)
	}
	loaded, err := e.LoadPlan(ctx, plan.ID)
	if err != nil || fmt.Sprint(loaded.ErrorGroups) != fmt.Sprint(plan.ErrorGroups) || fmt.Sprint(loaded.Counts) != fmt.Sprint(plan.Counts) {
		t.Fatalf("loaded %v %v, made %v %v (%v)", loaded.Counts, loaded.ErrorGroups, plan.Counts, plan.ErrorGroups, err)
	}
	items, err := w.store.PlanItems(ctx, plan.ID, 0, 2*n)
	if err != nil || len(items) != n {
		t.Fatalf("%d stored items, %v", len(items), err)
	}
	for i, it := range items {
		if it.Seq != i {
			t.Fatalf("item %d has seq %d", i, it.Seq)
		}
	}
}

// recreate deletes topic and creates it again with n partitions; the test's client forgets the
// old topic.
func (w *world) recreate(tb testing.TB, topic string, n int32) {
	tb.Helper()
	ctx := ctxT(tb)
	if resp, err := w.adm.DeleteTopics(ctx, topic); err != nil || resp.Error() != nil {
		tb.Fatalf("delete %s: %v %v", topic, err, resp.Error())
	}
	// The broker refuses the name while the deletion completes.
	waittest.For(tb, 10*time.Second, topic+" created again", func() (error, bool) {
		_, err := w.adm.CreateTopic(ctx, n, 1, nil, topic)
		return err, err == nil
	})
	w.client.PurgeTopicsFromClient(topic)
}

// recreateDLT recreates orders.DLT (two partitions) and writes the given dead letters to its
// partition 0.
func (w *world) recreateDLT(tb testing.TB, ids ...string) {
	tb.Helper()
	w.recreate(tb, "orders.DLT", 2)
	for i, id := range ids {
		w.deadLetter(tb, 0, id, fmt.Sprintf("other-k-%d", i), "OtherException")
	}
}

// planThree is a world with m-1, m-2, m-3 in orders.DLT[0], a working engine, and a plan of them.
func planThree(tb testing.TB) (*world, *replay.Engine, replay.Plan) {
	tb.Helper()
	w := newWorldWith(tb, "StockException", 0, 0, 0)
	e := w.engine(tb, "a")
	work(tb, e)
	plan, err := e.Plan(ctxT(tb), "alice", kafkaSource(0, 0, 2), replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != 3 {
		tb.Fatalf("plan %v, %v; want 3 to publish", plan.Counts, err)
	}
	return w, e, plan
}

// The dead-letter topic deleted and created again just before its job started: the topic-ID check
// answered from the client's metadata cache, still the old ID for up to 5 s, and the job published
// whatever the new topic held at the planned offsets — records never planned nor checked against
// the inbox. The check now asks the broker: the job fails saying why and publishes nothing.
func TestKafkaSourceRecreatedJustBeforeTheJob(t *testing.T) {
	w, e, plan := planThree(t)
	w.recreateDLT(t, "other-1", "other-2", "other-3")
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "r", RatePerSecond: 1000})
	if job.Status != replay.JobFailed || job.Published != 0 || !strings.Contains(job.Error, "deleted and created again") {
		t.Errorf("job %s published %d, error %q; want failed: deleted and created again", job.Status, job.Published, job.Error)
	}
	if got := w.originals(t); len(got) != 0 {
		t.Fatalf("%d records on the original topic, want none", len(got))
	}
}

// A plan without the topic's ID (a broker before Kafka 2.8 reports none) leaves the job nothing to
// compare before it runs; the records themselves are checked: a record at a planned offset whose
// message id is not the planned one is failed, saying why, and never published.
func TestKafkaJobMovesOnlyThePlannedRecords(t *testing.T) {
	w, e, plan := planThree(t)
	ctx := ctxT(t)
	pgtest.Exec(t, string(w.cfg.Store.DSN), `UPDATE redrive.replay_plan SET source = source - 'topic_id' WHERE id = $1`, plan.ID)
	// m-2 is written again at its offset: the same message, so it goes; the others are other records.
	w.recreateDLT(t, "other-1", "m-2", "other-3")
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "r", RatePerSecond: 1000})
	if job.Published != 1 || job.Failed != 2 {
		t.Errorf("job %s published %d failed %d; want 1 and 2", job.Status, job.Published, job.Failed)
	}
	got := w.originals(t)
	if len(got) != 1 {
		t.Fatalf("%d records on the original topic, want 1", len(got))
	}
	if id, _ := header(got[0], "messageId"); id != "m-2" {
		t.Errorf("published %s, want m-2", id)
	}
	ledger, err := e.Ledger(ctx, job.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ledger) != 3 {
		t.Fatalf("ledger %+v; want 3 entries", ledger)
	}
	for _, l := range ledger {
		if l.MessageID == "m-2" {
			continue
		}
		other := "other-" + l.MessageID[2:]
		want := fmt.Sprintf(`not the record the plan saw: its offset now holds message %q, not %q; the dead-letter topic was deleted and created again since the plan was made`, other, l.MessageID)
		if l.Outcome != replay.LedgerFailed || l.Detail != want {
			t.Errorf("%s: %s %q; want failed: %s", l.MessageID, l.Outcome, l.Detail, want)
		}
	}
}

// The original topic deleted and created again between two replays: the console's producer kept
// the old topic's ID and every later replay to it failed "UNKNOWN_TOPIC_ID" until a restart. The
// second replay now lands in the new topic, once.
func TestKafkaReplayToARecreatedOriginalTopic(t *testing.T) {
	w := newWorldWith(t, "StockException", 0)
	e := w.engine(t, "a")
	work(t, e)
	ctx := ctxT(t)
	replayFrom := func(offset int64) replay.Job {
		t.Helper()
		plan, err := e.Plan(ctx, "alice", kafkaSource(0, offset, offset), replay.Filter{})
		if err != nil || plan.Counts[replay.Publish] != 1 {
			t.Fatalf("plan %v, %v; want 1 to publish", plan.Counts, err)
		}
		return runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "r", RatePerSecond: 1000})
	}
	if job := replayFrom(0); job.Published != 1 {
		t.Fatalf("first job %s published %d failed %d: %s", job.Status, job.Published, job.Failed, job.Error)
	}
	w.recreate(t, "orders", 1)
	w.deadLetter(t, 0, "m-2", "k-2", "StockException")
	if job := replayFrom(1); job.Published != 1 || job.Failed != 0 {
		ledger, _ := e.Ledger(ctx, job.ID, 10)
		t.Fatalf("second job %s published %d failed %d: %+v", job.Status, job.Published, job.Failed, ledger)
	}
	got := w.originals(t)
	if len(got) != 1 {
		t.Fatalf("%d records on the new original topic, want 1", len(got))
	}
	if id, _ := header(got[0], "messageId"); id != "m-2" {
		t.Errorf("the new topic holds %s, want m-2", id)
	}
}

// Retention (or DeleteRecords) moves a partition's log start past the first records of a plan
// before its job runs: those are settled failed as gone and the rest are replayed. The job used to
// ask for the first planned offset, meet OFFSET_OUT_OF_RANGE and pause on the same batch for ever,
// holding every claim.
func TestKafkaJobWhoseHeadRetentionDeleted(t *testing.T) {
	w := newWorld(t)
	const n = 10
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("m-%d", i)
		w.deadLetter(t, 0, ids[i], "k"+ids[i], "com.acme.StockException")
	}
	e := w.engine(t, "a")
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "alice", kafkaSource(0, 0, n), replay.Filter{})
	if err != nil || plan.Counts[replay.Publish] != n {
		t.Fatalf("plan %v, %v", plan.Counts, err)
	}
	const gone = 3
	del := kadm.Offsets{}
	del.AddOffset("orders.DLT", 0, gone, -1)
	if resp, err := w.adm.DeleteRecords(ctx, del); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}
	work(t, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	job = waitJobState(t, e, job.ID, 30*time.Second, "the job finishes", func(j replay.Job) bool {
		return j.Status != replay.JobPending && j.Status != replay.JobRunning
	})
	if job.Status != replay.JobDone || job.Published != n-gone || job.Failed != gone {
		t.Fatalf("job %s: %d published, %d failed, paused %q; want done, %d published, %d failed as gone", job.Status,
			job.Published, job.Failed, job.Paused, n-gone, gone)
	}
	seen := w.originalIDs(t)
	for i, id := range ids {
		if want := map[bool]int{true: 0, false: 1}[i < gone]; seen[id] != want {
			t.Errorf("%s on the original topic %d times; want %d", id, seen[id], want)
		}
	}
	entries, err := e.Ledger(ctx, job.ID, gone)
	if err != nil || len(entries) != gone || !strings.Contains(entries[0].Detail, "no longer exists") {
		t.Fatalf("ledger %+v, %v; want the deleted ones failed as gone", entries, err)
	}
}

// A plan made from a page read before the topic was deleted and created again (the page hands
// the topic's ID it read to the plan) is refused, in words: the offsets it names hold other records
// now, which nobody saw nor chose. Without an ID (an API call that names none) it plans as before.
func TestKafkaPlanOfATopicCreatedAgainSinceItWasRead(t *testing.T) {
	w := newWorld(t)
	w.deadLetter(t, 0, "m-1", "k-1", "com.acme.StockException")
	e := w.engine(t, "a")
	ctx := ctxT(t)
	src := kafkaSource(0, 0, 1)
	read, err := e.Plan(ctx, "alice", src, replay.Filter{})
	if err != nil || read.Source.TopicID == "" {
		t.Fatalf("plan %v; topic id %q", err, read.Source.TopicID)
	}
	src.TopicID = read.Source.TopicID
	if _, err := e.Plan(ctx, "alice", src, replay.Filter{}); err != nil {
		t.Fatalf("the same topic: %v", err)
	}
	src.TopicID = "AAAAAAAAAAAAAAAAAAAAAA" // the ID of the topic the page showed, deleted since
	_, err = e.Plan(ctx, "alice", src, replay.Filter{})
	if !errors.Is(err, ops.ErrConflict) || !strings.Contains(ops.Message(err), "deleted and created again") {
		t.Fatalf("a plan of the topic created again: %v (%q)", err, ops.Message(err))
	}
}
