package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
)

// Issue 38: a commit took 1.1-1.3 s to show on a group's page (Console: 66-71 ms), the time of a
// whole re-sample of every group. A read of one group now reads that group's offsets itself (one
// OffsetFetch, one ListOffsets per leader) over the sampled status: a commit made with a kgo client
// shows in the one-group API, and on the group's page, within 250 ms, with sampler.interval 60s.
func TestOneGroupReadSeesACommitAtOnce(t *testing.T) {
	// Kafka in a process of its own: what is timed is the console (kfaketest.External).
	addr := kfaketest.External(t, map[string]int32{"orders": 3})
	cl := kfaketest.ClientAt(t, []string{addr}, kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for p := range int32(3) {
		for i := range 10 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	adm := kadm.NewClient(cl)
	commit := func(at map[int32]int64) {
		t.Helper()
		o := kadm.Offsets{}
		for p, off := range at {
			o.AddOffset("orders", p, off, -1)
		}
		if _, err := adm.CommitOffsets(ctx, "billing", o); err != nil {
			t.Fatal(err)
		}
	}
	commit(map[int32]int64{0: 2, 1: 2, 2: 2})
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
kafka: [{name: main, brokers: [%q]}]
sampler: {interval: 60s}
`, pgtest.NewDatabase(t), addr))

	type groupAPI struct {
		apiGroup
		TotalLag  int64      `json:"total_lag"`
		SampledAt *time.Time `json:"sampled_at"`
		OffsetsAt *time.Time `json:"offsets_at"`
	}
	waittestFor(t, 20*time.Second, "the first sample of billing", func() bool {
		r := do(t, nil, "GET", base+"/api/v1/kafka/main/groups", "", "")
		return r.status == 200 && strings.Contains(r.body, `"group":"billing"`)
	})

	for round, at := range []map[int32]int64{{0: 10, 1: 7, 2: 4}, {0: 10, 1: 10, 2: 9}} {
		commit(at)
		start := time.Now()
		r := do(t, nil, "GET", base+"/api/v1/kafka/main/groups/billing", "", "")
		took := time.Since(start)
		g := decode[groupAPI](t, r)
		if r.status != 200 || len(g.Topics) != 1 {
			t.Fatalf("round %d: %d %s", round, r.status, r.body)
		}
		var want int64
		for _, p := range g.Topics[0].Partitions {
			if p.Committed != at[p.Partition] || p.Lag != 10-at[p.Partition] {
				t.Errorf("round %d: partition %d committed %d lag %d, want %d and %d (the commit made just before the read)",
					round, p.Partition, p.Committed, p.Lag, at[p.Partition], 10-at[p.Partition])
			}
			want += 10 - at[p.Partition]
		}
		if g.TotalLag != want || g.OffsetsAt == nil || g.SampledAt == nil || !g.OffsetsAt.After(*g.SampledAt) {
			t.Errorf("round %d: total lag %d (want %d), offsets at %v, sampled at %v", round, g.TotalLag, want, g.OffsetsAt, g.SampledAt)
		}
		if took > 250*time.Millisecond {
			t.Errorf("round %d: commit → visible in %v, want ≤ 250 ms", round, took)
		}
		t.Logf("round %d: commit visible in the one-group API %v after the commit returned", round, took)
	}

	// The page says the same: the total lag of the last commit, and that its offsets were read now.
	commit(map[int32]int64{0: 10, 1: 10, 2: 10})
	start := time.Now()
	r := do(t, nil, "GET", base+"/kafka/main/groups/billing", "", "")
	if took := time.Since(start); r.status != 200 || took > 250*time.Millisecond {
		t.Fatalf("group page: %d after %v", r.status, took)
	}
	// The verdict is the sample's and quotes its lag: the page says so beside the lag read now.
	if !strings.Contains(r.body, "total lag now 0)") {
		t.Errorf("the group page's reason does not say the sample's lag is not the lag now")
	}
	if !strings.Contains(r.body, "offsets read live") {
		t.Errorf("the group page does not say its offsets were read now")
	}
	if m := regexp.MustCompile(`Total lag</div>\s*<div class="stat-value" data-testid="stat-value">([^<]*)<`).FindStringSubmatch(r.body); m == nil || m[1] != "0" {
		t.Errorf("the group page's total lag after the last commit: %q, want 0", m)
	}
}

// waittestFor polls cond every 50 ms until it holds, failing t after within.
func waittestFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
