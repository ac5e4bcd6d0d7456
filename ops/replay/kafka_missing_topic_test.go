package replay_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/replay"
)

// A dead letter whose original topic does not exist was planned "publish", to "(any partition:
// no key)" although it has a key, and its job failed with the driver's text twice over. The plan
// asks every destination topic of a chunk in one metadata request and skips such a message as
// unresolvable, saying so; a topic deleted between the plan and the job fails that message alone,
// in a person's words, once.
func TestKafkaPlanSkipsAMissingOriginalTopic(t *testing.T) {
	broker := kfaketest.Cluster(t)
	w := newWorldOn(t, broker.ListenAddrs()[0])
	ctx := ctxT(t)
	for topic, partitions := range map[string]int32{"orders": 1, "orders.DLT": 2, "gone-soon": 1} {
		if _, err := w.adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	originals := []string{"orders", "does-not-exist", "gone-soon", "does-not-exist"}
	w.deadLetters(t, len(originals), func(i int, r *kgo.Record) {
		r.Headers[0].Value = []byte(originals[i]) // kafka_dlt-original-topic
	})
	var mu sync.Mutex
	var asked [][]string // the metadata requests naming does-not-exist
	broker.ControlKey(int16(kmsg.Metadata), func(r kmsg.Request) (kmsg.Response, error, bool) {
		broker.KeepControl()
		var names []string
		for _, t := range r.(*kmsg.MetadataRequest).Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
			}
		}
		if slices.Contains(names, "does-not-exist") {
			mu.Lock()
			asked = append(asked, names)
			mu.Unlock()
		}
		return nil, nil, false
	})
	e := w.engine(t, "a")
	plan, err := e.Plan(ctx, "alice", replay.Source{Kind: "kafka", Cluster: "main", Topic: "orders.DLT"}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(asked) != 1 || !slices.Contains(asked[0], "gone-soon") || !slices.Contains(asked[0], "orders") {
		t.Errorf("metadata requests naming does-not-exist: %v; want one, naming the plan's other destinations too", asked)
	}
	mu.Unlock()
	if plan.Counts[replay.Publish] != 2 || plan.Counts[replay.SkipUnresolvable] != 2 {
		t.Fatalf("plan counts %v; want 2 to publish, 2 unresolvable", plan.Counts)
	}
	for _, it := range plan.Items {
		switch it.MessageID {
		case "m-1", "m-3":
			if it.Action != replay.SkipUnresolvable || it.Note != "original topic does-not-exist does not exist" || it.Destination.String() != "unresolved" {
				t.Errorf("%s: %s to %s, note %q; want skip_unresolvable: original topic does-not-exist does not exist", it.MessageID, it.Action, it.Destination, it.Note)
			}
		case "m-2":
			if it.Action != replay.Publish || it.Destination.String() != "kafka main → gone-soon partition 0 (from the key)" {
				t.Errorf("%s: %s to %s", it.MessageID, it.Action, it.Destination)
			}
		}
	}
	if resp, err := w.adm.DeleteTopics(ctx, "gone-soon"); err != nil || resp.Error() != nil {
		t.Fatalf("delete gone-soon: %v %v", err, resp.Error())
	}
	work(t, e)
	job, err := e.Start(ctx, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "r", RatePerSecond: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if job = waitJob(t, e, job.ID); job.Published != 1 || job.Failed != 1 || job.Skipped != 2 {
		t.Fatalf("job %s published %d failed %d skipped %d; want 1, 1, 2", job.Status, job.Published, job.Failed, job.Skipped)
	}
	ledger, err := e.Ledger(ctx, job.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ledger, func(l replay.LedgerEntry) bool { return l.MessageID == "m-2" })
	if i < 0 || ledger[i].Outcome != replay.LedgerFailed || ledger[i].Detail != "topic gone-soon does not exist" {
		t.Errorf("ledger %+v; want m-2 failed: topic gone-soon does not exist", ledger)
	}
}
