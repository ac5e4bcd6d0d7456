package triage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/storetest"
	"github.com/redrive/redrive/ops/triage"
	"github.com/redrive/redrive/ops/waittest"
)

// trustTrace is a Spring listener's stack trace whose application frame is frame.
func trustTrace(frame string) string {
	return "org.springframework.kafka.listener.ListenerExecutionFailedException: Listener failed\n" +
		"\tat java.base/java.lang.Thread.run(Thread.java:1583)\n" +
		"Caused by: com.acme.StockException: out of stock\n" +
		"\tat app//" + frame + "(Code.java:42)\n"
}

// TestTrustResolveErrorGroupByItsKey: an error group is resolved by the key its page shows — a
// fingerprint (class at frame) selects that group alone, the class every group of it; by one of
// its records (Of), the group that record is in, whatever its key; and by type compared as the
// actor sees it (Shown), where a masked type matches nothing by its name.
func TestTrustResolveErrorGroupByItsKey(t *testing.T) {
	const reserve = "com.acme.StockException at com.acme.orders.Reserve.apply"
	ctx := waittest.Context(t, 2*time.Minute)
	broker := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders.DLT"))
	prod := kfaketest.Client(t, broker)
	for _, frame := range []string{"com.acme.orders.Reserve.apply", "com.acme.billing.Invoice.total", "com.acme.orders.Reserve.apply"} {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders.DLT", Value: []byte(`{}`), Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.StockException")},
			{Key: "kafka_dlt-exception-stacktrace", Value: []byte(trustTrace(frame))}}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	k, err := kafka.New(configs.KafkaCluster{Name: "main", Brokers: broker.ListenAddrs()}, configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	tr := triage.New(storetest.Open(t), []triage.Cluster{k})
	resolve := func(ctx context.Context, g triage.ErrorGroupRef) (triage.Result, error) {
		return tr.Resolve(ctx, triage.Request{Cluster: "main", Topic: "orders.DLT", State: triage.StateOpen,
			Actor: access.Actor{Name: "otto", Role: access.Operator}, Selection: triage.Selection{ErrorGroup: &g}})
	}
	masked := func(typ, cause string) (string, string) {
		if typ != "" {
			typ = "••• redacted •••"
		}
		return typ, cause
	}
	for _, tc := range []struct {
		name string
		ref  triage.ErrorGroupRef
		want int64
	}{
		{"Fingerprint", triage.ErrorGroupRef{ExceptionType: reserve}, 2},
		{"Class", triage.ErrorGroupRef{ExceptionType: "com.acme.StockException"}, 3},
		{"OfRecord", triage.ErrorGroupRef{ExceptionType: "••• redacted ••• (group of record 0:1)", Of: &triage.RecordKey{Partition: 0, Offset: 1}}, 1},
		{"OfRecordOfTwo", triage.ErrorGroupRef{Of: &triage.RecordKey{Partition: 0, Offset: 2}}, 2},
		{"MaskedGuessOfClass", triage.ErrorGroupRef{ExceptionType: "com.acme.StockException", Shown: masked}, 0},
		{"MaskedGuessOfFingerprint", triage.ErrorGroupRef{ExceptionType: reserve, Shown: masked}, 0},
		{"MaskedAsShown", triage.ErrorGroupRef{ExceptionType: "••• redacted •••", Shown: masked}, 3},
	} {
		res, err := resolve(ctx, tc.ref)
		if err != nil || res.Matched != tc.want {
			t.Errorf("%s: matched %d (%v), want %d", tc.name, res.Matched, err, tc.want)
		}
	}
	for _, off := range []int64{3, 99} {
		if _, err := resolve(ctx, triage.ErrorGroupRef{Of: &triage.RecordKey{Partition: 0, Offset: off}}); !errors.Is(err, ops.ErrInvalid) {
			t.Errorf("the group of record 0:%d, past the topic's end: %v, want ErrInvalid", off, err)
		}
	}
}
