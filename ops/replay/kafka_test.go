package replay_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
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
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "fixed stock bug", RatePerSecond: 1000})
	if err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, e, job.ID)
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
	w := newWorld(t)
	w.deadLetter(t, 0, "m-1", "k-1", "X")
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
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "bob", Role: access.Admin}, Force: true, Reason: "consumer lost its DB"})
	if err != nil {
		t.Fatal(err)
	}
	if job = waitJob(t, e, job.ID); job.Published != 1 {
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

// Twenty operators replay the same dead letter at once, each with their own plan and job, on
// twenty engines (replicas): one job moves the topic at a time (the others are refused, naming
// it), and the ledger lets exactly one publish it.
func TestConcurrentReplaysPublishOnce(t *testing.T) {
	w := newWorld(t)
	w.deadLetter(t, 0, "m-1", "k-1", "X")
	ctx := ctxT(t)
	const n = 20
	engines := make([]*replay.Engine, n)
	plans := make([]replay.Plan, n)
	for i := range engines {
		engines[i] = w.engine(t, fmt.Sprintf("replica-%d", i))
		p, err := engines[i].Plan(ctx, "op", kafkaSource(0, 0, 0), replay.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		plans[i] = p
	}
	var jobs []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range engines {
		wg.Go(func() {
			j, err := engines[i].Start(ctx, replay.StartRequest{PlanID: plans[i].ID, Actor: access.Actor{Name: fmt.Sprintf("op%d", i)}, RatePerSecond: 1000})
			if errors.Is(err, ops.ErrConflict) && strings.Contains(err.Error(), "is moving kafka main topic orders.DLT") {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			jobs = append(jobs, j.ID)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(jobs) != 1 {
		t.Fatalf("%d jobs started on one topic at once, want 1", len(jobs))
	}
	for _, e := range engines {
		work(t, e)
	}
	published := 0
	for _, id := range jobs {
		j := waitJob(t, engines[0], id)
		published += j.Published
		if j.Published+j.Skipped != 1 || j.Failed != 0 {
			t.Errorf("job %+v", j)
		}
	}
	if published != 1 {
		t.Fatalf("%d jobs published the message, want exactly 1", published)
	}
	if got := len(w.originals(t)); got != 1 {
		t.Fatalf("%d copies on the original topic, want 1", got)
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

// replay.strip_headers decides which dead-letter headers a replay drops: [] keeps them all, a
// custom list drops those prefixes; Redrive's own headers are written anew either way.
func TestStripHeadersIsConfigurable(t *testing.T) {
	w := newWorld(t)
	w.deadLetter(t, 0, "m-1", "k-1", "com.acme.StockException")
	w.cfg.Replay.StripHeaders = []string{"TRACEID"} // any case
	e := w.engine(t, "a")
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "alice", kafkaSource(0, 0, 0), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	work(t, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, RatePerSecond: 10})
	if err != nil {
		t.Fatal(err)
	}
	if job = waitJob(t, e, job.ID); job.Published != 1 {
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
