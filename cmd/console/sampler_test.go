package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/waittest"
)

// One console sampling a Kafka cluster at a 1 s interval: /api/v1/replicas lists it with its
// heartbeat and the source it leads. Then another replica (here, a row written by hand) holds the
// lease and hangs: the console's writes are refused, it stops sampling, and within 3 intervals
// the API shows the snapshot stale with its age and /readyz reports the sampler degraded.
func TestReplicasAndStaleness(t *testing.T) {
	ctx := waittest.Context(t, time.Minute)
	k := startKafka(t, nil)
	storeDSN := pgtest.NewDatabase(t)
	base := startConsole(t, "auth: {mode: none}\n"+sampledKafka(storeDSN, k))

	type replicas struct {
		Replicas []struct {
			ID            string     `json:"id"`
			Live          bool       `json:"live"`
			LastHeartbeat *time.Time `json:"last_heartbeat"`
			Sources       []string   `json:"sources"`
			Jobs          []struct {
				ID string `json:"id"`
			} `json:"jobs"`
		} `json:"replicas"`
		Sources []struct {
			Source string `json:"source"`
			Leader string `json:"leader"`
			Token  int64  `json:"token"`
		} `json:"sources"`
	}
	r := do(t, nil, "GET", base+"/api/v1/replicas", "", "")
	v := decode[replicas](t, r)
	if r.status != 200 || len(v.Replicas) != 1 || !v.Replicas[0].Live || v.Replicas[0].LastHeartbeat == nil ||
		len(v.Replicas[0].Sources) != 1 || v.Replicas[0].Sources[0] != "kafka/main" || v.Replicas[0].Jobs == nil ||
		len(v.Sources) != 1 || v.Sources[0].Leader != v.Replicas[0].ID || v.Sources[0].Token != 1 {
		t.Fatalf("replicas: %d %s", r.status, r.body)
	}
	g := decode[apiGroups](t, do(t, nil, "GET", base+"/api/v1/kafka/main/groups", "", ""))
	if g.SampledAt == nil || g.Stale || g.AgeSeconds == nil {
		t.Fatalf("fresh groups: %+v", g)
	}
	if r := do(t, nil, "GET", base+"/readyz", "", ""); r.status != 200 {
		t.Fatalf("readyz while sampling: %d %s", r.status, r.body)
	}

	// A replica that took the source over and hangs: its lease runs for an hour.
	conn := pgtest.Conn(t, storeDSN)
	if _, err := conn.Exec(ctx, `UPDATE redrive.sampler_lease SET owner = 'hung', token = token + 1,
		expires_at = now() + interval '1 hour' WHERE source = 'kafka/main'`); err != nil {
		t.Fatal(err)
	}
	g = waittest.For(t, 10*time.Second, "the snapshot stale after sampling stopped", func() (apiGroups, bool) {
		g := decode[apiGroups](t, do(t, nil, "GET", base+"/api/v1/kafka/main/groups", "", ""))
		return g, g.Stale
	})
	if g.AgeSeconds == nil || *g.AgeSeconds < 3 || !strings.Contains(g.StaleNote, "no replica is sampling") {
		t.Fatalf("stale groups: %+v", g)
	}
	r = do(t, nil, "GET", base+"/readyz", "", "")
	if r.status != 503 || !strings.Contains(r.body, `"sampler"`) {
		t.Fatalf("readyz with a stale snapshot: %d %s; want 503 naming sampler", r.status, r.body)
	}
	if !strings.Contains(do(t, nil, "GET", base+"/kafka/main", "", "").body, "no replica is sampling") {
		t.Fatal("the cluster page does not say the snapshot is stale")
	}
	v = decode[replicas](t, do(t, nil, "GET", base+"/api/v1/replicas", "", ""))
	if len(v.Sources) != 1 || v.Sources[0].Leader != "hung" || len(v.Replicas) != 2 {
		t.Fatalf("replicas with the hung leader: %+v", v)
	}
	for _, rep := range v.Replicas {
		if rep.ID != "hung" && len(rep.Sources) != 0 {
			t.Fatalf("the console still lists itself as leading %v", rep.Sources)
		}
	}
}

// A group or a queue that appeared after the last sample is read through from the broker, so a
// script that creates one and asks at once gets it, not a 404 for up to a sampler interval.
func TestReadThroughBeforeTheNextSample(t *testing.T) {
	t.Run("KafkaGroup", func(t *testing.T) {
		base, addr := kafkaConsoleAt(t) // sampler.interval is the default 15 s
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		offsets := kadm.Offsets{}
		offsets.AddOffset("orders", 0, 5, -1)
		if _, err := kadm.NewClient(cl).CommitOffsets(context.Background(), "late-joiner", offsets); err != nil {
			t.Fatal(err)
		}
		r := do(t, nil, "GET", base+"/api/v1/kafka/main/groups/late-joiner", "", "")
		g := decode[apiGroup](t, r)
		if r.status != 200 || g.Group != "late-joiner" || g.Status != "EMPTY" || len(g.Topics) != 1 {
			t.Fatalf("a group committed just now: %d %s", r.status, r.body)
		}
		if r := do(t, nil, "GET", base+"/api/v1/kafka/main/groups/never-existed", "", ""); r.status != 404 {
			t.Fatalf("an unknown group: %d %s", r.status, r.body)
		}
	})
	t.Run("RabbitQueue", func(t *testing.T) {
		base, vhost, vhostURL := rabbitConsole(t)
		_, ch := rabbittest.Channel(t, vhostURL)
		if _, err := ch.QueueDeclare("declared.just.now", true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := do(t, nil, "GET", base+queuePath(vhost, "declared.just.now"), "", "")
		if r.status != 200 || !strings.Contains(r.body, `"name":"declared.just.now"`) {
			t.Fatalf("a queue declared just now: %d %s (after %v)", r.status, r.body, time.Since(start))
		}
		if r := do(t, nil, "GET", base+queuePath(vhost, "never.existed"), "", ""); r.status != 404 {
			t.Fatalf("an unknown queue: %d %s", r.status, r.body)
		}
	})
}
