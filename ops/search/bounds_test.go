package search

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
)

func TestSlots(t *testing.T) {
	s := NewSlots("exports", 2, "export.max_running_per_person", 3, "export.max_running")
	r1, err := s.Take("otto")
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := s.Take("otto")
	if _, err := s.Take("otto"); !errors.Is(err, ops.ErrLimited) || !strings.Contains(ops.Message(err), "export.max_running_per_person") {
		t.Fatalf("otto's third: %v", err)
	}
	r3, err := s.Take("ada")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take("vera"); !errors.Is(err, ops.ErrLimited) || !strings.Contains(ops.Message(err), "(export.max_running)") {
		t.Fatalf("a fourth in all: %v", err)
	}
	r1()
	r1() // a second release gives nothing back
	if s.Running() != 2 {
		t.Fatalf("running %d, want 2", s.Running())
	}
	if _, err := s.Take("otto"); err != nil {
		t.Fatalf("otto after one of his ended: %v", err)
	}
	r2()
	r3()
	var none *Slots
	if release, err := none.Take("x"); err != nil || release == nil {
		t.Fatal("nil slots bound nothing")
	}
}

// TestScanStopsAtItsTimeBudget: a filter that takes milliseconds a record ran a scan a quarter of
// a second and more past its timeout, because the time was looked at every 256 records. It is
// looked at after every record now.
func TestScanStopsAtItsTimeBudget(t *testing.T) {
	w := newKafkaWorld(t, 1)
	ctx := context.Background()
	big := strings.Repeat("ab", 30<<10) // 60 KB of text a regular expression reads whole
	for range 300 {
		w.prod.Produce(ctx, &kgo.Record{Topic: "dlt", Value: []byte(big)}, nil)
	}
	if err := w.prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	f := mustCompile(t, Kafka, `value.matches("(a|b)+c") || value.matches("(b|a)+d")`)
	const timeout = 50 * time.Millisecond
	start := time.Now()
	res, err := ScanKafka(ctx, w.c, Query{Topic: "dlt", Filter: f, Timeout: timeout, Each: func(kafka.Record) error { return nil }})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("scanned %d records in %s (timeout %s)", res.Scanned, took, timeout)
	if res.Stopped != StoppedTimeout || res.Scanned >= 300 {
		t.Fatalf("the scan did not stop at its time: %+v", res)
	}
	// Past the deadline, the filter's work is the record it was on.
	if over := took - timeout; over > 150*time.Millisecond {
		t.Errorf("the scan ran %s past its timeout", over)
	}
}
