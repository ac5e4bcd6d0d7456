package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/lease"
	"github.com/redrive/redrive/ops/store"
)

func leaseStore(t *testing.T) (context.Context, *store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	st := openStore(t)
	return ctx, st
}

// A lease taken over is fenced: the old holder can neither renew it nor write under it, and what
// the new holder wrote stays.
func TestSourceLeaseFencing(t *testing.T) {
	ctx, s := leaseStore(t)
	const ttl = 300 * time.Millisecond
	a, ok, err := s.AcquireSourceLease(ctx, "kafka/main", "a", ttl)
	if err != nil || !ok || a.Token != 1 {
		t.Fatalf("a acquires: %+v %v %v", a, ok, err)
	}
	if _, ok, err := s.AcquireSourceLease(ctx, "kafka/main", "b", ttl); ok || err != nil {
		t.Fatalf("b acquires a held lease: %v %v; want refused", ok, err)
	}
	snap := func(at time.Time) history.SampleWrite {
		return history.SampleWrite{Snapshot: history.Snapshot{Kind: history.SnapshotKafka, Name: "main", At: at, Data: []byte(`{"v":1}`)}}
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.WriteSample(ctx, a, snap(t0)); err != nil {
		t.Fatalf("holder writes: %v", err)
	}
	time.Sleep(ttl + 50*time.Millisecond) // a stops renewing (frozen)
	b, ok, err := s.AcquireSourceLease(ctx, "kafka/main", "b", ttl)
	if err != nil || !ok || b.Token != 2 {
		t.Fatalf("b takes the expired lease over: %+v %v %v; want token 2", b, ok, err)
	}
	if err := s.WriteSample(ctx, b, snap(t0.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	// a resumes.
	err = s.WriteSample(ctx, a, history.SampleWrite{Snapshot: history.Snapshot{Kind: history.SnapshotKafka, Name: "main", At: t0.Add(2 * time.Minute)},
		Kafka: []history.KafkaGroupSample{{Cluster: "main", Group: "g", At: t0.Add(2 * time.Minute), State: "Stable", Status: "OK"}}})
	if !errors.Is(err, lease.ErrFenced) || !errors.Is(err, ops.ErrConflict) {
		t.Fatalf("old holder's write = %v, want lease.ErrFenced (ops.ErrConflict)", err)
	}
	if _, err := s.RenewSourceLease(ctx, a); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("old holder's renewal = %v, want lease.ErrFenced", err)
	}
	got, err := s.Snapshot(ctx, history.SnapshotKafka, "main")
	if err != nil || !got.At.Equal(t0.Add(time.Minute)) {
		t.Fatalf("snapshot at %s (%v), want the new holder's %s", got.At, err, t0.Add(time.Minute))
	}
	if rows, _ := s.KafkaGroupSamples(ctx, "main", "", t0); len(rows) != 0 {
		t.Fatalf("the refused write stored %d history rows", len(rows))
	}
	if err := s.ReleaseSourceLease(ctx, a); err != nil { // a no-op: a no longer holds it
		t.Fatal(err)
	}
	if ls, err := s.SourceLeases(ctx); err != nil || len(ls) != 1 || ls[0].Owner != "b" || !ls[0].Valid {
		t.Fatalf("leases %+v %v; want b's", ls, err)
	}
	if err := s.ReleaseSourceLease(ctx, b); err != nil {
		t.Fatal(err)
	}
	c, ok, err := s.AcquireSourceLease(ctx, "kafka/main", "c", ttl)
	if err != nil || !ok || c.Token != 3 {
		t.Fatalf("c takes the released lease at once: %+v %v %v; want token 3", c, ok, err)
	}
}

// The replica view lists the replicas with their heartbeats, the leases and the replay jobs held.
func TestReplicas(t *testing.T) {
	ctx, s := leaseStore(t)
	for _, id := range []string{"r2", "r1"} {
		if _, err := s.HeartbeatReplica(ctx, id, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	live, err := s.HeartbeatReplica(ctx, "r3", time.Millisecond)
	if err != nil || len(live) != 3 {
		t.Fatalf("live %v %v; want r1 r2 r3", live, err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, _, err := s.AcquireSourceLease(ctx, "kafka/main", "r1", time.Minute); err != nil {
		t.Fatal(err)
	}
	v, err := s.Replicas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Replicas) != 3 || v.Replicas[0].ID != "r1" || !v.Replicas[0].Live || v.Replicas[2].Live {
		t.Fatalf("replicas %+v; want r1, r2 live and r3 expired", v.Replicas)
	}
	if len(v.Leases) != 1 || v.Leases[0].Owner != "r1" || v.Jobs == nil && len(v.Jobs) != 0 {
		t.Fatalf("leases %+v jobs %+v", v.Leases, v.Jobs)
	}
	if err := s.RemoveReplica(ctx, "r3"); err != nil {
		t.Fatal(err)
	}
}
