package lag

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
)

// A commit below the log start (records deleted under it) lags by what is left, end − log start,
// in the live read as in the sample: 100 records, a commit at 10, records before 50 deleted →
// 50 both ways, not 90 live.
func TestLiveLagBelowLogStart(t *testing.T) {
	_, k, prod, adm, ctx := kfakeWorld(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	recs := make([]*kgo.Record, 100)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "orders", Value: []byte("v")}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kfaketest.Commit(t, adm, "billing", "orders", map[int32]int64{0: 10})
	before := kadm.Offsets{}
	before.AddOffset("orders", 0, 50, -1)
	if resp, err := adm.DeleteRecords(ctx, before); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v, %v", err, resp.Error())
	}

	sampled, err := k.Group(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	g := Group{Group: sampled}
	live, at := LiveOffsets(ctx, k, Snapshot{Cluster: "t", At: time.Now(), Groups: []Group{g}}, g)
	if at.IsZero() {
		t.Fatal("the live read did not answer")
	}
	p := live.Topics[0].Partitions[0]
	if sampled.TotalLag != 50 || live.TotalLag != 50 || live.Topics[0].Lag != 50 || p.Lag != 50 || p.Committed != 10 || p.End != 100 {
		t.Errorf("sampled lag %d, live lag %d (topic %d, partition %+v); want 50 both ways", sampled.TotalLag, live.TotalLag, live.Topics[0].Lag, p)
	}
}

// An idle transactional consumer, committed at its last transaction's marker, is caught up in the
// live read of the group as in the sample (the marker is no record); a record produced since is
// lag, and a commit that moves past it is caught up again.
func TestLiveLagLeavesOutTheMarker(t *testing.T) {
	broker, k, prod, adm, ctx := kfakeWorld(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "payments"); err != nil {
		t.Fatal(err)
	}
	kfaketest.Transaction(t, broker, "tx", true, &kgo.Record{Topic: "payments", Value: []byte("a")}) // 0, marker 1
	kfaketest.Commit(t, adm, "billing", "payments", map[int32]int64{0: 1})
	sampled, err := k.Group(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	g := Group{Group: sampled}
	read := func() kafka.PartitionLag {
		t.Helper()
		live, at := LiveOffsets(ctx, k, Snapshot{Cluster: "t", At: time.Now(), Groups: []Group{g}}, g)
		if at.IsZero() {
			t.Fatal("the live read did not answer")
		}
		return live.Topics[0].Partitions[0]
	}
	if p := read(); sampled.TotalLag != 0 || p.Lag != 0 {
		t.Errorf("committed at the marker: sampled %d, live %d; want 0 both", sampled.TotalLag, p.Lag)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: []byte("b")}).FirstErr(); err != nil { // 2
		t.Fatal(err)
	}
	if p := read(); p.Lag != 1 {
		t.Errorf("after a new record: live lag %d; want 1", p.Lag)
	}
	kfaketest.Commit(t, adm, "billing", "payments", map[int32]int64{0: 3})
	if p := read(); p.Lag != 0 {
		t.Errorf("committed past the new record: live lag %d; want 0", p.Lag)
	}
}

// kfakeWorld is a kfake cluster, the console's client of it, a producer that names partitions
// with its admin client, and the test's context.
func kfakeWorld(t *testing.T) (*kfake.Cluster, *kafka.Cluster, *kgo.Client, *kadm.Client, context.Context) {
	t.Helper()
	broker := kfaketest.Cluster(t)
	k, err := kafka.New(configs.KafkaCluster{Name: "t", Brokers: broker.ListenAddrs(), RequestTimeout: configs.Duration(10 * time.Second)},
		configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	prod := kfaketest.Client(t, broker, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	return broker, k, prod, kadm.NewClient(prod), ctx
}
