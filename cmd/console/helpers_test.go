package main

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/redrive/redrive/cmd/internal/devstack"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/waittest"
)

// replayJob is a replay job as GET /api/v1/replays/{id} answers it.
type replayJob struct {
	ID, Status                 string
	Published, Skipped, Failed int
	Error                      string
}

// over is whether the job has ended, well or not.
func (j replayJob) over() bool {
	return slices.Contains([]string{store.JobDone, store.JobFailed, store.JobCancelled}, j.Status)
}

// replayOf reads the replay job id of the console at base. It asks with doRaw: a console being
// killed and restarted answers nothing for a moment, which reads as a job not over yet.
func replayOf(base, id string) replayJob {
	var j replayJob
	_ = json.Unmarshal([]byte(doRaw("GET", base+"/api/v1/replays/"+id, "", "").body), &j)
	return j
}

// waitReplay waits until the replay job id of the console at base is over and returns it; the
// caller asserts how it ended.
func waitReplay(t *testing.T, base, id string, within time.Duration) replayJob {
	t.Helper()
	return waittest.For(t, within, "replay job "+id+" ends", func() (replayJob, bool) {
		j := replayOf(base, id)
		return j, j.over()
	})
}

// waitReplayMoves waits until the replay job id has published more than before, or is over.
func waitReplayMoves(t *testing.T, base, id string, before int, within time.Duration) replayJob {
	t.Helper()
	return waittest.For(t, within, "replay job "+id+" moves messages", func() (replayJob, bool) {
		j := replayOf(base, id)
		return j, j.Published > before || j.over()
	})
}

// startKafka starts an in-process Kafka (kfake) on a free loopback port with topics (name →
// partitions; nil for none), closed when the test ends.
func startKafka(t *testing.T, topics map[string]int32) *devstack.Kafka {
	t.Helper()
	k, err := devstack.StartKafka(devstack.KafkaOptions{Addr: "127.0.0.1:0", Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k
}
