package replay_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
)

// BenchmarkKafkaReplay compares a guarded replay of 100,000 DLT records — plan (read the DLT,
// batched inbox and ledger look-ups) and run (claim, re-read, produce with acks=all, settle) —
// with producing the same 100,000 records raw, through kcat -P and through a plain kgo producer,
// in the same run. Guarded runs at two sizes to show that memory does not grow with the
// selection. Run with -benchtime=1x: each iteration moves up to 100,000 messages.
func BenchmarkKafkaReplay(b *testing.B) {
	const n = 100_000
	// The broker runs in its own process, so that this process's heap is the replay's alone.
	w := newWorldOn(b, externalKafka(b))
	for i := 0; i < n; i += 10_000 {
		var recs []*kgo.Record
		for j := i; j < i+10_000; j++ {
			recs = append(recs, benchRecord(j))
		}
		if err := w.client.ProduceSync(ctxT(b), recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	pgtest.Exec(b, w.inboxDSN, `INSERT INTO inbox_message SELECT 'm-' || g, 'inventory-service', now(), now()
		FROM generate_series(0, 99999, 10) g`) // a tenth already processed

	for _, size := range []int{n / 4, n} {
		b.Run(fmt.Sprintf("Guarded/%d", size), func(b *testing.B) {
			e := w.engine(b, "bench")
			work(b, e)
			last := int64(size/2 - 1) // the records alternate between the 2 partitions
			for b.Loop() {
				// The previous iteration's work must be found again: clear the ledger.
				pgtest.Exec(b, w.store.Pool().Config().ConnString(), `DELETE FROM redrive.replay_ledger`)
				runtime.GC()
				peak, stop := sampleLiveHeap()
				start := time.Now()
				plan, err := e.Plan(ctxT(b), "bench", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT", ToOffset: &last}, replay.Filter{})
				if err != nil {
					b.Fatal(err)
				}
				planned := time.Since(start)
				j := runJob(b, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "bench", Role: access.Admin}, RatePerSecond: 1_000_000})
				stop()
				if j.Status != replay.JobDone || j.Published+j.Skipped != size || j.Skipped != size/10 {
					b.Fatalf("job %+v", j)
				}
				b.ReportMetric(float64(size)/time.Since(start).Seconds(), "msgs/s")
				b.ReportMetric(float64(size)/(time.Since(start)-planned).Seconds(), "run-msgs/s")
				b.ReportMetric(planned.Seconds()*1000, "plan-ms")
				b.ReportMetric(float64(*peak)/(1<<20), "peak-live-MiB")
			}
		})
	}
	// kcat -P producing the same keys, values and headers with acks=all, as an operator would
	// (process start included).
	b.Run("KcatProduce", func(b *testing.B) {
		kcat, err := exec.LookPath("kcat")
		if err != nil {
			b.Skip("kcat is not installed (apt-get install kcat)")
		}
		var input bytes.Buffer
		for i := range n {
			r := benchRecord(i)
			input.Write(r.Key)
			input.WriteByte('\t')
			input.Write(r.Value)
			input.WriteByte('\n')
		}
		args := []string{"-P", "-b", w.client.OptValue(kgo.SeedBrokers).([]string)[0], "-t", "orders", "-K", "\t",
			"-X", "acks=all", "-X", "enable.idempotence=true"}
		for _, h := range benchRecord(0).Headers {
			args = append(args, "-H", h.Key+"="+string(h.Value))
		}
		for b.Loop() {
			start := time.Now()
			cmd := exec.Command(kcat, args...)
			cmd.Stdin = bytes.NewReader(input.Bytes())
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("kcat: %v: %s", err, out)
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
		}
	})
	b.Run("RawProducer", func(b *testing.B) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(w.client.OptValue(kgo.SeedBrokers).([]string)...),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		raw := make([]*kgo.Record, n)
		for b.Loop() {
			for i := range raw {
				raw[i] = benchRecord(i)
				raw[i].Topic, raw[i].Partition = "orders", 0
			}
			start := time.Now()
			if err := cl.ProduceSync(ctxT(b), raw...).FirstErr(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
		}
	})
}

// externalKafka runs kfake in its own process with the topics a world needs and returns its
// address.
func externalKafka(b *testing.B) string {
	return kfaketest.External(b, map[string]int32{"orders": 1, "orders.DLT": 2})
}

// benchRecord is the i-th of the benchmark's Spring-style DLT records.
func benchRecord(i int) *kgo.Record {
	id := fmt.Sprintf("m-%d", i)
	return &kgo.Record{Topic: "orders.DLT", Partition: int32(i % 2), Key: []byte(fmt.Sprint(i % 1000)),
		Value: []byte(fmt.Sprintf(`{"messageId":%q,"orderId":"o-%d","amount":12.5}`, id, i)),
		Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte("inventory-service")},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.StockException")},
			{Key: "kafka_dlt-exception-message", Value: []byte("out of stock")}, {Key: "messageId", Value: []byte(id)}}}
}

// sampleLiveHeap records, until stop is called, the peak of the live heap (what the last GC
// found reachable) above what was live when it started: the memory the work holds, not the
// garbage waiting for the next GC.
func sampleLiveHeap() (peak *uint64, stop func()) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base, p := read(), new(uint64)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			if v := read(); v > base {
				*p = max(*p, v-base)
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return p, func() { close(done); <-exited }
}

// BenchmarkRabbitReplay compares a guarded replay of 20,000 DLQ messages (plan: browse them all;
// run: inbox check, ledger claim, publish with confirms and mandatory, ledger, ack) with the
// shovel plugin moving the same 20,000 messages from the DLQ to the work queue, in the same run.
// Run with -benchtime=1x.
func BenchmarkRabbitReplay(b *testing.B) {
	const n = 20_000
	w := newRabbitWorld(b)
	fill := func(b *testing.B) {
		b.Helper()
		w.deadLetterMany(b, n)
	}
	b.Run("Guarded", func(b *testing.B) {
		e := w.engine(b)
		work(b, e)
		for b.Loop() {
			b.StopTimer()
			fill(b)
			b.StartTimer()
			runtime.GC()
			peak, stop := sampleLiveHeap()
			start := time.Now()
			plan, err := e.Plan(ctxT(b), "bench", replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: n}, replay.Filter{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(time.Since(start).Seconds()*1000, "plan-ms")
			run := time.Now()
			j := runJob(b, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "bench"}, RatePerSecond: 100_000})
			stop()
			if j.Published != n {
				b.Fatalf("job %+v", j)
			}
			b.ReportMetric(float64(*peak)/(1<<20), "peak-live-MiB")
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
			b.ReportMetric(float64(n)/time.Since(run).Seconds(), "run-msgs/s")
			b.StopTimer()
			w.purge(b, "orders.work")
			b.StartTimer()
		}
	})
	b.Run("Shovel", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			fill(b)
			b.StartTimer()
			start := time.Now()
			w.shovel(b, "orders.dlq", "orders.work")
			w.waitDepth(b, "orders.work", n)
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
			b.StopTimer()
			w.purge(b, "orders.work")
			b.StartTimer()
		}
	})
}
