package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/redrive/redrive/ops/benchtest"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
)

// TestFreshnessVsConsole is issue 38's freshness row side by side: on the cluster of the group
// rows (200 groups × 50 partitions), a kgo client commits new offsets for one group, and each
// side's one-group API is read until it shows them; the time from the commit's return to that
// answer. Redrive is the console as shipped in a process of its own (GET
// /api/v1/kafka/main/groups/{group}); with REDRIVE_BENCH_CONSOLE_BIN, Redpanda Console over the
// same Kafka (GET /api/consumer-groups/{group}). The sides alternate, 10 commits each.
//
//	REDRIVE_BENCH=1 REDRIVE_BENCH_CONSOLE_BIN=… go test ./cmd/console -run TestFreshnessVsConsole -v -count=1
func TestFreshnessVsConsole(t *testing.T) {
	benchtest.Require(t)
	const group, topic, rounds = "group-007", "topic-07", 10
	addr := kfaketest.External(t, groupsTopics())
	fillGroups(t, addr)
	cl := kfaketest.ClientAt(t, []string{addr})
	adm := kadm.NewClient(cl)

	p := newProcess(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
kafka: [{name: main, brokers: [%q]}]
`, pgtest.NewDatabase(t), addr))
	p.bin = shippedConsole(t)
	p.start()
	waittestFor(t, time.Minute, "the first sample", func() bool {
		r := do(t, nil, "GET", p.base+"/api/v1/kafka/main/groups/"+group, "", "")
		return r.status == 200
	})
	// committed is what a side's answer says partition 0 of topic is committed at; -1 when it
	// does not say.
	type side struct {
		name      string
		url       string
		committed func(body []byte) int64
	}
	sides := []side{{"Redrive", p.base + "/api/v1/kafka/main/groups/" + group, func(body []byte) int64 {
		var g apiGroup
		if json.Unmarshal(body, &g) != nil {
			return -1
		}
		for _, tp := range g.Topics {
			for _, pp := range tp.Partitions {
				if tp.Topic == topic && pp.Partition == 0 {
					return pp.Committed
				}
			}
		}
		return -1
	}}}
	if bin := os.Getenv("REDRIVE_BENCH_CONSOLE_BIN"); bin != "" {
		base, _ := startPeerConsole(t, bin, addr)
		url := base + "/api/consumer-groups/" + group
		waittestFor(t, time.Minute, "Redpanda Console answers", func() bool { return doRaw("GET", url, "", "").status == 200 })
		sides = append(sides, side{"Redpanda Console", url, func(body []byte) int64 {
			var g struct {
				ConsumerGroup struct {
					TopicOffsets []struct {
						Topic            string `json:"topic"`
						PartitionOffsets []struct {
							PartitionID int32 `json:"partitionId"`
							GroupOffset int64 `json:"groupOffset"`
						} `json:"partitionOffsets"`
					} `json:"topicOffsets"`
				} `json:"consumerGroup"`
			}
			if json.Unmarshal(body, &g) != nil {
				return -1
			}
			for _, tp := range g.ConsumerGroup.TopicOffsets {
				for _, pp := range tp.PartitionOffsets {
					if tp.Topic == topic && pp.PartitionID == 0 {
						return pp.GroupOffset
					}
				}
			}
			return -1
		}})
	}

	took := map[string][]time.Duration{}
	at := int64(0)
	for round := range rounds {
		for k := range sides {
			s := sides[(k+round)%len(sides)] // alternate which side goes first
			at = at%19 + 1                   // a new offset each time, within the 20 records
			o := kadm.Offsets{}
			for p := range int32(lagPartitions) {
				o.AddOffset(topic, p, at, -1)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := adm.CommitOffsets(ctx, group, o)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			for {
				r := doRaw("GET", s.url, "", "")
				if r.status == 200 && s.committed([]byte(r.body)) == at {
					break
				}
				if time.Since(start) > 30*time.Second {
					t.Fatalf("%s: the commit at %d not visible after 30 s (status %d)", s.name, at, r.status)
				}
			}
			took[s.name] = append(took[s.name], time.Since(start))
		}
	}
	for _, s := range sides {
		d := took[s.name]
		slices.Sort(d)
		t.Logf("%-16s commit → visible in the one-group API: median %.1f ms, min %.1f ms, max %.1f ms (%d commits)",
			s.name, msec(d[len(d)/2]), msec(d[0]), msec(d[len(d)-1]), len(d))
	}
}
