package replay_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
)

// BenchmarkKafkaReplay compares a guarded replay of 100,000 DLT records — plan (read the DLT,
// batched inbox and ledger look-ups) and run (claim, re-read, produce with acks=all, settle) —
// with producing the same 100,000 records raw through a plain kgo producer, in the same run.
// Run with -benchtime=1x: each iteration moves 100,000 messages.
func BenchmarkKafkaReplay(b *testing.B) {
	const n = 100_000
	w := newWorld(b)
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("m-%d", i)
		recs = append(recs, &kgo.Record{Topic: "orders.DLT", Partition: int32(i % 2), Key: []byte(fmt.Sprint(i % 1000)),
			Value: []byte(fmt.Sprintf(`{"messageId":%q,"orderId":"o-%d","amount":12.5}`, id, i)),
			Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
				{Key: "kafka_dlt-original-consumer-group", Value: []byte("inventory-service")},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.StockException")},
				{Key: "kafka_dlt-exception-message", Value: []byte("out of stock")}, {Key: "messageId", Value: []byte(id)}}})
	}
	if err := w.client.ProduceSync(ctxT(b), recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	pgtest.Exec(b, w.inboxDSN, `INSERT INTO inbox_message SELECT 'm-' || g, 'inventory-service', now(), now()
		FROM generate_series(0, 99999, 10) g`) // a tenth already processed

	b.Run("Guarded", func(b *testing.B) {
		e := w.engine(b, "bench")
		work(b, e)
		var peak uint64
		for b.Loop() {
			stop := sampleRSS(&peak)
			start := time.Now()
			plan, err := e.Plan(ctxT(b), "bench", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{})
			if err != nil {
				b.Fatal(err)
			}
			planned := time.Since(start)
			job, err := e.Start(ctxT(b), replay.StartRequest{PlanID: plan.ID, Actor: "bench", RatePerSecond: 100_000})
			if err != nil {
				b.Fatal(err)
			}
			j := waitJob(b, e, job.ID)
			stop()
			if j.Status != store.JobDone || j.Published+j.Skipped != n {
				b.Fatalf("job %+v", j)
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
			b.ReportMetric(planned.Seconds()*1000, "plan-ms")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			// The next iteration must find the same work: clear this one's ledger.
			pgtest.Exec(b, w.store.Pool().Config().ConnString(), `DELETE FROM redrive.replay_ledger`)
		}
	})
	// kcat -P producing the same keys, values and headers with acks=all, as an operator would
	// (process start included).
	b.Run("KcatProduce", func(b *testing.B) {
		kcat, err := exec.LookPath("kcat")
		if err != nil {
			b.Skip("kcat is not installed (apt-get install kcat)")
		}
		var input bytes.Buffer
		for _, r := range recs {
			input.Write(r.Key)
			input.WriteByte('\t')
			input.Write(r.Value)
			input.WriteByte('\n')
		}
		args := []string{"-P", "-b", w.client.OptValue(kgo.SeedBrokers).([]string)[0], "-t", "orders", "-K", "\t",
			"-X", "acks=all", "-X", "enable.idempotence=true"}
		for _, h := range recs[0].Headers {
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
			for i, r := range recs {
				raw[i] = &kgo.Record{Topic: "orders", Key: r.Key, Value: r.Value, Headers: r.Headers}
			}
			start := time.Now()
			if err := cl.ProduceSync(ctxT(b), raw...).FirstErr(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
		}
	})
}

// sampleRSS records the peak Go heap in use until stop is called.
func sampleRSS(peak *uint64) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			*peak = max(*peak, m.HeapInuse)
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); <-exited }
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
			start := time.Now()
			plan, err := e.Plan(ctxT(b), "bench", replay.Source{Kind: "rabbitmq", Broker: "test", Vhost: w.vhost, Queue: "orders.dlq", Limit: n}, replay.Filter{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(time.Since(start).Seconds()*1000, "plan-ms")
			run := time.Now()
			job, err := e.Start(ctxT(b), replay.StartRequest{PlanID: plan.ID, Actor: "bench", RatePerSecond: 100_000})
			if err != nil {
				b.Fatal(err)
			}
			j := waitJob(b, e, job.ID)
			if j.Published != n {
				b.Fatalf("job %+v", j)
			}
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
