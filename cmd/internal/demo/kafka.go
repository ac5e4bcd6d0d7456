package demo

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kafka"
)

// The demo's dead letters fail for these reasons, in Spring Kafka's words.
var demoExceptions = []struct{ fqcn, cause, message string }{
	{"org.springframework.kafka.listener.ListenerExecutionFailedException", "com.acme.inventory.OutOfStockException",
		"Listener method threw: SKU-%d has 0 units available, order needs %d"},
	{"org.springframework.kafka.support.serializer.DeserializationException", "com.fasterxml.jackson.core.JsonParseException",
		"failed to deserialize; nested exception: Unexpected character ('<' (code 60)) at offset %d%d"},
	{"org.springframework.dao.DataIntegrityViolationException", "org.postgresql.util.PSQLException",
		"duplicate key value violates unique constraint \"uq_reservation\" (sku %d, order %d)"},
	{"java.util.concurrent.TimeoutException", "",
		"pricing-service did not answer within %d%d ms"},
}

// SeedKafka creates the demo topics, fills a Spring-style dead-letter topic and a retry topic, and
// commits offsets for consumer groups in different states. It then keeps traffic flowing until
// ctx ends: orders keep arriving, inventory-service consumes slower than that (its lag grows),
// shipping-service holds its partitions without committing (stalled), billing-service keeps up.
func SeedKafka(ctx context.Context, brokers []string) error {
	// Batches of at most seedBatchBytes, as a relay that produced the history over days would
	// have written it: one batch of a partition's whole history is returned to a fetch only when
	// no other partition has data for it (Kafka's and kfake's rule for a batch above the
	// partition's fetch size), so a paced consumer read partition 0 and never committed on 1, 2.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("orders"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.AllowAutoTopicCreation(), kgo.ProducerBatchMaxBytes(seedBatchBytes))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for topic, parts := range map[string]int32{"orders": 3, "orders.DLT": 3, "orders.retry-1": 1, "payments": 2, "payments-dlt": 1} {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
			return fmt.Errorf("demo: create %s: %w", topic, err)
		}
	}
	// The orders topic holds what the orders outbox's relay produced: its SENT history, each event
	// in its key's partition at its sent_at (the outbox is seeded from the same list).
	history := orderHistory(seededAt())
	var recs []*kgo.Record
	for i := len(history) - 1; i >= 0; i-- { // oldest first
		recs = append(recs, historyRecord(OrdersTopic, 3, history[i]))
	}
	for i := 0; i < 40; i++ {
		recs = append(recs, &kgo.Record{Topic: "payments", Partition: int32(i % 2), Key: []byte(fmt.Sprintf("pay-%d", i)),
			Headers: []kgo.RecordHeader{{Key: "messageId", Value: []byte(fmt.Sprintf("pay-msg-%d", i))}},
			Value:   []byte(fmt.Sprintf(`{"messageId":"pay-msg-%d","paymentId":"pay-%d","amount":%d.50}`, i, i, 10+i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("demo: produce: %w", err)
	}
	// Where each event landed, for the dead letters' original-partition and -offset headers.
	placed := map[string]*kgo.Record{}
	for _, r := range recs {
		if r.Topic == OrdersTopic {
			placed[string(headerValue(r, "messageId"))] = r
		}
	}
	recs = recs[:0]
	// Dead letters of orders, as Spring Kafka's DeadLetterPublishingRecoverer writes them for
	// inventory-service: the original record's key, value and messageId, in its partition, its
	// partition, offset and timestamp in the headers, a few minutes after it (the retries). Ids
	// spread over the history, whose events the inventory inbox processed in part.
	var dead []*kgo.Record
	for i := 0; i < 240; i++ {
		ex := demoExceptions[i%len(demoExceptions)]
		if i%7 == 0 {
			ex = demoExceptions[0]
		}
		orig := placed[fmt.Sprintf("evt-%06d", 1+i*5+i/3)]
		id := headerValue(orig, "messageId")
		headers := []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte(orig.Topic)},
			{Key: "kafka_dlt-original-partition", Value: be32(orig.Partition)},
			{Key: "kafka_dlt-original-offset", Value: be64(orig.Offset)},
			{Key: "kafka_dlt-original-timestamp", Value: be64(orig.Timestamp.UnixMilli())},
			{Key: "kafka_dlt-original-timestamp-type", Value: []byte("CREATE_TIME")},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte("inventory-service")},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte(ex.fqcn)},
			{Key: "kafka_dlt-exception-message", Value: []byte(fmt.Sprintf(ex.message, i%50, 1+i%4))},
			{Key: "kafka_dlt-exception-stacktrace", Value: []byte(ex.fqcn + ": ...\n\tat com.acme.inventory.OrderListener.onOrder(OrderListener.java:57)\n\tat java.base/java.lang.Thread.run(Thread.java:1583)")},
			{Key: "messageId", Value: id},
			{Key: "traceId", Value: []byte(fmt.Sprintf("%016x", rand.Uint64()))},
		}
		if ex.cause != "" {
			headers = append(headers, kgo.RecordHeader{Key: "kafka_dlt-exception-cause-fqcn", Value: []byte(ex.cause)})
		}
		// A few minutes of retries after the original, but never after now: the newest originals
		// were sent less than a minute ago, and a dead letter in the future read "arrived -22 s
		// ago" on the overview and "in 3 s" on the Kafka page.
		at := orig.Timestamp.Add(time.Duration(2+i%5) * time.Minute)
		if now := time.Now().Truncate(time.Millisecond); at.After(now) {
			at = now
		}
		dead = append(dead, &kgo.Record{Topic: "orders.DLT", Partition: orig.Partition, Key: orig.Key,
			Timestamp: at, Headers: headers, Value: orig.Value})
	}
	sort.SliceStable(dead, func(a, b int) bool { return dead[a].Timestamp.Before(dead[b].Timestamp) })
	recs = append(recs, dead...)
	// Retries of events the DLT does not hold (yet), as @RetryableTopic writes them.
	for i := 0; i < 12; i++ {
		orig := placed[fmt.Sprintf("evt-%06d", 1+i*3)]
		recs = append(recs, &kgo.Record{Topic: "orders.retry-1", Partition: 0, Key: orig.Key, Value: orig.Value,
			Timestamp: orig.Timestamp.Add(30 * time.Second),
			Headers: []kgo.RecordHeader{{Key: "kafka_original-topic", Value: []byte(orig.Topic)},
				{Key: "kafka_original-partition", Value: be32(orig.Partition)},
				{Key: "kafka_original-offset", Value: be64(orig.Offset)},
				{Key: "kafka_exception-fqcn", Value: []byte("java.util.concurrent.TimeoutException")},
				{Key: "retry_topic-attempts", Value: be32(int32(1 + i%3))},
				{Key: "messageId", Value: headerValue(orig, "messageId")}}})
	}
	// The seed document's plain header names; payment pay-i is at payments/(i%2) offset i/2.
	for i := 0; i < 9; i++ {
		recs = append(recs, &kgo.Record{Topic: "payments-dlt", Key: []byte(fmt.Sprintf("pay-%d", i)),
			Headers: []kgo.RecordHeader{{Key: "originalTopic", Value: []byte("payments")}, {Key: "originalPartition", Value: []byte(fmt.Sprint(i % 2))},
				{Key: "originalOffset", Value: []byte(fmt.Sprint(i / 2))}, {Key: "originalMessageId", Value: []byte(fmt.Sprintf("pay-msg-%d", i))},
				{Key: "retryCount", Value: []byte("5")}, {Key: "lastErrorType", Value: []byte("PaymentGatewayException")},
				{Key: "lastErrorMessage", Value: []byte("card issuer unavailable (HTTP 503)")}, {Key: "consumer", Value: []byte("billing-service")}},
			Value: []byte(fmt.Sprintf(`{"messageId":"pay-msg-%d","paymentId":"pay-%d","amount":%d.50}`, i, i, 10+i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("demo: produce: %w", err)
	}
	// Groups that are not running: one caught up long ago, one far behind.
	commit := func(group string, offsets map[int32]int64) error {
		o := kadm.Offsets{}
		for p, off := range offsets {
			o.AddOffset("orders", p, off, -1)
		}
		_, err := adm.CommitOffsets(ctx, group, o)
		return err
	}
	if err := commit("legacy-reporting", map[int32]int64{0: 200, 1: 180, 2: 150}); err != nil {
		return fmt.Errorf("demo: commit: %w", err)
	}
	return nil
}

// The demo's consumer groups and the state each is meant to show on the Kafka pages (sampled every
// 5 s, Burrow's rules with the default window of 5 min; TestDemoGroupsAreInTheirStates checks
// each against the lag evaluator):
//
//   - billing-service reads orders as fast as the relay produces and commits what it read on
//     every partition: OK.
//   - inventory-service processes two records a second, one partition after the other, and
//     commits each: its commits move on every partition while its lag grows (the relay produces
//     about four a second) and it is days behind (it started at the seeded history):
//     WARN, "… behind (warn after 10 min)" (WarnAfterSeconds, which console demo configures).
//   - shipping-service took its first records, committed them and holds its partitions without
//     consuming more: STALL (STOP once no commit was seen for 15 min).
//   - legacy-reporting committed long ago and has no members: EMPTY, its lag left behind.
//   - ledger-service (refunds, RunRefunds) keeps up: OK; fraud-check waits with no member at the
//     poison record of refunds: EMPTY.
//   - notification-service reads orders as billing-service does, as a KIP-848 consumer group (the
//     broker assigns its partitions: Kafka 4's protocol): OK.
//   - order-mailer is a KIP-932 share group on orders: its member takes what the relay produces
//     and accepts each record on its next poll: OK.
//
// WarnAfterSeconds is the time lag the demo's Kafka cluster warns after (lag.warn_after_seconds).
const WarnAfterSeconds = 600

// seedBatchBytes bounds the seed's record batches (a record is under 1 KiB).
const seedBatchBytes = 4 << 10

// RunKafkaTraffic keeps the demo's consumer groups of the orders topic alive until ctx ends (the
// orders relay, RunRelay, produces to it), each in the state described above.
func RunKafkaTraffic(ctx context.Context, brokers []string) {
	go consume(ctx, brokers, OrdersTopic, "billing-service", 0)   // keeps up
	go consume(ctx, brokers, OrdersTopic, "inventory-service", 2) // slower than the relay: lag grows
	go consume(ctx, brokers, OrdersTopic, NotificationGroup, 0, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()),
		kgo.ClientID("notification-service-1"))
	go shareConsume(ctx, brokers, OrdersTopic, MailerShareGroup)
	holdWithoutCommitting(ctx, brokers, OrdersTopic, "shipping-service")
}

// The demo's groups of Kafka 4's kinds: a KIP-848 consumer group and a KIP-932 share group.
const (
	NotificationGroup = "notification-service"
	MailerShareGroup  = "order-mailer"
)

// shareConsume is a member of the share group group on topic: it takes the records the broker
// delivers to it (from the group's start, the end of topic when it first joins: Kafka's default
// share.auto.offset.reset) and accepts each on its next poll, until ctx ends.
func shareConsume(ctx context.Context, brokers []string, topic, group string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.ClientID(group+"-1"))
	if err != nil {
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		cl.PollRecords(ctx, 100) // the previous poll's records are accepted by this one
	}
}

// every calls step with 0, 1, 2, … once an interval, the first an interval from now, until ctx
// ends or step returns an error.
func every(ctx context.Context, interval time.Duration, step func(i int) error) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if step(i) != nil {
			return
		}
	}
}

// consume consumes topic as a member of group from the start (opts: as a KIP-848 member) and
// commits each record it processed: as fast as records come with perSecond 0, else perSecond records a second, taken from
// the partitions in turn (a fetch brings a few records of each: a paced consumer that read one
// partition's fetch before the next would leave the others' commits standing for seconds).
func consume(ctx context.Context, brokers []string, topic, group string, perSecond int, opts ...kgo.Opt) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxPartitionBytes(seedBatchBytes)}, opts...)...)
	if err != nil {
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if perSecond <= 0 {
			if recs := fs.Records(); len(recs) > 0 {
				_ = cl.CommitRecords(ctx, recs...)
			}
			continue
		}
		var queues [][]*kgo.Record // one per partition, in offset order
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) > 0 {
				queues = append(queues, p.Records)
			}
		})
		for len(queues) > 0 && ctx.Err() == nil {
			var next [][]*kgo.Record
			for _, q := range queues {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second / time.Duration(perSecond)):
				}
				_ = cl.CommitRecords(ctx, q[0])
				if len(q) > 1 {
					next = append(next, q[1:])
				}
			}
			queues = next
		}
	}
}

// holdWithoutCommitting joins group, takes the first records of topic so the group has a
// position, commits them and then consumes nothing more while it stays a member.
func holdWithoutCommitting(ctx context.Context, brokers []string, topic, group string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxPartitionBytes(seedBatchBytes))
	if err != nil {
		return
	}
	defer cl.Close()
	fs := cl.PollRecords(ctx, 50)
	if len(fs.Records()) > 0 {
		_ = cl.CommitRecords(ctx, fs.Records()...)
	}
	cl.PauseFetchTopics(topic)
	<-ctx.Done()
}

// historyRecord is the record the relay produced for e: in its key's partition of topic (of n).
func historyRecord(topic string, n int, e sentEvent) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: kafka.KeyPartition(topic, []byte(e.AggregateID), n), Key: []byte(e.AggregateID),
		Value: []byte(e.Payload), Timestamp: e.SentAt,
		Headers: []kgo.RecordHeader{{Key: "messageId", Value: []byte(e.EventID)}, {Key: "eventType", Value: []byte(e.EventType)}}}
}

// headerValue is r's first header named key (nil when none).
func headerValue(r *kgo.Record, key string) []byte {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return nil
}

func be32(v int32) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, uint32(v))
	return b
}

func be64(v int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(v))
	return b
}
