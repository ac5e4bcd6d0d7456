package trace_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/search"
	"github.com/redrive/redrive/ops/trace"
)

// Reproduce with (PostgreSQL for the outbox: source /tmp/stack/env, or set REDRIVE_TEST_PG_DSN):
//
//	go test ./ops/trace/ -run '^$' -bench BenchmarkTraceAggregate -benchtime=20x
//
// A 1,000,000-record topic of 10 partitions in kfake (in process, loopback), one record every
// 100 ms across ~28 hours, keys order-0 … order-99999. The aggregate order-bench has three events
// in the outbox, published 2 s apart near the end of the log. "trace" is the whole use case
// (outbox look-up, the key's partition, the window of the rows' created_at and sent_at found by
// the brokers' offsets-for-time index, the scan, the verdict); "direct" reads the same partition
// window with a Scanner given its offsets; "fullscan" reads the whole topic for the key, which
// is what a trace without the outbox's hints and the key's partition would cost.

const (
	benchRecords    = 1_000_000
	benchPartitions = 10
	benchEvents     = 3
	benchAt         = 900_000 // the aggregate's first record comes after this many others
)

func BenchmarkTraceAggregate(b *testing.B) {
	ctx := context.Background()
	broker := kfaketest.Cluster(b)
	k, err := kafka.New(configs.KafkaCluster{Name: "bench", Brokers: broker.ListenAddrs(), RequestTimeout: configs.Duration(10 * time.Second)},
		configs.MessageIDRules{Headers: []string{"messageId"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(k.Close)
	prod := kfaketest.Client(b, broker, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, benchPartitions, 1, nil, "orders"); err != nil {
		b.Fatal(err)
	}

	start := time.Now()
	base := time.Now().Add(-benchRecords * 100 * time.Millisecond).Truncate(time.Second)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		first  error
		events []time.Time
	)
	produce := func(key string, at time.Time, id string) {
		wg.Add(1)
		prod.Produce(ctx, &kgo.Record{Topic: "orders", Partition: kafka.KeyPartition("orders", []byte(key), benchPartitions),
			Key: []byte(key), Timestamp: at, Headers: []kgo.RecordHeader{{Key: "messageId", Value: []byte(id)}},
			Value: fmt.Appendf(nil, `{"orderId":%q,"messageId":%q}`, key, id)}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	for i := range benchRecords {
		at := base.Add(time.Duration(i) * 100 * time.Millisecond)
		produce(fmt.Sprintf("order-%d", i%100_000), at, fmt.Sprintf("m-%07d", i))
		if i >= benchAt && i < benchAt+benchEvents*20 && (i-benchAt)%20 == 0 {
			produce("order-bench", at, fmt.Sprintf("bench-%d", (i-benchAt)/20))
			events = append(events, at)
		}
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
	b.Logf("setup: produced %d records in %v", benchRecords+benchEvents, time.Since(start).Round(time.Millisecond))

	// The outbox: the aggregate's three rows, each created a second before its record and sent
	// a second after it, as a relay does.
	dsn := pgtest.NewDatabase(b)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, pgoutbox.SeedDDL); err != nil {
		b.Fatal(err)
	}
	for i, at := range events {
		if _, err := conn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type,
			schema_version, payload, status, attempts, available_at, created_at, sent_at)
			VALUES ($1, 'Order', 'order-bench', 'OrderPlaced', 1, '{}', 'SENT', 1, $2, $2, $3)`,
			fmt.Sprintf("bench-%d", i), at.UTC().Add(-time.Second), at.UTC().Add(time.Second)); err != nil {
			b.Fatal(err)
		}
	}
	conn.Close(ctx)
	ob, err := pgoutbox.Open(ctx, configs.Outbox{Name: "orders", DSN: configs.Secret(dsn), Table: "outbox_event", Columns: seedColumns()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ob.Close)

	tr := trace.New(trace.Options{Outboxes: []trace.Outbox{ob}, Kafka: []trace.KafkaCluster{k},
		Consumers: []ops.Consumer{{Name: "inventory-service", Kafka: &ops.ConsumerKafka{Cluster: "bench", Group: "inventory-service", Topics: []string{"orders"}}}},
		IDs:       ops.MessageIDRules{Headers: []string{"messageId"}}, Budget: trace.Budget{Records: 2_000_000, Time: time.Minute}})

	// The key's partition and the window the outbox rows give (created_at − 1 min … sent_at + 1 min).
	part := kafka.KeyPartition("orders", []byte("order-bench"), benchPartitions)
	lo, err := k.OffsetsAfter(ctx, "orders", events[0].Add(-time.Second-time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	hi, err := k.OffsetsAfter(ctx, "orders", events[len(events)-1].Add(time.Second+time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("the key's partition %d, window offsets [%d, %d): %d records", part, lo[part], hi[part], hi[part]-lo[part])

	b.Run("trace", func(b *testing.B) {
		for b.Loop() {
			res, err := tr.Trace(ctx, trace.Query{AggregateID: "order-bench"})
			if err != nil {
				b.Fatal(err)
			}
			if !strings.Contains(res.Verdict, fmt.Sprintf("published to orders/%d at offsets", part)) {
				b.Fatalf("verdict %q", res.Verdict)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			sc := k.NewScanner("orders")
			found := 0
			if _, err := sc.Forward(ctx, part, lo[part], hi[part], func(r kafka.Record) bool {
				if string(r.Key) == "order-bench" {
					found++
				}
				return true
			}); err != nil {
				b.Fatal(err)
			}
			sc.Close()
			if found != benchEvents {
				b.Fatalf("found %d", found)
			}
		}
	})
	b.Run("fullscan", func(b *testing.B) {
		for b.Loop() {
			found := 0
			if _, err := search.ScanKafka(ctx, k, search.Query{Topic: "orders", Order: "oldest", Each: func(r kafka.Record) error {
				if string(r.Key) == "order-bench" {
					found++
				}
				return nil
			}}); err != nil {
				b.Fatal(err)
			}
			if found != benchEvents {
				b.Fatalf("found %d", found)
			}
		}
	})
}

// seedColumns are the seed's column names (configs.Load fills them when the config leaves them out).
func seedColumns() configs.OutboxColumns {
	return configs.OutboxColumns{ID: "id", EventID: "event_id", AggregateType: "aggregate_type", AggregateID: "aggregate_id",
		EventType: "event_type", SchemaVersion: "schema_version", Payload: "payload", Status: "status", Attempts: "attempts",
		AvailableAt: "available_at", LockedUntil: "locked_until", LastError: "last_error", CreatedAt: "created_at", SentAt: "sent_at"}
}
