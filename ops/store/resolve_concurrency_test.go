package store_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/triage"
)

// concurrentResolves is how many callers mark the same records at once: more than the store's
// default pool (16), as twenty operators or a script with -P 20 would.
const concurrentResolves = 20

// Twenty simultaneous resolutions of the same outbox events, half of them naming the ids in
// reverse and some only half of them, all succeed on the default pool: every event ends ignored,
// each changed state once in all (the counts add up to the events), and no call failed on a
// deadlock or on the pool. Locks are taken in the key's order, whatever the order of the request,
// and the audit row is written without a second connection.
func TestConcurrentOutboxResolutions(t *testing.T) {
	ctx, s := leaseStore(t)
	ids := make([]int64, 0, 50)
	for id := int64(51); id <= 100; id++ {
		ids = append(ids, id)
	}
	var changed atomic.Int64
	resolveAtOnce(t, func(i int) error {
		sel := selection(ids, i)
		n, err := s.SetOutboxResolutions(ctx, audit.Entry{Actor: "otto", Role: "operator", Action: "outbox.resolve",
			Target: "outbox/orders", Reason: "known"}, "orders", sel, nil, triage.StateIgnored, "known")
		changed.Add(n)
		return err
	})
	if got := changed.Load(); got != int64(len(ids)) {
		t.Errorf("the calls changed %d events in all, want %d (each once)", got, len(ids))
	}
	got, err := s.OutboxResolutions(ctx, "orders", ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if got[id].State != triage.StateIgnored {
			t.Errorf("event %d is %q, want ignored", id, got[id].State)
		}
	}
	assertAuditRows(ctx, t, s, "outbox.resolve")

	// Reopening them at once, in both orders, takes the same locks the same way.
	changed.Store(0)
	resolveAtOnce(t, func(i int) error {
		n, err := s.SetOutboxResolutions(ctx, audit.Entry{Actor: "otto", Role: "operator", Action: "outbox.reopen",
			Target: "outbox/orders"}, "orders", selection(ids, i), nil, triage.StateOpen, "")
		changed.Add(n)
		return err
	})
	if got := changed.Load(); got != int64(len(ids)) {
		t.Errorf("reopening changed %d events in all, want %d", got, len(ids))
	}
}

// The same for a Kafka dead-letter topic's records (RabbitMQ's resolutions are written the same
// way): twenty at once over several partitions, in both orders.
func TestConcurrentDeadLetterResolutions(t *testing.T) {
	ctx, s := leaseStore(t)
	var marks []triage.Mark
	for p := int32(0); p < 3; p++ {
		for o := int64(0); o < 20; o++ {
			marks = append(marks, triage.Mark{RecordKey: triage.RecordKey{Partition: p, Offset: o}, ExceptionType: "X"})
		}
	}
	var changed atomic.Int64
	resolveAtOnce(t, func(i int) error {
		n, err := s.SetResolutions(ctx, audit.Entry{Actor: "otto", Role: "operator", Action: "kafka.resolve",
			Target: "kafka/main/orders.DLT", Reason: "known"}, "main", "orders.DLT", "", selection(marks, i), triage.StateIgnored, "known")
		changed.Add(n)
		return err
	})
	if got := changed.Load(); got != int64(len(marks)) {
		t.Errorf("the calls changed %d records in all, want %d (each once)", got, len(marks))
	}
	keys := make([]triage.RecordKey, len(marks))
	for i, m := range marks {
		keys[i] = m.RecordKey
	}
	got, err := s.Resolutions(ctx, "main", "orders.DLT", "", keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if got[k].State != triage.StateIgnored {
			t.Errorf("record %d/%d is %q, want ignored", k.Partition, k.Offset, got[k].State)
		}
	}
	assertAuditRows(ctx, t, s, "kafka.resolve")

	changed.Store(0)
	resolveAtOnce(t, func(i int) error {
		n, err := s.SetResolutions(ctx, audit.Entry{Actor: "otto", Role: "operator", Action: "kafka.reopen",
			Target: "kafka/main/orders.DLT"}, "main", "orders.DLT", "", selection(marks, i), triage.StateOpen, "")
		changed.Add(n)
		return err
	})
	if got := changed.Load(); got != int64(len(marks)) {
		t.Errorf("reopening changed %d records in all, want %d", got, len(marks))
	}
}

// selection is caller i's selection of all: in order, reversed, or (every fourth caller) its second
// half reversed, so the callers' sets are the same or overlap and their orders disagree.
func selection[T any](all []T, i int) []T {
	sel := slices.Clone(all)
	if i%4 == 3 {
		sel = sel[len(sel)/2:]
	}
	if i%2 == 1 {
		slices.Reverse(sel)
	}
	return sel
}

// resolveAtOnce calls call concurrentResolves times at once and fails the test on any error (a deadlock
// that PostgreSQL broke, or the pool exhausted until its acquire timeout).
func resolveAtOnce(t *testing.T, call func(i int) error) {
	t.Helper()
	start := time.Now()
	if err := atOnce(concurrentResolves, call); err != nil {
		t.Fatalf("a concurrent resolution failed: %v", err)
	}
	t.Logf("%d at once: %s", concurrentResolves, time.Since(start))
}

// assertAuditRows checks every call of action has its intent and its ok row.
func assertAuditRows(ctx context.Context, t *testing.T, s *store.Store, action string) {
	t.Helper()
	for _, outcome := range []string{audit.OutcomeStarted, audit.OutcomeOK} {
		var n int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = $1 AND outcome = $2`, action, outcome).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != concurrentResolves {
			t.Errorf("%s: %d %q rows, want %d", action, n, outcome, concurrentResolves)
		}
	}
}
