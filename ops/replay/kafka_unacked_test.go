package replay_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/replay"
)

// A job whose broker answers every produce with NOT_ENOUGH_REPLICAS (acks=all with the ISR below
// min.insync.replicas) stayed running for ever with no progress and no reason: the idempotent
// producer retries that answer without end. The wait is bounded, the batch's outcome is unknown,
// so the job pauses saying why and sends it again once the broker recovers. The broker wrote
// nothing while refusing, so each message ends on the original topic exactly once (in general at
// least once: a resumed message may be a duplicate the consumer's inbox absorbs).
func TestKafkaJobPausesWhileTheBrokerRefusesProduces(t *testing.T) {
	w, broker := newWorldAndBroker(t)
	ids := []string{"m-1", "m-2", "m-3"}
	for _, id := range ids {
		w.deadLetter(t, 0, id, "k"+id, "com.acme.StockException")
	}
	cfg := w.cfg.Kafka[0]
	cfg.RequestTimeout = configs.Duration(time.Second) // the wait is 3 request timeouts
	fast, err := kafka.New(cfg, w.cfg.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fast.Close)
	w.cluster = fast
	var down atomic.Bool
	var refused atomic.Int64
	broker.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		broker.KeepControl()
		if !down.Load() {
			return nil, nil, false
		}
		refused.Add(1)
		req := r.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewProduceResponseTopic()
			t.Topic, t.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				p := kmsg.NewProduceResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, kerr.NotEnoughReplicas.Code
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil, true
	})
	e := w.engine(t, "a")
	job := startPaused(t, e, &down)
	if job.Status != replay.JobRunning || job.Published != 0 || job.Failed != 0 ||
		!strings.Contains(job.Paused, `kafka cluster "main" did not acknowledge the records within 3s`) {
		t.Fatalf("job %s published %d failed %d paused %q; want running, nothing settled, paused on the unacknowledged produce",
			job.Status, job.Published, job.Failed, job.Paused)
	}
	if refused.Load() == 0 {
		t.Fatal("the broker refused no produce")
	}
	if got := w.originals(t); len(got) != 0 {
		t.Fatalf("%d records on the original topic while the broker refused them", len(got))
	}
	down.Store(false)
	job = waitJob(t, e, job.ID)
	if job.Status != replay.JobDone || job.Published != 3 || job.Failed != 0 || job.Paused != "" {
		t.Fatalf("job %s published %d failed %d paused %q; want done, 3 published", job.Status, job.Published, job.Failed, job.Paused)
	}
	seen := map[string]int{}
	for _, r := range w.originals(t) {
		id, _ := header(r, "messageId")
		seen[id]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("%s is on the original topic %d times, want once (all: %v)", id, seen[id], seen)
		}
	}
}
