package kafka

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/waittest"
)

// cutProduce makes broker, while down is set, close the connection on every produce: a batch
// sent and never answered, which the idempotent producer may not fail (it could be written), so
// it retries it for ever. (ops/replay's test answers NOT_ENOUGH_REPLICAS instead.)
func cutProduce(broker *kfake.Cluster, down *atomic.Bool) {
	broker.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		broker.KeepControl()
		if !down.Load() {
			return nil, nil, false
		}
		return nil, errors.New("the broker cuts produce"), true
	})
}

// A broker that never acknowledges a produce made Produce wait for ever (the idempotent producer
// never fails a sent batch it may have written). It now gives up after a few request timeouts
// with ErrNotAcknowledged, an ops.ErrUnavailable, for every record, and drops its producer: the
// records it still held are not written once the broker recovers; the next call writes anew.
func TestProduceGivesUpOnABrokerThatNeverAcknowledges(t *testing.T) {
	f := newFake(t, func(c *configs.KafkaCluster) { c.RequestTimeout = configs.Duration(500 * time.Millisecond) })
	f.topic(t, "orders", 1)
	var down atomic.Bool
	cutProduce(f.broker, &down)
	ctx := ctxT(t)
	down.Store(true)
	started := time.Now()
	errs := f.c.Produce(ctx, []Outgoing{{Topic: "orders", Value: []byte("a")}, {Topic: "orders", Value: []byte("b")}})
	if took := time.Since(started); took > 3*time.Second {
		t.Errorf("Produce took %v, want about 3 request timeouts (1.5 s)", took)
	}
	for i, err := range errs {
		if !errors.Is(err, ErrNotAcknowledged) || !errors.Is(err, ops.ErrUnavailable) {
			t.Errorf("record %d: %v, want ErrNotAcknowledged", i, err)
		}
	}
	if msg := ops.Message(errs[0]); msg != `kafka cluster "test" did not acknowledge the records within 1.5s; whether they were written is unknown, so they are sent again when it answers` {
		t.Errorf("message %q", msg)
	}
	down.Store(false)
	time.Sleep(time.Second) // the dropped producer's retries would land by now
	if ends, err := f.c.EndOffsets(ctx, "orders"); err != nil || ends[0] != 0 {
		t.Fatalf("end offsets %v, %v: the abandoned records were written after Produce gave up", ends, err)
	}
	for i, err := range f.c.Produce(ctx, []Outgoing{{Topic: "orders", Value: []byte("c")}}) {
		if err != nil {
			t.Fatalf("record %d after recovery: %v", i, err)
		}
	}
	if ends, err := f.c.EndOffsets(ctx, "orders"); err != nil || ends[0] != 1 {
		t.Fatalf("end offsets %v, %v; want the one record written after recovery", ends, err)
	}
}

// A record's failure as the ledger shows it: the outcomes that leave the broker's answer unknown
// (the producer dropped, kgo giving up, the call's context ended: "context canceled" read as an
// internal error) are ErrNotAcknowledged, to be sent again as a whole; a topic that does not
// exist is said once in a person's words (it was the cluster's message and the driver's text).
func TestProduceErr(t *testing.T) {
	f := newFake(t)
	for _, err := range []error{kgo.ErrClientClosed, kgo.ErrRecordTimeout, kgo.ErrRecordRetries, context.Canceled, context.DeadlineExceeded} {
		if got := f.c.produceErr("orders", err); !errors.Is(got, ErrNotAcknowledged) {
			t.Errorf("%v: %v, want ErrNotAcknowledged", err, got)
		}
	}
	for _, err := range []error{kerr.UnknownTopicOrPartition, kerr.UnknownTopicID} {
		got := f.c.produceErr("gone", err)
		if !errors.Is(got, ops.ErrNotFound) || ops.Message(got) != "topic gone does not exist" {
			t.Errorf("%v: %v (%q)", err, got, ops.Message(got))
		}
	}
}

// The destination deleted and created again: the long-lived producer kept the old topic's ID
// (franz-go does not adopt a new one) and every later replay to it failed "UNKNOWN_TOPIC_ID"
// until the console restarted. Produce now sends those records again through a new producer,
// once, within its wait: they land in the new topic, each once.
func TestProduceToARecreatedTopic(t *testing.T) {
	f := newFake(t)
	f.topic(t, "orders", 1)
	ctx := ctxT(t)
	for i, err := range f.c.Produce(ctx, []Outgoing{{Topic: "orders", Value: []byte("before")}}) {
		if err != nil {
			t.Fatalf("record %d before the recreation: %v", i, err)
		}
	}
	if resp, err := f.adm.DeleteTopics(ctx, "orders"); err != nil || resp.Error() != nil {
		t.Fatalf("delete orders: %v %v", err, resp.Error())
	}
	waittest.For(t, 10*time.Second, "orders created again", func() (error, bool) {
		_, err := f.adm.CreateTopic(ctx, 1, 1, nil, "orders")
		return err, err == nil
	})
	for i, err := range f.c.Produce(ctx, []Outgoing{{Topic: "orders", Value: []byte("a")}, {Topic: "orders", Value: []byte("b")}}) {
		if err != nil {
			t.Fatalf("record %d after the recreation: %v", i, err)
		}
	}
	if ends, err := f.c.EndOffsets(ctx, "orders"); err != nil || ends[0] != 2 {
		t.Fatalf("end offsets %v, %v; want the two records, once each", ends, err)
	}
}
