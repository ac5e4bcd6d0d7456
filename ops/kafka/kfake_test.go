package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/waittest"
)

// fake is a kfake broker on loopback with a Redrive Cluster, a producer and an admin client on it.
type fake struct {
	broker *kfake.Cluster
	c      *Cluster
	prod   *kgo.Client
	adm    *kadm.Client
}

// newFake starts a one-broker kfake cluster on 127.0.0.1 and a free port (kfaketest.Cluster).
func newFake(tb testing.TB, mod ...func(*configs.KafkaCluster)) *fake {
	tb.Helper()
	return newFakeOf(tb, kfaketest.Cluster(tb), mod...)
}

// newFakeOf is newFake over broker (a kfake cluster made with options of the test's own).
func newFakeOf(tb testing.TB, broker *kfake.Cluster, mod ...func(*configs.KafkaCluster)) *fake {
	tb.Helper()
	cfg := configs.KafkaCluster{
		Name:           "test",
		Brokers:        broker.ListenAddrs(),
		RequestTimeout: configs.Duration(10 * time.Second),
		Lag:            configs.LagRules{Window: configs.Duration(5 * time.Minute), StopAfter: configs.Duration(15 * time.Minute), WarnMinLag: 1},
	}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := New(cfg, configs.MessageIDRules{
		Headers:   []string{"messageId", "originalMessageId"},
		JSONPaths: []string{"messageId", "meta.id"},
	})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(c.Close)
	prod := kfaketest.Client(tb, broker,
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.MaxBufferedRecords(100_000),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	return &fake{broker: broker, c: c, prod: prod, adm: kadm.NewClient(prod)}
}

func ctxT(tb testing.TB) context.Context { return waittest.Context(tb, 30*time.Second) }

func (f *fake) topic(tb testing.TB, name string, partitions int32) {
	tb.Helper()
	if _, err := f.adm.CreateTopic(ctxT(tb), partitions, 1, nil, name); err != nil {
		tb.Fatalf("create topic %s: %v", name, err)
	}
}

// produce writes the records (Partition set by the caller) and waits for all acks.
func (f *fake) produce(tb testing.TB, recs ...*kgo.Record) {
	tb.Helper()
	if err := f.prod.ProduceSync(ctxT(tb), recs...).FirstErr(); err != nil {
		tb.Fatalf("produce: %v", err)
	}
}

// fill writes n small records to one partition.
func (f *fake) fill(tb testing.TB, topic string, partition int32, n int) {
	tb.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: []byte("v")}
	}
	f.produce(tb, recs...)
}

// filledTopic creates topic name with one partition per count and writes counts[p] small
// records to partition p.
func (f *fake) filledTopic(tb testing.TB, name string, counts ...int) {
	tb.Helper()
	f.topic(tb, name, int32(len(counts)))
	for p, n := range counts {
		f.fill(tb, name, int32(p), n)
	}
}

func (f *fake) commit(tb testing.TB, group string, topic string, offsets map[int32]int64) {
	tb.Helper()
	kfaketest.Commit(tb, f.adm, group, topic, offsets)
}

func (f *fake) deleteRecords(tb testing.TB, topic string, partition int32, before int64) {
	tb.Helper()
	os := kadm.Offsets{}
	os.AddOffset(topic, partition, before, -1)
	resp, err := f.adm.DeleteRecords(ctxT(tb), os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		tb.Fatalf("delete records: %v", err)
	}
}

func hdr(k string, v []byte) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: v} }
