package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
)

// TestAcrossPageAPIVsKcat is issue 38's DLT page measured through the API (one run, not part of
// make test): GET /api/v1/kafka/main/topics/orders.DLT/records?partition=all&limit=500 over HTTP
// on loopback (the handler, its records JSON, no store: every record open; no auth or gzip
// middleware) against kcat reading the same 500 records with a short fetch wait, process start
// included. 4 partitions of 20,000 DLT records on kfake in this process; alternating,
// REDRIVE_PAGE_ROUNDS (default 7) rounds, medians; CPU from getrusage (kcat's own plus this
// process's, where kfake serves it). Run: REDRIVE_KCAT=1 go test ./handlers -run TestAcrossPageAPIVsKcat -v
func TestAcrossPageAPIVsKcat(t *testing.T) {
	if os.Getenv("REDRIVE_KCAT") == "" {
		t.Skip("set REDRIVE_KCAT=1 (needs kcat)")
	}
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed")
	}
	rounds := 7
	if v, err := strconv.Atoi(os.Getenv("REDRIVE_PAGE_ROUNDS")); err == nil {
		rounds = v
	}
	const parts, perPartition, limit = 4, 20_000, 500
	broker := kfaketest.Cluster(t, kfake.SeedTopics(parts, "orders.DLT"))
	prod := kfaketest.Client(t, broker, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(100_000))
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	for i := range perPartition * parts {
		prod.Produce(ctx, &kgo.Record{Topic: "orders.DLT", Partition: int32(i % parts), Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			Key:   fmt.Appendf(nil, "order-%d", i),
			Value: fmt.Appendf(nil, `{"orderId":%d,"tenant":%d,"status":"FAILED","note":"payment gateway timed out"}`, i, i%7),
			Headers: []kgo.RecordHeader{{Key: "tenant", Value: fmt.Appendf(nil, "%d", i%7)},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("java.util.concurrent.TimeoutException")},
				{Key: "kafka_dlt-original-topic", Value: []byte("orders")}}}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	k, err := kafka.New(configs.KafkaCluster{Name: "main", Brokers: broker.ListenAddrs()}, configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	h := NewKafka([]KafkaCluster{k}, nil, nil, nil, nil)
	e := echo.New()
	e.GET("/api/v1/kafka/:cluster/topics/:topic/records", NewSearch(SearchOptions{Kafka: []SearchCluster{k}}).Records(h.APIRecords))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	url := srv.URL + "/api/v1/kafka/main/topics/orders.DLT/records?partition=all&limit=" + strconv.Itoa(limit)

	page := func() (time.Duration, time.Duration) {
		runtime.GC()
		c0 := ownCPU()
		t0 := time.Now()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %v %.300s", resp.StatusCode, err, body)
		}
		var got struct {
			Records []json.RawMessage `json:"records"`
		}
		if err := json.Unmarshal(body, &got); err != nil || len(got.Records) != limit {
			t.Fatalf("%d records, %v", len(got.Records), err)
		}
		return d, ownCPU() - c0
	}
	kcatPage := func() (time.Duration, time.Duration) {
		runtime.GC()
		cmd := exec.Command(kcat, "-b", broker.ListenAddrs()[0], "-C", "-t", "orders.DLT", "-o", fmt.Sprint(-limit/parts), "-e", "-q",
			"-X", "fetch.wait.max.ms=10")
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		c0 := ownCPU()
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("kcat: %v %s", err, stderr.String())
		}
		d := time.Since(t0)
		if n := bytes.Count(out.Bytes(), []byte("\n")); n != limit {
			t.Fatalf("kcat read %d records", n)
		}
		return d, ownCPU() - c0 + cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	page()
	kcatPage()
	var pd, pc, kd, kc []time.Duration
	for range rounds {
		d, c := page()
		pd, pc = append(pd, d), append(pc, c)
		d, c = kcatPage()
		kd, kc = append(kd, d), append(kc, c)
	}
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	t.Logf("BENCH API page of %d across %d partitions, medians of %d alternating rounds: API %s (cpu %s) | kcat -o -%d -e fetch.wait.max.ms=10 %s (cpu %s) | API/kcat %.2fx, cpu %.2fx",
		limit, parts, rounds, ms(med(pd)), ms(med(pc)), limit/parts, ms(med(kd)), ms(med(kc)),
		med(pd).Seconds()/med(kd).Seconds(), med(pc).Seconds()/med(kc).Seconds())
	t.Logf("BENCH rounds: API %v; kcat %v", pd, kd)
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		t.Logf("BENCH load average: %s", bytes.TrimSpace(l))
	}
}

// ownCPU is the CPU time this process has used, user and system.
func ownCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
