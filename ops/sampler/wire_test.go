package sampler

import (
	"reflect"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/lag"
)

// The stored layout decodes to exactly the groups encoded, including what it leaves out: member
// names listed once, absent errors, and the derived statuses of idle groups.
func TestWireRoundTrip(t *testing.T) {
	groups := []lag.Group{
		{
			Group: kafka.Group{Name: "billing", State: "Stable", ProtocolType: "consumer", Protocol: "cooperative-sticky",
				Members: 2, TotalLag: 30, Topics: []kafka.TopicLag{
					{Topic: "orders", Lag: 30, Partitions: []kafka.PartitionLag{
						{Partition: 0, Committed: 10, Start: 0, End: 40, Lag: 30, Member: "w-1@10.0.0.1"},
						{Partition: 1, Committed: 5, Start: 0, End: 5, Lag: 0, Member: "w-2@10.0.0.2"},
						{Partition: 2, Committed: -1, Start: -1, End: -1, Lag: -1, Error: "UNKNOWN_TOPIC_OR_PARTITION"},
					}},
					{Topic: "refunds", Partitions: []kafka.PartitionLag{
						{Partition: 0, Committed: 3, Start: 0, End: 3, Lag: 0, Member: "w-1@10.0.0.1"},
					}},
				}},
			Status:     lag.Status{Code: lag.StatusWarn, Reason: "lag grew 0 → 30 over 5m", Since: time.UnixMilli(1764479700000).UTC()},
			Partitions: map[string]lag.Status{"orders/0": {Code: lag.StatusWarn, Reason: "lag grew 0 → 30 over 5m", Since: time.UnixMilli(1764479700000).UTC()}},
			Rate:       1.5, CatchUp: -1, RateKnown: true,
		},
		{
			// Idle: every partition EMPTY. orders/1's lag is unknown now but was 7 before, so its
			// reason is not the derived one and must be stored.
			Group: kafka.Group{Name: "idle", State: "Empty", TotalLag: 4, Topics: []kafka.TopicLag{
				{Topic: "orders", Lag: 4, Partitions: []kafka.PartitionLag{
					{Partition: 0, Committed: 6, Start: 0, End: 10, Lag: 4},
					{Partition: 1, Committed: 2, Start: -1, End: -1, Lag: -1},
					{Partition: 2, Committed: 9, Start: 0, End: 9, Lag: 0},
				}},
			}},
			Status: lag.Status{Code: lag.StatusEmpty, Reason: "no members; lag 4 left unconsumed"},
			Partitions: map[string]lag.Status{
				"orders/0": {Code: lag.StatusEmpty, Reason: "no members; lag 4 left unconsumed"},
				"orders/1": {Code: lag.StatusEmpty, Reason: "no members; lag 7 left unconsumed"},
				"orders/2": {Code: lag.StatusEmpty, Reason: "no members"},
			},
			CatchUp: 0, RateKnown: true,
		},
		{
			// A Dead group where one partition (hypothetically) has no status: masked, not derived.
			Group: kafka.Group{Name: "gone", State: "Dead", Topics: []kafka.TopicLag{
				{Topic: "t", Partitions: []kafka.PartitionLag{{Partition: 0, Committed: 1, Start: 0, End: 1}, {Partition: 1, Committed: 1, Start: 0, End: 1}}},
			}},
			Status:     lag.Status{Code: lag.StatusDead, Reason: "group is dead: no members and no state on the coordinator"},
			Partitions: map[string]lag.Status{"t/0": {Code: lag.StatusDead, Reason: "group is dead: no members and no state on the coordinator"}},
		},
		{
			Group:  kafka.Group{Name: "loading", State: "", Topics: []kafka.TopicLag{}, Error: "COORDINATOR_LOAD_IN_PROGRESS"},
			Status: lag.Status{Code: lag.StatusOK},
		},
	}
	dlts := []kafka.DLTopic{
		{Topic: "orders.DLT", TopicID: "5f0c8e2a9d1b4c3e8a7f6b5c4d3e2f10", Partitions: []kafka.DLPartition{{Partition: 0, Start: 3, End: 10, Records: 7}, {Partition: 1, Start: 0, End: 2, Records: 2}},
			Records: 9, NewestAt: time.UnixMilli(1764480000123).UTC()},
		{Topic: "orders.retry-1", Retry: true, Partitions: []kafka.DLPartition{{Partition: 0, Start: 0, End: 0, Records: 0}}},
	}
	data, err := encodeKafka(groups, dlts)
	if err != nil {
		t.Fatal(err)
	}
	got, gotDLTs, ok, err := decodeKafka(data)
	if err != nil || !ok {
		t.Fatalf("decode: ok %v, %v", ok, err)
	}
	if !reflect.DeepEqual(got, groups) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v\n%s", got, groups, data)
	}
	if !reflect.DeepEqual(gotDLTs, dlts) {
		t.Fatalf("dead-letter topics differ:\n got %+v\nwant %+v", gotDLTs, dlts)
	}

	t.Run("UnknownVersion", func(t *testing.T) {
		for _, doc := range []string{`{}`, `{"v":99,"groups":[]}`} {
			if g, _, ok, err := decodeKafka([]byte(doc)); ok || err != nil || g != nil {
				t.Errorf("%s: %v %v %v, want not ok", doc, g, ok, err)
			}
		}
	})
	t.Run("Corrupt", func(t *testing.T) {
		for _, doc := range []string{`{"v":1,"groups":[{"n":"g","t":[{"t":"x","p":[0,1],"c":[0],"s":[0],"e":[0],"l":[0]}]}]}`, `[`} {
			if _, _, _, err := decodeKafka([]byte(doc)); err == nil {
				t.Errorf("%s: no error", doc)
			}
		}
	})
}

// A group judged from one sample (not in the snapshot yet) says only what one sample can tell,
// and PartitionStatus gives each partition its verdict: a group without members shares its EMPTY
// with every partition; a lagging group with members is OK until a window shows a trend.
func TestJudgeOnce(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	topics := []kafka.TopicLag{{Topic: "orders", Lag: 40, Partitions: []kafka.PartitionLag{
		{Partition: 0, Committed: 10, End: 50, Lag: 40}, {Partition: 1, Committed: 5, End: 5, Lag: 0}}}}
	empty := lag.JudgeOnce(kafka.Group{Name: "idle", State: "Empty", TotalLag: 40, Topics: topics}, lag.Rules{}, now)
	if empty.Status.Code != lag.StatusEmpty {
		t.Fatalf("group without members: %+v, want EMPTY", empty.Status)
	}
	for _, p := range []int32{0, 1} {
		if st := empty.PartitionStatus("orders", p); st.Code != lag.StatusEmpty {
			t.Errorf("partition %d of an EMPTY group: %+v", p, st)
		}
	}
	live := lag.JudgeOnce(kafka.Group{Name: "billing", State: "Stable", Members: 2, TotalLag: 40, Topics: topics}, lag.Rules{}, now)
	if live.Status.Code != lag.StatusOK || live.RateKnown {
		t.Fatalf("one sample of a live group: %+v (rate known %v), want OK without a rate", live.Status, live.RateKnown)
	}
	if st := live.PartitionStatus("orders", 0); st.Code != lag.StatusOK {
		t.Errorf("partition 0: %+v", st)
	}
	// A verdict the sampler found is the partition's own.
	live.Partitions = map[string]lag.Status{lag.PartitionKey("orders", 1): {Code: lag.StatusStall, Reason: "stuck"}}
	if st := live.PartitionStatus("orders", 1); st.Code != lag.StatusStall || st.Reason != "stuck" {
		t.Errorf("partition 1: %+v, want its STALL", st)
	}
}

// Counted records, last stable offsets and open transactions survive the stored snapshot; a
// snapshot written before records were counted reads its offsets as the most there can be.
func TestKafkaWireCarriesCountsAndTransactions(t *testing.T) {
	dlts := []kafka.DLTopic{{Topic: "orders.DLT", TopicID: "id", Counted: true, Records: 6,
		Partitions: []kafka.DLPartition{{Partition: 0, Start: 0, End: 24, Stable: 24, Records: 6, Counted: true}}}}
	since := time.UnixMilli(1764480000123).UTC()
	txns := []kafka.OpenTransaction{{Topic: "orders", Partition: 1, ProducerID: 4001, ProducerEpoch: 2, CoordinatorEpoch: 1,
		TransactionalID: "stuck-tx", State: "Ongoing", StartOffset: 5, End: 8, Since: since, SinceKnown: true,
		LastWrite: since.Add(time.Second), Timeout: time.Minute, After: 5 * time.Minute}}
	data, err := encodeKafka(nil, dlts, txns...)
	if err != nil {
		t.Fatal(err)
	}
	_, gotDLTs, gotTxns, ok, err := decodeKafkaSnapshot(data)
	if err != nil || !ok || !reflect.DeepEqual(gotDLTs, dlts) || !reflect.DeepEqual(gotTxns, txns) {
		t.Fatalf("round trip: %+v %+v %v %v\n%s", gotDLTs, gotTxns, ok, err, data)
	}
	old := `{"v":1,"groups":[],"dlt":[{"t":"orders.DLT","p":[0],"s":[2],"e":[24]}]}`
	_, gotDLTs, gotTxns, ok, err = decodeKafkaSnapshot([]byte(old))
	want := []kafka.DLTopic{{Topic: "orders.DLT", Records: 22, Partitions: []kafka.DLPartition{{Partition: 0, Start: 2, End: 24, Stable: 24, Records: 22}}}}
	if err != nil || !ok || !reflect.DeepEqual(gotDLTs, want) || gotTxns != nil {
		t.Errorf("a snapshot from before counts: %+v %+v %v %v", gotDLTs, gotTxns, ok, err)
	}
}

// A KIP-848 and a share group keep, through the stored layout, their type, epochs, members with
// epochs and assignments, a share group's start offsets and delivery limit; an idle share group's
// derived statuses are worded in its terms ("not yet acknowledged"), never as commits.
func TestWireRoundTripOfGroupTypes(t *testing.T) {
	idleShare := lag.EvaluateShare(lag.Rules{}, 0, "Empty", 0,
		[]lag.Sample{{At: time.Unix(1, 0), Committed: 4, End: 10, Lag: 6}}, time.Unix(1, 0))
	if idleShare.Code != lag.StatusEmpty || idleShare.Reason != "no members; 6 records not yet acknowledged" {
		t.Fatalf("an idle share partition: %+v", idleShare)
	}
	groups := []lag.Group{
		{
			Group: kafka.Group{Name: "shipping", Type: kafka.GroupConsumer, State: "Reconciling", ProtocolType: "consumer", Protocol: "range",
				Members: 1, Epoch: 7, AssignmentEpoch: 7, TotalLag: 6,
				MemberList: []kafka.Member{{ID: "m-1", ClientID: "worker", Host: "10.0.0.1", Epoch: 6,
					Assigned: []kafka.TopicPartitions{{Topic: "orders", Partitions: []int32{0, 1}}},
					Target:   []kafka.TopicPartitions{{Topic: "orders", Partitions: []int32{0}}}}},
				Topics: []kafka.TopicLag{{Topic: "orders", Lag: 6, Partitions: []kafka.PartitionLag{
					{Partition: 0, Committed: 4, Start: 0, End: 10, Lag: 6, Member: "worker@10.0.0.1"},
				}}}},
			Status: lag.Status{Code: lag.StatusOK},
		},
		{
			Group: kafka.Group{Name: "mailer", Type: kafka.GroupShare, State: "Empty", ProtocolType: "share", Protocol: "simple",
				Epoch: 3, AssignmentEpoch: 3, DeliveryLimit: 5, DeliveryLimitFrom: "broker", TotalLag: 9,
				Topics: []kafka.TopicLag{{Topic: "jobs", Lag: 9, Partitions: []kafka.PartitionLag{
					{Partition: 0, Committed: -1, ShareStart: 4, Start: 0, End: 10, Lag: 6},
					{Partition: 1, Committed: -1, ShareStart: 7, Start: 0, End: 10, Lag: 3, LagAtMost: true}, // a broker without KIP-1226
				}}}},
			Status:     idleShare,
			Partitions: map[string]lag.Status{"jobs/0": idleShare, "jobs/1": idleShare},
		},
	}
	data, err := encodeKafka(groups, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _, ok, err := decodeKafka(data)
	if err != nil || !ok {
		t.Fatalf("decode: %v %v", ok, err)
	}
	if !reflect.DeepEqual(got, groups) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, groups)
	}
}
