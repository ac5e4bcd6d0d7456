package kafka

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
)

func be32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func h(k string, v any) Header {
	switch v := v.(type) {
	case string:
		return Header{Key: k, Value: []byte(v)}
	case []byte:
		return Header{Key: k, Value: v}
	}
	panic("bad header value")
}

var (
	failedAt = time.Date(2026, 2, 27, 8, 30, 0, 123_000_000, time.UTC)
	testIDs  = configs.MessageIDRules{Headers: []string{"messageId"}, JSONPaths: []string{"messageId", "meta.id"}}
)

func TestDecodeDeadLetter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers []Header
		value   string
		want    *DeadLetter
	}{
		{
			name: "SpringDLT/Binary",
			headers: []Header{
				h("kafka_dlt-original-topic", "orders"),
				h("kafka_dlt-original-partition", be32(3)),
				h("kafka_dlt-original-offset", be64(812)),
				h("kafka_dlt-original-timestamp", be64(failedAt.UnixMilli())),
				h("kafka_dlt-original-consumer-group", "billing"),
				h("kafka_dlt-exception-fqcn", "org.springframework.kafka.listener.ListenerExecutionFailedException"),
				h("kafka_dlt-exception-cause-fqcn", "java.lang.IllegalStateException"),
				h("kafka_dlt-exception-message", "Listener failed; order 42 has no customer"),
				h("kafka_dlt-exception-stacktrace", "java.lang.IllegalStateException: …\n\tat Billing.handle(Billing.java:12)"),
			},
			want: &DeadLetter{
				OriginalTopic: "orders", OriginalPartition: new(int32(3)), OriginalOffset: new(int64(812)),
				OriginalTimestamp: &failedAt, ConsumerGroup: "billing",
				ExceptionType:    "org.springframework.kafka.listener.ListenerExecutionFailedException",
				ExceptionCause:   "java.lang.IllegalStateException",
				ExceptionMessage: "Listener failed; order 42 has no customer",
				Stacktrace:       "java.lang.IllegalStateException: …\n\tat Billing.handle(Billing.java:12)",
				Convention:       ConventionSpringDLT,
			},
		},
		{
			name: "SpringDLT/DecimalText",
			headers: []Header{
				h("kafka_dlt-original-topic", "orders"),
				h("kafka_dlt-original-partition", "3"),
				h("kafka_dlt-original-offset", " 812 "),
				h("kafka_dlt-original-timestamp", "1772181000123"),
			},
			want: &DeadLetter{
				OriginalTopic: "orders", OriginalPartition: new(int32(3)), OriginalOffset: new(int64(812)),
				OriginalTimestamp: &failedAt, Convention: ConventionSpringDLT,
			},
		},
		{
			name: "SpringDLT/RepeatedHeadersLastWins",
			headers: []Header{
				h("kafka_dlt-original-topic", "orders"),
				h("kafka_dlt-original-offset", be64(10)),
				h("kafka_dlt-exception-fqcn", "java.lang.RuntimeException"),
				h("kafka_dlt-original-topic", "orders.retry-0"),
				h("kafka_dlt-original-offset", be64(77)),
				h("kafka_dlt-exception-fqcn", "java.lang.IllegalArgumentException"),
			},
			want: &DeadLetter{
				OriginalTopic: "orders.retry-0", OriginalOffset: new(int64(77)),
				ExceptionType: "java.lang.IllegalArgumentException", Convention: ConventionSpringDLT,
			},
		},
		{
			name: "SpringRetryTopic",
			headers: []Header{
				h("kafka_original-topic", "payments"),
				h("kafka_original-partition", be32(0)),
				h("kafka_original-offset", be64(1_000_000)),
				h("kafka_original-timestamp", be64(failedAt.UnixMilli())),
				h("kafka_original-consumer-group", "ledger"),
				h("kafka_exception-fqcn", "java.net.SocketTimeoutException"),
				h("kafka_exception-cause-fqcn", "java.io.IOException"),
				h("kafka_exception-message", "Read timed out"),
				h("kafka_exception-stacktrace", "trace"),
				h("retry_topic-attempts", be32(2)),
				h("retry_topic-attempts", be32(3)),
			},
			want: &DeadLetter{
				OriginalTopic: "payments", OriginalPartition: new(int32(0)), OriginalOffset: new(int64(1_000_000)),
				OriginalTimestamp: &failedAt, ConsumerGroup: "ledger",
				ExceptionType: "java.net.SocketTimeoutException", ExceptionCause: "java.io.IOException",
				ExceptionMessage: "Read timed out", Stacktrace: "trace", RetryCount: new(3),
				Convention: ConventionSpringRetryTopic,
			},
		},
		{
			// A record in a DLT after retry topics carries both sets; the DLT names win per field.
			name: "SpringDLTAfterRetries",
			headers: []Header{
				h("kafka_original-topic", "payments"),
				h("retry_topic-attempts", be32(4)),
				h("kafka_dlt-original-topic", "payments.retry-2"),
				h("kafka_dlt-exception-fqcn", "java.lang.IllegalStateException"),
			},
			want: &DeadLetter{
				OriginalTopic: "payments.retry-2", ExceptionType: "java.lang.IllegalStateException",
				RetryCount: new(4), Convention: ConventionSpringDLT,
			},
		},
		{
			name: "SpringCloudStream",
			headers: []Header{
				h("x-original-topic", "shipments"),
				h("x-original-partition", be32(1)),
				h("x-original-offset", be64(5)),
				h("x-original-timestamp", be64(failedAt.UnixMilli())),
				h("x-exception-fqcn", "org.springframework.messaging.MessagingException"),
				h("x-exception-message", "Dispatcher failed"),
				h("x-exception-stacktrace", "st"),
			},
			want: &DeadLetter{
				OriginalTopic: "shipments", OriginalPartition: new(int32(1)), OriginalOffset: new(int64(5)),
				OriginalTimestamp: &failedAt, ExceptionType: "org.springframework.messaging.MessagingException",
				ExceptionMessage: "Dispatcher failed", Stacktrace: "st", Convention: ConventionSpringCloudStream,
			},
		},
		{
			name: "Plain",
			headers: []Header{
				h("originalTopic", "orders"),
				h("originalPartition", "2"),
				h("originalOffset", "4711"),
				h("originalMessageId", "evt-9"),
				h("retryCount", "5"),
				h("firstFailedAt", "2026-02-27T08:30:00.123Z"),
				h("lastErrorType", "TimeoutError"),
				h("lastErrorMessage", "upstream took 30s"),
				h("consumer", "order-projector"),
				h("traceId", "4bf92f3577b34da6a3ce929d0e0e4736"),
			},
			want: &DeadLetter{
				OriginalTopic: "orders", OriginalPartition: new(int32(2)), OriginalOffset: new(int64(4711)),
				MessageID: "evt-9", RetryCount: new(5), FirstFailedAt: "2026-02-27T08:30:00.123Z",
				ExceptionType: "TimeoutError", ExceptionMessage: "upstream took 30s", ConsumerGroup: "order-projector",
				TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Convention: ConventionPlain,
			},
		},
		{
			name:    "Plain/FirstFailedAtMillis",
			headers: []Header{h("originalTopic", "orders"), h("firstFailedAt", be64(failedAt.UnixMilli()))},
			want:    &DeadLetter{OriginalTopic: "orders", FirstFailedAt: "2026-02-27T08:30:00.123Z", Convention: ConventionPlain},
		},
		{
			name:    "CaseInsensitiveNames",
			headers: []Header{h("ORIGINALTOPIC", "orders")},
			want:    &DeadLetter{OriginalTopic: "orders", Convention: ConventionPlain},
		},
		{
			name:    "MessageID/ConfiguredHeaderFirst",
			headers: []Header{h("originalMessageId", "from-dl"), h("messageId", "m-1"), h("messageId", "m-2"), h("originalTopic", "o")},
			want:    &DeadLetter{OriginalTopic: "o", MessageID: "m-2", Convention: ConventionPlain},
		},
		{
			name:    "MessageID/JSONPath",
			headers: []Header{h("kafka_dlt-original-topic", "orders")},
			value:   `{"eventType":"OrderPlaced","meta":{"id":12345678901234567890}}`,
			want:    &DeadLetter{OriginalTopic: "orders", MessageID: "12345678901234567890", Convention: ConventionSpringDLT},
		},
		{
			name:    "MessageID/FirstPathWins",
			headers: []Header{h("kafka_dlt-original-topic", "orders")},
			value:   `{"messageId":"evt-1","meta":{"id":"other"}}`,
			want:    &DeadLetter{OriginalTopic: "orders", MessageID: "evt-1", Convention: ConventionSpringDLT},
		},
		{
			name: "Unreadable/IgnoredNotFatal",
			headers: []Header{
				h("kafka_dlt-original-topic", []byte{0xff, 'o'}),
				h("kafka_dlt-original-partition", []byte{1, 2, 3}),   // 3 bytes: no int
				h("kafka_dlt-original-offset", be64(-5)),             // negative offset
				h("kafka_dlt-original-timestamp", be64(1<<62)),       // beyond year 9999
				h("retry_topic-attempts", "many"),                    // not a number
				h("kafka_dlt-original-partition", be64(1<<40)),       // repeated; does not fit int32
				h("kafka_dlt-exception-message", []byte("bad \xc3")), // invalid UTF-8
			},
			want: &DeadLetter{OriginalTopic: "\uFFFDo", ExceptionMessage: "bad \uFFFD", Convention: ConventionSpringDLT},
		},
		{
			name:    "NotADeadLetter",
			headers: []Header{h("messageId", "m-1"), h("traceId", "t"), h("content-type", "application/json")},
			value:   `{"messageId":"m-1"}`,
			want:    nil,
		},
		{name: "NoHeaders", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DecodeDeadLetter(tc.headers, []byte(tc.value), DefaultHeaderNames(), testIDs)
			if !reflect.DeepEqual(got, tc.want) {
				gj, _ := json.MarshalIndent(got, "", " ")
				wj, _ := json.MarshalIndent(tc.want, "", " ")
				t.Fatalf("got %s\nwant %s", gj, wj)
			}
		})
	}
}

// FuzzDecodeDeadLetter feeds arbitrary header names and values: decoding must not panic, and
// whatever it returns must encode as JSON (valid UTF-8, timestamps within JSON's year range).
func FuzzDecodeDeadLetter(f *testing.F) {
	f.Add("kafka_dlt-original-partition", []byte{0, 0, 0, 3}, "kafka_dlt-original-offset", []byte{0, 0, 0, 0, 0, 0, 3, 44}, []byte(`{"messageId":"m"}`))
	f.Add("kafka_original-timestamp", []byte("1772181000123"), "retry_topic-attempts", []byte{0, 0, 0, 2}, []byte(nil))
	f.Add("originalTopic", []byte("\xff"), "originalOffset", []byte("-1"), []byte(`{"meta":{"id":[1]}}`))
	names := DefaultHeaderNames()
	f.Fuzz(func(t *testing.T, k1 string, v1 []byte, k2 string, v2 []byte, value []byte) {
		headers := []Header{{Key: k1, Value: v1}, {Key: k2, Value: v2}, {Key: k1, Value: v2}}
		dl := DecodeDeadLetter(headers, value, names, testIDs)
		if dl == nil {
			return
		}
		if dl.Convention == "" {
			t.Fatal("dead letter without a convention")
		}
		for _, s := range []string{dl.OriginalTopic, dl.ExceptionType, dl.ExceptionMessage, dl.MessageID, dl.FirstFailedAt, dl.TraceID} {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 %q", s)
			}
		}
		if _, err := json.Marshal(dl); err != nil {
			t.Fatalf("dead letter does not encode: %v", err)
		}
	})
}

func TestHeaderNamesMerge(t *testing.T) {
	names, err := DefaultHeaderNames().Merge(map[string][]string{
		"original_topic": {"x-source-topic", "originalTopic"}, // a duplicate of a default is kept once
		"exception_type": {"error-class"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := names.OriginalTopic; got[0] != "x-source-topic" || got[1] != "originalTopic" || len(got) != 5 {
		t.Errorf("original_topic names = %v", got)
	}
	if def := DefaultHeaderNames(); len(def.ExceptionType) != 4 {
		t.Errorf("Merge modified the defaults: %v", def.ExceptionType)
	}

	t.Run("ConfiguredNameWins", func(t *testing.T) {
		dl := DecodeDeadLetter([]Header{h("originalTopic", "orders"), h("x-source-topic", "billing")}, nil, names, testIDs)
		if dl == nil || dl.OriginalTopic != "billing" || dl.Convention != ConventionPlain {
			t.Fatalf("got %+v", dl)
		}
	})
	t.Run("OnlyCustom", func(t *testing.T) {
		dl := DecodeDeadLetter([]Header{h("error-class", "E")}, nil, names, testIDs)
		if dl == nil || dl.ExceptionType != "E" || dl.Convention != ConventionCustom {
			t.Fatalf("got %+v", dl)
		}
	})
	t.Run("UnknownField", func(t *testing.T) {
		_, err := DefaultHeaderNames().Merge(map[string][]string{"topic": {"t"}})
		if !errors.Is(err, ops.ErrInvalid) {
			t.Fatalf("err = %v, want ErrInvalid", err)
		}
	})
}
