package offsets_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/offsets"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/storetest"
	"github.com/redrive/redrive/ops/waittest"
)

type env struct {
	broker *kfake.Cluster
	c      *kafka.Cluster
	st     *store.Store
	m      *offsets.Mover
	prod   *kgo.Client
	adm    *kadm.Client
}

func ctxT(tb testing.TB) context.Context { return waittest.Context(tb, 60*time.Second) }

// newEnv: a kfake cluster with "orders" (3 partitions, 10 records each, written at base+i min)
// and its DLT "orders.DLT" (3 partitions), a store, and a offsets.Mover.
func newEnv(t *testing.T, fe foureyes.Settings) (*env, time.Time) {
	t.Helper()
	broker := kfaketest.Cluster(t)
	c, err := kafka.New(configs.KafkaCluster{Name: "test", Brokers: broker.ListenAddrs(), RequestTimeout: configs.Duration(10 * time.Second)},
		configs.MessageIDRules{Headers: []string{"messageId"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	st := storetest.Open(t)
	prod := kfaketest.Client(t, broker, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(prod)
	for _, tp := range []string{"orders", "orders.DLT"} {
		if _, err := adm.CreateTopic(ctxT(t), 3, 1, nil, tp); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for p := range int32(3) {
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: p, Key: []byte(fmt.Sprintf("k%d-%d", p, i)),
				Value: []byte(fmt.Sprintf("v%d-%d", p, i)), Timestamp: base.Add(time.Duration(i) * time.Minute),
				Headers: []kgo.RecordHeader{{Key: "messageId", Value: []byte(fmt.Sprintf("m%d-%d", p, i))}}})
		}
	}
	if err := prod.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	m, err := offsets.New(offsets.Options{Clusters: []offsets.Cluster{c}, Store: st, FourEyes: fe})
	if err != nil {
		t.Fatal(err)
	}
	return &env{broker: broker, c: c, st: st, m: m, prod: prod, adm: adm}, base
}

func (e *env) commit(t *testing.T, group string, offsets map[int32]int64) {
	t.Helper()
	kfaketest.Commit(t, e.adm, group, "orders", offsets)
}

func (e *env) committed(t *testing.T, group string) map[int32]int64 {
	t.Helper()
	o, err := e.c.GroupTopicOffsets(ctxT(t), group, "orders")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, p := range o.Partitions {
		out[p.Partition] = p.Committed
	}
	return out
}

// dlt reads every record of orders.DLT.
func (e *env) dlt(t *testing.T) []kafka.Record {
	t.Helper()
	var out []kafka.Record
	ends, err := e.c.EndOffsets(ctxT(t), "orders.DLT")
	if err != nil {
		t.Fatal(err)
	}
	for p, end := range ends {
		if err := e.c.Scan(ctxT(t), "orders.DLT", p, 0, end, func(r kafka.Record) error { out = append(out, r); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// planShift plans, as alice, moving group's partition 0 of orders on by one, copying nothing to
// the DLT.
func (e *env) planShift(t *testing.T, group string) offsets.Plan {
	t.Helper()
	none := ""
	p, err := e.m.Plan(ctxT(t), offsets.PlanRequest{Cluster: "test", Group: group, Topic: "orders", Partitions: []int32{0},
		To: offsets.Target{Kind: offsets.KindShift, By: 1}, CopySkippedTo: &none, Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// apply applies plan p as alice, giving reason.
func (e *env) apply(t *testing.T, p offsets.Plan, reason string) error {
	_, err := e.m.Apply(ctxT(t), offsets.ApplyRequest{PlanID: p.ID, Actor: access.Actor{Name: "alice"}, Reason: reason})
	return err
}

func i64(v int64) *int64 { return &v }

func TestPlanKinds(t *testing.T) {
	e, base := newEnv(t, foureyes.Settings{})
	ctx := ctxT(t)
	e.commit(t, "g", map[int32]int64{0: 3, 1: 9}) // p2 never committed
	at := base.Add(5*time.Minute + time.Second)
	none := ""
	for _, tc := range []struct {
		name    string
		to      offsets.Target
		parts   []int32
		want    map[int32][3]int64 // current, new, skipped
		warning string
	}{
		{"Shift", offsets.Target{Kind: offsets.KindShift, By: 1}, nil, map[int32][3]int64{0: {3, 4, 1}, 1: {9, 10, 1}, 2: {-1, 1, 1}}, "never committed (or committed below the log start) on partition 2:"},
		{"ShiftBack", offsets.Target{Kind: offsets.KindShift, By: -5}, []int32{0, 1}, map[int32][3]int64{0: {3, 0, 0}, 1: {9, 4, 0}}, "consumed again"},
		// A shift past int64's bounds saturates at the log's: pos+by wrapped, and a huge forward
		// shift planned a move back to the start.
		{"ShiftHuge", offsets.Target{Kind: offsets.KindShift, By: math.MaxInt64}, nil, map[int32][3]int64{0: {3, 10, 7}, 1: {9, 10, 1}, 2: {-1, 10, 10}}, ""},
		{"ShiftHugeBack", offsets.Target{Kind: offsets.KindShift, By: math.MinInt64}, []int32{0, 1}, map[int32][3]int64{0: {3, 0, 0}, 1: {9, 0, 0}}, "consumed again"},
		{"Offset", offsets.Target{Kind: offsets.KindOffset, Offset: i64(7)}, []int32{0}, map[int32][3]int64{0: {3, 7, 4}}, ""},
		{"Timestamp", offsets.Target{Kind: offsets.KindTimestamp, At: &at}, nil, map[int32][3]int64{0: {3, 6, 3}, 1: {9, 6, 0}, 2: {-1, 6, 6}}, ""},
		{"Earliest", offsets.Target{Kind: offsets.KindEarliest}, []int32{1}, map[int32][3]int64{1: {9, 0, 0}}, "9 records on partition 1 will be consumed again"},
		{"Latest", offsets.Target{Kind: offsets.KindLatest}, nil, map[int32][3]int64{0: {3, 10, 7}, 1: {9, 10, 1}, 2: {-1, 10, 10}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "g", Topic: "orders", Partitions: tc.parts, To: tc.to, CopySkippedTo: &none, Actor: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Partitions) != len(tc.want) {
				t.Fatalf("partitions %+v, want %v", p.Partitions, tc.want)
			}
			for _, mv := range p.Partitions {
				w := tc.want[mv.Partition]
				if mv.Current != w[0] || mv.New != w[1] || mv.Skipped != w[2] {
					t.Errorf("partition %d: %+v, want current %d new %d skipped %d", mv.Partition, mv, w[0], w[1], w[2])
				}
			}
			if tc.warning != "" && !strings.Contains(strings.Join(p.Warnings, "\n"), tc.warning) {
				t.Errorf("warnings %q, want one with %q", p.Warnings, tc.warning)
			}
			res, err := e.m.Apply(ctx, offsets.ApplyRequest{PlanID: p.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, Reason: "test " + tc.name})
			if err != nil {
				t.Fatal(err)
			}
			got := e.committed(t, "g")
			for part, w := range tc.want {
				if got[part] != w[1] {
					t.Errorf("partition %d committed %d after apply, want %d", part, got[part], w[1])
				}
			}
			if !res.Moved {
				t.Error("result not moved")
			}
			// Put the group back for the next case.
			e.commit(t, "g", map[int32]int64{0: 3, 1: 9})
			if got[2] >= 0 {
				if _, err := e.adm.DeleteOffsets(ctx, "g", kadm.TopicsSet{"orders": {2: {}}}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	t.Run("Invalid", func(t *testing.T) {
		for _, to := range []offsets.Target{{Kind: "sideways"}, {Kind: offsets.KindOffset, Offset: i64(11)}, {Kind: offsets.KindShift}} {
			_, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "g", Topic: "orders", To: to})
			if !errors.Is(err, ops.ErrInvalid) {
				t.Errorf("%+v: err %v, want ErrInvalid", to, err)
			}
		}
		// A time before 1970 was a negative Kafka timestamp: 1969-12-31T23:59:59.999Z is -1,
		// which Kafka reads as "latest", and the plan skipped everything; 0001-01-01 was "required".
		for _, at := range []time.Time{time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC), {}} {
			_, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "g", Topic: "orders", To: offsets.Target{Kind: offsets.KindTimestamp, At: &at}})
			if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "to.at: "+at.Format(time.RFC3339Nano)+" is before 1970") {
				t.Errorf("at %v: %v, want to.at refused as before 1970", at, err)
			}
		}
		_, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "g", Topic: "orders", Partitions: []int32{7}, To: offsets.Target{Kind: offsets.KindLatest}})
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "0 to 2") {
			t.Errorf("partition 7: %v", err)
		}
	})
	t.Run("AppliedTwice", func(t *testing.T) {
		p := e.planShift(t, "g")
		if err := e.apply(t, p, "once"); err != nil {
			t.Fatal(err)
		}
		if err := e.apply(t, p, "twice"); !errors.Is(err, ops.ErrConflict) {
			t.Fatalf("second apply: %v, want ErrConflict", err)
		}
	})
}

// While the group has members, apply is refused with 409 naming them, and nothing is copied.
func TestApplyRefusedWithMembers(t *testing.T) {
	e, _ := newEnv(t, foureyes.Settings{})
	ctx := ctxT(t)
	member := kfaketest.Client(t, e.broker, kgo.ClientID("worker-7"),
		kgo.ConsumerGroup("g-live"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit())
	deadline := time.Now().Add(20 * time.Second)
	for {
		member.PollRecords(ctx, 1)
		if m, err := e.c.GroupMembership(ctx, "g-live"); err == nil && len(m.Members) > 0 && m.State == "Stable" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("member never joined")
		}
	}
	p, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "g-live", Topic: "orders", Partitions: []int32{0}, To: offsets.Target{Kind: offsets.KindShift, By: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Members) != 1 || !strings.Contains(strings.Join(p.Warnings, " "), "worker-7") {
		t.Errorf("plan members %v warnings %q", p.Members, p.Warnings)
	}
	_, err = e.m.Apply(ctx, offsets.ApplyRequest{PlanID: p.ID, Actor: access.Actor{Name: "alice"}, Reason: "skip poison"})
	if !errors.Is(err, ops.ErrConflict) || !strings.Contains(err.Error(), "worker-7") || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("apply with members: %v, want ErrConflict naming worker-7", err)
	}
	if n := len(e.dlt(t)); n != 0 {
		t.Errorf("%d records copied to the DLT by a refused apply", n)
	}
}

// Skipping the poison record at offset 4 of partition 1: the copy is in orders.DLT with Spring's
// headers before the offsets move; default destination is the topic's DLT.
func TestSkipWithCopy(t *testing.T) {
	e, base := newEnv(t, foureyes.Settings{})
	ctx := ctxT(t)
	e.commit(t, "billing", map[int32]int64{0: 10, 1: 4, 2: 10})
	p, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "billing", Topic: "orders", Partitions: []int32{1},
		To: offsets.Target{Kind: offsets.KindOffset, Offset: i64(5)}, Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if p.CopyTo != "orders.DLT" || p.Skipped != 1 {
		t.Fatalf("plan copy_to %q skipped %d, want orders.DLT 1", p.CopyTo, p.Skipped)
	}
	var seenBeforeCommit []kafka.Record
	e.m.SetBeforeCommit(func(offsets.Plan) error {
		seenBeforeCommit = e.dlt(t)
		if got := e.committed(t, "billing")[1]; got != 4 {
			t.Errorf("committed %d before the commit step, want 4", got)
		}
		return nil
	})
	res, err := e.m.Apply(ctx, offsets.ApplyRequest{PlanID: p.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, Reason: "poison record, fixed in 1.4.2"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Copied != 1 || res.AlreadyCopied != 0 {
		t.Errorf("copied %d already %d, want 1 0", res.Copied, res.AlreadyCopied)
	}
	if len(seenBeforeCommit) != 1 {
		t.Fatalf("DLT held %d records before the commit, want 1", len(seenBeforeCommit))
	}
	r := seenBeforeCommit[0]
	dl := r.DeadLetter
	if r.Partition != 1 || string(r.Key) != "k1-4" || string(r.Value) != "v1-4" || dl == nil {
		t.Fatalf("copy %+v", r)
	}
	if dl.OriginalTopic != "orders" || dl.OriginalPartition == nil || *dl.OriginalPartition != 1 || dl.OriginalOffset == nil || *dl.OriginalOffset != 4 ||
		dl.ConsumerGroup != "billing" || dl.ExceptionType != kafka.SkippedExceptionType || dl.OriginalTimestamp == nil ||
		!dl.OriginalTimestamp.Equal(base.Add(4*time.Minute)) || !strings.Contains(dl.ExceptionMessage, "skipped by alice") ||
		dl.MessageID != "m1-4" && dl.MessageID != "" {
		t.Errorf("dead-letter headers %+v", *dl)
	}
	hs := map[string]string{}
	for _, h := range r.Headers {
		hs[h.Key] = string(h.Value)
	}
	if hs[kafka.HeaderOffsetPlan] != p.ID || hs["messageId"] != "m1-4" || hs["kafka_dlt-original-consumer-group"] != "billing" {
		t.Errorf("headers %v", hs)
	}
	if got := e.committed(t, "billing"); got[1] != 5 || got[0] != 10 {
		t.Errorf("committed %v, want partition 1 at 5 and 0 untouched", got)
	}
	entries, err := e.st.ListAudit(ctx, audit.Filter{Action: "kafka.offsets.apply"})
	if err != nil {
		t.Fatal(err)
	}
	// An intent row before the copies, and the outcome naming it (the list may fold the two).
	var ok int
	for _, en := range entries {
		if en.Outcome == audit.OutcomeOK && en.Detail["intent_id"] != nil && en.Detail["copied"] == float64(1) && en.Actor == "alice" {
			ok++
		}
	}
	if ok != 1 {
		t.Errorf("audit %+v, want one ok outcome naming its intent", entries)
	}
}

// The console dies between the copies and the commit: the offsets are unmoved, and the next apply
// recognises the copies (by the plan id and original offset headers) instead of copying twice.
func TestCrashBetweenCopyAndCommit(t *testing.T) {
	e, _ := newEnv(t, foureyes.Settings{})
	ctx := ctxT(t)
	e.commit(t, "billing", map[int32]int64{0: 2, 1: 4, 2: 10})
	p, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "billing", Topic: "orders", To: offsets.Target{Kind: offsets.KindShift, By: 3}, Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Skipped != 6 {
		t.Fatalf("skipped %d, want 6 (3 on partitions 0 and 1)", p.Skipped)
	}
	// Someone else's dead letter lands in the DLT meanwhile: it must be neither counted nor harmed.
	if err := e.prod.ProduceSync(ctx, &kgo.Record{Topic: "orders.DLT", Partition: 0, Value: []byte("other")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	crash := errors.New("killed")
	e.m.SetBeforeCommit(func(offsets.Plan) error { return crash })
	if _, err := e.m.Apply(ctx, offsets.ApplyRequest{PlanID: p.ID, Actor: access.Actor{Name: "alice"}, Reason: "skip the bad batch"}); !errors.Is(err, crash) {
		t.Fatalf("first apply: %v", err)
	}
	if got := e.committed(t, "billing"); got[0] != 2 || got[1] != 4 {
		t.Fatalf("offsets moved by the interrupted apply: %v", got)
	}
	if n := len(e.dlt(t)); n != 7 {
		t.Fatalf("DLT holds %d records after the interrupted apply, want 6 copies + 1 other", n)
	}
	// A fresh offsets.Mover, as after a restart.
	m2, err := offsets.New(offsets.Options{Clusters: []offsets.Cluster{e.c}, Store: e.st})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m2.Apply(ctx, offsets.ApplyRequest{PlanID: p.ID, Actor: access.Actor{Name: "alice"}, Reason: "skip the bad batch"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Copied != 0 || res.AlreadyCopied != 6 {
		t.Errorf("second apply copied %d, recognised %d; want 0 and 6", res.Copied, res.AlreadyCopied)
	}
	if n := len(e.dlt(t)); n != 7 {
		t.Errorf("DLT holds %d records after the second apply, want 7", n)
	}
	if got := e.committed(t, "billing"); got[0] != 5 || got[1] != 7 || got[2] != 10 {
		t.Errorf("committed %v, want 5, 7, 10", got)
	}
	// A crash after the commit but before the plan was marked: the next apply sees the offsets at
	// the plan's new ones and only marks it.
	p2, err := m2.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "billing", Topic: "orders", Partitions: []int32{0}, To: offsets.Target{Kind: offsets.KindShift, By: 1}})
	if err != nil {
		t.Fatal(err)
	}
	e.commit(t, "billing", map[int32]int64{0: 6})
	if res, err := m2.Apply(ctx, offsets.ApplyRequest{PlanID: p2.ID, Actor: access.Actor{Name: "alice"}, Reason: "resume"}); err != nil || res.Copied != 0 {
		t.Fatalf("apply of a committed plan: %+v %v", res, err)
	}
	if n := len(e.dlt(t)); n != 7 {
		t.Errorf("DLT holds %d records, want 7: a plan already committed copies nothing", n)
	}
}

func TestFourEyes(t *testing.T) {
	e, _ := newEnv(t, foureyes.Settings{Enabled: true, Threshold: 2})
	ctx := ctxT(t)
	e.commit(t, "g", map[int32]int64{0: 0})
	p, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "g", Topic: "orders", Partitions: []int32{0}, To: offsets.Target{Kind: offsets.KindShift, By: 3}, Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if !p.FourEyes {
		t.Fatal("plan skipping 3 > 2 is not four-eyes")
	}
	if _, err := e.m.Apply(ctx, offsets.ApplyRequest{PlanID: p.ID, Actor: access.Actor{Name: "alice"}, Reason: "skip"}); !errors.Is(err, ops.ErrConflict) {
		t.Fatalf("unapproved apply: %v", err)
	}
	if _, err := e.m.Approve(ctx, p.ID, access.Actor{Name: "alice", Role: access.Operator}); !errors.Is(err, ops.ErrForbidden) {
		t.Fatalf("self-approval: %v", err)
	}
	if _, err := e.m.Approve(ctx, p.ID, access.Actor{Name: "bob", Role: access.Operator}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Apply(ctx, offsets.ApplyRequest{PlanID: p.ID, Actor: access.Actor{Name: "alice"}, Reason: "skip"}); err != nil {
		t.Fatal(err)
	}
}

// Twenty different plans for one group, applied at once from four Movers (the console's replicas,
// sharing one database): exactly one applies; the others are refused having copied nothing, so
// the DLT holds exactly the winner's skipped records and the group sits at the winner's offset.
// Before applies took turns on an advisory lock, two or more applied: the DLT got both plans'
// copies and the committed offset was the last commit's, not that of the apply that said ok last.
func TestConcurrentAppliesOfDifferentPlans(t *testing.T) {
	e, _ := newEnv(t, foureyes.Settings{})
	ctx := ctxT(t)
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte(fmt.Sprintf("more-%d", i))})
	}
	if err := e.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e.commit(t, "race", map[int32]int64{0: 10})
	movers := []*offsets.Mover{e.m}
	for range 3 {
		m, err := offsets.New(offsets.Options{Clusters: []offsets.Cluster{e.c}, Store: e.st})
		if err != nil {
			t.Fatal(err)
		}
		movers = append(movers, m)
	}
	var plans []offsets.Plan
	for n := range int64(20) {
		p, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "race", Topic: "orders", Partitions: []int32{0},
			To: offsets.Target{Kind: offsets.KindShift, By: n + 1}, Actor: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		if p.CopyTo != "orders.DLT" || p.Skipped != n+1 {
			t.Fatalf("plan %d: copy_to %q skipped %d", n+1, p.CopyTo, p.Skipped)
		}
		plans = append(plans, p)
	}
	type outcome struct {
		res offsets.Result
		err error
	}
	out := make([]outcome, len(plans))
	waittest.AtOnce(len(plans), func(i int) {
		res, err := movers[i%len(movers)].Apply(ctx, offsets.ApplyRequest{PlanID: plans[i].ID, Actor: access.Actor{Name: "alice", Role: access.Operator},
			Reason: "qa race", Cluster: "test", Group: "race"})
		out[i] = outcome{res, err}
	})
	var won []offsets.Plan
	for i, o := range out {
		switch {
		case o.err == nil:
			won = append(won, plans[i])
		case !errors.Is(o.err, ops.ErrConflict):
			t.Errorf("apply of plan %d: %v, want ok or ErrConflict", i+1, o.err)
		case o.res.Copied != 0:
			t.Errorf("refused apply of plan %d copied %d", i+1, o.res.Copied)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d applies succeeded, want exactly 1", len(won))
	}
	w := won[0]
	// Counted by a client of the test's own, not the console's.
	ends, err := e.adm.ListEndOffsets(ctx, "orders.DLT")
	if err != nil {
		t.Fatal(err)
	}
	var copies int64
	ends.Each(func(o kadm.ListedOffset) { copies += o.Offset })
	if copies != w.Skipped {
		t.Errorf("orders.DLT holds %d records, want the winning plan's %d skipped", copies, w.Skipped)
	}
	fetched, err := e.adm.FetchOffsets(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := fetched.Lookup("orders", 0); o.At != w.Partitions[0].New {
		t.Errorf("committed %d, want the winning plan's %d", o.At, w.Partitions[0].New)
	}
	// Every refusal is in the audit log: 19 denied applies.
	entries, err := e.st.ListAudit(ctx, audit.Filter{Action: "kafka.offsets.apply", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var denied, ok int
	for _, en := range entries {
		switch en.Outcome {
		case audit.OutcomeDenied:
			denied++
		case audit.OutcomeOK:
			ok++
		}
	}
	if denied != 19 || ok != 1 {
		t.Errorf("audit: %d denied, %d ok; want 19 and 1", denied, ok)
	}
}

// A reason is read as every other mutation reads it (handlers' requiredReason): one or two
// characters are a reason. It was len(TrimSpace) < 3 in bytes, so "x", "ok" and "é" were refused
// as "reason: required", which the outbox requeue accepts.
func TestApplyShortReason(t *testing.T) {
	e, _ := newEnv(t, foureyes.Settings{})
	for i, reason := range []string{"x", "ok", "é"} {
		e.commit(t, "short", map[int32]int64{0: int64(i)})
		if err := e.apply(t, e.planShift(t, "short"), reason); err != nil {
			t.Errorf("reason %q: %v", reason, err)
		}
	}
	if err := e.apply(t, e.planShift(t, "short"), " \t "); !errors.Is(err, ops.ErrInvalid) {
		t.Errorf("a reason of spaces: %v, want ErrInvalid", err)
	}
}

// An apply refused because the offsets moved names an offset never committed as such, not as -1.
func TestMovedSincePlanSaysNotCommitted(t *testing.T) {
	e, _ := newEnv(t, foureyes.Settings{})
	ctx := ctxT(t)
	apply := func(p offsets.Plan) error { return e.apply(t, p, "moved") }
	// Planned never committed, committed since.
	p := e.planShift(t, "fresh")
	e.commit(t, "fresh", map[int32]int64{0: 5})
	if err := apply(p); !errors.Is(err, ops.ErrConflict) || !strings.Contains(err.Error(), "partition 0: not committed when planned, committed 5 now") {
		t.Errorf("apply after a commit: %v", err)
	}
	// Planned committed, deleted since.
	e.commit(t, "gone", map[int32]int64{0: 3})
	p = e.planShift(t, "gone")
	if _, err := e.adm.DeleteOffsets(ctx, "gone", kadm.TopicsSet{"orders": {0: {}}}); err != nil {
		t.Fatal(err)
	}
	if err := apply(p); !errors.Is(err, ops.ErrConflict) || !strings.Contains(err.Error(), "partition 0: committed 3 when planned, not committed now") ||
		strings.Contains(err.Error(), "-1") {
		t.Errorf("apply after the offset was deleted: %v", err)
	}
}

// Creating a plan is audited as a replay plan is; the ok row of an apply says which partitions
// moved from where to where, as its intent does; and every refusal of an apply is a denied row,
// the already applied, another group's and the unapproved ones among them.
func TestAuditOfPlansAndRefusals(t *testing.T) {
	e, _ := newEnv(t, foureyes.Settings{Enabled: true, Threshold: 5})
	ctx := ctxT(t)
	e.commit(t, "audited", map[int32]int64{0: 2, 1: 4})
	none := ""
	p, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "audited", Topic: "orders", Partitions: []int32{0, 1},
		To: offsets.Target{Kind: offsets.KindShift, By: 1}, CopySkippedTo: &none, Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	alice := access.Actor{Name: "alice", Role: access.Operator}
	apply := func(id, group string) error {
		_, err := e.m.Apply(ctx, offsets.ApplyRequest{PlanID: id, Actor: alice, Reason: "audit", Cluster: "test", Group: group})
		return err
	}
	if err := apply(p.ID, "someone-else"); !errors.Is(err, ops.ErrNotFound) {
		t.Fatalf("apply under another group: %v", err)
	}
	if err := apply(p.ID, "audited"); err != nil {
		t.Fatal(err)
	}
	if err := apply(p.ID, "audited"); !errors.Is(err, ops.ErrConflict) {
		t.Fatalf("second apply: %v", err)
	}
	big, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "audited", Topic: "orders", To: offsets.Target{Kind: offsets.KindLatest},
		CopySkippedTo: &none, Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if err := apply(big.ID, "audited"); !errors.Is(err, ops.ErrConflict) {
		t.Fatalf("unapproved apply: %v", err)
	}

	plans, err := e.st.ListAudit(ctx, audit.Filter{Action: "kafka.offsets.plan"})
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 2 || plans[1].Detail["plan_id"] != p.ID || plans[1].Actor != "alice" || plans[1].Target != "kafka/test/groups/audited" ||
		plans[1].Outcome != audit.OutcomeOK || plans[1].Count == nil || *plans[1].Count != 2 {
		t.Errorf("plan audit %+v, want two, the older one plan %s by alice skipping 2", plans, p.ID)
	}
	applies, err := e.st.ListAudit(ctx, audit.Filter{Action: "kafka.offsets.apply"})
	if err != nil {
		t.Fatal(err)
	}
	var ok []audit.Entry
	var denied []string
	for _, en := range applies {
		switch en.Outcome {
		case audit.OutcomeOK:
			ok = append(ok, en)
		case audit.OutcomeDenied:
			denied = append(denied, fmt.Sprint(en.Detail["plan_id"], ": ", en.Detail["error"]))
		}
	}
	if len(ok) != 1 {
		t.Fatalf("apply audit %+v, want one ok row", applies)
	}
	moves, _ := ok[0].Detail["partitions"].([]any)
	var said []string
	for _, mv := range moves {
		m, _ := mv.(map[string]any)
		said = append(said, fmt.Sprintf("%v:%v→%v", m["partition"], m["current"], m["new"]))
	}
	if strings.Join(said, " ") != "0:2→3 1:4→5" {
		t.Errorf("ok row's partitions %q (detail %v), want 0:2→3 1:4→5", said, ok[0].Detail)
	}
	joined := strings.Join(denied, "\n")
	for _, row := range denied { // what a person reads, not the error's kind ("…by alice: conflict")
		for _, kind := range []string{"conflict", "forbidden", "invalid input"} {
			if strings.Contains(row, kind+": ") || strings.HasSuffix(row, ": "+kind) {
				t.Errorf("denied row %q says %q", row, kind)
			}
		}
	}
	for _, want := range []string{p.ID + ": offset plan \"" + p.ID + "\" is for group audited", p.ID + ": offset plan \"" + p.ID + "\" was applied",
		big.ID + ": offset plan \"" + big.ID + "\" skips"} {
		if !strings.Contains(joined, want) {
			t.Errorf("denied rows:\n%s\nwant one with %q", joined, want)
		}
	}
}

// A plan for a group the cluster does not have says, first, that applying it creates the group:
// a typo in the group's name would otherwise make a new group silently.
func TestPlanForMissingGroupWarns(t *testing.T) {
	e, _ := newEnv(t, foureyes.Settings{})
	e.commit(t, "billing", map[int32]int64{0: 3})
	const want = "group biling does not exist in cluster test: applying creates it with these offsets"
	if p := e.planShift(t, "biling"); len(p.Warnings) == 0 || p.Warnings[0] != want {
		t.Errorf("plan for a missing group warns %q, want first %q", p.Warnings, want)
	}
	if p := e.planShift(t, "billing"); strings.Contains(strings.Join(p.Warnings, "\n"), "does not exist") {
		t.Errorf("plan for an existing group warns %q", p.Warnings)
	}
}

// A plan applied after its topic was deleted and created again copied and skipped the new
// topic's records at the planned offsets, which nobody had seen (the group's commit was the
// planned one again): measured on the demo, a plan skipping offsets 10–14 of qaoff copied the
// new topic's k7…k11 and committed 15. The plan keeps the topic's ID and the apply is refused,
// having copied and committed nothing; so is one whose topic is gone.
func TestApplyRefusedAfterTopicRecreated(t *testing.T) {
	e, _ := newEnv(t, foureyes.Settings{})
	ctx := ctxT(t)
	e.commit(t, "billing", map[int32]int64{0: 3})
	p, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "billing", Topic: "orders", Partitions: []int32{0},
		To: offsets.Target{Kind: offsets.KindShift, By: 2}, Actor: "alice"})
	if err != nil || p.CopyTo != "orders.DLT" || p.Partitions[0].Skipped != 2 {
		t.Fatalf("plan: %+v, %v; want 2 records skipped and copied to orders.DLT", p, err)
	}
	if _, err := e.adm.DeleteTopics(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte(fmt.Sprintf("new-%d", i))})
	}
	// A new client: the old one's metadata names the deleted topic's ID.
	prod := kfaketest.Client(t, e.broker, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kfaketest.Commit(t, kadm.NewClient(prod), "billing", "orders", map[int32]int64{0: 3}) // the new topic's consumer got as far
	if err := e.apply(t, p, "skip the poison record"); !errors.Is(err, ops.ErrConflict) ||
		!strings.Contains(err.Error(), "topic orders was deleted and created again since the plan was made") {
		t.Fatalf("apply after the topic was recreated: %v, want a conflict saying so", err)
	}
	if got := e.committed(t, "billing"); got[0] != 3 {
		t.Errorf("committed %v after the refusal, want partition 0 still at 3", got)
	}
	if n := len(e.dlt(t)); n != 0 {
		t.Errorf("%d records copied to orders.DLT by the refused apply, want none", n)
	}
	// Gone altogether.
	p, err = e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "billing", Topic: "orders", Partitions: []int32{0},
		To: offsets.Target{Kind: offsets.KindShift, By: 1}, Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.adm.DeleteTopics(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := e.apply(t, p, "skip"); !errors.Is(err, ops.ErrConflict) || !strings.Contains(err.Error(), "topic orders was deleted since the plan was made") {
		t.Fatalf("apply after the topic was deleted: %v, want a conflict saying so", err)
	}
}

// An offset move over a topic written in transactions skips records, not offsets: each one-record
// transaction leaves a marker, and the plan counted both — 20 "records" for 10, in its text, its
// audit count and the four-eyes threshold — while apply then copied 10. The plan counts what a
// consumer would have read, and copies as many.
func TestSkipCountsRecordsNotMarkers(t *testing.T) {
	e, _ := newEnv(t, foureyes.Settings{Enabled: true, Threshold: 15})
	ctx := ctxT(t)
	if _, err := e.adm.CreateTopic(ctx, 1, 1, nil, "payments"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.adm.CreateTopic(ctx, 1, 1, nil, "payments.DLT"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 { // offsets 0–19: a record and its marker each
		kfaketest.Transaction(t, e.broker, "tx", true, &kgo.Record{Topic: "payments", Value: []byte(fmt.Sprintf("p-%d", i))})
	}
	kfaketest.Transaction(t, e.broker, "tx", false, &kgo.Record{Topic: "payments", Value: []byte("aborted")}) // 20, marker 21
	kfaketest.Commit(t, e.adm, "billing", "payments", map[int32]int64{0: 0})
	p, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "billing", Topic: "payments", Partitions: []int32{0},
		To: offsets.Target{Kind: offsets.KindLatest}, Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Skipped != 10 || len(p.Partitions) != 1 || p.Partitions[0].Skipped != 10 || p.Partitions[0].New != 22 {
		t.Fatalf("plan skips %d (%+v); want 10 records over offsets 0–21", p.Skipped, p.Partitions)
	}
	if p.FourEyes {
		t.Errorf("10 records under a threshold of 15 held for a second person: %v", p.Warnings)
	}
	res, err := e.m.Apply(ctx, offsets.ApplyRequest{PlanID: p.ID, Actor: access.Actor{Name: "alice", Role: access.Operator}, Reason: "drained"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Copied != 10 {
		t.Errorf("copied %d; want the 10 records the plan counted", res.Copied)
	}
}

// The dead-letter topic has a transaction open (its own producer's, Spring's transactional
// recoverer) when an interrupted apply is applied again: the copies of the first apply lie past
// the topic's last stable offset, where a read_committed look for them does not reach, and they
// were copied again (6 of 6). The look reads every record written, and finds them.
func TestReapplyFindsItsCopiesPastAnOpenTransaction(t *testing.T) {
	e, _ := newEnv(t, foureyes.Settings{})
	ctx := ctxT(t)
	e.commit(t, "billing", map[int32]int64{0: 2, 1: 4, 2: 10})
	p, err := e.m.Plan(ctx, offsets.PlanRequest{Cluster: "test", Group: "billing", Topic: "orders", To: offsets.Target{Kind: offsets.KindShift, By: 3}, Actor: "alice"})
	if err != nil || p.Skipped != 6 {
		t.Fatalf("plan skips %d, %v; want 6", p.Skipped, err)
	}
	end := kfaketest.OpenTransaction(t, e.broker, "recoverer",
		&kgo.Record{Topic: "orders.DLT", Partition: 0, Value: []byte("in-flight")}, &kgo.Record{Topic: "orders.DLT", Partition: 1, Value: []byte("in-flight")})
	defer end(false)
	crash := errors.New("killed")
	e.m.SetBeforeCommit(func(offsets.Plan) error { return crash })
	if _, err := e.m.Apply(ctx, offsets.ApplyRequest{PlanID: p.ID, Actor: access.Actor{Name: "alice"}, Reason: "skip"}); !errors.Is(err, crash) {
		t.Fatalf("first apply: %v", err)
	}
	e.m.SetBeforeCommit(nil)
	res, err := e.m.Apply(ctx, offsets.ApplyRequest{PlanID: p.ID, Actor: access.Actor{Name: "alice"}, Reason: "skip"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Copied != 0 || res.AlreadyCopied != 6 {
		t.Errorf("second apply copied %d, recognised %d; want 0 and 6", res.Copied, res.AlreadyCopied)
	}
}
