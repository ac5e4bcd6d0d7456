package replay

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/kafka"
)

// The one header rewrite gives both brokers the same rule: the configured prefixes (any case) and
// Redrive's own go, Redrive's are written anew; RabbitMQ's death record goes too.
func TestHeaderRewriter(t *testing.T) {
	r := newHeaderRewriter([]string{" Kafka_DLT-exception", "", "x-exception-"})
	job, it := Job{ID: "job-1", Actor: "alice"}, Item{ReplayCount: 2}
	want := map[string]string{HeaderReplayID: "job-1", HeaderReplayCount: "3", HeaderReplayedBy: "alice", HeaderSource: "src"}

	k := r.kafka([]kafka.Header{{Key: "traceId", Value: []byte("t")}, {Key: "kafka_dlt-exception-message", Value: []byte("boom")},
		{Key: "X-Redrive-Replay-Count", Value: []byte("2")}, {Key: "x-death", Value: []byte("kept on Kafka")}, {Key: "traceId", Value: []byte("u")}},
		job, it, "src")
	var keys []string
	got := map[string]string{}
	for _, h := range k {
		keys = append(keys, h.Key)
		got[h.Key] = string(h.Value)
	}
	if len(keys) != 7 || keys[0] != "traceId" || keys[1] != "x-death" || keys[2] != "traceId" || keys[3] != HeaderReplayID {
		t.Errorf("kafka headers in order: %q", keys)
	}
	for key, v := range want {
		if got[key] != v {
			t.Errorf("kafka %s = %q, want %q", key, got[key], v)
		}
	}

	a := r.rabbit(amqp.Table{"x-death": []any{}, "x-first-death-queue": "q", "X-Last-Death-Reason": "rejected",
		"x-exception-message": "boom", "x-redrive-replay-id": "old", "traceId": "t"}, job, it, "src")
	if len(a) != 5 || a["traceId"] != "t" {
		t.Errorf("rabbit headers: %v", a)
	}
	for key, v := range want {
		if a[key] != v {
			t.Errorf("rabbit %s = %v, want %q", key, a[key], v)
		}
	}

	if keep := newHeaderRewriter([]string{}); keep.drops("kafka_dlt-exception-message") || !keep.drops("x-redrive-source") {
		t.Error("an empty strip_headers keeps every header but Redrive's own")
	}
}
