package sampler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/storetest"
	"github.com/redrive/redrive/ops/waittest"
)

func ctxT(tb testing.TB) context.Context { return waittest.Context(tb, 60*time.Second) }

// openStore opens (and migrates) the store on dsn, closed at cleanup: one console replica's store.
func openStore(tb testing.TB, dsn string) *store.Store {
	tb.Helper()
	return storetest.On(tb, dsn)
}

// clock is a settable time source for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// broker is a kfake Kafka cluster on loopback with a producer/admin client, counting the admin
// requests it receives by name.
type broker struct {
	kf    *kfake.Cluster
	prod  *kgo.Client
	adm   *kadm.Client
	mu    sync.Mutex
	count map[string]int
}

func newBroker(tb testing.TB) *broker {
	tb.Helper()
	kf := kfaketest.Cluster(tb)
	prod := kfaketest.Client(tb, kf,
		kgo.ProducerLinger(time.Millisecond),
		kgo.MaxBufferedRecords(1_000_000),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	b := &broker{kf: kf, prod: prod, adm: kadm.NewClient(prod), count: map[string]int{}}
	kf.Control(func(r kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		b.mu.Lock()
		b.count[kmsg.NameForKey(r.Key())]++
		b.mu.Unlock()
		return nil, nil, false // observe only
	})
	return b
}

// requests returns how many requests of that kind the broker received so far.
func (b *broker) requests(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.count[name]
}

// cluster is one console replica's client for the broker.
func (b *broker) cluster(tb testing.TB, timeout time.Duration) *kafka.Cluster {
	tb.Helper()
	c, err := kafka.New(configs.KafkaCluster{
		Name:           "main",
		Brokers:        b.kf.ListenAddrs(),
		RequestTimeout: configs.Duration(timeout),
	}, configs.MessageIDRules{})
	if err != nil {
		tb.Fatalf("kafka.New: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

func (b *broker) topic(tb testing.TB, name string, partitions int32) {
	tb.Helper()
	if _, err := b.adm.CreateTopic(ctxT(tb), partitions, 1, nil, name); err != nil {
		tb.Fatalf("create topic %s: %v", name, err)
	}
}

// fill writes n one-byte records to each of the partitions.
func (b *broker) fill(tb testing.TB, topic string, n int, partitions ...int32) {
	tb.Helper()
	var recs []*kgo.Record
	for _, p := range partitions {
		for range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")})
		}
	}
	if err := b.prod.ProduceSync(ctxT(tb), recs...).FirstErr(); err != nil {
		tb.Fatalf("produce: %v", err)
	}
}

// commit commits offsets for a group without members (an admin commit).
func (b *broker) commit(tb testing.TB, group, topic string, offsets map[int32]int64) {
	tb.Helper()
	kfaketest.Commit(tb, b.adm, group, topic, offsets)
}

// member joins group as a live consumer of topic that commits only when told to.
type member struct {
	cl *kgo.Client
}

func (b *broker) member(tb testing.TB, group, topic string, wantRecords int) *member {
	tb.Helper()
	cl := kfaketest.Client(tb, b.kf,
		kgo.ClientID("worker-1"),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
	)
	ctx := ctxT(tb)
	for got := 0; got < wantRecords; { // joined and assigned once it receives records
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			tb.Fatalf("member poll: %v", err)
		}
		got += fs.NumRecords()
	}
	return &member{cl: cl}
}

func (m *member) commit(tb testing.TB, topic string, offsets map[int32]int64) {
	tb.Helper()
	eo := map[int32]kgo.EpochOffset{}
	for p, o := range offsets {
		eo[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var cerr error
	m.cl.CommitOffsetsSync(ctxT(tb), map[string]map[int32]kgo.EpochOffset{topic: eo},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			cerr = err
			if err == nil {
				for _, t := range resp.Topics {
					for _, p := range t.Partitions {
						if p.ErrorCode != 0 && cerr == nil {
							cerr = fmt.Errorf("partition %d: error code %d", p.Partition, p.ErrorCode)
						}
					}
				}
			}
		})
	if cerr != nil {
		tb.Fatalf("member commit: %v", cerr)
	}
}

// newSampler builds a Sampler on st sampling the clusters, with the clock and options given.
func newSampler(tb testing.TB, st *store.Store, clk *clock, mod func(*Options), clusters ...KafkaSource) *Sampler {
	tb.Helper()
	opts := Options{Store: st, Kafka: clusters, Now: clk.Now}
	if mod != nil {
		mod(&opts)
	}
	s, err := New(opts)
	if err != nil {
		tb.Fatalf("sampler.New: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// sampleAfter moves clk on by d and has s take one sample, failing tb if it cannot.
func sampleAfter(tb testing.TB, ctx context.Context, s *Sampler, clk *clock, d time.Duration) {
	tb.Helper()
	clk.Add(d)
	if err := s.SampleOnce(ctx); err != nil {
		tb.Fatalf("SampleOnce: %v", err)
	}
}

// sampleUnavailableAfter is sampleAfter for a source that is down: the sample fails with
// ops.ErrUnavailable.
func sampleUnavailableAfter(tb testing.TB, ctx context.Context, s *Sampler, clk *clock, d time.Duration) {
	tb.Helper()
	clk.Add(d)
	if err := s.SampleOnce(ctx); !errors.Is(err, ops.ErrUnavailable) {
		tb.Fatalf("SampleOnce = %v, want ErrUnavailable", err)
	}
}

// replicas are two samplers of b's cluster over one new store, two replicas of the console: the
// one a test makes lead (it samples) and a reader with its options changed by mod. timeout is the
// cluster's request timeout.
func replicas(t *testing.T, b *broker, clk *clock, timeout time.Duration, mod func(*Options)) (leader, reader *Sampler) {
	t.Helper()
	dsn := testDSN(t)
	leader = newSampler(t, openStore(t, dsn), clk, nil, KafkaSource{Cluster: b.cluster(t, timeout)})
	reader = newSampler(t, openStore(t, dsn), clk, mod, KafkaSource{Cluster: b.cluster(t, timeout)})
	return leader, reader
}

// leaderGauge reads redrive_sampler_leader through a registry, as /metrics would.
func leaderGauge(tb testing.TB, s *Sampler) float64 {
	tb.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "redrive_sampler_leader" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	tb.Fatal("redrive_sampler_leader not exposed")
	return 0
}

func group(tb testing.TB, snap lag.Snapshot, name string) lag.Group {
	tb.Helper()
	for _, g := range snap.Groups {
		if g.Name == name {
			return g
		}
	}
	tb.Fatalf("group %q not in snapshot of %s at %v (%d groups)", name, snap.Cluster, snap.At, len(snap.Groups))
	return lag.Group{}
}

func testDSN(tb testing.TB) string { return pgtest.NewDatabase(tb) }
